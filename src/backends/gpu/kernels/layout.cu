// Layout transforms at the model boundary, fused with the dtype cast: NCHW <-> NHWC as 32x32
// tiled transposes through shared memory (both the read and the write coalesced). The NHWC side
// may be a slice of a wider buffer; nchw_to_nhwc can zero-fill channels up to a padded count.
#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/elem.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

// grid (ceil(HW / 32), ceil(Cp / 32), N), block (32, 8).
template <class Ti, class To>
__global__ void nchw_to_nhwc_kernel(const Ti* x, To* y, int c, int cp, int hw, int64_t y_ps) {
  __shared__ float tile[32][33];
  const int hw0 = blockIdx.x * 32, c0 = blockIdx.y * 32, img = blockIdx.z;
  const Ti* xi = x + static_cast<int64_t>(img) * c * hw;
  for (int j = threadIdx.y; j < 32; j += 8) {
    const int ch = c0 + j, pos = hw0 + threadIdx.x;
    tile[j][threadIdx.x] = ch < c && pos < hw ? to_f(xi[static_cast<int64_t>(ch) * hw + pos]) : 0.f;
  }
  __syncthreads();
  To* yi = y + static_cast<int64_t>(img) * hw * y_ps;
  for (int j = threadIdx.y; j < 32; j += 8) {
    const int pos = hw0 + j, ch = c0 + threadIdx.x;
    if (pos < hw && ch < cp) yi[pos * y_ps + ch] = from_f<To>(tile[threadIdx.x][j]);
  }
}

// grid (ceil(C / 32), ceil(HW / 32), N), block (32, 8).
template <class Ti, class To>
__global__ void nhwc_to_nchw_kernel(const Ti* x, To* y, int c, int hw, int64_t x_ps) {
  __shared__ float tile[32][33];
  const int c0 = blockIdx.x * 32, hw0 = blockIdx.y * 32, img = blockIdx.z;
  const Ti* xi = x + static_cast<int64_t>(img) * hw * x_ps;
  for (int j = threadIdx.y; j < 32; j += 8) {
    const int pos = hw0 + j, ch = c0 + threadIdx.x;
    tile[j][threadIdx.x] = pos < hw && ch < c ? to_f(xi[pos * x_ps + ch]) : 0.f;
  }
  __syncthreads();
  To* yi = y + static_cast<int64_t>(img) * c * hw;
  for (int j = threadIdx.y; j < 32; j += 8) {
    const int ch = c0 + j, pos = hw0 + threadIdx.x;
    if (ch < c && pos < hw) yi[static_cast<int64_t>(ch) * hw + pos] = from_f<To>(tile[threadIdx.x][j]);
  }
}

// Few channels (an RGB input): one thread per pixel, reading each channel plane coalesced and
// writing its pixel's cp values; a 32x32 tile would leave most of its threads idle.
template <class Ti, class To>
__global__ void nchw_to_nhwc_small_kernel(const Ti* x, To* y, int c, int cp, int64_t hw, int64_t total, int64_t y_ps) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t img = i / hw, pos = i - img * hw;
  const Ti* xi = x + img * c * hw + pos;
  To* yo = y + i * y_ps;
  for (int ch = 0; ch < cp; ++ch) yo[ch] = from_f<To>(ch < c ? to_f(xi[ch * hw]) : 0.f);
}

template <class Ti, class To>
void launch_to_nhwc(const void* x, void* y, int n, int c, int cp, int hw, int64_t y_ps, gpuStream_t stream) {
  if (cp <= 8) {
    const int64_t total = static_cast<int64_t>(n) * hw;
    nchw_to_nhwc_small_kernel<Ti, To><<<static_cast<unsigned>(ceil_div(total, 256)), 256, 0, stream>>>(
        static_cast<const Ti*>(x), static_cast<To*>(y), c, cp, hw, total, y_ps);
    return;
  }
  const dim3 grid(static_cast<unsigned>(ceil_div(hw, 32)), static_cast<unsigned>(ceil_div(cp, 32)), n);
  nchw_to_nhwc_kernel<Ti, To>
      <<<grid, dim3(32, 8), 0, stream>>>(static_cast<const Ti*>(x), static_cast<To*>(y), c, cp, hw, y_ps);
}
template <class Ti, class To>
void launch_to_nchw(const void* x, void* y, int n, int c, int hw, int64_t x_ps, gpuStream_t stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div(c, 32)), static_cast<unsigned>(ceil_div(hw, 32)), n);
  nhwc_to_nchw_kernel<Ti, To>
      <<<grid, dim3(32, 8), 0, stream>>>(static_cast<const Ti*>(x), static_cast<To*>(y), c, hw, x_ps);
}

// One thread per output byte: y[p][ch] = ch < c ? x[p * x_ps + ch] : 0.
__global__ void pad_channels_s8_kernel(const uint8_t* x, int64_t x_ps, uint8_t* y, int c, int cp, int64_t total) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t p = i / cp;
  const int ch = static_cast<int>(i - p * cp);
  y[i] = ch < c ? x[p * x_ps + ch] : uint8_t{0};
}

// cp % 16 == 0 (y 16-byte aligned): one thread per 16 output bytes, one vector store.
__global__ void pad_channels_s8_x16_kernel(const uint8_t* x, int64_t x_ps, uint4* y, int c, int cp, int64_t chunks) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= chunks) return;
  const int per = cp / 16;
  const int64_t p = i / per;
  const int c0 = static_cast<int>(i - p * per) * 16;
  unsigned w[4] = {0, 0, 0, 0};
  const uint8_t* xp = x + p * x_ps;
#pragma unroll
  for (int j = 0; j < 16; ++j)
    if (c0 + j < c) w[j / 4] |= unsigned(xp[c0 + j]) << (8 * (j % 4));
  y[i] = make_uint4(w[0], w[1], w[2], w[3]);
}

// One thread per output pixel (i, j) of image img: its 16 elements (dy * 2 + dx) * c + ci <- input
// pixel (2i + dy - pad_t, 2j + dx - pad_l), channel ci (0 outside the image and past 4c), stored
// as 16-byte vectors.
template <class T>
__global__ void space_to_depth2_kernel(const T* x, int64_t x_ps, int h, int w, int c, int pad_t, int pad_l, int ho,
                                       int wo, T* y, int64_t pixels) {
  constexpr int kC = kSpaceToDepth2Channels;
  arch::pdl_wait();
  arch::pdl_trigger();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= pixels) return;
  const int jo = static_cast<int>(i % wo);
  const int64_t t = i / wo;
  const int io = static_cast<int>(t % ho);
  const int64_t img = t / ho;
  union {
    T e[kC];
    uint4 v[kC * sizeof(T) / 16];
  } out;
#pragma unroll
  for (int ch = 0; ch < kC; ++ch) {
    const int q = ch / c, ci = ch - q * c;
    const int ih = 2 * io + (q >> 1) - pad_t, iw = 2 * jo + (q & 1) - pad_l;
    out.e[ch] = q < 4 && unsigned(ih) < unsigned(h) && unsigned(iw) < unsigned(w)
                    ? x[((img * h + ih) * w + iw) * x_ps + ci]
                    : T{0};
  }
  uint4* dst = reinterpret_cast<uint4*>(y) + i * (kC * sizeof(T) / 16);
#pragma unroll
  for (int v = 0; v < static_cast<int>(kC * sizeof(T) / 16); ++v) dst[v] = out.v[v];
}

}  // namespace

Status nhwc_space_to_depth2(size_t elem_bytes, int n, int h, int w, int c, InNhwc x, int pad_t, int pad_l, int ho,
                            int wo, void* y, gpuStream_t stream) {
  if (n < 1 || h < 1 || w < 1 || ho < 1 || wo < 1 || c < 1 || 4 * c > kSpaceToDepth2Channels || pad_t < 0 || pad_l < 0)
    return {"nhwc_space_to_depth2: bad sizes"};
  if (elem_bytes != 1 && elem_bytes != 2) return {"nhwc_space_to_depth2: int8 or fp16 elements only"};
  if (!x.data || !y || reinterpret_cast<uintptr_t>(y) % 16) return {"nhwc_space_to_depth2: null or unaligned buffers"};
  const int64_t ps = x.pixel_stride ? x.pixel_stride : c;
  if (ps < x.c_offset + c) return {"nhwc_space_to_depth2: pixel stride smaller than offset + C"};
  const int64_t pixels = static_cast<int64_t>(n) * ho * wo;
  const unsigned blocks = static_cast<unsigned>(ceil_div(pixels, 256));
  if (elem_bytes == 1)
    GPU_TRY(arch::launch_dependent(space_to_depth2_kernel<uint8_t>, dim3(blocks), dim3(256), 0, stream,
                                   static_cast<const uint8_t*>(x.data) + x.c_offset, ps, h, w, c, pad_t, pad_l, ho, wo,
                                   static_cast<uint8_t*>(y), pixels));
  else
    GPU_TRY(arch::launch_dependent(space_to_depth2_kernel<uint16_t>, dim3(blocks), dim3(256), 0, stream,
                                   static_cast<const uint16_t*>(x.data) + x.c_offset, ps, h, w, c, pad_t, pad_l, ho, wo,
                                   static_cast<uint16_t*>(y), pixels));
  return {};
}

Status nhwc_pad_channels_s8(int64_t pixels, int c, InNhwc x, int cp, void* y, gpuStream_t stream) {
  if (pixels < 0 || c < 1 || cp < c) return {"nhwc_pad_channels_s8: bad sizes"};
  if (!x.data || !y) return {"nhwc_pad_channels_s8: null input or output"};
  const int64_t ps = x.pixel_stride ? x.pixel_stride : c;
  if (ps < x.c_offset + c) return {"nhwc_pad_channels_s8: pixel stride smaller than offset + C"};
  const int64_t total = pixels * cp;
  if (total == 0) return {};
  const uint8_t* xs = static_cast<const uint8_t*>(x.data) + x.c_offset;
  if (cp % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0) {
    const int64_t chunks = total / 16;
    pad_channels_s8_x16_kernel<<<static_cast<unsigned>(ceil_div(chunks, 256)), 256, 0, stream>>>(
        xs, ps, static_cast<uint4*>(y), c, cp, chunks);
  } else {
    pad_channels_s8_kernel<<<static_cast<unsigned>(ceil_div(total, 256)), 256, 0, stream>>>(
        xs, ps, static_cast<uint8_t*>(y), c, cp, total);
  }
  GPU_LAUNCH_CHECK();
  return {};
}

Status nchw_to_nhwc(DType from, DType to, int n, int c, int h, int w, const void* x, OutNhwc y, int c_padded,
                    gpuStream_t stream) {
  if (n < 1 || c < 1 || h < 1 || w < 1) return {"nchw_to_nhwc: sizes must be positive"};
  if (n > 65535) return {"nchw_to_nhwc: batch above 65535"};
  if (static_cast<int64_t>(h) * w > 0x7fffffff / 2) return {"nchw_to_nhwc: image too large"};
  if (!x || !y.data) return {"nchw_to_nhwc: null input or output"};
  const int cp = c_padded > c ? c_padded : c;
  const int64_t ps = y.pixel_stride ? y.pixel_stride : cp;
  if (ps < y.c_offset + cp) return {"nchw_to_nhwc: pixel stride smaller than offset + channels"};
  const size_t es = dtype_size(to);
  void* yo = static_cast<char*>(y.data) + y.c_offset * es;
  const int hw = h * w;
  if ((from == DType::kS8) != (to == DType::kS8)) return {"nchw_to_nhwc: int8 values keep their type"};
  if (from == DType::kS8)
    launch_to_nhwc<uint8_t, uint8_t>(x, yo, n, c, cp, hw, ps, stream);
  else if (from == DType::kF32 && to == DType::kF16)
    launch_to_nhwc<float, uint16_t>(x, yo, n, c, cp, hw, ps, stream);
  else if (from == DType::kF32)
    launch_to_nhwc<float, float>(x, yo, n, c, cp, hw, ps, stream);
  else if (to == DType::kF16)
    launch_to_nhwc<uint16_t, uint16_t>(x, yo, n, c, cp, hw, ps, stream);
  else
    launch_to_nhwc<uint16_t, float>(x, yo, n, c, cp, hw, ps, stream);
  GPU_LAUNCH_CHECK();
  return {};
}

Status nhwc_to_nchw(DType from, DType to, int n, int c, int h, int w, InNhwc x, void* y, gpuStream_t stream) {
  if (n < 1 || c < 1 || h < 1 || w < 1) return {"nhwc_to_nchw: sizes must be positive"};
  if (n > 65535) return {"nhwc_to_nchw: batch above 65535"};
  if (static_cast<int64_t>(h) * w > 0x7fffffff / 2) return {"nhwc_to_nchw: image too large"};
  if (!x.data || !y) return {"nhwc_to_nchw: null input or output"};
  const int64_t ps = x.pixel_stride ? x.pixel_stride : c;
  if (ps < x.c_offset + c) return {"nhwc_to_nchw: pixel stride smaller than offset + C"};
  const void* xo = static_cast<const char*>(x.data) + x.c_offset * dtype_size(from);
  const int hw = h * w;
  if ((from == DType::kS8) != (to == DType::kS8)) return {"nhwc_to_nchw: int8 values keep their type"};
  if (from == DType::kS8)
    launch_to_nchw<uint8_t, uint8_t>(xo, y, n, c, hw, ps, stream);
  else if (from == DType::kF32 && to == DType::kF16)
    launch_to_nchw<float, uint16_t>(xo, y, n, c, hw, ps, stream);
  else if (from == DType::kF32)
    launch_to_nchw<float, float>(xo, y, n, c, hw, ps, stream);
  else if (to == DType::kF16)
    launch_to_nchw<uint16_t, uint16_t>(xo, y, n, c, hw, ps, stream);
  else
    launch_to_nchw<uint16_t, float>(xo, y, n, c, hw, ps, stream);
  GPU_LAUNCH_CHECK();
  return {};
}

}  // namespace infera::gpu
