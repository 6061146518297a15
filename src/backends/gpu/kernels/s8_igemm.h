// Internal: what the int8 implicit-GEMM kernels share (s8_conv_nhwc_implicit_gemm_mma.cu, the
// mma.sync / MFMA / sdot4 one, and s8_conv_nhwc_implicit_gemm_wgmma_sm90.cu): the requantizing
// epilogue, bit-exact with the reference (kernels.h; ops/quant_conv.h's QRequant, float32), the
// loaders' "halves" view of the int8 tensors, and the fill of the epilogue's parameters.
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
  // The short float path (requant_store8), set by make_qepi from the host's bounds (QConvTensors::
  // acc_bound, sy_max): fast = acc - x_zp wsum + bias is exact in int32 and no value can overflow a
  // float (else every element takes requant_value); small = that sum is at most 2^22, so it turns
  // into a float by the magic constant instead of a conversion instruction (a quarter of the FMA
  // rate on sm_80 / sm_90).
  int fast = 0, small = 0;
  // QRequant's floats, rounded once on the host: zs_f = z_scale * inv_y; alpha_f (LeakyRelu);
  // clip_lo_f / clip_hi_f = alpha / beta * inv_y (Clip); lo_u / hi_u = lo / hi - y_zp (the
  // saturation bounds before the zero point); magic_zp = kMagic + y_zp; z_off = the float of a
  // residual byte's magic form minus z_zp; z_flip: 0x80 in each byte for an int8 residual (its
  // bytes turned into byte + 128).
  float zs_f = 0, alpha_f = 0, clip_lo_f = 0, clip_hi_f = 0;
  float lo_u = -128, hi_u = 127, magic_zp = 0, z_off = 0;
  unsigned z_flip = 0;
};

// 1.5 * 2^23: the float kMagic + i has the bit pattern kMagicBits + i for every integer |i| <= 2^22,
// and adding kMagic to a float of magnitude <= 2^22 rounds it to an integer, to nearest and ties to
// even (the mantissa's last bit is worth 1 in [2^23, 2^24)). Both directions of int <-> float
// without the conversion instructions.
inline constexpr float kMagic = 12582912.f;
inline constexpr int kMagicBits = 0x4B400000;

// The per-channel parameters of 8 consecutive channels nn.. in registers: an epilogue thread
// requantizes the same 8 channels for every row it visits (its vector index modulo the row's), so
// they are read once per tile instead of once per element.
struct QChan8 {
  float sy[8];  // scale[n] * inv_y, rounded to float
  int cb[8];    // bias[n] - x_zp * wsum[n]: acc + cb is the reference's acc - x_zp wsum + bias
};

// Products rounded one at a time (no contraction into a fused multiply-add with a later add), and
// the one fused multiply-add QRequant has: as on the host reference.
#if defined(INFERA_GPU_CUDA)
__device__ inline float fmul_rn(float a, float b) { return __fmul_rn(a, b); }
#else
__device__ inline float fmul_rn(float a, float b) {
#pragma clang fp contract(off)
  return a * b;
}
#endif
__device__ inline float fma_rn(float a, float b, float c) { return fmaf(a, b, c); }

// QRequant's activation on u (q.act is uniform: one branch for all N).
template <int N>
__device__ inline void float_path_act(const QEpi& q, float (&u)[N]) {
  switch (q.act) {
    case kActRelu:
#pragma unroll
      for (int j = 0; j < N; ++j) u[j] = u[j] < 0.f ? 0.f : u[j];
      break;
    case kActLeakyRelu:
#pragma unroll
      for (int j = 0; j < N; ++j) u[j] = u[j] < 0.f ? fmul_rn(u[j], q.alpha_f) : u[j];
      break;
    case kActClip:
#pragma unroll
      for (int j = 0; j < N; ++j) {
        u[j] = u[j] < q.clip_lo_f ? q.clip_lo_f : u[j];
        u[j] = u[j] > q.clip_hi_f ? q.clip_hi_f : u[j];
      }
      break;
    default: break;
  }
}

// The reference's requantization (QRequant) of one element of channel n given the residual's value
// zv (has_z: there is one), for any accumulator: the sum in double (exact), NaN -> 0.
__device__ inline int requant_value(const QEpi& q, int acc, int n, bool has_z, int zv) {
  if (q.wsum) acc -= q.x_zp * q.wsum[n];  // int32 wrap-around, as the reference's int32 sums
  const double a = static_cast<double>(acc) + (q.bias ? static_cast<double>(q.bias[n]) : 0.0);  // exact
  float u[1] = {fmul_rn(__double2float_rn(a), __double2float_rn(q.scale[n] * q.inv_y))};
  if (has_z) u[0] = fma_rn(static_cast<float>(zv - q.z_zp), q.zs_f, u[0]);
  float_path_act<1>(q, u);
  const double r = rint(static_cast<double>(u[0]) + static_cast<double>(q.y_zp));  // exact sum
  if (!(r == r)) return 0;
  return r < q.lo ? q.lo : r > q.hi ? q.hi : static_cast<int>(r);
}

// The same for output pixel m, its residual read from q.z.
__device__ inline int requant(const QEpi& q, int acc, int n, int m) {
  int zv = 0;
  if (q.z) {
    const int64_t zi = m * q.z_ps + n;
    zv = q.z_u8 ? int(reinterpret_cast<const uint8_t*>(q.z)[zi]) : int(q.z[zi]);
  }
  return requant_value(q, acc, n, q.z != nullptr, zv);
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
  // |acc - x_zp wsum + bias| <= acc_bound (the host's bound from the weights and bias): in int32
  // that sum is then exact whatever the order (wrap-around cancels), and equal to the reference's.
  // No float can overflow: |u| <= acc_bound sy_max + 510 |zs| (a residual's |z - z_zp| <= 510),
  // times max(1, |alpha|) after a LeakyRelu, far under FLT_MAX; so no Inf, no NaN on the short path.
  q.zs_f = static_cast<float>(q.z_scale * q.inv_y);
  q.alpha_f = static_cast<float>(q.alpha);
  const double umax = (static_cast<double>(t.acc_bound) * t.sy_max + 510.0 * std::fabs(double(q.zs_f))) *
                      std::fmax(1.0, std::fabs(double(q.alpha_f)));
  q.fast = t.acc_bound >= 0 && t.acc_bound < (int64_t{1} << 31) && t.sy_max >= 0.f && umax < 1e37;
  q.small = q.fast && t.acc_bound <= (int64_t{1} << 22);
  q.clip_lo_f = static_cast<float>(q.alpha * q.inv_y);
  q.clip_hi_f = static_cast<float>(q.beta * q.inv_y);
  q.lo_u = static_cast<float>(q.lo - q.y_zp);
  q.hi_u = static_cast<float>(q.hi - q.y_zp);
  q.magic_zp = kMagic + static_cast<float>(q.y_zp);  // exact: an integer under 2^24
  q.z_flip = s.z_uint8 ? 0u : 0x80808080u;
  q.z_off = kMagic + static_cast<float>((s.z_uint8 ? 0 : 128) + q.z_zp);
  return q;
}

__device__ inline QChan8 load_chan8(const QEpi& q, int kn, int nn) {
  QChan8 c;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int n = nn + j < kn ? nn + j : kn - 1;  // lanes past kn are never stored
    c.sy[j] = static_cast<float>(q.scale[n] * q.inv_y);
    // int32 wrap-around, as the reference's sums; exact in the sum with acc (QEpi::fast).
    c.cb[j] = static_cast<int>(static_cast<unsigned>(q.bias ? q.bias[n] : 0) -
                               static_cast<unsigned>(q.wsum ? q.x_zp * q.wsum[n] : 0));
  }
  return c;
}

// The low bytes of a, b, c, d (their other bytes are don't-cares) packed into one word, a's lowest.
__device__ inline unsigned pack4_low_bytes(unsigned a, unsigned b, unsigned c, unsigned d) {
  return __byte_perm(__byte_perm(a, b, 0x0040u), __byte_perm(c, d, 0x0040u), 0x5410u);
}

// The saturation and rounding of N values u (QRequant's last step, after the activation): bits[j]'s
// low byte is y = rint(u + y_zp) saturated. Saturation first (rint commutes with clamping to integer
// bounds), then the magic constant rounds the exact sum u + y_zp half to even. u finite (QEpi::fast).
template <int N>
__device__ inline void float_path_round(const QEpi& q, const float (&u)[N], unsigned (&bits)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j) bits[j] = __float_as_uint(fminf(fmaxf(u[j], q.lo_u), q.hi_u) + q.magic_zp);
}

// Requantizes 8 consecutive channels nn.. of output pixel m and stores them (one 8-byte store
// when aligned and whole); the residual's 8 bytes come in one load likewise, from zs when given (a
// copy in shared memory, 8-byte aligned; its bytes past kn are never stored), else from q.z.
//
//
// QRequant's float arithmetic, every step an FMA-pipe instruction (the magic constant does the
// conversions): a = acc + cb (exact int32), u = float(a) * sy, with a residual u = fma(float(z -
// z_zp), zs, u), the activation, then saturation and rounding. Without the host's bounds
// (QEpi::fast 0) every element takes requant_value.
__device__ inline void requant_store8(const QEpi& q, const QChan8& c, int kn, int m, int nn, const int* acc,
                                      const int8_t* zs = nullptr) {
  const int nvalid = kn - nn < 8 ? kn - nn : 8;
  unsigned zw[2] = {0u, 0u};  // the residual's 8 bytes, little-endian
  if (q.z) {
    const int8_t* zp = q.z + m * q.z_ps + nn;
    if (zs) {
      const uint2 w = *reinterpret_cast<const uint2*>(zs);
      zw[0] = w.x, zw[1] = w.y;
    } else if (nvalid == 8 && reinterpret_cast<uintptr_t>(zp) % 8 == 0) {
      const uint2 w = *reinterpret_cast<const uint2*>(zp);
      zw[0] = w.x, zw[1] = w.y;
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (j < nvalid) zw[j / 4] |= unsigned(static_cast<uint8_t>(zp[j])) << (8 * (j % 4));
    }
  }
  unsigned out[8];
  if (q.fast) {
    float u[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int a = static_cast<int>(static_cast<unsigned>(acc[j]) + static_cast<unsigned>(c.cb[j]));
      const float fa = q.small ? __int_as_float(kMagicBits + a) - kMagic : static_cast<float>(a);
      u[j] = fmul_rn(fa, c.sy[j]);
    }
    if (q.z) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        // byte + 128 (int8) or byte (uint8) into the low mantissa bits of kMagic: exact.
        const unsigned bits = __byte_perm(zw[j / 4] ^ q.z_flip, static_cast<unsigned>(kMagicBits), 0x7640u | (j % 4));
        u[j] = fma_rn(__uint_as_float(bits) - q.z_off, q.zs_f, u[j]);  // float(z - z_zp): exact
      }
    }
    float_path_act(q, u);
    float_path_round(q, u, out);
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) out[j] = j < nvalid ? static_cast<unsigned>(requant(q, acc[j], nn + j, m)) : 0u;
  }
  int8_t* y = q.y + m * q.y_ps + nn;
  if (q.vec_out && nvalid == 8) {
    *reinterpret_cast<uint2*>(y) =
        make_uint2(pack4_low_bytes(out[0], out[1], out[2], out[3]), pack4_low_bytes(out[4], out[5], out[6], out[7]));
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (j < nvalid) y[j] = static_cast<int8_t>(out[j] & 0xffu);
  }
}

// The Hopper wgmma variants (s8_conv_nhwc_implicit_gemm_wgmma_sm90.cu): whether id is one, the
// shared memory it needs, and its launch (vector gathers only: C % 16 == 0).
bool s8_wgmma_is_variant(KernelId id);
size_t s8_wgmma_smem_bytes(KernelId id);
Status s8_wgmma_run(KernelId id, IgemmParams p, const QEpi& q, gpuStream_t stream);

}  // namespace infera::gpu
