// Internal: warp and block reductions of fp32 values (sum, NaN-propagating max / min) for the row
// kernels (LayerNorm, the reductions). Warp width is arch::kWarpSize (32, or 64 on CDNA); block
// reductions take a shared array of at least kMaxWarpsPerBlock floats.
#pragma once

#include "backends/gpu/arch.h"

namespace infera::gpu {

inline constexpr int kMaxWarpsPerBlock = 32;  // 1024 threads of 32 lanes

enum RedKind : int { kRedSum = 0, kRedMax = 1, kRedMin = 2 };

template <int K>
__device__ inline float red_combine(float a, float b) {
  if constexpr (K == kRedSum) return a + b;
  if constexpr (K == kRedMax) return (a > b || a != a) ? a : b;  // a NaN on either side wins
  return (a < b || a != a) ? a : b;
}
template <int K>
__device__ inline float red_identity() {
  if constexpr (K == kRedSum) return 0.f;
  if constexpr (K == kRedMax) return -INFINITY;
  return INFINITY;
}

template <int K>
__device__ inline float warp_reduce(float v) {
#pragma unroll
  for (int o = arch::kWarpSize / 2; o > 0; o /= 2) v = red_combine<K>(v, arch::warp_shfl_xor(v, o));
  return v;
}

// Every thread of the block gets the result. Ends with a barrier, so shared may be reused.
template <int K>
__device__ inline float block_reduce(float v, float* shared) {
  v = warp_reduce<K>(v);
  const int warp = threadIdx.x / arch::kWarpSize, lane = threadIdx.x % arch::kWarpSize;
  const int warps = (blockDim.x + arch::kWarpSize - 1) / arch::kWarpSize;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float r = lane < warps ? shared[lane] : red_identity<K>();
  r = warp_reduce<K>(r);
  __syncthreads();
  return r;
}

}  // namespace infera::gpu
