// The fused pointwise kernel: one pass over an NHWC tensor running a short chain of binary ops
// (with full, per-channel, per-image-channel or scalar broadcast operands) and activations from
// the one table, so SE scales, residual adds, BatchNorm-as-affine and activation chains cost one
// read of each input and one write. Also Cast and the Concat copy (a chain of no steps).
// 8 channels per thread when every operand allows 16-byte (fp16) / 2x16-byte (fp32) accesses.
#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/elem.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

struct PwDevOperand {
  const void* data;
  int f16;
  int64_t offset, sn, shw, sc;
};
struct PwDevStep {
  int op, operand, first;
  ActParams act;
};
struct PwParams {
  int n, hw, c;
  PwDevOperand in[kMaxPwInputs];
  int num_steps;
  PwDevStep steps[kMaxPwSteps];
  void* out;
  int out_f16;
  int64_t out_ps, out_off;
};

template <int VEC>
__device__ inline void load_operand(const PwDevOperand& o, int ni, int hwi, int c0, float* v) {
  const int64_t base = o.offset + ni * o.sn + hwi * o.shw;
  if (VEC > 1 && o.sc == 0) {
    const float s = o.f16 ? to_f(static_cast<const uint16_t*>(o.data)[base]) : static_cast<const float*>(o.data)[base];
#pragma unroll
    for (int j = 0; j < VEC; ++j) v[j] = s;
  } else if (VEC > 1) {  // sc == 1, aligned (checked by the launcher)
    if (o.f16)
      load_vec<uint16_t, VEC>(static_cast<const uint16_t*>(o.data) + base + c0, v);
    else
      load_vec<float, VEC>(static_cast<const float*>(o.data) + base + c0, v);
  } else {
    const int64_t i = base + c0 * o.sc;
    v[0] = o.f16 ? to_f(static_cast<const uint16_t*>(o.data)[i]) : static_cast<const float*>(o.data)[i];
  }
}

__device__ inline float binary(int op, float a, float b) {
  switch (op) {
    case static_cast<int>(PwOp::kAdd): return a + b;
    case static_cast<int>(PwOp::kSub): return a - b;
    case static_cast<int>(PwOp::kMul): return a * b;
    case static_cast<int>(PwOp::kDiv): return a / b;
    case static_cast<int>(PwOp::kMax): return (a > b || a != a) ? a : b;  // NaN propagates
    case static_cast<int>(PwOp::kMin): return (a < b || a != a) ? a : b;
    default: return a;
  }
}

template <int VEC>
__global__ void __launch_bounds__(256) pointwise_kernel(const PwParams p) {
  const int cv = p.c / VEC;
  const int64_t total = static_cast<int64_t>(p.n) * p.hw * cv;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c0 = static_cast<int>(idx % cv) * VEC;
    const int64_t pix = idx / cv;
    const int hwi = static_cast<int>(pix % p.hw), ni = static_cast<int>(pix / p.hw);
    float v[VEC];
    load_operand<VEC>(p.in[0], ni, hwi, c0, v);
    for (int s = 0; s < p.num_steps; ++s) {
      const PwDevStep& st = p.steps[s];
      if (st.op == static_cast<int>(PwOp::kAct)) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) v[j] = act_apply(st.act, v[j]);
      } else {
        float o[VEC];
        load_operand<VEC>(p.in[st.operand], ni, hwi, c0, o);
#pragma unroll
        for (int j = 0; j < VEC; ++j) v[j] = st.first ? binary(st.op, o[j], v[j]) : binary(st.op, v[j], o[j]);
      }
    }
    const int64_t oi = p.out_off + pix * p.out_ps + c0;
    if (p.out_f16)
      store_vec<uint16_t, VEC>(static_cast<uint16_t*>(p.out) + oi, v);
    else
      store_vec<float, VEC>(static_cast<float*>(p.out) + oi, v);
  }
}

constexpr int kVec = 8;

bool operand_vec_ok(const PwDevOperand& o) {
  if (o.sc == 0) return true;
  return o.sc == 1 && o.offset % kVec == 0 && o.sn % kVec == 0 && o.shw % kVec == 0 && aligned16(o.data);
}

}  // namespace

PwOperand pw_full(const void* data, DType t, int hw, int c, int64_t pixel_stride, int64_t c_offset) {
  const int64_t ps = pixel_stride ? pixel_stride : c;
  return {data, t, c_offset, hw * ps, ps, 1};
}
PwOperand pw_per_channel(const void* data, DType t) { return {data, t, 0, 0, 0, 1}; }
PwOperand pw_per_image_channel(const void* data, DType t, int c) { return {data, t, 0, c, 0, 1}; }
PwOperand pw_scalar(const void* data, DType t) { return {data, t, 0, 0, 0, 0}; }

Status pointwise(const PointwiseDesc& d, gpuStream_t stream) {
  if (d.n < 1 || d.hw < 1 || d.c < 1) return {"pointwise: N, H*W and C must be positive"};
  if (d.num_inputs < 1 || d.num_inputs > kMaxPwInputs) return {"pointwise: 1 to 4 inputs"};
  if (d.num_steps < 0 || d.num_steps > kMaxPwSteps) return {"pointwise: at most 8 steps"};
  if (!d.out.data) return {"pointwise: null output"};
  PwParams p{};
  p.n = d.n, p.hw = d.hw, p.c = d.c;
  for (int i = 0; i < d.num_inputs; ++i) {
    const PwOperand& o = d.in[i];
    if (!o.data) return {"pointwise: null input"};
    if (o.stride_c < 0 || o.stride_hw < 0 || o.stride_n < 0 || o.offset < 0) return {"pointwise: negative stride"};
    p.in[i] = {o.data, o.dtype == DType::kF16, o.offset, o.stride_n, o.stride_hw, o.stride_c};
  }
  p.num_steps = d.num_steps;
  for (int s = 0; s < d.num_steps; ++s) {
    const PwStep& st = d.steps[s];
    if (st.op != PwOp::kAct && (st.operand < 0 || st.operand >= d.num_inputs))
      return {"pointwise: step operand out of range"};
    if (static_cast<int>(st.op) > static_cast<int>(PwOp::kAct)) return {"pointwise: unknown op"};
    p.steps[s] = {static_cast<int>(st.op), st.operand, st.operand_first ? 1 : 0, act_params(st.act)};
  }
  p.out = d.out.data;
  p.out_f16 = d.out_dtype == DType::kF16;
  p.out_ps = d.out.pixel_stride ? d.out.pixel_stride : d.c;
  p.out_off = d.out.c_offset;
  if (p.out_ps < p.out_off + d.c) return {"pointwise: output pixel stride smaller than offset + C"};
  bool vec = d.c % kVec == 0 && p.out_ps % kVec == 0 && p.out_off % kVec == 0 && aligned16(p.out);
  for (int i = 0; i < d.num_inputs && vec; ++i) vec = operand_vec_ok(p.in[i]);
  const int64_t elems = static_cast<int64_t>(d.n) * d.hw * d.c;
  if (vec)
    pointwise_kernel<kVec><<<grid_for(elems / kVec, 256), 256, 0, stream>>>(p);
  else
    pointwise_kernel<1><<<grid_for(elems, 256), 256, 0, stream>>>(p);
  GPU_LAUNCH_CHECK();
  return {};
}

Status cast(DType from, DType to, int64_t count, const void* x, void* y, gpuStream_t stream) {
  if (count < 1) return {"cast: count must be positive"};
  PointwiseDesc d;
  const int c = count % kVec == 0 ? kVec : 1;
  if (count / c > 0x7fffffff) return {"cast: too many elements"};
  d.n = 1, d.hw = static_cast<int>(count / c), d.c = c;
  d.in[0] = pw_full(x, from, d.hw, c);
  d.out_dtype = to;
  d.out.data = y;
  return pointwise(d, stream);
}

Status batchnorm_affine(DType dtype, int n, int hw, int c, InNhwc x, const float* scale, const float* shift, OutNhwc y,
                        const Activation& act, gpuStream_t stream) {
  if (!scale || !shift) return {"batchnorm: null scale or shift"};
  PointwiseDesc d;
  d.n = n, d.hw = hw, d.c = c;
  d.in[0] = pw_full(x.data, dtype, hw, c, x.pixel_stride, x.c_offset);
  d.in[1] = pw_per_channel(scale, DType::kF32);
  d.in[2] = pw_per_channel(shift, DType::kF32);
  d.num_inputs = 3;
  d.steps[0] = {PwOp::kMul, 1, false, {}};
  d.steps[1] = {PwOp::kAdd, 2, false, {}};
  d.num_steps = 2;
  if (!act.is_identity()) d.steps[d.num_steps++] = {PwOp::kAct, 0, false, act};
  d.out_dtype = dtype;
  d.out = y;
  return pointwise(d, stream);
}

Status concat_copy(DType dtype, int n, int hw, int c, InNhwc x, OutNhwc y, gpuStream_t stream) {
  PointwiseDesc d;
  d.n = n, d.hw = hw, d.c = c;
  d.in[0] = pw_full(x.data, dtype, hw, c, x.pixel_stride, x.c_offset);
  d.out_dtype = dtype;
  d.out = y;
  return pointwise(d, stream);
}

}  // namespace infera::gpu
