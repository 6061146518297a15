// ONNX Resize on the two spatial axes of an NHWC tensor: nearest (four rounding modes) and
// bilinear, with the coordinate modes torchvision exports use (asymmetric, half_pixel,
// align_corners, pytorch_half_pixel). Linear samples clamp to the edge, as ONNX's reference does.
#include <cmath>

#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/elem.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

struct ResizeParams {
  const void* x;
  void* y;
  int n, h, w, c, oh, ow;
  float scale_h, scale_w;
  int linear, coord, nearest;
  int64_t x_ps, y_ps;
};

__device__ inline float source_coord(int o, float scale, int len_out, int len_in, int coord) {
  switch (coord) {
    case static_cast<int>(ResizeCoord::kHalfPixel): return (o + 0.5f) / scale - 0.5f;
    case static_cast<int>(ResizeCoord::kPytorchHalfPixel): return len_out > 1 ? (o + 0.5f) / scale - 0.5f : 0.f;
    case static_cast<int>(ResizeCoord::kAlignCorners):
      return len_out == 1 ? 0.f : static_cast<float>(o) * (len_in - 1) / static_cast<float>(len_out - 1);
    default: return o / scale;  // asymmetric
  }
}

__device__ inline int nearest_index(float v, int mode, int len) {
  float r;
  switch (mode) {
    case static_cast<int>(ResizeNearest::kRoundPreferCeil): r = floorf(v + 0.5f); break;
    case static_cast<int>(ResizeNearest::kFloor): r = floorf(v); break;
    case static_cast<int>(ResizeNearest::kCeil): r = ceilf(v); break;
    default: r = ceilf(v - 0.5f); break;  // round_prefer_floor: x.5 goes down
  }
  int i = static_cast<int>(r);
  return i < 0 ? 0 : (i >= len ? len - 1 : i);
}

template <class T>
__global__ void __launch_bounds__(256) resize_kernel(const ResizeParams p) {
  const int64_t total = static_cast<int64_t>(p.n) * p.oh * p.ow * p.c;
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int ch = static_cast<int>(idx % p.c);
    const int64_t pix = idx / p.c;
    const int ox = static_cast<int>(pix % p.ow);
    const int64_t t = pix / p.ow;
    const int oy = static_cast<int>(t % p.oh), img = static_cast<int>(t / p.oh);
    const float sy = source_coord(oy, p.scale_h, p.oh, p.h, p.coord);
    const float sx = source_coord(ox, p.scale_w, p.ow, p.w, p.coord);
    const T* base = x + static_cast<int64_t>(img) * p.h * p.w * p.x_ps + ch;
    float v;
    if (!p.linear) {
      const int iy = nearest_index(sy, p.nearest, p.h), ix = nearest_index(sx, p.nearest, p.w);
      v = to_f(base[(static_cast<int64_t>(iy) * p.w + ix) * p.x_ps]);
    } else {
      const float fy = floorf(sy), fx = floorf(sx);
      const float ly = sy - fy, lx = sx - fx;
      auto clampi = [](int i, int len) { return i < 0 ? 0 : (i >= len ? len - 1 : i); };
      const int y0 = clampi(static_cast<int>(fy), p.h), y1 = clampi(static_cast<int>(fy) + 1, p.h);
      const int x0 = clampi(static_cast<int>(fx), p.w), x1 = clampi(static_cast<int>(fx) + 1, p.w);
      auto at = [&](int yy, int xx) { return to_f(base[(static_cast<int64_t>(yy) * p.w + xx) * p.x_ps]); };
      const float top = at(y0, x0) * (1.f - lx) + at(y0, x1) * lx;
      const float bot = at(y1, x0) * (1.f - lx) + at(y1, x1) * lx;
      v = top * (1.f - ly) + bot * ly;
    }
    y[pix * p.y_ps + ch] = from_f<T>(v);
  }
}

}  // namespace

Status resize(const ResizeShape& s, InNhwc x, OutNhwc y, gpuStream_t stream) {
  if (s.n < 1 || s.h < 1 || s.w < 1 || s.c < 1 || s.out_h < 1 || s.out_w < 1) return {"resize: sizes must be positive"};
  if (!(s.scale_h > 0.f) || !(s.scale_w > 0.f) || !std::isfinite(s.scale_h) || !std::isfinite(s.scale_w))
    return {"resize: scales must be positive and finite"};
  if (!x.data || !y.data) return {"resize: null input or output"};
  ResizeParams p;
  const size_t es = dtype_size(s.dtype);
  p.x = static_cast<const char*>(x.data) + x.c_offset * es;
  p.y = static_cast<char*>(y.data) + y.c_offset * es;
  p.n = s.n, p.h = s.h, p.w = s.w, p.c = s.c, p.oh = s.out_h, p.ow = s.out_w;
  p.scale_h = s.scale_h, p.scale_w = s.scale_w;
  p.linear = s.mode == ResizeMode::kLinear;
  p.coord = static_cast<int>(s.coord);
  p.nearest = static_cast<int>(s.nearest);
  p.x_ps = x.pixel_stride ? x.pixel_stride : s.c;
  p.y_ps = y.pixel_stride ? y.pixel_stride : s.c;
  if (p.x_ps < x.c_offset + s.c || p.y_ps < y.c_offset + s.c) return {"resize: pixel stride smaller than offset + C"};
  const int64_t work = static_cast<int64_t>(s.n) * s.out_h * s.out_w * s.c;
  if (s.dtype == DType::kF16)
    resize_kernel<uint16_t><<<grid_for(work, 256), 256, 0, stream>>>(p);
  else
    resize_kernel<float><<<grid_for(work, 256), 256, 0, stream>>>(p);
  GPU_LAUNCH_CHECK();
  return {};
}

}  // namespace infera::gpu
