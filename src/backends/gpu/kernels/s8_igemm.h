// Internal: what the int8 implicit-GEMM kernels share (s8_conv_nhwc_implicit_gemm_mma.cu, the
// mma.sync / MFMA / sdot4 one, and s8_conv_nhwc_implicit_gemm_wgmma_sm90.cu): the requantizing
// epilogue, bit-exact with the reference (kernels.h; float arithmetic away from the rounding
// boundaries, the reference's double at them), the loaders' "halves" view of the int8
// tensors, and the fill of the epilogue's parameters.
#pragma once

#include <cmath>
#include <cstdint>

#include "backends/gpu/arch.h"
#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/igemm.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {

struct QEpi {
  int8_t* y = nullptr;
  int64_t y_ps = 0;
  const int8_t* z = nullptr;
  int64_t z_ps = 0;
  const int32_t* bias = nullptr;
  const double* scale = nullptr;
  const int32_t* wsum = nullptr;
  int x_zp = 0, z_zp = 0, y_zp = 0;
  double z_scale = 1.0, inv_y = 1.0;
  int lo = -128, hi = 127;
  int y_u8 = 0, z_u8 = 0, vec_out = 0;
  int act = kActIdentity;
  double alpha = 0, beta = 0;
  // The float forms of the scalars that requant_fast reads (make_qepi rounds them once, on the host:
  // the same values the device would get from the same double products).
  float zs_f = 0, alpha_f = 0, alpha_gain = 1, clip_lo_f = 0, clip_hi_f = 0, y_zp_f = 0, lo_f = -128, hi_f = 127;
};

// The per-channel parameters of 8 consecutive channels nn.. in registers: an epilogue thread
// requantizes the same 8 channels for every row it visits (its vector index modulo the row's), so
// they are read once per tile instead of once per element.
struct QChan8 {
  float sy[8];  // scale[n] * inv_y, rounded to float
  float fb[8];  // bias[n] as float
  int xzw[8];   // x_zp * wsum[n] (int32 wrap-around, as the reference's sums)
};

// Products and sums rounded one at a time: no fused multiply-add, as on the host reference.
#if defined(INFERA_GPU_CUDA)
__device__ inline double dmul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline double dadd(double a, double b) { return __dadd_rn(a, b); }
#else
__device__ inline double dmul(double a, double b) {
#pragma clang fp contract(off)
  return a * b;
}
__device__ inline double dadd(double a, double b) {
#pragma clang fp contract(off)
  return a + b;
}
#endif

__device__ inline int requant(const QEpi& q, int acc, int n, int m) {
  if (q.wsum) acc -= q.x_zp * q.wsum[n];  // int32 wrap-around, as the reference's int32 sums
  double v = dmul(dadd(static_cast<double>(acc), q.bias ? static_cast<double>(q.bias[n]) : 0.0), q.scale[n]);
  if (q.z) {
    const int64_t zi = m * q.z_ps + n;
    const int zv = q.z_u8 ? int(reinterpret_cast<const uint8_t*>(q.z)[zi]) : int(q.z[zi]);
    v = dadd(v, dmul(static_cast<double>(zv - q.z_zp), q.z_scale));
  }
  switch (q.act) {
    case kActRelu: v = v < 0.0 ? 0.0 : v; break;
    case kActLeakyRelu: v = v < 0.0 ? dmul(q.alpha, v) : v; break;
    case kActClip:
      v = v < q.alpha ? q.alpha : v;
      v = v > q.beta ? q.beta : v;
      break;
    default: break;
  }
  const double r = rint(dadd(dmul(v, q.inv_y), static_cast<double>(q.y_zp)));
  if (!(r == r)) return 0;
  return r < q.lo ? q.lo : r > q.hi ? q.hi : static_cast<int>(r);
}

// The loaders' view of the int8 tensors: pairs of int8 as one 16-bit element.
inline IgemmParams half_view(const QConvShape& s, const QConvTensors& t) {
  IgemmParams p;
  const int64_t xps = s.x_pixel_stride ? s.x_pixel_stride : s.c;
  p.x = reinterpret_cast<const uint16_t*>(static_cast<const int8_t*>(t.x.data) + s.x_c_offset);
  p.wt = reinterpret_cast<const uint16_t*>(t.w);
  p.n = s.n, p.h = s.h, p.w = s.w, p.c = s.c / 2;
  p.p = s.p(), p.q = s.q(), p.r = s.r, p.s = s.s;
  p.sh = s.stride_h, p.sw = s.stride_w, p.ph = s.pad_t, p.pw = s.pad_l, p.dh = s.dil_h, p.dw = s.dil_w;
  p.m = s.n * p.p * p.q;
  p.kn = s.k;
  p.kgemm = s.r * s.s * s.c / 2;
  p.x_ps = xps / 2;
  p.w_rs = p.kgemm;
  p.z = 1;
  p.kt = static_cast<int>(ceil_div(p.kgemm, arch::kTileK));
  return p;
}

inline bool act_supported(const Activation& a) {
  return a.kind == ActKind::kIdentity || a.kind == ActKind::kRelu || a.kind == ActKind::kLeakyRelu ||
         a.kind == ActKind::kClip;
}

// The epilogue's parameters of one launch (the int32 accumulators -> int8 / uint8 y).
inline QEpi make_qepi(const QConvShape& s, const QConvTensors& t) {
  QEpi q;
  q.y_ps = t.y.pixel_stride ? t.y.pixel_stride : s.k;
  q.y = static_cast<int8_t*>(t.y.data) + t.y.c_offset;
  q.vec_out = q.y_ps % 8 == 0 && reinterpret_cast<uintptr_t>(q.y) % 8 == 0;
  if (t.z.data) {
    q.z = static_cast<const int8_t*>(t.z.data) + t.z.c_offset;
    q.z_ps = t.z.pixel_stride ? t.z.pixel_stride : s.k;
  }
  q.bias = t.bias;
  q.scale = t.scale;
  q.wsum = s.x_zero_point ? t.wsum : nullptr;
  q.x_zp = s.x_zero_point;
  q.z_zp = t.z_zero_point;
  q.y_zp = t.y_zero_point;
  q.z_scale = t.z_scale;
  q.inv_y = t.inv_y;
  q.lo = s.y_uint8 ? 0 : -128;
  q.hi = s.y_uint8 ? 255 : 127;
  q.y_u8 = s.y_uint8;
  q.z_u8 = s.z_uint8;
  q.act = static_cast<int>(s.act.kind);
  q.alpha = static_cast<double>(s.act.alpha);
  q.beta = static_cast<double>(s.act.beta);
  q.zs_f = static_cast<float>(q.z_scale * q.inv_y);
  q.alpha_f = static_cast<float>(q.alpha);
  q.alpha_gain = std::fmax(1.f, std::fabs(q.alpha_f));
  q.clip_lo_f = static_cast<float>(q.alpha * q.inv_y);
  q.clip_hi_f = static_cast<float>(q.beta * q.inv_y);
  q.y_zp_f = static_cast<float>(q.y_zp);
  q.lo_f = static_cast<float>(q.lo);
  q.hi_f = static_cast<float>(q.hi);
  return q;
}

__device__ inline QChan8 load_chan8(const QEpi& q, int kn, int nn) {
  QChan8 c;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int n = nn + j < kn ? nn + j : kn - 1;  // lanes past kn are never stored
    c.sy[j] = static_cast<float>(q.scale[n] * q.inv_y);
    c.fb[j] = q.bias ? static_cast<float>(q.bias[n]) : 0.f;
    c.xzw[j] = q.wsum ? q.x_zp * q.wsum[n] : 0;
  }
  return c;
}

// The same result from float arithmetic where it is provably the same: u = the requantized value
// before rounding, computed in float in units of y_scale; its error is a few float ulps of the
// magnitudes summed (e), far inside the 2e-6 * (e + |r| + 1) band kept around each rounding
// boundary (x.5). Inside the band the double path of the reference decides: bit-exact either
// way, float speed nearly always (the band holds ~1e-5 of the values at |r| ~ 100).
__device__ inline int requant_fast(const QEpi& q, const QChan8& c, int j, int acc, int n, int zv, int m) {
  float u = (static_cast<float>(acc - c.xzw[j]) + c.fb[j]) * c.sy[j];
  float e = fabsf(u);
  if (q.z) {
    const float t = static_cast<float>(zv - q.z_zp) * q.zs_f;
    u += t;
    e += fabsf(t);
  }
  switch (q.act) {
    case kActRelu: u = u < 0.f ? 0.f : u; break;
    case kActLeakyRelu:
      if (u < 0.f) {
        u *= q.alpha_f;
        e *= q.alpha_gain;
      }
      break;
    case kActClip:
      u = u < q.clip_lo_f ? q.clip_lo_f : u;
      u = u > q.clip_hi_f ? q.clip_hi_f : u;
      e = fmaxf(e, fmaxf(fabsf(q.clip_lo_f), fabsf(q.clip_hi_f)));
      break;
    default: break;
  }
  const float r = u + q.y_zp_f;
  const float ri = rintf(r);
  // |r - ri| near 0.5: a rounding boundary, where the reference's double decides. Past hi + 1 or
  // below lo - 1 both saturate alike.
  const float band = 2e-6f * (e + fabsf(r) + 1.f);
  if (fabsf(r - ri) >= 0.5f - band && r <= q.hi_f + 1.f && r >= q.lo_f - 1.f) return requant(q, acc, n, m);
  const int v = static_cast<int>(ri);
  return v < q.lo ? q.lo : v > q.hi ? q.hi : v;
}

// Requantizes 8 consecutive channels nn.. of output pixel m and stores them (one 8-byte store
// when aligned and whole); the residual's 8 bytes come in one load likewise.
__device__ inline void requant_store8(const QEpi& q, const QChan8& c, int kn, int m, int nn, const int* acc) {
  const int nvalid = kn - nn < 8 ? kn - nn : 8;
  int zv[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (q.z) {
    const int8_t* zp = q.z + m * q.z_ps + nn;
    if (nvalid == 8 && reinterpret_cast<uintptr_t>(zp) % 8 == 0) {
      const uint2 w = *reinterpret_cast<const uint2*>(zp);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const unsigned b = ((j < 4 ? w.x : w.y) >> (8 * (j % 4))) & 0xffu;
        zv[j] = q.z_u8 ? static_cast<int>(b) : static_cast<int>(static_cast<int8_t>(b));
      }
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (j < nvalid) zv[j] = q.z_u8 ? int(reinterpret_cast<const uint8_t*>(zp)[j]) : int(zp[j]);
    }
  }
  int8_t* y = q.y + m * q.y_ps + nn;
  if (q.vec_out && nvalid == 8) {
    unsigned w[2] = {0, 0};
#pragma unroll
    for (int j = 0; j < 8; ++j)
      w[j / 4] |= (unsigned(requant_fast(q, c, j, acc[j], nn + j, zv[j], m)) & 0xffu) << (8 * (j % 4));
    *reinterpret_cast<uint2*>(y) = make_uint2(w[0], w[1]);
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (j < nvalid) y[j] = static_cast<int8_t>(requant_fast(q, c, j, acc[j], nn + j, zv[j], m));
  }
}

// The Hopper wgmma variants (s8_conv_nhwc_implicit_gemm_wgmma_sm90.cu): whether id is one, the
// shared memory it needs, and its launch (vector gathers only: C % 16 == 0).
bool s8_wgmma_is_variant(KernelId id);
size_t s8_wgmma_smem_bytes(KernelId id);
Status s8_wgmma_run(KernelId id, IgemmParams p, const QEpi& q, gpuStream_t stream);

}  // namespace infera::gpu
