// LayerNormalization over the last axis, fp32 statistics (ONNX, stash_type 1). Up to 8192
// columns the row is read once into registers (one warp per row up to 1024 columns, one block per
// row above) and the variance is the mean of squared deviations from the mean, computed from the
// registers (no E[x^2] - E[x]^2 cancellation). Wider rows take a block loop that reads x three
// times. Vector loads of up to 16 bytes where the row stride and pointers allow.
#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/elem.h"
#include "backends/gpu/kernels/launch_util.h"
#include "backends/gpu/kernels/reduce_util.h"

namespace infera::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = 8;  // warp kernel: one row per 32-lane warp (64-lane warps take two)
constexpr int kWarpMaxCols = 1024, kBlockMaxCols = 8192;

struct LnParams {
  const void* x;
  void* y;
  int64_t ldx, ldy, rows;
  int cols;
  const float* gamma;
  const float* beta;
  float eps;
  float* mean;
  float* inv_std;
};

template <class T, int V>
__device__ inline void ln_store(const LnParams& p, T* yr, int col, const float* v, float mean, float rstd) {
  float o[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const float g = p.gamma ? p.gamma[col + j] : 1.f, b = p.beta ? p.beta[col + j] : 0.f;
    o[j] = (v[j] - mean) * rstd * g + b;
  }
  store_vec<T, V>(yr + col, o);
}

// The row held in registers: chunk c of thread t covers columns (c * width + t) * V .. + V - 1
// (V > 1 only when cols % V == 0, so a chunk is all inside or all outside the row).
template <class T, int N, int V, bool BLOCK>
__device__ inline void ln_row(const LnParams& p, int64_t row, int t, int width, float* shared) {
  constexpr int kChunks = N / V;
  const T* xr = static_cast<const T*>(p.x) + row * p.ldx;
  float v[N];
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int col = (c * width + t) * V;
    if (col < p.cols) {
      load_vec<T, V>(xr + col, v + c * V);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) v[c * V + j] = 0.f;
    }
#pragma unroll
    for (int j = 0; j < V; ++j) s += v[c * V + j];
  }
  const float inv_cols = 1.f / static_cast<float>(p.cols);
  const float mean = (BLOCK ? block_reduce<kRedSum>(s, shared) : warp_reduce<kRedSum>(s)) * inv_cols;
  float q = 0.f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    if ((c * width + t) * V >= p.cols) continue;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const float d = v[c * V + j] - mean;
      q += d * d;
    }
  }
  const float var = (BLOCK ? block_reduce<kRedSum>(q, shared) : warp_reduce<kRedSum>(q)) * inv_cols;
  const float rstd = 1.f / sqrtf(var + p.eps);
  T* yr = static_cast<T*>(p.y) + row * p.ldy;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int col = (c * width + t) * V;
    if (col < p.cols) ln_store<T, V>(p, yr, col, v + c * V, mean, rstd);
  }
  if (t == 0) {
    if (p.mean) p.mean[row] = mean;
    if (p.inv_std) p.inv_std[row] = rstd;
  }
}

template <class T, int N, int V>
__global__ void __launch_bounds__(kThreads) ln_warp_kernel(const LnParams p) {
  const int lane = threadIdx.x % arch::kWarpSize, warp = threadIdx.x / arch::kWarpSize;
  const int warps = blockDim.x / arch::kWarpSize;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock;
  const int64_t end = first + kRowsPerBlock < p.rows ? first + kRowsPerBlock : p.rows;
  for (int64_t row = first + warp; row < end; row += warps)
    ln_row<T, N, V, false>(p, row, lane, arch::kWarpSize, nullptr);
}

template <class T, int N, int V>
__global__ void __launch_bounds__(kThreads) ln_block_kernel(const LnParams p) {
  __shared__ float shared[kMaxWarpsPerBlock];
  ln_row<T, N, V, true>(p, blockIdx.x, threadIdx.x, kThreads, shared);
}

template <class T>
__global__ void __launch_bounds__(kThreads) ln_loop_kernel(const LnParams p) {
  __shared__ float shared[kMaxWarpsPerBlock];
  const int64_t row = blockIdx.x;
  const T* xr = static_cast<const T*>(p.x) + row * p.ldx;
  T* yr = static_cast<T*>(p.y) + row * p.ldy;
  const float inv_cols = 1.f / static_cast<float>(p.cols);
  float s = 0.f;
  for (int c = threadIdx.x; c < p.cols; c += kThreads) s += to_f(xr[c]);
  const float mean = block_reduce<kRedSum>(s, shared) * inv_cols;
  float q = 0.f;
  for (int c = threadIdx.x; c < p.cols; c += kThreads) {
    const float d = to_f(xr[c]) - mean;
    q += d * d;
  }
  const float rstd = 1.f / sqrtf(block_reduce<kRedSum>(q, shared) * inv_cols + p.eps);
  for (int c = threadIdx.x; c < p.cols; c += kThreads) {
    const float v = to_f(xr[c]);
    ln_store<T, 1>(p, yr, c, &v, mean, rstd);
  }
  if (threadIdx.x == 0) {
    if (p.mean) p.mean[row] = mean;
    if (p.inv_std) p.inv_std[row] = rstd;
  }
}

template <class T>
constexpr int kMaxVec = 16 / static_cast<int>(sizeof(T));
constexpr int min_int(int a, int b) { return a < b ? a : b; }

template <class T, int N>
void launch_warp(const LnParams& p, bool vec, gpuStream_t stream) {
  const unsigned grid = static_cast<unsigned>(ceil_div(p.rows, kRowsPerBlock));
  if (vec)
    ln_warp_kernel<T, N, min_int(N, kMaxVec<T>)><<<grid, kThreads, 0, stream>>>(p);
  else
    ln_warp_kernel<T, N, 1><<<grid, kThreads, 0, stream>>>(p);
}
template <class T, int N>
void launch_block(const LnParams& p, bool vec, gpuStream_t stream) {
  if (vec)
    ln_block_kernel<T, N, kMaxVec<T>><<<static_cast<unsigned>(p.rows), kThreads, 0, stream>>>(p);
  else
    ln_block_kernel<T, N, 1><<<static_cast<unsigned>(p.rows), kThreads, 0, stream>>>(p);
}

template <class T>
void launch(const LnParams& p, gpuStream_t stream) {
  const int cols = p.cols;
  // Vectors of V = min(N, 16 bytes) elements, where the row, both strides and pointers allow it.
  auto vec_ok = [&](int v) {
    const uintptr_t bytes = static_cast<uintptr_t>(v) * sizeof(T);
    return cols % v == 0 && p.ldx % v == 0 && p.ldy % v == 0 && reinterpret_cast<uintptr_t>(p.x) % bytes == 0 &&
           reinterpret_cast<uintptr_t>(p.y) % bytes == 0;
  };
  if (cols <= kWarpMaxCols) {
    // N per lane such that 32 lanes hold the row (64-lane warps then use half of each lane's chunks).
    const int n = cols <= 32 ? 1 : cols <= 64 ? 2 : cols <= 128 ? 4 : cols <= 256 ? 8 : cols <= 512 ? 16 : 32;
    const bool vec = vec_ok(min_int(n, kMaxVec<T>));
    switch (n) {
      case 1: return launch_warp<T, 1>(p, vec, stream);
      case 2: return launch_warp<T, 2>(p, vec, stream);
      case 4: return launch_warp<T, 4>(p, vec, stream);
      case 8: return launch_warp<T, 8>(p, vec, stream);
      case 16: return launch_warp<T, 16>(p, vec, stream);
      default: return launch_warp<T, 32>(p, vec, stream);
    }
  }
  if (cols <= kBlockMaxCols) {
    const bool vec = vec_ok(kMaxVec<T>);
    if (cols <= kThreads * 8) return launch_block<T, 8>(p, vec, stream);
    if (cols <= kThreads * 16) return launch_block<T, 16>(p, vec, stream);
    return launch_block<T, 32>(p, vec, stream);
  }
  ln_loop_kernel<T><<<static_cast<unsigned>(p.rows), kThreads, 0, stream>>>(p);
}

}  // namespace

KernelId layernorm_variant(const LayerNormDesc& d) {
  const bool h = d.dtype == DType::kF16;
  if (d.cols <= kWarpMaxCols) return h ? KernelId::f16_layernorm_lastaxis_warp : KernelId::f32_layernorm_lastaxis_warp;
  if (d.cols <= kBlockMaxCols)
    return h ? KernelId::f16_layernorm_lastaxis_block : KernelId::f32_layernorm_lastaxis_block;
  return h ? KernelId::f16_layernorm_lastaxis_loop : KernelId::f32_layernorm_lastaxis_loop;
}

Status layernorm(const LayerNormDesc& d, gpuStream_t stream) {
  if (d.rows < 1 || d.cols < 1) return {"layernorm: rows and columns must be positive"};
  if (d.rows > (int64_t{1} << 24))
    return {"layernorm: more than 2^24 rows"};  // one block per row; HIP grids < 2^32 threads
  if (!d.x || !d.y) return {"layernorm: null input or output"};
  if (!(d.eps >= 0.f) || d.eps == INFINITY) return {"layernorm: epsilon must be finite and non-negative"};
  LnParams p{d.x,    d.y,      d.ldx ? d.ldx : d.cols, d.ldy ? d.ldy : d.cols, d.rows, d.cols, d.gamma, d.beta, d.eps,
             d.mean, d.inv_std};
  if (p.ldx < d.cols || p.ldy < d.cols) return {"layernorm: row stride smaller than the row"};
  if (d.x == d.y && p.ldx != p.ldy) return {"layernorm: in place needs equal row strides"};
  if (d.dtype == DType::kF16)
    launch<uint16_t>(p, stream);
  else
    launch<float>(p, stream);
  GPU_LAUNCH_CHECK();
  return {};
}

}  // namespace infera::gpu
