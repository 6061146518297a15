// com.infera.QConv: an int8 convolution with its requantization fused, made by the
// quantize_qdq pass from DequantizeLinear -> Conv -> [Add] -> [activation] -> QuantizeLinear:
//   y = saturate(round(act((acc + B[m]) * x_scale * w_scale[m] + (Z - z_zp) * z_scale) / y_scale) + y_zp)
// with acc = sum (X - x_zp) * W. Inputs X (int8/uint8), W (int8, constant, zero point 0), B (int32,
// optional), Z (int8/uint8 residual, optional). The scales and zero points are attributes (constants
// of the QDQ model), typed here for the backends.
#pragma once

#include "ops/activation.h"
#include "ops/conv.h"

namespace infera {

struct QConvParams {
  float x_scale = 1.f;
  int64_t x_zero_point = 0;
  std::vector<float> w_scales;  // one per output channel (or one)
  float z_scale = 1.f;
  int64_t z_zero_point = 0;
  float y_scale = 1.f;
  int64_t y_zero_point = 0;
  DataType y_dtype = DataType::kInt8;
  Activation act;
};

class QConvOp : public OpKernel {
 public:
  const ConvAttrs& attrs() const { return attrs_; }
  const QConvParams& params() const { return q_; }
  bool has_residual(const Node& n) const { return n.inputs.size() > 3 && n.inputs[3] >= 0; }

 protected:
  ConvAttrs attrs_;
  QConvParams q_;
};

}  // namespace infera
