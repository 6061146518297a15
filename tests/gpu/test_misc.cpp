// Softmax, Resize and the layout transforms against host references.
#include <algorithm>

#include "test_util.h"

namespace infera::gpu::test {
namespace {

void record_dense(Ctx& ctx, KernelId id, DType t, const std::string& what, const DevBuf& dy, size_t total,
                  const std::vector<double>& ref, const std::vector<size_t>& idx, const Status& st) {
  check_gpu(gpuStreamSynchronize(ctx.stream), "sync");
  const std::vector<float> out = download(t, dy, total);
  const std::vector<bool> poison = poisoned(t, dy, total);
  std::vector<bool> logical(total, false);
  for (size_t i : idx) logical[i] = true;
  bool outside = false;
  for (size_t i = 0; i < total; ++i) outside = outside || (!logical[i] && !poison[i]);
  ctx.results.record(id, what, st.ok() ? compare(out, ref, idx) : Compare{INFINITY}, t, outside, st.error);
}

void softmax_case(Ctx& ctx, DType t, int rows, int cols, int extra, bool log) {
  const int64_t ld = cols + extra;
  std::vector<float> x = ctx.rng.values(t, rows * ld, -5.f, 5.f);
  std::vector<double> ref(static_cast<size_t>(rows) * cols);
  std::vector<size_t> idx(ref.size());
  for (int r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(x[r * ld + c]));
    for (int c = 0; c < cols; ++c) s += std::exp(x[r * ld + c] - m);
    for (int c = 0; c < cols; ++c) {
      const double d = x[r * ld + c] - m;
      ref[r * cols + c] = log ? d - std::log(s) : std::exp(d) / s;
      idx[r * cols + c] = static_cast<size_t>(r * ld + c);
    }
  }
  DevBuf dx = upload(t, x), dy = poisoned_buffer(t, rows * ld, ctx.stream);
  const Status st = softmax(t, rows, cols, dx.ptr, ld, dy.ptr, ld, log, ctx.stream);
  const KernelId id = t == DType::kF16 ? KernelId::f16_softmax_lastaxis : KernelId::f32_softmax_lastaxis;
  record_dense(ctx, id, t,
               std::string(log ? "logsoftmax " : "softmax ") + std::to_string(rows) + "x" + std::to_string(cols) +
                   " ld+" + std::to_string(extra),
               dy, rows * ld, ref, idx, st);
}

// The coordinate rules, in float as the kernel computes them.
float src_coord(int o, float scale, int lo, int li, ResizeCoord c) {
  switch (c) {
    case ResizeCoord::kHalfPixel: return (o + 0.5f) / scale - 0.5f;
    case ResizeCoord::kPytorchHalfPixel: return lo > 1 ? (o + 0.5f) / scale - 0.5f : 0.f;
    case ResizeCoord::kAlignCorners:
      return lo == 1 ? 0.f : static_cast<float>(o) * (li - 1) / static_cast<float>(lo - 1);
    default: return o / scale;
  }
}
int near_idx(float v, ResizeNearest m, int len) {
  float r;
  switch (m) {
    case ResizeNearest::kRoundPreferCeil: r = std::floor(v + 0.5f); break;
    case ResizeNearest::kFloor: r = std::floor(v); break;
    case ResizeNearest::kCeil: r = std::ceil(v); break;
    default: r = std::ceil(v - 0.5f); break;
  }
  return std::clamp(static_cast<int>(r), 0, len - 1);
}

void resize_case(Ctx& ctx, ResizeShape s) {
  const DType t = s.dtype;
  std::vector<float> x = ctx.rng.values(t, static_cast<size_t>(s.n) * s.h * s.w * s.c);
  const int64_t pixels = static_cast<int64_t>(s.n) * s.out_h * s.out_w;
  std::vector<double> ref(pixels * s.c);
  std::vector<size_t> idx(ref.size());
  auto at = [&](int n, int y, int xx, int c) {
    return static_cast<double>(x[((static_cast<int64_t>(n) * s.h + y) * s.w + xx) * s.c + c]);
  };
  for (int n = 0; n < s.n; ++n)
    for (int oy = 0; oy < s.out_h; ++oy)
      for (int ox = 0; ox < s.out_w; ++ox)
        for (int c = 0; c < s.c; ++c) {
          const float sy = src_coord(oy, s.scale_h, s.out_h, s.h, s.coord),
                      sx = src_coord(ox, s.scale_w, s.out_w, s.w, s.coord);
          double v;
          if (s.mode == ResizeMode::kNearest) {
            v = at(n, near_idx(sy, s.nearest, s.h), near_idx(sx, s.nearest, s.w), c);
          } else {
            const double fy = std::floor(sy), fx = std::floor(sx), ly = sy - fy, lx = sx - fx;
            const int y0 = std::clamp(static_cast<int>(fy), 0, s.h - 1),
                      y1 = std::clamp(static_cast<int>(fy) + 1, 0, s.h - 1);
            const int x0 = std::clamp(static_cast<int>(fx), 0, s.w - 1),
                      x1 = std::clamp(static_cast<int>(fx) + 1, 0, s.w - 1);
            v = (at(n, y0, x0, c) * (1 - lx) + at(n, y0, x1, c) * lx) * (1 - ly) +
                (at(n, y1, x0, c) * (1 - lx) + at(n, y1, x1, c) * lx) * ly;
          }
          const int64_t p = (static_cast<int64_t>(n) * s.out_h + oy) * s.out_w + ox;
          ref[p * s.c + c] = v;
          idx[p * s.c + c] = static_cast<size_t>(p * s.c + c);
        }
  DevBuf dx = upload(t, x), dy = poisoned_buffer(t, pixels * s.c, ctx.stream);
  const Status st = resize(s, {dx.ptr, 0, 0}, {dy.ptr, 0, 0}, ctx.stream);
  static const char* coords[] = {"asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel"};
  static const char* nears[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  char what[200];
  std::snprintf(what, sizeof what, "%s %s%s%s %dx%d->%dx%d c%d", s.mode == ResizeMode::kLinear ? "linear" : "nearest",
                coords[static_cast<int>(s.coord)], s.mode == ResizeMode::kNearest ? " " : "",
                s.mode == ResizeMode::kNearest ? nears[static_cast<int>(s.nearest)] : "", s.h, s.w, s.out_h, s.out_w,
                s.c);
  record_dense(ctx, t == DType::kF16 ? KernelId::f16_resize_nhwc : KernelId::f32_resize_nhwc, t, what, dy, pixels * s.c,
               ref, idx, st);
}

void layout_case(Ctx& ctx, DType from, DType to, int n, int c, int h, int w, int c_padded, int y_off, int y_extra) {
  const int hw = h * w;
  const int cp = std::max(c, c_padded);
  const int64_t ps = cp + y_off + y_extra;
  // NCHW -> NHWC
  std::vector<float> x = ctx.rng.values(from, static_cast<size_t>(n) * c * hw, -100.f, 100.f);
  std::vector<double> ref(static_cast<size_t>(n) * hw * cp);
  std::vector<size_t> idx(ref.size());
  for (int i = 0; i < n; ++i)
    for (int p = 0; p < hw; ++p)
      for (int k = 0; k < cp; ++k) {
        const size_t o = (static_cast<size_t>(i) * hw + p) * cp + k;
        ref[o] = k < c ? round_to(to, x[(static_cast<size_t>(i) * c + k) * hw + p]) : 0.0;
        idx[o] = static_cast<size_t>((static_cast<int64_t>(i) * hw + p) * ps + y_off + k);
      }
  DevBuf dx = upload(from, x), dy = poisoned_buffer(to, static_cast<size_t>(n) * hw * ps, ctx.stream);
  Status st = nchw_to_nhwc(from, to, n, c, h, w, dx.ptr, {dy.ptr, ps, y_off}, c_padded, ctx.stream);
  char what[160];
  std::snprintf(what, sizeof what, "%s->%s n%d c%d %dx%d cpad%d y@%d/%lld", from == DType::kF16 ? "f16" : "f32",
                to == DType::kF16 ? "f16" : "f32", n, c, h, w, c_padded, y_off, static_cast<long long>(ps));
  record_dense(ctx, to == DType::kF16 ? KernelId::f16_layout_nchw_to_nhwc : KernelId::f32_layout_nchw_to_nhwc, to, what,
               dy, static_cast<size_t>(n) * hw * ps, ref, idx, st);
  // NHWC (slice of a wider buffer) -> NCHW
  const int64_t xps = c + y_off + y_extra;
  std::vector<float> xs = ctx.rng.values(from, static_cast<size_t>(n) * hw * xps, -100.f, 100.f);
  std::vector<double> ref2(static_cast<size_t>(n) * c * hw);
  std::vector<size_t> idx2(ref2.size());
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < c; ++k)
      for (int p = 0; p < hw; ++p) {
        const size_t o = (static_cast<size_t>(i) * c + k) * hw + p;
        ref2[o] = round_to(to, xs[(static_cast<size_t>(i) * hw + p) * xps + y_off + k]);
        idx2[o] = o;
      }
  DevBuf dx2 = upload(from, xs), dy2 = poisoned_buffer(to, ref2.size(), ctx.stream);
  st = nhwc_to_nchw(from, to, n, c, h, w, {dx2.ptr, xps, y_off}, dy2.ptr, ctx.stream);
  record_dense(ctx, to == DType::kF16 ? KernelId::f16_layout_nhwc_to_nchw : KernelId::f32_layout_nhwc_to_nchw, to, what,
               dy2, ref2.size(), ref2, idx2, st);
}

}  // namespace

void run_misc_suite(Ctx& ctx) {
  for (DType t : {DType::kF16, DType::kF32}) {
    softmax_case(ctx, t, 7, 1000, 0, false);
    softmax_case(ctx, t, 7, 1000, 0, true);
    softmax_case(ctx, t, 3, 13, 3, false);
    softmax_case(ctx, t, 5, 1, 0, true);
    softmax_case(ctx, t, 2, 4099, 1, false);
    for (int c = 0; c < 4; ++c) {
      ResizeShape s;
      s.dtype = t, s.n = 2, s.h = 5, s.w = 7, s.c = 13, s.out_h = 10, s.out_w = 14, s.scale_h = 2.f, s.scale_w = 2.f;
      s.coord = static_cast<ResizeCoord>(c);
      s.mode = ResizeMode::kLinear;
      resize_case(ctx, s);
      s.out_h = 7, s.out_w = 4, s.scale_h = 7.f / 5.f, s.scale_w = 4.f / 7.f;  // up and down, non-integer
      resize_case(ctx, s);
      s.mode = ResizeMode::kNearest;
      for (int m = 0; m < 4; ++m) {
        s.nearest = static_cast<ResizeNearest>(m);
        s.out_h = 10, s.out_w = 14, s.scale_h = 2.f, s.scale_w = 2.f;
        resize_case(ctx, s);
        s.out_h = 7, s.out_w = 4, s.scale_h = 7.f / 5.f, s.scale_w = 4.f / 7.f;
        resize_case(ctx, s);
      }
    }
    {
      ResizeShape s;
      s.dtype = t, s.n = 1, s.h = 1, s.w = 1, s.c = 8, s.out_h = 3, s.out_w = 1, s.scale_h = 3.f, s.scale_w = 1.f;
      s.mode = ResizeMode::kLinear, s.coord = ResizeCoord::kPytorchHalfPixel;
      resize_case(ctx, s);
    }
  }
  for (DType from : {DType::kF32, DType::kF16})
    for (DType to : {DType::kF16, DType::kF32}) {
      layout_case(ctx, from, to, 2, 3, 37, 29, 8, 0, 0);  // model input, channels padded to 8
      layout_case(ctx, from, to, 7, 64, 7, 7, 0, 8, 8);
      layout_case(ctx, from, to, 1, 1000, 1, 1, 0, 0, 0);
      layout_case(ctx, from, to, 3, 45, 5, 3, 0, 3, 1);
    }
}

}  // namespace infera::gpu::test
