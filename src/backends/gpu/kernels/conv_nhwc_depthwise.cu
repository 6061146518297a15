// Direct depthwise convolution (groups == C == K, any R x S, stride, pad, dilation), fp16 or
// fp32 with fp32 accumulation: one thread per output pixel and vector of channels (8 fp16 or 4
// fp32 = 16 bytes), weights [C][R][S] read through the cache. Same epilogue as the GEMM kernels.
#include "backends/gpu/kernels/elem.h"
#include "backends/gpu/kernels/igemm.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

template <class T, int VEC>
__global__ void __launch_bounds__(256) depthwise_kernel(const IgemmParamsT<T> p) {
  const int cv = p.z / VEC;
  const int64_t total = static_cast<int64_t>(p.m) * cv;
  const int pq = p.p * p.q;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c0 = static_cast<int>(idx % cv) * VEC;
    const int m = static_cast<int>(idx / cv);
    const int img = m / pq, rem = m - img * pq, pp = rem / p.q, qq = rem - pp * p.q;
    const T* x = p.x + static_cast<int64_t>(img) * p.h * p.w * p.x_ps + c0;
    const T* w = p.wt + static_cast<int64_t>(c0) * p.w_z;
    float acc[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = 0.f;
    for (int r = 0; r < p.r; ++r) {
      const int ih = pp * p.sh - p.ph + r * p.dh;
      if (unsigned(ih) >= unsigned(p.h)) continue;
      for (int s = 0; s < p.s; ++s) {
        const int iw = qq * p.sw - p.pw + s * p.dw;
        if (unsigned(iw) >= unsigned(p.w)) continue;
        float xv[VEC];
        load_vec<T, VEC>(x + (static_cast<int64_t>(ih) * p.w + iw) * p.x_ps, xv);
        const int tap = r * p.s + s;
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[j] = fmaf(xv[j], to_f(w[j * p.w_z + tap]), acc[j]);
      }
    }
    if (p.bias) {
#pragma unroll
      for (int j = 0; j < VEC; ++j) acc[j] += p.bias[c0 + j];
    }
    if (p.res) {
      float rv[VEC];
      load_vec<T, VEC>(p.res + m * p.res_ps + c0, rv);
#pragma unroll
      for (int j = 0; j < VEC; ++j) acc[j] += rv[j];
    }
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = act_apply(p.act, acc[j]);
    store_vec<T, VEC>(p.y + m * p.y_ps + c0, acc);
  }
}

template <class T>
Status run(const IgemmParamsT<T>& p, gpuStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);
  const bool vec = p.z % kVec == 0 && p.x_ps % kVec == 0 && p.y_ps % kVec == 0 && aligned16(p.x) && aligned16(p.y) &&
                   (!p.res || (p.res_ps % kVec == 0 && aligned16(p.res)));
  const int64_t work = static_cast<int64_t>(p.m) * (vec ? p.z / kVec : p.z);
  if (vec)
    depthwise_kernel<T, kVec><<<grid_for(work, 256), 256, 0, stream>>>(p);
  else
    depthwise_kernel<T, 1><<<grid_for(work, 256), 256, 0, stream>>>(p);
  GPU_LAUNCH_CHECK();
  return {};
}

}  // namespace

// p: the GEMM view with z = groups = channels, c = kn = 1, w_z = R*S (weights [C][R][S]).
Status depthwise_f16_run(const IgemmParams& p, gpuStream_t stream) { return run(p, stream); }
Status depthwise_f32_run(const IgemmParamsF32& p, gpuStream_t stream) { return run(p, stream); }

}  // namespace infera::gpu
