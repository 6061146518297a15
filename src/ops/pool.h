// AveragePool / MaxPool attributes and the output-shape rule shared by the reference kernels
// and the backends: the single source of truth for pooling padding semantics.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "infera/infera.h"
#include "ops/conv.h"

namespace infera {

// Empty strides/pads/dilations mean the defaults (1 / 0 / 1). pads = {begin..., end...}.
struct PoolAttrs {
  std::vector<int64_t> kernel_shape;  // required
  std::vector<int64_t> strides;
  std::vector<int64_t> pads;
  std::vector<int64_t> dilations;
  AutoPad auto_pad = AutoPad::kNotSet;
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

}  // namespace infera
