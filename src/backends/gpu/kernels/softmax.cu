// Softmax / LogSoftmax over the last axis: one block per row, three passes over the row (max,
// sum of exponentials, write), fp32 arithmetic, block reductions through warp shuffles (32 or
// 64 lanes: arch::kWarpSize). A NaN anywhere in a row makes the whole row NaN, as in ONNX.
#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/elem.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

constexpr int kThreads = 256;

__device__ inline float max_nan(float a, float b) { return (a > b || a != a) ? a : b; }

template <bool MAX>
__device__ float block_reduce(float v, float* shared) {
  for (int o = arch::kWarpSize / 2; o > 0; o /= 2) {
    const float t = arch::warp_shfl_xor(v, o);
    v = MAX ? max_nan(v, t) : v + t;
  }
  const int warp = threadIdx.x / arch::kWarpSize, lane = threadIdx.x % arch::kWarpSize;
  const int warps = blockDim.x / arch::kWarpSize;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float r = shared[0];
    for (int i = 1; i < warps; ++i) r = MAX ? max_nan(r, shared[i]) : r + shared[i];
    shared[0] = r;
  }
  __syncthreads();
  const float r = shared[0];
  __syncthreads();
  return r;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    softmax_kernel(const T* x, int64_t ldx, T* y, int64_t ldy, int cols, int log_softmax) {
  __shared__ float shared[kThreads / 16];  // enough for 32- and 64-lane warps
  const T* xr = x + blockIdx.x * ldx;
  T* yr = y + blockIdx.x * ldy;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) m = max_nan(m, to_f(xr[i]));
  m = block_reduce<true>(m, shared);
  float s = 0.f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) s += expf(to_f(xr[i]) - m);
  s = block_reduce<false>(s, shared);
  const float inv = 1.f / s, lse = logf(s);
  for (int i = threadIdx.x; i < cols; i += blockDim.x) {
    const float d = to_f(xr[i]) - m;
    yr[i] = from_f<T>(log_softmax ? d - lse : expf(d) * inv);
  }
}

}  // namespace

Status softmax(DType dtype, int rows, int cols, const void* x, int64_t ldx, void* y, int64_t ldy, bool log_softmax,
               gpuStream_t stream) {
  if (rows < 1 || cols < 1) return {"softmax: rows and columns must be positive"};
  if (!x || !y) return {"softmax: null input or output"};
  if (ldx == 0) ldx = cols;
  if (ldy == 0) ldy = cols;
  if (ldx < cols || ldy < cols) return {"softmax: row stride smaller than the row"};
  if (dtype == DType::kF16)
    softmax_kernel<uint16_t><<<rows, kThreads, 0, stream>>>(static_cast<const uint16_t*>(x), ldx,
                                                            static_cast<uint16_t*>(y), ldy, cols, log_softmax);
  else
    softmax_kernel<float><<<rows, kThreads, 0, stream>>>(static_cast<const float*>(x), ldx, static_cast<float*>(y), ldy,
                                                         cols, log_softmax);
  GPU_LAUNCH_CHECK();
  return {};
}

}  // namespace infera::gpu
