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

// com.infera.ConcatBatchNorm (fuse_concat_batchnorm: a Concat along channels read only by an
// inference BatchNormalization / FusedBatchNorm, DenseNet's cat -> norm + relu): act(BN(cat(X0 ..
// Xk-1, axis 1))) without the concatenated value. Inputs scale, B, input_mean, input_var [C], then
// X0 .. Xk-1 (k >= 1, the same dims but dim 1; their channels sum to C); output Y. Attributes
// epsilon, activation, activation_alpha, activation_beta.
// An inference BatchNormalization as y = x a[c] + b[c]: a = scale / sqrt(var + eps) and
// b = B - mean a folded in double from float32 [C] statistics, then rounded to float (the CPU's BN
// loop and the ConcatBatchNorm reference).
void bn_affine(const float* scale, const float* bias, const float* mean, const float* var, float eps, int64_t C,
               float* a, float* b);

class ConcatBatchNormOp : public OpKernel {
 public:
  static constexpr size_t kFirstX = 4;  // inputs before the concatenated ones
  float epsilon() const { return eps_; }
  const Activation& activation() const { return act_; }

 protected:
  float eps_ = 1e-5f;
  Activation act_;
};

}  // namespace infera
