// Pooling variants (windowed and global) against a double-precision reference.
#include <algorithm>

#include "test_util.h"

namespace infera::gpu::test {
namespace {

KernelId pool_id(DType t) { return t == DType::kF16 ? KernelId::f16_pool_nhwc : KernelId::f32_pool_nhwc; }
KernelId gpool_id(DType t) {
  return t == DType::kF16 ? KernelId::f16_global_pool_nhwc : KernelId::f32_global_pool_nhwc;
}

// Checks out (a [pixels][ps] buffer at offset off) against ref ([pixels][c]); records the result.
void finish(Ctx& ctx, KernelId id, DType t, const std::string& what, const DevBuf& dy, int64_t pixels, int c,
            int64_t ps, int64_t off, const std::vector<double>& ref, const Status& st) {
  check_gpu(gpuStreamSynchronize(ctx.stream), "sync");
  const std::vector<float> out = download(t, dy, pixels * ps);
  const std::vector<bool> poison = poisoned(t, dy, pixels * ps);
  std::vector<size_t> idx(ref.size());
  std::vector<bool> logical(out.size(), false);
  for (int64_t p = 0; p < pixels; ++p)
    for (int k = 0; k < c; ++k)
      idx[p * c + k] = static_cast<size_t>(p * ps + off + k), logical[p * ps + off + k] = true;
  bool outside = false;
  for (size_t i = 0; i < out.size(); ++i) outside = outside || (!logical[i] && !poison[i]);
  ctx.results.record(id, what, st.ok() ? compare(out, ref, idx) : Compare{INFINITY}, t, outside, st.error);
}

void pool_case(Ctx& ctx, PoolShape s, int y_off, int y_extra) {
  const DType t = s.dtype;
  const int P = s.p(), Q = s.q();
  std::vector<float> x = ctx.rng.values(t, static_cast<size_t>(s.n) * s.h * s.w * s.c);
  const int64_t pixels = static_cast<int64_t>(s.n) * P * Q, yps = s.c + y_off + y_extra;
  std::vector<double> ref(pixels * s.c);
  for (int64_t m = 0; m < pixels; ++m) {
    const int img = static_cast<int>(m / (P * Q)), pp = static_cast<int>(m / Q % P), qq = static_cast<int>(m % Q);
    for (int c = 0; c < s.c; ++c) {
      double acc = s.kind == PoolKind::kMax ? -INFINITY : 0.0;
      int count = 0, padded = 0;
      for (int r = 0; r < s.r; ++r)
        for (int q = 0; q < s.s; ++q) {
          const int ih = pp * s.stride_h - s.pad_t + r * s.dil_h, iw = qq * s.stride_w - s.pad_l + q * s.dil_w;
          if (ih >= -s.pad_t && ih < s.h + s.pad_b && iw >= -s.pad_l && iw < s.w + s.pad_r) ++padded;
          if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
          ++count;
          const double v = x[((static_cast<int64_t>(img) * s.h + ih) * s.w + iw) * s.c + c];
          acc = s.kind == PoolKind::kMax ? std::max(acc, v) : acc + v;
        }
      if (count == 0)
        acc = 0;
      else if (s.kind == PoolKind::kAvg)
        acc /= (s.count_include_pad ? padded : count);
      ref[m * s.c + c] = acc;
    }
  }
  DevBuf dx = upload(t, x), dy = poisoned_buffer(t, pixels * yps, ctx.stream);
  const Status st = pool(s, {dx.ptr, 0, 0}, {dy.ptr, yps, y_off}, ctx.stream);
  char what[200];
  std::snprintf(what, sizeof what, "%s n%d %dx%dx%d %dx%d s%d p%d,%d,%d,%d d%d ceil%d incl%d y@%d",
                s.kind == PoolKind::kMax ? "max" : "avg", s.n, s.h, s.w, s.c, s.r, s.s, s.stride_h, s.pad_t, s.pad_l,
                s.pad_b, s.pad_r, s.dil_h, s.ceil_mode, s.count_include_pad, y_off);
  finish(ctx, pool_id(t), t, what, dy, pixels, s.c, yps, y_off, ref, st);
}

void global_case(Ctx& ctx, DType t, PoolKind kind, int n, int hw, int c, int x_off, int x_extra) {
  const int64_t xps = c + x_off + x_extra;
  std::vector<float> x = ctx.rng.values(t, static_cast<size_t>(n) * hw * xps);
  std::vector<double> ref(static_cast<size_t>(n) * c);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < c; ++k) {
      double acc = kind == PoolKind::kMax ? -INFINITY : 0.0;
      for (int p = 0; p < hw; ++p) {
        const double v = x[(static_cast<int64_t>(i) * hw + p) * xps + x_off + k];
        acc = kind == PoolKind::kMax ? std::max(acc, v) : acc + v;
      }
      ref[static_cast<size_t>(i) * c + k] = kind == PoolKind::kMax ? acc : acc / hw;
    }
  DevBuf dx = upload(t, x), dy = poisoned_buffer(t, static_cast<size_t>(n) * c, ctx.stream);
  const Status st = global_pool(t, kind, n, hw, c, {dx.ptr, xps, x_off}, {dy.ptr, 0, 0}, ctx.stream);
  char what[160];
  std::snprintf(what, sizeof what, "global %s n%d hw%d c%d x@%d/%lld", kind == PoolKind::kMax ? "max" : "avg", n, hw, c,
                x_off, static_cast<long long>(xps));
  finish(ctx, gpool_id(t), t, what, dy, n, c, c, 0, ref, st);
}

PoolShape ps(DType t, PoolKind kind, int n, int h, int w, int c, int k, int stride, int pad) {
  PoolShape s;
  s.dtype = t, s.kind = kind, s.n = n, s.h = h, s.w = w, s.c = c, s.r = s.s = k;
  s.stride_h = s.stride_w = stride;
  s.pad_t = s.pad_l = s.pad_b = s.pad_r = pad;
  return s;
}

}  // namespace

void run_pool_suite(Ctx& ctx) {
  for (DType t : {DType::kF16, DType::kF32}) {
    pool_case(ctx, ps(t, PoolKind::kMax, 2, 17, 17, 64, 3, 2, 1), 0, 0);  // ResNet stem pool
    PoolShape s = ps(t, PoolKind::kAvg, 7, 9, 9, 24, 3, 1, 1);
    pool_case(ctx, s, 0, 0);
    s.count_include_pad = true;
    pool_case(ctx, s, 8, 8);
    s = ps(t, PoolKind::kAvg, 1, 15, 15, 16, 2, 2, 0);
    s.ceil_mode = true;
    pool_case(ctx, s, 0, 0);
    s.count_include_pad = true;
    s.pad_b = s.pad_r = 1;
    pool_case(ctx, s, 0, 0);
    s = ps(t, PoolKind::kMax, 1, 14, 13, 32, 3, 2, 0);
    s.ceil_mode = true;
    pool_case(ctx, s, 0, 0);
    s = ps(t, PoolKind::kMax, 2, 11, 11, 13, 3, 1, 2);
    s.dil_h = s.dil_w = 2;
    pool_case(ctx, s, 3, 4);
    pool_case(ctx, ps(t, PoolKind::kAvg, 3, 7, 7, 40, 7, 1, 0), 0, 0);
    s = ps(t, PoolKind::kMax, 1, 8, 8, 8, 3, 2, 0);
    s.pad_b = s.pad_r = 1;
    pool_case(ctx, s, 0, 0);
    pool_case(ctx, ps(t, PoolKind::kMax, 1, 1, 1, 5, 1, 1, 0), 0, 0);
    for (PoolKind k : {PoolKind::kAvg, PoolKind::kMax}) {
      global_case(ctx, t, k, 7, 49, 2048, 0, 0);
      global_case(ctx, t, k, 2, 1, 13, 0, 0);
      global_case(ctx, t, k, 1, 300, 40, 8, 16);
    }
  }
}

}  // namespace infera::gpu::test
