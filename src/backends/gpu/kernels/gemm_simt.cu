// GEMM / batched MatMul on the FMA units for any transposes, fp16 or fp32 storage, fp32
// accumulation: 64x64x16 block tile, 256 threads with 4x4 outputs each, register-prefetched
// double buffering. Loads walk the operand's contiguous dimension across threads (coalesced
// whether A or B is transposed). Epilogue: bias[n] + residual + activation.
#include "backends/gpu/kernels/elem.h"
#include "backends/gpu/kernels/gemm_simt.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256;

template <class T>
__global__ void __launch_bounds__(kThreads) gemm_simt_kernel(const GemmSimtParams p) {
  __shared__ __align__(16) float As[2][kBK][kBM + 4];
  __shared__ __align__(16) float Bs[2][kBK][kBN + 4];
  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN, b = blockIdx.z;
  const T* a = static_cast<const T*>(p.a) + b * p.stride_a;
  const T* bm = static_cast<const T*>(p.b) + b * p.stride_b;
  const bool a_kfast = p.sak == 1, b_nfast = p.sbn == 1;

  float ra[4], rb[4];
  auto fetch = [&](int kt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int e = tid + i * kThreads;
      const int am = a_kfast ? e / kBK : e % kBM, ak = a_kfast ? e % kBK : e / kBM;
      const int gm = m0 + am, gk = kt * kBK + ak;
      ra[i] = gm < p.m && gk < p.k ? to_f(a[gm * p.sam + gk * p.sak]) : 0.f;
      const int bn = b_nfast ? e % kBN : e / kBK, bk = b_nfast ? e / kBN : e % kBK;
      const int gn = n0 + bn, gk2 = kt * kBK + bk;
      rb[i] = gn < p.n && gk2 < p.k ? to_f(bm[gk2 * p.sbk + gn * p.sbn]) : 0.f;
    }
  };
  auto stash = [&](int buf) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int e = tid + i * kThreads;
      const int am = a_kfast ? e / kBK : e % kBM, ak = a_kfast ? e % kBK : e / kBM;
      As[buf][ak][am] = ra[i];
      const int bn = b_nfast ? e % kBN : e / kBK, bk = b_nfast ? e / kBN : e % kBK;
      Bs[buf][bk][bn] = rb[i];
    }
  };

  const int tx = tid % 16, ty = tid / 16;
  float acc[4][4] = {};
  const int kt_total = static_cast<int>(ceil_div(p.k, kBK));
  fetch(0);
  stash(0);
  __syncthreads();
  for (int kt = 0; kt < kt_total; ++kt) {
    const int buf = kt & 1;
    if (kt + 1 < kt_total) fetch(kt + 1);
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      const float4 av = *reinterpret_cast<const float4*>(&As[buf][k][ty * 4]);
      const float4 bv = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * 4]);
      const float ax[4] = {av.x, av.y, av.z, av.w}, bx[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(ax[i], bx[j], acc[i][j]);
    }
    if (kt + 1 < kt_total) stash(buf ^ 1);
    __syncthreads();
  }

  T* c = static_cast<T*>(p.c) + b * p.stride_c;
  const T* r = p.residual ? static_cast<const T*>(p.residual) + b * p.stride_r : nullptr;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int gm = m0 + ty * 4 + i;
    if (gm >= p.m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int gn = n0 + tx * 4 + j;
      if (gn >= p.n) continue;
      float v = acc[i][j];
      if (p.bias) v += p.bias[gn];
      if (r) v += to_f(r[gm * p.ldr + gn]);
      c[gm * p.ldc + gn] = from_f<T>(act_apply(p.act, v));
    }
  }
}

}  // namespace

Status gemm_simt_run(bool f16, const GemmSimtParams& p, gpuStream_t stream) {
  if (ceil_div(p.m, kBM) > 65535 || p.batch > 65535) return {"gemm: too many rows or batch entries"};
  const dim3 grid(static_cast<unsigned>(ceil_div(p.n, kBN)), static_cast<unsigned>(ceil_div(p.m, kBM)),
                  static_cast<unsigned>(p.batch));
  if (f16)
    gemm_simt_kernel<uint16_t><<<grid, kThreads, 0, stream>>>(p);
  else
    gemm_simt_kernel<float><<<grid, kThreads, 0, stream>>>(p);
  GPU_LAUNCH_CHECK();
  return {};
}

}  // namespace infera::gpu
