// Internal: the pieces the fp16 implicit-GEMM kernels share (mma.sync / MFMA / dot2 in
// f16_conv_nhwc_implicit_gemm_mma.cu, wgmma in f16_conv_nhwc_implicit_gemm_wgmma_sm90.cu):
// the im2col loaders of the A (activation) and B (weight) tiles into swizzled shared memory,
// and the fused epilogue on 8 consecutive output channels.
#pragma once

#include "backends/gpu/arch.h"
#include "backends/gpu/kernels/igemm.h"

namespace infera::gpu {

// Rows of the fp32 staging tile that fit in the pipeline's shared memory (a power of two).
__host__ __device__ constexpr int slab_rows(int bm, int bn, int bytes) {
  int rows = bm;
  while (rows > 1 && rows * (bn + kIgemmSmemPad) * 4 > bytes) rows /= 2;
  return rows;
}

__device__ inline void unpack8(const uint4& u, float* v) {
  const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = arch::h2f(static_cast<uint16_t>(w[i] & 0xffffu));
    v[2 * i + 1] = arch::h2f(static_cast<uint16_t>(w[i] >> 16));
  }
}
__device__ inline uint4 pack8(const float* v) {
  unsigned w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) w[i] = unsigned(arch::f2h(v[2 * i])) | (unsigned(arch::f2h(v[2 * i + 1])) << 16);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// bias + residual + activation on 8 consecutive channels nn.. of pixel m in group/batch zi; store.
__device__ inline void epilogue_store8(const IgemmParams& p, int zi, int m, int nn, float* v) {
  const int nvalid = p.kn - nn < 8 ? p.kn - nn : 8;
  if (p.bias) {
    const float* b = p.bias + zi * p.bias_z + nn;
    if (p.vec_bias && nvalid == 8) {
      const float4 b0 = reinterpret_cast<const float4*>(b)[0], b1 = reinterpret_cast<const float4*>(b)[1];
      v[0] += b0.x, v[1] += b0.y, v[2] += b0.z, v[3] += b0.w, v[4] += b1.x, v[5] += b1.y, v[6] += b1.z, v[7] += b1.w;
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (j < nvalid) v[j] += b[j];
    }
  }
  if (p.res) {
    const uint16_t* r = p.res + m * p.res_ps + zi * p.res_z + nn;
    if (p.vec_res && nvalid == 8) {
      float t[8];
      unpack8(*reinterpret_cast<const uint4*>(r), t);
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] += t[j];
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (j < nvalid) v[j] += arch::h2f(r[j]);
    }
  }
  act_apply_n<8>(p.act, v);
  uint16_t* y = p.y + m * p.y_ps + zi * p.y_z + nn;
  if (p.vec_out && nvalid == 8) {
    *reinterpret_cast<uint4*>(y) = pack8(v);
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (j < nvalid) y[j] = arch::f2h(v[j]);
  }
}

// Loads the A tile (ROWS output pixels x BK k) of successive k-tiles into shared memory.
// Thread t owns chunk column t % (BK / 8) (8 halves of k) of rows t / (BK / 8) + i * NT / (BK / 8).
template <int ROWS, int NT, int MODE, int BK, class Swz>
struct ALoader {
  static constexpr int kCpr = BK / 8;  // 16-byte chunks per row
  static constexpr int kIters = ROWS * kCpr / NT;
  static_assert(kIters >= 1 && ROWS * kCpr % NT == 0, "A loader");
  const uint16_t* base[kIters];  // image (or, 1x1, pixel) base
  int ih0[kIters], iw0[kIters];
  bool valid[kIters];
  int kk, r, s, cc;  // k of this thread's chunk and its (r, s, c) decomposition

  __device__ void init(const IgemmParams& p, int zi, int m0, int kt0, int tid) {
    const uint16_t* x = p.x + zi * p.x_z;
    const int pq = p.p * p.q;
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int m = m0 + tid / kCpr + i * (NT / kCpr);
      valid[i] = m < p.m;
      const int mm = valid[i] ? m : 0;
      if (MODE == kIgemmVec1x1) {
        base[i] = x + mm * p.x_ps;
        ih0[i] = iw0[i] = 0;
      } else {
        const int img = mm / pq, rem = mm - img * pq, pp = rem / p.q, qq = rem - pp * p.q;
        base[i] = x + static_cast<int64_t>(img) * p.h * p.w * p.x_ps;
        ih0[i] = pp * p.sh - p.ph;
        iw0[i] = qq * p.sw - p.pw;
      }
    }
    kk = kt0 * BK + (tid % kCpr) * 8;
    const int rs = kk / p.c;
    cc = kk - rs * p.c;
    r = rs / p.s;
    s = rs - r * p.s;
  }

  __device__ void load(const IgemmParams& p, uint16_t* tile, int tid) {
    const int col = tid % kCpr;
    if (MODE == kIgemmScalar) {
      // Element gather: decompose each of the 8 k indices once, reuse for every row.
      int off[8];
      bool kv[8];
      int ihd[8], iwd[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int k = kk + e;
        kv[e] = k < p.kgemm;
        const int kc = kv[e] ? k : 0;
        const int rs = kc / p.c, c = kc - rs * p.c, rr = rs / p.s, ss = rs - rr * p.s;
        ihd[e] = rr * p.dh;
        iwd[e] = ss * p.dw;
        off[e] = c;
      }
#pragma unroll
      for (int i = 0; i < kIters; ++i) {
        const int row = tid / kCpr + i * (NT / kCpr);
        unsigned short v[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const int ih = ih0[i] + ihd[e], iw = iw0[i] + iwd[e];
          const bool ok = valid[i] && kv[e] && unsigned(ih) < unsigned(p.h) && unsigned(iw) < unsigned(p.w);
          v[e] = ok ? base[i][(static_cast<int64_t>(ih) * p.w + iw) * p.x_ps + off[e]] : 0;
        }
        *reinterpret_cast<uint4*>(tile + Swz::at(row, col)) =
            make_uint4(v[0] | (unsigned(v[1]) << 16), v[2] | (unsigned(v[3]) << 16), v[4] | (unsigned(v[5]) << 16),
                       v[6] | (unsigned(v[7]) << 16));
      }
      kk += BK;
      return;
    }
    const bool kvalid = kk < p.kgemm;
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int row = tid / kCpr + i * (NT / kCpr);
      const uint16_t* src;
      bool ok;
      if (MODE == kIgemmVec1x1) {
        ok = valid[i] && kvalid;
        src = base[i] + kk;
      } else {
        const int ih = ih0[i] + r * p.dh, iw = iw0[i] + s * p.dw;
        ok = valid[i] && kvalid && unsigned(ih) < unsigned(p.h) && unsigned(iw) < unsigned(p.w);
        src = base[i] + (static_cast<int64_t>(ih) * p.w + iw) * p.x_ps + cc;
      }
      arch::cp_async16(tile + Swz::at(row, col), ok ? src : p.x, ok);
    }
    kk += BK;
    if (MODE == kIgemmVec) {
      cc += BK;
      while (cc >= p.c) {
        cc -= p.c;
        if (++s == p.s) {
          s = 0;
          ++r;
        }
      }
    }
  }
};

// Loads the B tile (ROWS output channels x BK k) of the weights [kn][w_rs].
template <int ROWS, int NT, int MODE, int BK, class Swz>
struct BLoader {
  static constexpr int kCpr = BK / 8;
  static constexpr int kIters = ROWS * kCpr / NT;
  static_assert(kIters >= 1 && ROWS * kCpr % NT == 0, "B loader");
  const uint16_t* base[kIters];
  bool valid[kIters];
  int kk;

  __device__ void init(const IgemmParams& p, int zi, int n0, int kt0, int tid) {
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int n = n0 + tid / kCpr + i * (NT / kCpr);
      valid[i] = n < p.kn;
      base[i] = p.wt + zi * p.w_z + static_cast<int64_t>(valid[i] ? n : 0) * p.w_rs;
    }
    kk = kt0 * BK + (tid % kCpr) * 8;
  }

  __device__ void load(const IgemmParams& p, uint16_t* tile, int tid) {
    const int col = tid % kCpr;
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int row = tid / kCpr + i * (NT / kCpr);
      if (MODE == kIgemmScalar) {
        unsigned short v[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = valid[i] && kk + e < p.kgemm ? base[i][kk + e] : 0;
        *reinterpret_cast<uint4*>(tile + Swz::at(row, col)) =
            make_uint4(v[0] | (unsigned(v[1]) << 16), v[2] | (unsigned(v[3]) << 16), v[4] | (unsigned(v[5]) << 16),
                       v[6] | (unsigned(v[7]) << 16));
      } else {
        const bool ok = valid[i] && kk < p.kgemm;
        arch::cp_async16(tile + Swz::at(row, col), ok ? base[i] + kk : p.wt, ok);
      }
    }
    kk += BK;
  }
};

}  // namespace infera::gpu
