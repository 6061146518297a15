// ONNX ModelProto -> Graph. Checks IR/opset ranges, tensors (sizes, external data paths),
// and graph structure; every refusal names the file, node and tensor.
#pragma once

#include <string>

#include "graph/graph.h"

namespace onnx {
class TensorProto;
}

namespace infera {

Result<Graph> import_onnx_file(const std::string& path);
Result<Graph> import_onnx_bytes(const std::string& bytes, const std::string& model_dir, const std::string& source);

// Decodes a TensorProto (raw_data, typed fields or external data under model_dir; an
// empty model_dir refuses external data). what names the tensor in messages.
Result<Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& model_dir, const std::string& what);
// Reads a whole regular file of at most max_bytes; what names it in messages ("model file").
Result<std::string> read_binary_file(const std::string& path, const std::string& what, int64_t max_bytes);
// Reads a serialized TensorProto file (.pb), or decodes one already read (path for messages).
Result<Tensor> load_tensor_pb(const std::string& path);
Result<Tensor> tensor_from_pb_bytes(const std::string& bytes, const std::string& path);

// Default-domain opsets and IR versions this build imports.
constexpr int64_t kMinOpset = 7, kMaxOpset = 28;
constexpr int64_t kMinIrVersion = 3, kMaxIrVersion = 14;

}  // namespace infera
