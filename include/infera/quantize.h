// Post-training int8 quantization (issue 11): calibration of a float model's activations over sample
// inputs, and the writer of a standard QDQ ONNX model (per-channel symmetric int8 weights, symmetric int8
// per-tensor activations, int32 biases) that infera runs as int8 and ONNX Runtime runs too.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "infera/infera.h"

namespace infera {

enum class CalibMethod { kMinMax, kPercentile, kEntropy };

struct CalibrationOptions {
  CalibMethod method = CalibMethod::kMinMax;
  double percentile = 99.99;  // kPercentile: of |x|, in (0, 100]
  int num_threads = 0;
  // Called after each sample batch of each pass (minmax: one pass; percentile/entropy: two).
  std::function<void(size_t done, size_t total)> progress;
};

// "minmax", "percentile:99.99", "entropy"; parse_calib_method refuses anything else.
std::string calib_method_name(CalibMethod m, double percentile);
Status parse_calib_method(const std::string& s, CalibMethod& m, double& percentile);

// One sample batch for the model's (single) input, named for messages ("calib.npy[0:32]").
struct CalibrationSample {
  std::string name;
  Tensor tensor;
};

// The calibrated range (max |x| kept) of each activation the QDQ writer quantizes.
struct CalibrationTable {
  std::string method;  // calib_method_name()
  std::map<std::string, float> amax;
};

// The activations write_qdq_model quantizes (inputs and outputs of Conv and residual Add, after a
// following Relu), by tensor name.
Result<std::vector<std::string>> qdq_tensors(const std::string& model_path);

// Runs the float model over the samples and keeps one range per tensor of qdq_tensors(). Refuses an
// empty set, NaN/Inf in a sample, and samples the model does not take (shape, dtype), naming the sample.
Result<CalibrationTable> calibrate(const std::string& model_path, const std::vector<CalibrationSample>& samples,
                                   const CalibrationOptions& opts);

// Writes the QDQ model: scale = amax / 127 (a zero range gets scale 1: every value is 0 anyway).
Status write_qdq_model(const std::string& model_path, const CalibrationTable& table, const std::string& out_path);

}  // namespace infera
