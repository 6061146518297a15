// fp32 convolution as implicit GEMM on the FMA units (exact fp32, no TF32). Block tile BM x BN x BK,
// 256 threads each owning TM x TN outputs; the next k-tile is fetched into registers while the
// current one is multiplied from shared memory (stored k-major so each thread reads float4s).
// Same GEMM view, z offsets and epilogue (bias + residual + activation, strided output) as fp16.
#include "backends/gpu/arch.h"
#include "backends/gpu/kernels/igemm.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

// Rows of the fp32 staging tile (pitch bn + 4) that fit in `floats` (a power of two).
__host__ __device__ constexpr int slab_rows(int bm, int bn, int floats) {
  int rows = bm;
  while (rows > 1 && rows * (bn + 4) > floats) rows /= 2;
  return rows;
}

// bias + residual + activation on 4 consecutive channels nn.. of pixel om; store.
__device__ inline void epilogue4(const IgemmParamsF32& p, int zi, int om, int nn, const float* src) {
  float v[4] = {src[0], src[1], src[2], src[3]};
  const int nvalid4 = p.kn - nn < 4 ? p.kn - nn : 4;
  if (p.bias) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (j < nvalid4) v[j] += p.bias[zi * p.bias_z + nn + j];
  }
  if (p.res) {
    const float* r = p.res + om * p.res_ps + zi * p.res_z + nn;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (j < nvalid4) v[j] += r[j];
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) v[j] = act_apply(p.act, v[j]);
  float* y = p.y + om * p.y_ps + zi * p.y_z + nn;
  if (p.vec_out && nvalid4 == 4) {
    *reinterpret_cast<float4*>(y) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (j < nvalid4) y[j] = v[j];
  }
}

template <int BM, int BN, int BK, int TM, int TN, bool VEC>
__global__ void __launch_bounds__(256) conv_f32_simt_kernel(const IgemmParamsF32 p) {
  constexpr int NT = 256;
  static_assert((BM / TM) * (BN / TN) == NT, "thread tile");
  static_assert(BM * BK / 4 == NT && BN * BK / 4 == NT, "one 4-wide k load per thread per tile");
  constexpr int kPadA = 4, kPadB = 4;
  __shared__ __align__(16) float As[2][BK][BM + kPadA];
  __shared__ __align__(16) float Bs[2][BK][BN + kPadB];

  const int tid = threadIdx.x;
  const int tile = blockIdx.x, nt = tile % p.n_tiles, mt = tile / p.n_tiles;
  const int m0 = mt * BM, n0 = nt * BN, zi = blockIdx.y;
  const float* x = p.x + zi * p.x_z;

  // Loader: row lrow of A (output pixel) and of B (output channel), k = 4 * (tid % (BK / 4)) + 0..3.
  const int lrow = tid / (BK / 4), lk = (tid % (BK / 4)) * 4;
  const int m = m0 + lrow;
  const bool mvalid = m < p.m;
  const int pq = p.p * p.q;
  const int mm = mvalid ? m : 0;
  const int img = mm / pq, rem = mm - img * pq, pp = rem / p.q, qq = rem - pp * p.q;
  const float* abase = x + static_cast<int64_t>(img) * p.h * p.w * p.x_ps;
  const int ih0 = pp * p.sh - p.ph, iw0 = qq * p.sw - p.pw;
  const int n = n0 + lrow;
  const bool nvalid = n < p.kn;
  const float* bbase = p.wt + zi * p.w_z + static_cast<int64_t>(nvalid ? n : 0) * p.w_rs;

  auto fetch = [&](int kt, float(&ra)[4], float(&rb)[4]) {
    const int k = kt * BK + lk;
    if (VEC) {  // 4 channels of one (r, s): C % 4 == 0
      const bool kv = k < p.kgemm;
      const int rs = k / p.c, c = k - rs * p.c, r = rs / p.s, s = rs - r * p.s;
      const int ih = ih0 + r * p.dh, iw = iw0 + s * p.dw;
      const bool ok = mvalid && kv && unsigned(ih) < unsigned(p.h) && unsigned(iw) < unsigned(p.w);
      float4 a = make_float4(0.f, 0.f, 0.f, 0.f), b = a;
      if (ok) a = *reinterpret_cast<const float4*>(abase + (static_cast<int64_t>(ih) * p.w + iw) * p.x_ps + c);
      if (nvalid && kv) b = *reinterpret_cast<const float4*>(bbase + k);
      ra[0] = a.x, ra[1] = a.y, ra[2] = a.z, ra[3] = a.w;
      rb[0] = b.x, rb[1] = b.y, rb[2] = b.z, rb[3] = b.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int ke = k + e;
        const bool kv = ke < p.kgemm;
        const int kc = kv ? ke : 0;
        const int rs = kc / p.c, c = kc - rs * p.c, r = rs / p.s, s = rs - r * p.s;
        const int ih = ih0 + r * p.dh, iw = iw0 + s * p.dw;
        const bool ok = mvalid && kv && unsigned(ih) < unsigned(p.h) && unsigned(iw) < unsigned(p.w);
        ra[e] = ok ? abase[(static_cast<int64_t>(ih) * p.w + iw) * p.x_ps + c] : 0.f;
        rb[e] = nvalid && kv ? bbase[ke] : 0.f;
      }
    }
  };
  auto stash = [&](int buf, const float(&ra)[4], const float(&rb)[4]) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      As[buf][lk + e][lrow] = ra[e];
      Bs[buf][lk + e][lrow] = rb[e];
    }
  };

  // Compute mapping: rows g * (BM * 4 / TM) + ty * 4 + i, columns likewise with tx.
  const int tx = tid % (BN / TN), ty = tid / (BN / TN);
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  const int kt_total = static_cast<int>(ceil_div(p.kgemm, BK));
  float ra[4], rb[4];
  fetch(0, ra, rb);
  stash(0, ra, rb);
  __syncthreads();
  for (int kt = 0; kt < kt_total; ++kt) {
    const int buf = kt & 1;
    if (kt + 1 < kt_total) fetch(kt + 1, ra, rb);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int g = 0; g < TM / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&As[buf][k][g * (BM * 4 / TM) + ty * 4]);
        a[g * 4] = v.x, a[g * 4 + 1] = v.y, a[g * 4 + 2] = v.z, a[g * 4 + 3] = v.w;
      }
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[buf][k][g * (BN * 4 / TN) + tx * 4]);
        b[g * 4] = v.x, b[g * 4 + 1] = v.y, b[g * 4 + 2] = v.z, b[g * 4 + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (kt + 1 < kt_total) stash(buf ^ 1, ra, rb);
    __syncthreads();
  }

  // Epilogue through shared memory, a slab of rows at a time (the A buffers are free now): the
  // register tile is stored with constant indices, then each thread finishes 4 consecutive
  // channels of a row, so global stores are coalesced.
  float* ctile = &As[0][0][0];
  constexpr int kPitch = BN + 4;
  constexpr int kSlab = slab_rows(BM, BN, 2 * BK * (BM + kPadA));
  for (int lo = 0; lo < BM; lo += kSlab) {
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = (i / 4) * (BM * 4 / TM) + ty * 4 + (i % 4) - lo;
      if (row < 0 || row >= kSlab) continue;
#pragma unroll
      for (int g = 0; g < TN / 4; ++g)
        *reinterpret_cast<float4*>(ctile + row * kPitch + g * (BN * 4 / TN) + tx * 4) =
            make_float4(acc[i][g * 4], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
    }
    __syncthreads();
    for (int v = tid; v < kSlab * (BN / 4); v += NT) {
      const int row = v / (BN / 4), c4 = v - row * (BN / 4);
      const int om = m0 + lo + row, nn = n0 + c4 * 4;
      if (om < p.m && nn < p.kn) epilogue4(p, zi, om, nn, ctile + row * kPitch + c4 * 4);
    }
  }
}

template <int BM, int BN, int BK, int TM, int TN>
Status launch(const IgemmParamsF32& p, bool vec, gpuStream_t stream) {
  const int64_t tiles = ceil_div(p.m, BM) * p.n_tiles;
  if (tiles > 0x7fffffff || p.z > 65535) return {"conv f32: grid too large"};
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(p.z));
  if (vec)
    conv_f32_simt_kernel<BM, BN, BK, TM, TN, true><<<grid, 256, 0, stream>>>(p);
  else
    conv_f32_simt_kernel<BM, BN, BK, TM, TN, false><<<grid, 256, 0, stream>>>(p);
  GPU_LAUNCH_CHECK();
  return {};
}

}  // namespace

bool simt_f32_is_variant(KernelId id) {
  return id == KernelId::f32_conv_nhwc_implicit_gemm_simt_128x128 ||
         id == KernelId::f32_conv_nhwc_implicit_gemm_simt_64x64;
}

Status simt_f32_run(KernelId id, IgemmParamsF32 p, gpuStream_t stream) {
  const bool vec = p.c % 4 == 0 && p.x_ps % 4 == 0 && p.x_z % 4 == 0 && aligned16(p.x) && p.w_rs % 4 == 0 &&
                   p.w_z % 4 == 0 && aligned16(p.wt);
  p.vec_out = p.y_ps % 4 == 0 && p.y_z % 4 == 0 && aligned16(p.y);
  p.splits = 1;
  switch (id) {
    case KernelId::f32_conv_nhwc_implicit_gemm_simt_128x128:
      p.n_tiles = static_cast<int>(ceil_div(p.kn, 128));
      return launch<128, 128, 8, 8, 8>(p, vec, stream);
    case KernelId::f32_conv_nhwc_implicit_gemm_simt_64x64:
      p.n_tiles = static_cast<int>(ceil_div(p.kn, 64));
      return launch<64, 64, 16, 4, 4>(p, vec, stream);
    default: return {"conv f32: not a SIMT implicit-GEMM variant"};
  }
}

}  // namespace infera::gpu
