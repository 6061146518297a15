// The typed normalization ops that backends read (kernels in norm.cpp).
#pragma once

#include <memory>

#include "ops/activation.h"
#include "ops/op.h"

namespace infera {

// BatchNormalization: inference form (running statistics) unless training(). com.infera.FusedBatchNorm
// (fuse_conv_activation: an inference BatchNormalization and the activation after it, as DenseNet's
// norm + relu before each conv) is the same op with fused() and activation(): act(BN(x)).
class BatchNormOp : public OpKernel {
 public:
  float epsilon() const { return eps_; }
  bool training() const { return training_; }
  bool spatial() const { return spatial_; }
  bool fused() const { return fused_; }
  const Activation& activation() const { return act_; }
  // The inference BatchNormalization bn followed by act, as one op.
  static std::shared_ptr<const OpKernel> make_fused(const BatchNormOp& bn, Activation act);

 protected:
  float eps_ = 1e-5f, momentum_ = 0.9f;
  bool training_ = false, spatial_ = true, fused_ = false;
  Activation act_;
};

}  // namespace infera
