// The typed Softmax family that backends read (kernels in misc.cpp).
#pragma once

#include "ops/op.h"

namespace infera {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// Before opset 13 the input is coerced to 2-D at 'axis' (default 1) and the op runs over the
// flattened trailing part (per_axis() false); from 13 it runs along 'axis' (default -1).
class SoftmaxOp : public OpKernel {
 public:
  SoftmaxKind kind() const { return kind_; }
  int64_t axis() const { return axis_; }
  bool per_axis() const { return per_axis_; }

 protected:
  explicit SoftmaxOp(SoftmaxKind k) : kind_(k) {}
  SoftmaxKind kind_;
  int64_t axis_ = -1;
  bool per_axis_ = true;
};

}  // namespace infera
