// com.infera.SqueezeExcite (made by the fuse_squeeze_excite pass): the gate of a squeeze-excitation
// block, S = gate(W2 act(W1 mean_hw(X) + B1) + B2), as the unfused GlobalAveragePool -> 1x1 Conv ->
// act -> 1x1 Conv -> gate computes it. Inputs X [N, C, H, W], W1 [R, C, 1, 1], B1 [R] (optional),
// W2 [C, R, 1, 1], B2 [C] (optional); output S [N, C, 1, 1]. Attributes: activation,
// activation_alpha, activation_beta (act, the hidden layer's) and gate, gate_alpha, gate_beta.
#pragma once

#include "ops/activation.h"
#include "ops/op.h"

namespace infera {

class SqueezeExciteOp : public OpKernel {
 public:
  const Activation& activation() const { return act_; }
  const Activation& gate() const { return gate_; }

 protected:
  Activation act_, gate_;
};

void register_squeeze_excite_ops(OpRegistry& r);  // squeeze_excite.cpp

}  // namespace infera
