// Calibration inputs and cache shared by `infera quantize` and `infera eval` (calib_load.cpp: the
// samples, in the infera_calib_data library that the Python extension links too; calib_data.cpp).
#pragma once

#include <cstring>

#include "cli.h"
#include "infera/quantize.h"

namespace infera::cli {

constexpr const char* kCalibCacheFormat = "infera-calibration-cache-1";

// Samples from an .npy file (batches of `batch` along dim 0) or a folder of .npy files (each one
// batch, or one sample of rank input_rank - 1).
Result<std::vector<CalibrationSample>> load_calibration(const std::string& path, size_t input_rank, int64_t batch);
// The same, or with a --calib-preprocess spec (preprocess not empty) a folder of JPEG/PNG images
// (image.h: load_calibration_images) for the input `in`.
Result<std::vector<CalibrationSample>> load_calibration(const std::string& path, const IoInfo& in, int64_t batch,
                                                        const std::string& preprocess, int64_t max_image_pixels);
// The same for the one input of the model at `model` (another count of inputs is an error); a batch
// the model fixes replaces `batch`.
Result<std::vector<CalibrationSample>> load_model_calibration(const std::string& model, const std::string& path,
                                                              int64_t batch, const std::string& preprocess,
                                                              int64_t max_image_pixels);
// Labels, int32/int64 (or uint8) [n]: one per image or calibration sample; `what` names them in messages.
Result<std::vector<int64_t>> read_labels_file(const std::string& path, int64_t n, const std::string& what);

struct CalibCache {
  std::string model_sha256;
  CalibrationTable table;
  // The mixed-precision choice made on this table ("mixed" in the file): the layers kept float for
  // that budget and those --layer-precision overrides; reused when both match, without measuring.
  bool has_mix = false;
  double mix_budget = 0;
  std::string mix_layer_precision;
  std::vector<std::string> mix_float_layers;
  // How the mix was measured: "" (relative output error; caches before it have none) or
  // "top1:<SHA-256 of the --calib-labels file>" (points of top-1 against those labels).
  std::string mix_measure;
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
  // --calib-labels: one label per calibration sample: the mix is then measured as top-1 points lost
  // on the calibration samples and the budget is in points.
  std::string calib_labels;
  // --calib-preprocess: --calibration is a folder of images preprocessed by this spec (image.h).
  std::string preprocess;
  int64_t max_image_pixels = int64_t(1) << 26;
  // --calib-dump: the loaded calibration samples, concatenated along dim 0, written as .npy.
  std::string dump;
};
Status quantize_to_file(const QuantizeRequest& q, std::string* summary);
// --calib-preprocess (checked here: a bad spec is a usage error), --max-image-pixels, --calib-dump
// into q; returns the usage error or "".
std::string calib_input_options(Args& a, QuantizeRequest& q);

}  // namespace infera::cli
