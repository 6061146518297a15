// Max / average pooling in NHWC (pads, dilation, ceil mode, count_include_pad) and global
// max / average pooling. One thread per output pixel and vector of channels (16 bytes) for the
// windowed pool; global pooling splits H*W over 8 thread rows per block and reduces in shared memory.
// Max propagates NaN; windows with no input element give 0 (int8 max: the type's lowest, as the
// reference).
#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/elem.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

struct PoolParams {
  const void* x;
  void* y;
  int n, h, w, c, p, q, r, s, sh, sw, pt, pl, pb, pr, dh, dw;
  int64_t x_ps, y_ps;
  int is_max, include_pad;
};

__device__ inline float max_nan(float a, float b) { return (a > b || a != a) ? a : b; }

template <class T, int VEC>
__global__ void __launch_bounds__(256) pool_kernel(const PoolParams p) {
  const int cv = p.c / VEC;
  const int64_t total = static_cast<int64_t>(p.n) * p.p * p.q * cv;
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c0 = static_cast<int>(idx % cv) * VEC;
    const int64_t pix = idx / cv;
    const int qq = static_cast<int>(pix % p.q);
    const int64_t t = pix / p.q;
    const int pp = static_cast<int>(t % p.p), img = static_cast<int>(t / p.p);
    float acc[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = p.is_max ? -INFINITY : 0.f;
    int count = 0, padded = 0;
    for (int r = 0; r < p.r; ++r) {
      const int ih = pp * p.sh - p.pt + r * p.dh;
      const bool in_pad_h = ih >= -p.pt && ih < p.h + p.pb;
      for (int s = 0; s < p.s; ++s) {
        const int iw = qq * p.sw - p.pl + s * p.dw;
        if (in_pad_h && iw >= -p.pl && iw < p.w + p.pr) ++padded;
        if (unsigned(ih) >= unsigned(p.h) || unsigned(iw) >= unsigned(p.w)) continue;
        ++count;
        float v[VEC];
        load_vec<T, VEC>(x + ((static_cast<int64_t>(img) * p.h + ih) * p.w + iw) * p.x_ps + c0, v);
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[j] = p.is_max ? max_nan(acc[j], v[j]) : acc[j] + v[j];
      }
    }
    if (count == 0) {
#pragma unroll
      for (int j = 0; j < VEC; ++j) acc[j] = 0.f;
    } else if (!p.is_max) {
      const float inv = 1.f / static_cast<float>(p.include_pad ? padded : count);
#pragma unroll
      for (int j = 0; j < VEC; ++j) acc[j] *= inv;
    }
    store_vec<T, VEC>(y + pix * p.y_ps + c0, acc);
  }
}

// int8 / uint8 max pool: VEC channels per thread (16 = one 16-byte load per tap), bytes compared as
// integers. A window with no input element gives the type's lowest value, as the reference.
template <class T, int VEC>
__global__ void __launch_bounds__(256) s8_max_pool_kernel(const PoolParams p) {
  const int cv = p.c / VEC;
  const int64_t total = static_cast<int64_t>(p.n) * p.p * p.q * cv;
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  constexpr int kLowest = static_cast<T>(-1) < 0 ? -128 : 0;
  arch::pdl_wait();
  arch::pdl_trigger();
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c0 = static_cast<int>(idx % cv) * VEC;
    const int64_t pix = idx / cv;
    const int qq = static_cast<int>(pix % p.q);
    const int64_t t = pix / p.q;
    const int pp = static_cast<int>(t % p.p), img = static_cast<int>(t / p.p);
    int acc[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = kLowest;
    for (int r = 0; r < p.r; ++r) {
      const int ih = pp * p.sh - p.pt + r * p.dh;
      if (unsigned(ih) >= unsigned(p.h)) continue;
      for (int s = 0; s < p.s; ++s) {
        const int iw = qq * p.sw - p.pl + s * p.dw;
        if (unsigned(iw) >= unsigned(p.w)) continue;
        const T* src = x + ((static_cast<int64_t>(img) * p.h + ih) * p.w + iw) * p.x_ps + c0;
        if constexpr (VEC == 16) {
          const uint4 u = *reinterpret_cast<const uint4*>(src);
          const unsigned wd[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
          for (int j = 0; j < 16; ++j) {
            const unsigned b = (wd[j / 4] >> (8 * (j % 4))) & 0xffu;
            const int v = static_cast<T>(-1) < 0 ? static_cast<int>(static_cast<int8_t>(b)) : static_cast<int>(b);
            acc[j] = v > acc[j] ? v : acc[j];
          }
        } else {
#pragma unroll
          for (int j = 0; j < VEC; ++j) acc[j] = static_cast<int>(src[j]) > acc[j] ? static_cast<int>(src[j]) : acc[j];
        }
      }
    }
    T* dst = y + pix * p.y_ps + c0;
    if constexpr (VEC == 16) {
      unsigned wd[4] = {0, 0, 0, 0};
#pragma unroll
      for (int j = 0; j < 16; ++j) wd[j / 4] |= (static_cast<unsigned>(acc[j]) & 0xffu) << (8 * (j % 4));
      *reinterpret_cast<uint4*>(dst) = make_uint4(wd[0], wd[1], wd[2], wd[3]);
    } else {
#pragma unroll
      for (int j = 0; j < VEC; ++j) dst[j] = static_cast<T>(acc[j]);
    }
  }
}

template <class T>
Status run_s8_max_pool(const PoolParams& p, gpuStream_t stream) {
  const bool vec = p.c % 16 == 0 && p.x_ps % 16 == 0 && p.y_ps % 16 == 0 && aligned16(p.x) && aligned16(p.y);
  const int64_t pixels = static_cast<int64_t>(p.n) * p.p * p.q;
  if (vec)
    GPU_TRY(arch::launch_dependent(s8_max_pool_kernel<T, 16>, dim3(grid_for(pixels * (p.c / 16), 256)), dim3(256), 0,
                                   stream, p));
  else
    GPU_TRY(
        arch::launch_dependent(s8_max_pool_kernel<T, 1>, dim3(grid_for(pixels * p.c, 256)), dim3(256), 0, stream, p));
  return {};
}

// blockDim (32, 8): x = channel, y = slice of H*W; grid (ceil(C / 32), N).
template <class T>
__global__ void __launch_bounds__(256)
    global_pool_kernel(const T* x, T* y, int hw, int c, int64_t x_ps, int64_t y_ps, int is_max) {
  __shared__ float part[8][33];
  const int ch = blockIdx.x * 32 + threadIdx.x, img = blockIdx.y;
  float acc = is_max ? -INFINITY : 0.f;
  arch::pdl_wait();
  arch::pdl_trigger();
  if (ch < c) {
    const T* base = x + static_cast<int64_t>(img) * hw * x_ps + ch;
    for (int i = threadIdx.y; i < hw; i += 8) {
      const float v = to_f(base[static_cast<int64_t>(i) * x_ps]);
      acc = is_max ? max_nan(acc, v) : acc + v;
    }
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && ch < c) {
    float r = part[0][threadIdx.x];
    for (int i = 1; i < 8; ++i) r = is_max ? max_nan(r, part[i][threadIdx.x]) : r + part[i][threadIdx.x];
    if (!is_max) r /= static_cast<float>(hw);
    y[img * y_ps + ch] = from_f<T>(r);
  }
}

template <class T>
Status run_pool(const PoolParams& p, gpuStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);
  const bool vec = p.c % kVec == 0 && p.x_ps % kVec == 0 && p.y_ps % kVec == 0 && aligned16(p.x) && aligned16(p.y);
  const int64_t pixels = static_cast<int64_t>(p.n) * p.p * p.q;
  if (vec)
    pool_kernel<T, kVec><<<grid_for(pixels * (p.c / kVec), 256), 256, 0, stream>>>(p);
  else
    pool_kernel<T, 1><<<grid_for(pixels * p.c, 256), 256, 0, stream>>>(p);
  GPU_LAUNCH_CHECK();
  return {};
}

int pool_out(int in, int k, int stride, int pad0, int pad1, int dil, bool ceil_mode) {
  const int num = in + pad0 + pad1 - (dil * (k - 1) + 1);
  if (num < 0) return 0;
  if (!ceil_mode) return num / stride + 1;
  int out = (num + stride - 1) / stride + 1;
  if ((out - 1) * stride >= in + pad0) --out;  // the last window must start inside the input or its left pad
  return out;
}

}  // namespace

int PoolShape::p() const { return pool_out(h, r, stride_h, pad_t, pad_b, dil_h, ceil_mode); }
int PoolShape::q() const { return pool_out(w, s, stride_w, pad_l, pad_r, dil_w, ceil_mode); }

Status pool(const PoolShape& s, InNhwc x, OutNhwc y, gpuStream_t stream) {
  if (s.n < 1 || s.h < 1 || s.w < 1 || s.c < 1 || s.r < 1 || s.s < 1 || s.stride_h < 1 || s.stride_w < 1 ||
      s.dil_h < 1 || s.dil_w < 1)
    return {"pool: sizes, strides and dilations must be positive"};
  if (s.pad_t < 0 || s.pad_l < 0 || s.pad_b < 0 || s.pad_r < 0) return {"pool: pads must not be negative"};
  if (s.p() < 1 || s.q() < 1) return {"pool: the window is larger than the padded input"};
  if (!x.data || !y.data) return {"pool: null input or output"};
  PoolParams p;
  const size_t es = dtype_size(s.dtype);
  p.x = static_cast<const char*>(x.data) + x.c_offset * es;
  p.y = static_cast<char*>(y.data) + y.c_offset * es;
  p.n = s.n, p.h = s.h, p.w = s.w, p.c = s.c, p.p = s.p(), p.q = s.q(), p.r = s.r, p.s = s.s;
  p.sh = s.stride_h, p.sw = s.stride_w, p.pt = s.pad_t, p.pl = s.pad_l, p.pb = s.pad_b, p.pr = s.pad_r;
  p.dh = s.dil_h, p.dw = s.dil_w;
  p.x_ps = x.pixel_stride ? x.pixel_stride : s.c;
  p.y_ps = y.pixel_stride ? y.pixel_stride : s.c;
  if (p.x_ps < x.c_offset + s.c || p.y_ps < y.c_offset + s.c) return {"pool: pixel stride smaller than offset + C"};
  p.is_max = s.kind == PoolKind::kMax;
  p.include_pad = s.count_include_pad;
  if (s.dtype == DType::kS8) {
    if (!p.is_max) return {"pool: int8 storage is for max pooling only"};
    return s.uint8 ? run_s8_max_pool<uint8_t>(p, stream) : run_s8_max_pool<int8_t>(p, stream);
  }
  return s.dtype == DType::kF16 ? run_pool<uint16_t>(p, stream) : run_pool<float>(p, stream);
}

Status global_pool(DType dtype, PoolKind kind, int n, int hw, int c, InNhwc x, OutNhwc y, gpuStream_t stream) {
  if (n < 1 || hw < 1 || c < 1) return {"global pool: N, H*W and C must be positive"};
  if (n > 65535) return {"global pool: batch above 65535"};
  if (!x.data || !y.data) return {"global pool: null input or output"};
  const int64_t x_ps = x.pixel_stride ? x.pixel_stride : c, y_ps = y.pixel_stride ? y.pixel_stride : c;
  if (x_ps < x.c_offset + c || y_ps < y.c_offset + c) return {"global pool: pixel stride smaller than offset + C"};
  const dim3 grid(static_cast<unsigned>(ceil_div(c, 32)), static_cast<unsigned>(n)), block(32, 8);
  const int is_max = kind == PoolKind::kMax;
  if (dtype == DType::kF16)
    GPU_TRY(arch::launch_dependent(global_pool_kernel<uint16_t>, grid, block, 0, stream,
                                   static_cast<const uint16_t*>(x.data) + x.c_offset,
                                   static_cast<uint16_t*>(y.data) + y.c_offset, hw, c, x_ps, y_ps, is_max));
  else
    GPU_TRY(arch::launch_dependent(global_pool_kernel<float>, grid, block, 0, stream,
                                   static_cast<const float*>(x.data) + x.c_offset,
                                   static_cast<float*>(y.data) + y.c_offset, hw, c, x_ps, y_ps, is_max));
  return {};
}

}  // namespace infera::gpu
