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
// float_layers (names from qdq_layers) stay float: their weights, inputs and outputs are not
// quantized unless a quantized layer reads or writes the same tensor (mixed precision).
Status write_qdq_model(const std::string& model_path, const CalibrationTable& table, const std::string& out_path,
                       const std::vector<std::string>& float_layers = {});

// The layers write_qdq_model quantizes: Convs with float weights and residual Adds, by node name
// (the first output's name for an unnamed node), in graph order.
Result<std::vector<std::string>> qdq_layers(const std::string& model_path);

// Mixed precision under an accuracy budget. The error of a model is the mean over the samples of
// ||y - y_float|| / ||y_float|| over its outputs (relative output error). Each layer's
// sensitivity is that error with the layer quantized alone. With every layer int8 within the
// budget, that is the choice; else the k most sensitive layers stay float, the smallest k whose
// measured mix fits (found by bisection: one measured model per step).
// With labels (one per sample row, over every sample batch in order), the error is instead the top-1
// loss in points, 100 * (correct_float - correct_model) / rows, over every sample (max_samples is
// not used: a few batches are too coarse for tenths of a point); a sample is correct when no class
// scores above its label's (infera eval's rule). Layers are ranked by that loss, ties by their
// relative output error; a budget of 0 keeps every free layer float (no mix is measured: a mix that
// loses no point on these samples still changes outputs).
struct MixedOptions {
  double budget = 0.01;                  // the largest relative output error accepted
  std::vector<std::string> force_float;  // layers kept float whatever their sensitivity
  std::vector<std::string> force_int8;   // layers quantized whatever their sensitivity
  bool float_by_default = false;         // "*:fp32": only force_int8 layers are quantized
  size_t max_samples = 4;                // sample batches used for the measurements (the first ones)
  int num_threads = 0;
  std::function<void(size_t done, size_t total)> progress;  // per layer measured
  std::vector<int64_t> labels;  // top-1 labels: the budget is then in points of top-1 (see above)
};
struct LayerChoice {
  std::string layer;
  double sensitivity = 0;  // relative output error with this layer alone in int8 (-1: not measured)
  bool int8 = true;
  std::string why;        // "forced ...", "among the most sensitive: ...", "within the budget"
  double rel_error = -1;  // with labels: the relative output error of that model (the tie-break)
};
struct MixedPlan {
  std::vector<LayerChoice> layers;  // in graph order
  double all_int8 = 0;              // measured error with every layer int8
  double estimated = 0;             // the int8 layers' sensitivities added in quadrature
  double measured = 0;              // measured error of the chosen mix
  bool top1 = false;                // errors are top-1 points lost (MixedOptions::labels)
  double float_top1 = 0;            // top1: the float model's top-1 on the samples, 0..1
  int64_t rows = 0;                 // top1: the samples (rows) it was measured on
  std::vector<std::string> float_layers() const;
};
Result<MixedPlan> choose_mixed(const std::string& model_path, const CalibrationTable& table,
                               const std::vector<CalibrationSample>& samples, const MixedOptions& opts);

}  // namespace infera
