// Convolution variants against a double-precision reference: every candidate that
// conv_candidates offers for a case is run on that case (poisoned output, slice check).
#include <algorithm>

#include "test_util.h"

namespace infera::gpu::test {
namespace {

struct ConvCase {
  std::string name;
  ConvShape s;
  bool bias = true, residual = false;
  Activation act;
  int x_extra = 0, y_extra = 0, r_extra = 0;  // extra channels per pixel (slices of wider buffers)
  int y_off = 0, r_off = 0;                   // x offset lives in s.x_c_offset
};

void run_case(Ctx& ctx, ConvCase cc) {
  ConvShape& s = cc.s;
  const DType t = s.dtype;
  const int P = s.p(), Q = s.q(), G = s.groups, Cg = s.c / G, Kg = s.k / G;
  const int64_t xps = s.c + s.x_c_offset + cc.x_extra;
  if (cc.x_extra || s.x_c_offset) s.x_pixel_stride = xps;
  const int64_t yps = s.k + cc.y_off + cc.y_extra, rps = s.k + cc.r_off + cc.r_extra;
  const int64_t npix_in = static_cast<int64_t>(s.n) * s.h * s.w, npix_out = static_cast<int64_t>(s.n) * P * Q;
  Rng& rng = ctx.rng;
  std::vector<float> x = rng.values(t, npix_in * xps);
  const float wscale = 1.f / std::sqrt(static_cast<float>(s.r * s.s * Cg));
  std::vector<float> w = rng.values(t, static_cast<size_t>(s.k) * s.r * s.s * Cg, -wscale, wscale);
  std::vector<float> bias = rng.values(DType::kF32, s.k, -0.5f, 0.5f);
  std::vector<float> res = rng.values(t, npix_out * rps);

  // Reference over the logical output [N*P*Q][K].
  std::vector<double> ref(npix_out * s.k);
  parallel_for(npix_out, [&](int64_t m) {
    const int img = static_cast<int>(m / (P * Q)), pp = static_cast<int>(m / Q % P), qq = static_cast<int>(m % Q);
    for (int k = 0; k < s.k; ++k) {
      const int g = k / Kg;
      double acc = 0;
      for (int r = 0; r < s.r; ++r) {
        const int ih = pp * s.stride_h - s.pad_t + r * s.dil_h;
        if (ih < 0 || ih >= s.h) continue;
        for (int q = 0; q < s.s; ++q) {
          const int iw = qq * s.stride_w - s.pad_l + q * s.dil_w;
          if (iw < 0 || iw >= s.w) continue;
          const float* xp = &x[((static_cast<int64_t>(img) * s.h + ih) * s.w + iw) * xps + s.x_c_offset + g * Cg];
          const float* wp = &w[((static_cast<int64_t>(k) * s.r + r) * s.s + q) * Cg];
          for (int c = 0; c < Cg; ++c) acc += static_cast<double>(xp[c]) * wp[c];
        }
      }
      if (cc.bias) acc += bias[k];
      if (cc.residual) acc += res[m * rps + cc.r_off + k];
      ref[m * s.k + k] = activation_ref<double>(cc.act, acc);
    }
  });
  std::vector<size_t> idx(ref.size());
  for (int64_t m = 0; m < npix_out; ++m)
    for (int k = 0; k < s.k; ++k) idx[m * s.k + k] = static_cast<size_t>(m * yps + cc.y_off + k);

  DevBuf dx = upload(t, x), dw = upload(t, w), db = upload(DType::kF32, bias), dr = upload(t, res);
  const std::vector<Candidate> cands = conv_candidates(s, ctx.dev);
  if (cands.empty()) {
    std::printf("  conv case %s: NO CANDIDATE  FAIL\n", cc.name.c_str());
    ctx.results.by_id[KernelId::kCount].failures++;
    return;
  }
  for (const Candidate& c : cands) {
    DevBuf dy = poisoned_buffer(t, npix_out * yps, ctx.stream);
    DevBuf ws(c.workspace_bytes);
    ConvTensors ten;
    ten.x = {dx.ptr, s.x_pixel_stride, s.x_c_offset};
    ten.w = dw.ptr;
    ten.y = {dy.ptr, yps, cc.y_off};
    ten.ep.bias = cc.bias ? static_cast<const float*>(db.ptr) : nullptr;
    if (cc.residual) ten.ep.residual = {dr.ptr, rps, cc.r_off};
    ten.ep.act = cc.act;
    const Status st = conv_forward(s, c, ten, ws.ptr, ws.bytes, ctx.stream);
    check_gpu(gpuStreamSynchronize(ctx.stream), "conv sync");
    check_gpu(gpuGetLastError(), "conv kernel");
    const std::vector<float> out = download(t, dy, npix_out * yps);
    const std::vector<bool> poison = poisoned(t, dy, npix_out * yps);
    bool outside = false;
    std::vector<bool> logical(npix_out * yps, false);
    for (size_t i : idx) logical[i] = true;
    for (size_t i = 0; i < logical.size(); ++i) outside = outside || (!logical[i] && !poison[i]);
    char what[200];
    std::snprintf(what, sizeof what, "%s splits=%d", cc.name.c_str(), c.splits);
    const Compare cmp = st.ok() ? compare(out, ref, idx) : Compare{INFINITY};
    ctx.results.record(c.id, what, cmp, t, outside, st.error);
    if (st.ok() && !(cmp.err <= tolerance(t))) {  // where it goes wrong: the first mismatches
      int shown = 0;
      for (size_t i = 0; i < ref.size() && shown < 6; ++i) {
        const double o = out[idx[i]];
        if (std::fabs(o - ref[i]) > 0.05 * (1 + std::fabs(ref[i])) || std::isnan(o)) {
          std::printf("    mismatch pixel %zu channel %zu: got %g want %g\n", i / s.k, i % s.k, o, ref[i]);
          ++shown;
        }
      }
    }
  }
}

ConvShape shape(DType t, int n, int h, int w, int c, int k, int r, int s, int stride, int pad, int dil = 1,
                int groups = 1) {
  ConvShape sh;
  sh.dtype = t, sh.n = n, sh.h = h, sh.w = w, sh.c = c, sh.k = k, sh.r = r, sh.s = s;
  sh.stride_h = sh.stride_w = stride;
  sh.pad_t = sh.pad_l = sh.pad_b = sh.pad_r = pad;
  sh.dil_h = sh.dil_w = dil;
  sh.groups = groups;
  return sh;
}

std::string describe(const ConvShape& s) {
  char b[160];
  std::snprintf(b, sizeof b, "n%d %dx%dx%d k%d %dx%d s%d p%d,%d,%d,%d d%d g%d", s.n, s.h, s.w, s.c, s.k, s.r, s.s,
                s.stride_h, s.pad_t, s.pad_l, s.pad_b, s.pad_r, s.dil_h, s.groups);
  return b;
}

}  // namespace

void run_conv_suite(Ctx& ctx) {
  const Activation relu{ActKind::kRelu, 0, 0}, none{}, lrelu{ActKind::kLeakyRelu, 0.1f, 0},
      swish{ActKind::kSwish, 1.f, 0}, clip{ActKind::kClip, 0.f, 6.f};
  for (DType t : {DType::kF16, DType::kF32}) {
    std::vector<ConvCase> cases;
    auto add = [&](ConvShape s, bool bias, bool res, Activation act) {
      ConvCase c;
      c.s = s, c.bias = bias, c.residual = res, c.act = act;
      c.name = describe(s);
      cases.push_back(c);
      return &cases.back();
    };
    add(shape(t, 1, 8, 8, 64, 64, 1, 1, 1, 0), true, false, relu);
    add(shape(t, 7, 7, 7, 64, 256, 1, 1, 1, 0), true, true, relu);
    add(shape(t, 2, 14, 14, 64, 64, 3, 3, 1, 1), true, false, relu);
    add(shape(t, 3, 15, 15, 32, 48, 3, 3, 2, 1), true, true, lrelu);
    add(shape(t, 1, 9, 9, 16, 24, 3, 3, 1, 2, 2), false, false, none);
    add(shape(t, 2, 32, 32, 3, 64, 7, 7, 2, 3), true, false, relu);          // stem, C = 3
    add(shape(t, 2, 14, 14, 64, 128, 1, 1, 2, 0), true, true, none);         // downsample
    add(shape(t, 7, 6, 5, 13, 5, 3, 3, 1, 1), true, true, swish);            // odd C and K
    add(shape(t, 7, 1, 1, 72, 40, 3, 3, 1, 1), true, false, clip);           // 1x1 spatial
    add(shape(t, 2, 10, 10, 32, 64, 3, 3, 1, 1, 1, 2), true, false, relu);   // groups 2 (Cg 16)
    add(shape(t, 2, 9, 9, 16, 16, 3, 3, 1, 1, 1, 4), true, true, relu);      // groups 4 (Cg 4)
    add(shape(t, 2, 10, 10, 32, 32, 3, 3, 1, 1, 1, 32), true, false, relu);  // depthwise
    add(shape(t, 1, 11, 11, 24, 24, 5, 5, 2, 2, 1, 24), true, true, swish);  // depthwise 5x5 s2
    add(shape(t, 7, 6, 6, 13, 13, 3, 3, 1, 1, 1, 13), false, false, none);   // depthwise odd C
    add(shape(t, 2, 8, 8, 8, 16, 3, 3, 1, 1, 1, 8), true, false, relu);      // depthwise multiplier 2
    add(shape(t, 1, 7, 7, 512, 512, 3, 3, 1, 1), true, false, relu);         // batch-1 layer4: split-K
    add(shape(t, 1, 14, 14, 256, 1024, 1, 1, 1, 0), true, true, relu);       // batch-1 layer3 1x1
    add(shape(t, 4, 28, 28, 128, 128, 3, 3, 1, 1), true, false, relu);
    add(shape(t, 2, 56, 56, 64, 256, 1, 1, 1, 0), true, true, relu);  // many M tiles
    add(shape(t, 1, 3, 3, 8, 8, 1, 1, 1, 0), false, false, none);
    {  // TF "SAME" with stride 2: asymmetric pads
      ConvShape s = shape(t, 2, 12, 12, 16, 32, 3, 3, 2, 0);
      s.pad_b = s.pad_r = 1;
      add(s, true, false, relu);
    }
    {  // output into an aligned and an unaligned channel slice of a Concat buffer; input slice
      ConvCase* c = add(shape(t, 2, 9, 9, 32, 40, 3, 3, 1, 1), true, true, relu);
      c->y_off = 8, c->y_extra = 24, c->r_off = 16, c->r_extra = 8;
      c->name += " y@8/72 r@16";
      c = add(shape(t, 2, 9, 9, 32, 40, 3, 3, 1, 1), true, true, relu);
      c->y_off = 3, c->y_extra = 5, c->name += " y@3/48";
      c = add(shape(t, 2, 9, 9, 32, 48, 1, 1, 1, 0), true, false, relu);
      c->s.x_c_offset = 16, c->x_extra = 8, c->name += " x@16/56";
      c = add(shape(t, 2, 9, 9, 32, 48, 3, 3, 1, 1), true, false, relu);
      c->s.x_c_offset = 4, c->x_extra = 4, c->name += " x@4/40";
    }
    // Seeded random shapes.
    for (int i = 0; i < 24; ++i) {
      Rng& r = ctx.rng;
      const int groups = r.coin(0.25) ? r.pick(std::vector<int>{2, 4}) : 1;
      const int cg = r.pick(std::vector<int>{1, 3, 8, 13, 16, 24, 64});
      const int kg = r.pick(std::vector<int>{1, 5, 8, 16, 24, 40, 96});
      const int kr = r.pick(std::vector<int>{1, 1, 3, 3, 5}), ks = r.coin(0.8) ? kr : r.pick(std::vector<int>{1, 3});
      const int stride = r.pick(std::vector<int>{1, 1, 2}), dil = r.coin(0.2) ? 2 : 1;
      const int pad_h = r.range(0, kr / 2 * dil), pad_w = r.range(0, ks / 2 * dil);
      const int h = r.range(std::max(1, dil * (kr - 1) + 1 - 2 * pad_h), 17);
      const int w = r.range(std::max(1, dil * (ks - 1) + 1 - 2 * pad_w), 17);
      ConvShape s = shape(t, r.pick(std::vector<int>{1, 2, 7}), h, w, cg * groups, kg * groups, kr, ks, stride, pad_h,
                          dil, groups);
      s.pad_l = s.pad_r = pad_w;
      add(s, r.coin(0.7), r.coin(0.4), random_act(r));
    }
    for (const ConvCase& c : cases) run_case(ctx, c);
  }
}

}  // namespace infera::gpu::test
