// AveragePool / MaxPool attributes and the output-shape rule shared by the reference kernels
// and the backends: the single source of truth for pooling padding semantics.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "infera/infera.h"
#include "ops/conv.h"
#include "ops/op.h"

namespace infera {

// The window attributes (kernel_shape required) plus pooling's own.
struct PoolAttrs : WindowAttrs {
  bool ceil_mode = false;
  bool count_include_pad = false;  // AveragePool
  int64_t storage_order = 0;       // MaxPool Indices: 0 row-major, 1 column-major
};

// Reads and validates a pooling node's attributes (kernel_shape required, values positive,
// pads non-negative, lengths consistent). Messages name the node.
Status pool_attrs_parse(const Node& n, PoolAttrs& a);

// X [N, C, D1..Dk] -> pads_out (2k, after auto_pad) and Y dims [N, C, O1..Ok].
// With ceil_mode the last window may run past the end pad: its taps there are ignored
// (and not counted by count_include_pad), as in PyTorch and ONNX Runtime. The last window
// always starts inside the input or the begin pad.
Status pool_resolve(const PoolAttrs& a, const std::vector<int64_t>& x_dims, std::vector<int64_t>& pads_out,
                    std::vector<int64_t>& y_dims);

// The typed ops (kernels in pool.cpp): MaxPool / AveragePool, and the global pools.
class PoolOp : public OpKernel {
 public:
  bool is_max() const { return is_max_; }
  const PoolAttrs& attrs() const { return a_; }

 protected:
  explicit PoolOp(bool is_max) : is_max_(is_max) {}
  bool is_max_;
  PoolAttrs a_;
};

class GlobalPoolOp : public OpKernel {
 public:
  bool is_max() const { return is_max_; }

 protected:
  explicit GlobalPoolOp(bool is_max) : is_max_(is_max) {}
  bool is_max_;
};

}  // namespace infera
