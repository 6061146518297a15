// Activations on 16 lanes of AVX-512, for the epilogues of our conv loops (dnnl_smallspatial_conv.cpp),
// where a scalar apply_activation per stored 16-lane tile doubled a 192->1152 1x1 on 7x7 with SiLU
// (EfficientNet-B0's 320->1280 + SiLU: 0.715 -> 0.506 ms with act16, Zen 4, 2 threads).
// Op for op the float paths of apply_activation (ops/activation.cpp): the same constants, each
// product, sum and quotient rounded on its own in the same order (the tree builds for x86-64, so
// apply_activation has no FMA; the _round_ intrinsics keep the compiler from contracting these), so
// the results are bit-identical to it, NaN kept (the unit tests check both).
#pragma once

#include <immintrin.h>

#include "ops/activation.h"

namespace infera::cpu {

// The kinds act16 computes; the others go through apply_activation.
constexpr bool act16_has(ActKind k) {
  switch (k) {
    case ActKind::kIdentity:
    case ActKind::kRelu:
    case ActKind::kLeakyRelu:
    case ActKind::kClip:
    case ActKind::kSigmoid:
    case ActKind::kHardSigmoid:
    case ActKind::kHardSwish:
    case ActKind::kSwish: return true;
    default: return false;
  }
}

#define INFERA_ACT16 __attribute__((target("avx512f"), always_inline)) inline

namespace act16_detail {

constexpr int kCur = _MM_FROUND_CUR_DIRECTION;
INFERA_ACT16 __m512 mul(__m512 a, __m512 b) { return _mm512_mul_round_ps(a, b, kCur); }
INFERA_ACT16 __m512 add(__m512 a, __m512 b) { return _mm512_add_round_ps(a, b, kCur); }
INFERA_ACT16 __m512 sub(__m512 a, __m512 b) { return _mm512_sub_round_ps(a, b, kCur); }
INFERA_ACT16 __m512 div(__m512 a, __m512 b) { return _mm512_div_round_ps(a, b, kCur); }
INFERA_ACT16 __m512 c(float v) { return _mm512_set1_ps(v); }

// activation.cpp's exp_clamped. vmaxps / vminps return their second operand when either is NaN:
// x as the second keeps NaN, as the scalar's x < lo ? lo : x does.
INFERA_ACT16 __m512 exp_clamped(__m512 x) {
  x = _mm512_max_ps(c(-87.3365f), x);
  x = _mm512_min_ps(c(88.3762f), x);
  const __m512 magic = c(12582912.f);
  const __m512 n = sub(add(mul(x, c(1.44269504088896341f)), magic), magic);
  __m512 r = sub(x, mul(n, c(0.693359375f)));
  r = sub(r, mul(n, c(-2.12194440e-4f)));
  __m512 p = c(1.9875691500e-4f);
  p = add(mul(p, r), c(1.3981999507e-3f));
  p = add(mul(p, r), c(8.3334519073e-3f));
  p = add(mul(p, r), c(4.1665795894e-2f));
  p = add(mul(p, r), c(1.6666665459e-1f));
  p = add(mul(p, r), c(5.0000001201e-1f));
  p = add(add(mul(p, mul(r, r)), r), c(1.f));
  const __m512i e = _mm512_maskz_cvttps_epi32(_mm512_cmp_ps_mask(n, n, _CMP_ORD_Q), n);  // NaN: 0
  return mul(p, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(127)), 23)));
}

// activation.cpp's sigmoid_fast: e = exp(-|x|), r = 1 / (1 + e), x >= 0 ? r : e r.
INFERA_ACT16 __m512 sigmoid(__m512 x) {
  const __m512 neg_abs = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
  const __m512 e = exp_clamped(neg_abs);
  const __m512 r = div(c(1.f), add(c(1.f), e));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ), mul(e, r), r);
}

// v < 0 ? 0 : v, then v > 1 ? 1 : v (NaN kept).
INFERA_ACT16 __m512 clamp01(__m512 v) { return _mm512_min_ps(c(1.f), _mm512_max_ps(_mm512_setzero_ps(), v)); }

}  // namespace act16_detail

// a(x) on 16 lanes, for a.kind with act16_has (else x unchanged).
INFERA_ACT16 __m512 act16(const Activation& a, __m512 x) {
  using namespace act16_detail;
  switch (a.kind) {
    case ActKind::kRelu: return _mm512_max_ps(_mm512_setzero_ps(), x);  // x < 0 ? 0 : x
    case ActKind::kLeakyRelu:                                           // x < 0 ? a x : x
      return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), x, c(a.alpha));
    case ActKind::kClip: return _mm512_min_ps(c(a.beta), _mm512_max_ps(c(a.alpha), x));  // (x < lo ? lo : x) > hi ..
    case ActKind::kSigmoid: return sigmoid(x);
    case ActKind::kHardSigmoid: return clamp01(add(mul(c(a.alpha), x), c(a.beta)));
    case ActKind::kHardSwish: return mul(x, clamp01(add(mul(x, c(1.f / 6)), c(0.5f))));
    case ActKind::kSwish: return mul(x, sigmoid(mul(c(a.alpha), x)));
    default: return x;
  }
}

#undef INFERA_ACT16

}  // namespace infera::cpu
