// The typed normalization ops that backends read (kernels in norm.cpp).
#pragma once

#include "ops/op.h"

namespace infera {

// BatchNormalization: inference form (running statistics) unless training().
class BatchNormOp : public OpKernel {
 public:
  float epsilon() const { return eps_; }
  bool training() const { return training_; }
  bool spatial() const { return spatial_; }

 protected:
  float eps_ = 1e-5f, momentum_ = 0.9f;
  bool training_ = false, spatial_ = true;
};

}  // namespace infera
