// Linear quantization shared by the quantization ops (quant.cpp, quant_linear.cpp), the QDQ
// folding pass and the int8 kernels: integer ranges, scale/zero-point layouts (per tensor, per
// axis, blocked) and the one rounding rule (round half to even, then saturate).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "infera/infera.h"
#include "ops/op.h"

namespace infera {

// The integer types a QuantizeLinear may produce / a DequantizeLinear may read (int32 is
// DequantizeLinear-only: biases).
bool quant_type(DataType dt);
int64_t quant_min(DataType dt);
int64_t quant_max(DataType dt);

// Where the scale (and zero point) of each element of x comes from.
struct QuantLayout {
  bool per_tensor = true;
  int64_t len = 1;    // x dims[axis]
  int64_t inner = 1;  // product of x dims after axis
  int64_t block = 0;  // > 0: blocked along axis
  int64_t nblocks = 1;
  int64_t index(int64_t i) const {
    if (per_tensor) return 0;
    const int64_t a = (i / inner) % len;
    if (block <= 0) return a;
    const int64_t o = i / (inner * len), in = i % inner;
    return (o * nblocks + a / block) * inner + in;
  }
};

// Resolves how a scale/zero point of dims p_dims applies to x: a scalar (or one value) is per
// tensor; else 1-D of x[axis] values (per axis, allow_axis), or with block > 0 the dims of x
// with dims[axis] = ceil(x[axis] / block). Errors name `what` and the dims found.
Status quant_layout_resolve(const std::vector<int64_t>& x_dims, const std::vector<int64_t>& p_dims, int64_t axis,
                            int64_t block, bool allow_axis, const char* what, QuantLayout& out);

// Reads a float32/float16/bfloat16 tensor as floats (scales); false for other dtypes.
bool read_float_values(const TensorRef& t, std::vector<float>& out);
bool read_float_values(const Tensor& t, std::vector<float>& out);
// Reads an integer tensor (zero points, any integer dtype) as int64 values.
bool read_int_values(const TensorRef& t, std::vector<int64_t>& out);

// Scales must be positive and finite: a zero scale divides by zero, a negative one flips signs
// that no int8 kernel reproduces. Returns an error naming `what` and the first bad value.
Status check_scales(const std::vector<float>& s, const char* what);
// Zero points must lie in the range of `dt` (they do when stored in dt itself; this catches an
// int32 bias zero point that is not 0 and values given in a wider type).
Status check_zero_points(const std::vector<int64_t>& zp, DataType dt, const char* what);

// Round half to even then saturate to [lo, hi] (the ONNX rule; NaN maps to 0 like rint->int).
inline int64_t quant_round_clamp(double v, int64_t lo, int64_t hi) {
  if (!(v == v)) return 0;
  double r = std::nearbyint(v);
  if (r < static_cast<double>(lo)) return lo;
  if (r > static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(r);
}

// Element i of an integer tensor as int64, and stores into one (after saturation).
int64_t int_at(DataType dt, const void* p, int64_t i);
void int_store(DataType dt, void* p, int64_t i, int64_t v);
// Element i of a float32/float16/bfloat16/int32 tensor as float, and stores into a float one.
float float_at(DataType dt, const void* p, int64_t i);
void float_store(DataType dt, void* p, int64_t i, float v);
bool float_storage(DataType dt);  // float32, float16, bfloat16

struct ConvAttrs;
// The reference integer convolution: acc[n, m, o...] = sum (X - xzp)(W - wzp[m]) (wzp of 1 or M
// values), exact in int64 and stored as int32; X, W int8/uint8 of rank 3-5, pads and output dims
// as conv_resolve gives them.
void conv_int_ref(const TensorRef& X, int64_t xzp, const TensorRef& W, const std::vector<int64_t>& wzp,
                  const std::vector<int64_t>& pads, const ConvAttrs& a, const std::vector<int64_t>& yd,
                  std::vector<int32_t>& acc, int nt);

}  // namespace infera
