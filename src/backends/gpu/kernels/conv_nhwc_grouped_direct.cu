// Direct convolution for any groups (small channel groups, depthwise with a channel multiplier,
// and the always-applicable fallback): one thread per output element, channels fastest so a
// warp reads neighbouring input channels of one pixel. fp32 accumulation, same epilogue.
#include "backends/gpu/kernels/elem.h"
#include "backends/gpu/kernels/igemm.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

template <class T>
__global__ void __launch_bounds__(256) grouped_direct_kernel(const IgemmParamsT<T> p) {
  const int ktot = p.kn * p.z;
  const int64_t total = static_cast<int64_t>(p.m) * ktot;
  const int pq = p.p * p.q;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int k = static_cast<int>(idx % ktot);
    const int m = static_cast<int>(idx / ktot);
    const int g = k / p.kn;
    const int img = m / pq, rem = m - img * pq, pp = rem / p.q, qq = rem - pp * p.q;
    const T* x = p.x + static_cast<int64_t>(img) * p.h * p.w * p.x_ps + g * p.x_z;
    const T* w = p.wt + static_cast<int64_t>(k) * p.w_rs;
    float acc = 0.f;
    for (int r = 0; r < p.r; ++r) {
      const int ih = pp * p.sh - p.ph + r * p.dh;
      if (unsigned(ih) >= unsigned(p.h)) continue;
      for (int s = 0; s < p.s; ++s) {
        const int iw = qq * p.sw - p.pw + s * p.dw;
        if (unsigned(iw) >= unsigned(p.w)) continue;
        const T* xp = x + (static_cast<int64_t>(ih) * p.w + iw) * p.x_ps;
        const T* wp = w + (r * p.s + s) * p.c;
        for (int c = 0; c < p.c; ++c) acc = fmaf(to_f(xp[c]), to_f(wp[c]), acc);
      }
    }
    if (p.bias) acc += p.bias[k];
    if (p.res) acc += to_f(p.res[m * p.res_ps + k]);
    p.y[m * p.y_ps + k] = from_f<T>(act_apply(p.act, acc));
  }
}

template <class T>
Status run(const IgemmParamsT<T>& p, gpuStream_t stream) {
  const int64_t work = static_cast<int64_t>(p.m) * p.kn * p.z;
  grouped_direct_kernel<T><<<grid_for(work, 256), 256, 0, stream>>>(p);
  GPU_LAUNCH_CHECK();
  return {};
}

}  // namespace

// p: the GEMM view (z = groups, c = C/groups, kn = K/groups, w_rs = R*S*C/groups).
Status grouped_direct_f16_run(const IgemmParams& p, gpuStream_t stream) { return run(p, stream); }
Status grouped_direct_f32_run(const IgemmParamsF32& p, gpuStream_t stream) { return run(p, stream); }

}  // namespace infera::gpu
