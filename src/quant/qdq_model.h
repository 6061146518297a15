// Internals shared by the calibrator and the QDQ writer (src/quant/qdq_model.cpp).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "infera/infera.h"

namespace onnx {
class ModelProto;
class GraphProto;
}  // namespace onnx

namespace infera {

// Reads and parses a model file; returns its bytes.
Result<std::string> read_model_proto(const std::string& path, onnx::ModelProto& m);
// The activations the writer quantizes, in graph order, with the layers in float_layers left float.
std::vector<std::string> qdq_tensor_names(const onnx::GraphProto& g, const std::set<std::string>& float_layers);
// The layers the writer quantizes (Convs with float weights, residual Adds), in graph order.
std::vector<std::string> qdq_layer_names(const onnx::GraphProto& g);

// Calibration ranges from a histogram of |x| over [0, hist_max] (bins equal): the percentile of
// the mass, and TensorRT's entropy calibrator (the threshold whose 128-level quantization of the
// clipped distribution has the smallest KL divergence from it).
float amax_percentile(const std::vector<double>& hist, float hist_max, double percentile);
float amax_entropy(const std::vector<double>& hist, float hist_max);

}  // namespace infera
