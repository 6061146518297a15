// com.infera.QConv: an int8 convolution with its requantization fused, made by the
// quantize_qdq pass from DequantizeLinear -> Conv -> [Add] -> [activation] -> QuantizeLinear:
//   y = saturate(round(act((acc + B[m]) * x_scale * w_scale[m] + (Z - z_zp) * z_scale) / y_scale) + y_zp)
// with acc = sum (X - x_zp) * W. Inputs X (int8/uint8), W (int8, constant, zero point 0), B (int32,
// optional), Z (int8/uint8 residual, optional). The scales and zero points are attributes (constants
// of the QDQ model), typed here for the backends. The arithmetic is QRequant's (below).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/activation.h"
#include "ops/conv.h"

namespace infera {

// The requantization of QConv, in float32 as ONNX Runtime's QLinearConv does it (one float
// multiplier per channel), for the activations the int8 kernels fuse (identity, Relu, LeakyRelu,
// Clip); every backend that runs such a QConv computes exactly this, bit for bit (the reference
// below, oneDNN's fallback epilogue, the GPU kernels: s8_igemm.h, s8_cutlass.h):
//   sy[m] = float(x_scale * w_scale[m] * (1 / y_scale))   (the products in double, rounded once)
//   u     = float(a) * sy[m]             a = acc + B[m], the exact integer (to float: to nearest even)
//   u     = fma(float(Z - z_zp), zs, u)  with a residual; zs = float(z_scale * (1 / y_scale))
//   u     = act(u)                       LeakyRelu: u * float(alpha); Clip to float(min / y_scale),
//                                        float(max / y_scale); each step one float rounding
//   y     = saturate(rint(u + y_zp))     (the exact sum, rounded half to even; NaN -> 0)
// Other activations keep the double form of the formula above (use_float false; no GPU kernel
// takes them). Until the twentieth session the four ran in double as well; the GPU kernels then
// had to find the elements near a rounding boundary and redo them in double, which made their
// epilogue about twice as long (the int8 layers that write more than they read are bound by it).
struct QRequant {
  bool use_float = false;
  Activation act;
  double inv_y = 1.0, z_scale = 1.0;
  float zs = 0.f, alpha = 0.f, clip_lo = 0.f, clip_hi = 0.f;
  int64_t z_zp = 0, y_zp = 0, lo = -128, hi = 127;

  static bool float_act(ActKind k) {
    return k == ActKind::kIdentity || k == ActKind::kRelu || k == ActKind::kLeakyRelu || k == ActKind::kClip;
  }
  // inv_y = 1 / double(y_scale); z_scale, z_zp: the residual's; y_uint8: y is uint8 (else int8).
  static QRequant make(const Activation& act, double inv_y, double z_scale, int64_t z_zp, int64_t y_zp, bool y_uint8) {
    QRequant r;
    r.act = act;
    r.use_float = float_act(act.kind);
    r.inv_y = inv_y;
    r.z_scale = z_scale;
    r.zs = static_cast<float>(z_scale * inv_y);
    r.alpha = act.alpha;
    r.clip_lo = static_cast<float>(static_cast<double>(act.alpha) * inv_y);
    r.clip_hi = static_cast<float>(static_cast<double>(act.beta) * inv_y);
    r.z_zp = z_zp;
    r.y_zp = y_zp;
    r.lo = y_uint8 ? 0 : -128;
    r.hi = y_uint8 ? 255 : 127;
    return r;
  }
  // scale_xw: x_scale * w_scale[m] in double (the channel's scale); returns sy[m].
  float sy(double scale_xw) const { return static_cast<float>(scale_xw * inv_y); }

  // y for a = acc + B[m] (exact), the channel's scale_xw and sy, the residual zv when has_z.
  int64_t operator()(int64_t a, double scale_xw, float sy_m, bool has_z, int64_t zv) const {
    double r;
    if (use_float) {
      float u = static_cast<float>(a) * sy_m;
      if (has_z) u = std::fma(static_cast<float>(zv - z_zp), zs, u);
      switch (act.kind) {
        case ActKind::kRelu: u = u < 0.f ? 0.f : u; break;
        case ActKind::kLeakyRelu: u = u < 0.f ? u * alpha : u; break;
        case ActKind::kClip:
          u = u < clip_lo ? clip_lo : u;
          u = u > clip_hi ? clip_hi : u;
          break;
        default: break;
      }
      r = static_cast<double>(u) + static_cast<double>(y_zp);  // exact: a float plus a small integer
    } else {
      double v = static_cast<double>(a) * scale_xw;
      if (has_z) v += static_cast<double>(zv - z_zp) * z_scale;
      r = activation_ref(act, v) * inv_y + static_cast<double>(y_zp);
    }
    if (!(r == r)) return 0;
    r = std::nearbyint(r);
    return r < static_cast<double>(lo) ? lo : r > static_cast<double>(hi) ? hi : static_cast<int64_t>(r);
  }
};

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

  // This QConv's requantization.
  QRequant requant() const {
    return QRequant::make(act, 1.0 / static_cast<double>(y_scale), z_scale, z_zero_point, y_zero_point,
                          y_dtype == DataType::kUInt8);
  }
  // x_scale * w_scale[m] in double.
  double scale_xw(int64_t m) const {
    return static_cast<double>(x_scale) * static_cast<double>(w_scales.size() == 1 ? w_scales[0] : w_scales[m]);
  }
  // scale_xw(m) and rq.sy(scale_xw(m)) for the M output channels (QRequant's per-channel operands).
  void channel_scales(const QRequant& rq, int64_t M, std::vector<double>& sxw, std::vector<float>& sy) const {
    sxw.resize(static_cast<size_t>(M)), sy.resize(static_cast<size_t>(M));
    for (int64_t m = 0; m < M; ++m) sxw[m] = scale_xw(m), sy[m] = rq.sy(sxw[m]);
  }
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
