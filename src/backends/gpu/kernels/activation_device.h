// The activation table (ops/activation.h) as device code: the same kinds (mirrored values, checked
// below), the same formulas and the same NaN rule as activation_ref, evaluated in fp32.
#pragma once

#include <cstdint>

#include "backends/gpu/arch.h"
#include "ops/activation.h"

namespace infera::gpu {

// Device code switches on plain ints; these are ActKind's values, asserted equal.
enum ActCode : int {
  kActIdentity = 0,
  kActRelu = 1,
  kActLeakyRelu = 2,
  kActSigmoid = 3,
  kActTanh = 4,
  kActClip = 5,
  kActHardSigmoid = 6,
  kActHardSwish = 7,
  kActElu = 8,
  kActSelu = 9,
  kActCelu = 10,
  kActSoftplus = 11,
  kActSoftsign = 12,
  kActSwish = 13,
  kActMish = 14,
  kActGelu = 15,
  kActGeluTanh = 16,
  kActThresholdedRelu = 17,
  kActCount = 18,
};
#define INFERA_GPU_ACT_SAME(code, kind) static_assert(int(code) == int(ActKind::kind), #kind " value differs")
INFERA_GPU_ACT_SAME(kActIdentity, kIdentity);
INFERA_GPU_ACT_SAME(kActRelu, kRelu);
INFERA_GPU_ACT_SAME(kActLeakyRelu, kLeakyRelu);
INFERA_GPU_ACT_SAME(kActSigmoid, kSigmoid);
INFERA_GPU_ACT_SAME(kActTanh, kTanh);
INFERA_GPU_ACT_SAME(kActClip, kClip);
INFERA_GPU_ACT_SAME(kActHardSigmoid, kHardSigmoid);
INFERA_GPU_ACT_SAME(kActHardSwish, kHardSwish);
INFERA_GPU_ACT_SAME(kActElu, kElu);
INFERA_GPU_ACT_SAME(kActSelu, kSelu);
INFERA_GPU_ACT_SAME(kActCelu, kCelu);
INFERA_GPU_ACT_SAME(kActSoftplus, kSoftplus);
INFERA_GPU_ACT_SAME(kActSoftsign, kSoftsign);
INFERA_GPU_ACT_SAME(kActSwish, kSwish);
INFERA_GPU_ACT_SAME(kActMish, kMish);
INFERA_GPU_ACT_SAME(kActGelu, kGelu);
INFERA_GPU_ACT_SAME(kActGeluTanh, kGeluTanh);
INFERA_GPU_ACT_SAME(kActThresholdedRelu, kThresholdedRelu);
INFERA_GPU_ACT_SAME(kActCount, kCount);
#undef INFERA_GPU_ACT_SAME

// Trivially copyable kernel argument.
struct ActParams {
  int kind = kActIdentity;
  float alpha = 0.f, beta = 0.f;
};
inline ActParams act_params(const Activation& a) { return {static_cast<int>(a.kind), a.alpha, a.beta}; }

__device__ inline float act_sigmoid(float v) {
  if (v >= 0.f) return 1.f / (1.f + expf(-v));
  const float e = expf(v);
  return e / (1.f + e);
}
__device__ inline float act_clamp01(float v) {
  v = v < 0.f ? 0.f : v;  // comparisons with NaN are false: NaN stays
  return v > 1.f ? 1.f : v;
}
__device__ inline float act_softplus(float x) { return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }

INFERA_GPU_ACT_FN float act_apply(const ActParams& a, float x) {
  const float al = a.alpha, be = a.beta;
  switch (a.kind) {
    case kActIdentity: return x;
    case kActRelu: return x < 0.f ? 0.f : x;
    case kActLeakyRelu: return x < 0.f ? al * x : x;
    case kActSigmoid: return act_sigmoid(x);
    case kActTanh: return tanhf(x);
    case kActClip: {
      const float v = x < al ? al : x;
      return v > be ? be : v;
    }
    case kActHardSigmoid: return act_clamp01(al * x + be);
    case kActHardSwish: return x * act_clamp01(x / 6.f + 0.5f);
    case kActElu: return x < 0.f ? al * (expf(x) - 1.f) : x;
    case kActSelu: return x <= 0.f ? be * (al * expf(x) - al) : be * x;
    case kActCelu: return x < 0.f ? al * (expf(x / al) - 1.f) : x;  // NaN stays NaN, as the reference
    case kActSoftplus: return act_softplus(x);
    case kActSoftsign: return x / (1.f + fabsf(x));
    case kActSwish: return x * act_sigmoid(al * x);
    case kActMish: return x * tanhf(act_softplus(x));
    case kActGelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752440f));
    case kActGeluTanh: return 0.5f * x * (1.f + tanhf(0.79788456080286535588f * (x + 0.044715f * x * x * x)));
    case kActThresholdedRelu: return x > al ? x : (x != x ? x : 0.f);
    default: return x;
  }
}

// The activation on N values, with the kind switched on once (epilogues: identity and ReLU, by
// far the most common, take a branch-free path; the rest go through act_apply).
template <int N>
__device__ inline void act_apply_n(const ActParams& a, float* v) {
  if (a.kind == kActIdentity) return;
  if (a.kind == kActRelu) {
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = v[j] < 0.f ? 0.f : v[j];  // NaN stays NaN, as in act_apply
    return;
  }
#pragma unroll
  for (int j = 0; j < N; ++j) v[j] = act_apply(a, v[j]);
}

}  // namespace infera::gpu
