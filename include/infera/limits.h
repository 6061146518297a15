// The sizes infera accepts from untrusted files (models, tensor files), in one place.
// Each is checked before anything is allocated or indexed with it; going past one is a
// one-line error naming the limit. docs/limits.md has the table with the reasons.
#pragma once

#include <cstddef>
#include <cstdint>

namespace infera::limits {

// A model file (protobuf refuses messages of 2 GiB or more; weights beyond go to external data).
constexpr int64_t kMaxModelBytes = (int64_t(2) << 30) - 1;
// A tensor file given as an input (.npy or TensorProto .pb).
constexpr int64_t kMaxTensorFileBytes = int64_t(1) << 34;
// Elements of one tensor (initializer, input, folded value); bytes are further capped by
// host_memory_bytes() (physical memory, RLIMIT_AS, cgroup limit).
constexpr int64_t kMaxTensorElements = int64_t(1) << 40;
// Dimensions of one tensor or value shape, including what inference gives Unsqueeze/Reshape.
constexpr int kMaxRank = 32;
// Nodes of a graph; also the cap on initializers, graph inputs, outputs and value_info entries.
constexpr int64_t kMaxNodes = int64_t(1) << 21;
// Inputs or outputs of one node (a Concat of a million inputs is not a CNN).
constexpr int64_t kMaxNodeIo = int64_t(1) << 16;
// Elements of one list attribute (ints, floats, strings): pads, shapes, Constant value_ints.
constexpr int64_t kMaxAttributeElements = int64_t(1) << 20;
// Protobuf message nesting (graph -> node -> attribute -> graph ..., nested TypeProtos).
constexpr int kMaxNesting = 64;
// Bytes of a .npy header (numpy writes < 100; format 2.0/3.0 allows 4 GiB, nobody needs it).
constexpr size_t kMaxNpyHeaderBytes = 65536;

// The limits one session applies to what it reads (SessionOptions::limits, the CLI's --max-* flags).
// Each may be lowered, for a service that takes models from users; raising one past the constant
// above is refused at load (kInvalidInput), since the constants are what the code was checked for.
struct Limits {
  int64_t max_model_bytes = kMaxModelBytes;
  int64_t max_tensor_file_bytes = kMaxTensorFileBytes;
  int64_t max_tensor_elements = kMaxTensorElements;
  int max_rank = kMaxRank;
  int64_t max_nodes = kMaxNodes;
  int64_t max_node_io = kMaxNodeIo;
  int64_t max_attribute_elements = kMaxAttributeElements;
  int max_nesting = kMaxNesting;
};

// n = product of dims with every partial product checked: false on a negative dim or when the
// product passes kMaxTensorElements (no overflow, whatever the dims).
inline bool checked_elements(const int64_t* dims, size_t rank, int64_t& n) {
  n = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) return false;
    if (dims[i] != 0 && n > kMaxTensorElements / dims[i]) return false;
    n *= dims[i];
  }
  return true;
}

}  // namespace infera::limits
