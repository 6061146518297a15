// Sum / mean / max / min of a dense [outer][reduce][inner] tensor over the middle axis, fp32
// accumulation. inner == 1 (the trailing elements: ReduceMean over H, W of NCHW, over the last
// axis of a MatMul output) runs a row kernel: one warp per row up to 1024 columns, one block per
// row above, 16-byte loads where aligned. inner > 1 runs a 32 x 8 block: 32 consecutive inner
// positions (coalesced) times 8 interleaved slices of the reduced axis, combined in shared memory.
// Max and min propagate NaN (any NaN in the reduced elements gives NaN), as ONNX does.
#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/elem.h"
#include "backends/gpu/kernels/launch_util.h"
#include "backends/gpu/kernels/reduce_util.h"

namespace infera::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = 8;  // warp kernel: one row per 32-lane warp (64-lane warps take two)
constexpr int kWarpMaxCols = 1024;

template <class T, int V, int K>
__device__ inline float row_partial(const T* xr, int cols, int t, int width) {
  float acc = red_identity<K>();
  for (int col = t * V; col < cols; col += width * V) {
    float v[V];
    load_vec<T, V>(xr + col, v);
#pragma unroll
    for (int j = 0; j < V; ++j) acc = red_combine<K>(acc, v[j]);
  }
  return acc;
}

// div: cols for a mean, 1 otherwise.
template <class T, int V, int K>
__global__ void __launch_bounds__(kThreads)
    reduce_rows_warp_kernel(const T* x, T* y, int64_t rows, int cols, float div) {
  const int lane = threadIdx.x % arch::kWarpSize, warp = threadIdx.x / arch::kWarpSize;
  const int warps = blockDim.x / arch::kWarpSize;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock;
  const int64_t end = first + kRowsPerBlock < rows ? first + kRowsPerBlock : rows;
  for (int64_t row = first + warp; row < end; row += warps) {
    const float r = warp_reduce<K>(row_partial<T, V, K>(x + row * cols, cols, lane, arch::kWarpSize));
    if (lane == 0) y[row] = from_f<T>(r / div);
  }
}

template <class T, int V, int K>
__global__ void __launch_bounds__(kThreads) reduce_rows_block_kernel(const T* x, T* y, int cols, float div) {
  __shared__ float shared[kMaxWarpsPerBlock];
  const int64_t row = blockIdx.x;
  const float r = block_reduce<K>(row_partial<T, V, K>(x + row * cols, cols, threadIdx.x, kThreads), shared);
  if (threadIdx.x == 0) y[row] = from_f<T>(r / div);
}

// grid (ceil(inner / 32), min(outer, 65535)), block 256 = 32 inner x 8 slices of the reduced axis.
template <class T, int K>
__global__ void __launch_bounds__(kThreads)
    reduce_middle_kernel(const T* x, T* y, int64_t outer, int64_t red, int64_t inner, float div) {
  __shared__ float part[8][33];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * 32 + tx;
  for (int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
    float acc = red_identity<K>();
    if (i < inner)
      for (int64_t r = ty; r < red; r += 8) acc = red_combine<K>(acc, to_f(x[(o * red + r) * inner + i]));
    part[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && i < inner) {
      float v = part[0][tx];
#pragma unroll
      for (int k = 1; k < 8; ++k) v = red_combine<K>(v, part[k][tx]);
      y[o * inner + i] = from_f<T>(v / div);
    }
    __syncthreads();
  }
}

template <class T, int K>
void launch_op(const ReduceDesc& d, KernelId id, float div, gpuStream_t stream) {
  const T* x = static_cast<const T*>(d.x);
  T* y = static_cast<T*>(d.y);
  if (id == KernelId::f16_reduce_middle || id == KernelId::f32_reduce_middle) {
    const dim3 grid(static_cast<unsigned>(ceil_div(d.inner, 32)),
                    static_cast<unsigned>(d.outer < 65535 ? d.outer : 65535));
    reduce_middle_kernel<T, K><<<grid, kThreads, 0, stream>>>(x, y, d.outer, d.reduce, d.inner, div);
    return;
  }
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  const int cols = static_cast<int>(d.reduce);
  const bool vec = cols % kVec == 0 && aligned16(d.x);
  if (id == KernelId::f16_reduce_lastaxis_warp || id == KernelId::f32_reduce_lastaxis_warp) {
    const unsigned grid = static_cast<unsigned>(ceil_div(d.outer, kRowsPerBlock));
    if (vec)
      reduce_rows_warp_kernel<T, kVec, K><<<grid, kThreads, 0, stream>>>(x, y, d.outer, cols, div);
    else
      reduce_rows_warp_kernel<T, 1, K><<<grid, kThreads, 0, stream>>>(x, y, d.outer, cols, div);
  } else {
    const unsigned grid = static_cast<unsigned>(d.outer);
    if (vec)
      reduce_rows_block_kernel<T, kVec, K><<<grid, kThreads, 0, stream>>>(x, y, cols, div);
    else
      reduce_rows_block_kernel<T, 1, K><<<grid, kThreads, 0, stream>>>(x, y, cols, div);
  }
}

template <class T>
void launch(const ReduceDesc& d, KernelId id, gpuStream_t stream) {
  const float div = d.op == ReduceOp::kMean ? static_cast<float>(d.reduce) : 1.f;
  if (d.op == ReduceOp::kMax) return launch_op<T, kRedMax>(d, id, 1.f, stream);
  if (d.op == ReduceOp::kMin) return launch_op<T, kRedMin>(d, id, 1.f, stream);
  launch_op<T, kRedSum>(d, id, div, stream);
}

}  // namespace

KernelId reduce_variant(const ReduceDesc& d) {
  const bool h = d.dtype == DType::kF16;
  if (d.inner != 1) return h ? KernelId::f16_reduce_middle : KernelId::f32_reduce_middle;
  if (d.reduce <= kWarpMaxCols) return h ? KernelId::f16_reduce_lastaxis_warp : KernelId::f32_reduce_lastaxis_warp;
  return h ? KernelId::f16_reduce_lastaxis_block : KernelId::f32_reduce_lastaxis_block;
}

Status reduce(const ReduceDesc& d, gpuStream_t stream) {
  if (d.outer < 1 || d.reduce < 1 || d.inner < 1) return {"reduce: sizes must be positive"};
  if (!d.x || !d.y) return {"reduce: null input or output"};
  if (static_cast<int>(d.op) > static_cast<int>(ReduceOp::kMin)) return {"reduce: unknown op"};
  int64_t total = 0;
  if (__builtin_mul_overflow(d.outer, d.reduce, &total) || __builtin_mul_overflow(total, d.inner, &total) ||
      total > (int64_t{1} << 48))
    return {"reduce: too many elements"};
  const KernelId id = reduce_variant(d);
  // Grids stay below 2^32 threads (HIP's limit): one block per row, one per 32 inner positions.
  if (d.inner == 1 && (d.reduce > 0x7fffffff || d.outer > (int64_t{1} << 24)))
    return {"reduce: more than 2^24 rows or 2^31 - 1 columns"};
  if (d.inner != 1 && ceil_div(d.inner, 32) > (int64_t{1} << 24)) return {"reduce: inner size above 2^29"};
  if (d.dtype == DType::kF16)
    launch<uint16_t>(d, id, stream);
  else
    launch<float>(d, id, stream);
  GPU_LAUNCH_CHECK();
  return {};
}

}  // namespace infera::gpu
