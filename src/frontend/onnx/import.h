// ONNX ModelProto -> Graph. Checks IR/opset ranges, tensors (sizes, external data paths),
// and graph structure; every refusal names the file, node and tensor.
#pragma once

#include <string>

#include "graph/graph.h"
#include "infera/limits.h"

namespace onnx {
class TensorProto;
}

namespace infera {

// lim: the session's limits (SessionOptions::limits); checked first (check_limits).
Result<Graph> import_onnx_file(const std::string& path, const limits::Limits& lim = {});
Result<Graph> import_onnx_bytes(const std::string& bytes, const std::string& model_dir, const std::string& source,
                                const limits::Limits& lim = {});

// Each field of lim in 1..its constant (the hard cap the code was checked for); else an error
// naming the field ("limits.max_rank = 0 is not in 1..32").
Status check_limits(const limits::Limits& lim);
// " (max_rank)": how messages name the limit that refused something, so that a user finds the
// SessionOptions field and the CLI flag (--max-rank) from the error line.
std::string limit_name(const char* field);
// "2^40 (1099511627776)" at the cap, else the lowered number: the elements limit in messages.
std::string elements_limit_str(const limits::Limits& lim);

// Decodes a TensorProto (raw_data, typed fields or external data under model_dir; an
// empty model_dir refuses external data). what names the tensor in messages.
Result<Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& model_dir, const std::string& what,
                                 const limits::Limits& lim = {});
// Reads a whole regular file of at most max_bytes; what names it in messages ("model file"),
// field the limit (limit_name) when max_bytes is one.
Result<std::string> read_binary_file(const std::string& path, const std::string& what, int64_t max_bytes,
                                     const char* field = nullptr);
// Reads a serialized TensorProto file (.pb), or decodes one already read (path for messages).
Result<Tensor> load_tensor_pb(const std::string& path, const limits::Limits& lim = {});
Result<Tensor> tensor_from_pb_bytes(const std::string& bytes, const std::string& path, const limits::Limits& lim = {});

// Default-domain opsets and IR versions this build imports.
constexpr int64_t kMinOpset = 7, kMaxOpset = 28;
constexpr int64_t kMinIrVersion = 3, kMaxIrVersion = 14;

}  // namespace infera
