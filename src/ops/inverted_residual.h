// com.infera.InvertedResidual (made by the fuse_inverted_residual pass): a MobileNetV2-style block,
// Y = project(dw_act(depthwise(expand_act(expand(X))))) [+ Z], as the unfused 1x1 Conv -> depthwise
// Conv -> 1x1 Conv [+ residual] computes it. Inputs X [N, C, H, W], W_expand [E, C, 1, 1] and
// B_expand [E] (both absent: no expand, E = C), W_dw [E, 1, K, K], B_dw [E], W_project [M, E, 1, 1],
// B_project [M], Z [N, M, OH, OW] (biases and Z optional). Attributes: strides and pads of the
// depthwise conv, expand / expand_alpha / expand_beta and dw / dw_alpha / dw_beta (the activations).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/activation.h"
#include "ops/op.h"

namespace infera {

struct InvertedResidualAttrs {
  std::vector<int64_t> strides{1, 1};
  std::vector<int64_t> pads{0, 0, 0, 0};  // top, left, bottom, right
  Activation expand, dw;
};

// Input slots.
enum : size_t { kIrX = 0, kIrWExpand, kIrBExpand, kIrWDw, kIrBDw, kIrWProject, kIrBProject, kIrZ, kIrInputs };

class InvertedResidualOp : public OpKernel {
 public:
  const InvertedResidualAttrs& attrs() const { return attrs_; }

 protected:
  InvertedResidualAttrs attrs_;
};

// Writes a's strides, pads and activations as n's attributes (the pass; saved plans re-make the op
// from them).
void inverted_residual_to_attrs(Node& n, const InvertedResidualAttrs& a);

void register_inverted_residual_ops(OpRegistry& r);  // inverted_residual.cpp

}  // namespace infera
