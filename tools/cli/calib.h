// Calibration inputs and cache shared by `infera quantize` and `infera eval` (calib_data.cpp).
#pragma once

#include <cstring>

#include "cli.h"
#include "infera/quantize.h"

namespace infera::cli {

constexpr const char* kCalibCacheFormat = "infera-calibration-cache-1";

// Samples from an .npy file (batches of `batch` along dim 0) or a folder of .npy files (each one
// batch, or one sample of rank input_rank - 1).
Result<std::vector<CalibrationSample>> load_calibration(const std::string& path, size_t input_rank, int64_t batch);

struct CalibCache {
  std::string model_sha256;
  CalibrationTable table;
  // The mixed-precision choice made on this table ("mixed" in the file): the layers kept float for
  // that budget and those --layer-precision overrides; reused when both match, without measuring.
  bool has_mix = false;
  double mix_budget = 0;
  std::string mix_layer_precision;
  std::vector<std::string> mix_float_layers;
};
Result<CalibCache> read_calib_cache(const std::string& path);
// The same from the file's text (path for messages): refuses anything but the cache's JSON shape
// with one line, never throws (tests/fuzz/fuzz_calib_cache.cpp).
Result<CalibCache> parse_calib_cache(const std::string& text, const std::string& path);
Status write_calib_cache(const std::string& path, const CalibCache& c);

// The whole of `quantize`: the table from the cache (checked against the model and method) or by
// calibrating (then written to cache_path when given), and the QDQ model written to out.
struct QuantizeRequest {
  std::string model, calibration, cache, out, method = "minmax";
  int64_t batch = 32;
  int num_threads = 0;
  bool progress = false;
  // Mixed precision (--precision mixed): layers kept float by an accuracy budget (relative output
  // error), with --layer-precision overrides ("conv1:fp32,*:int8").
  bool mixed = false;
  double budget = 0.01;
  std::string layer_precision;
};
Status quantize_to_file(const QuantizeRequest& q, std::string* summary);

}  // namespace infera::cli
