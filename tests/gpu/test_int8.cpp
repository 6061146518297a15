// int8 kernels against host references that reproduce the CPU engine's arithmetic bit for bit:
// com.infera.QConv (ops/quant_conv.cpp: int32 sums, then QRequant's float32 requantization,
// rounding half to even, saturation) for every candidate qconv_candidates offers, and QuantizeLinear / DequantizeLinear
// per tensor (ops/quant.cpp's float path). Any differing output byte fails the variant.
#include <algorithm>

#include "backends/gpu/kernels/s8_cutlass.h"
#include "ops/quant_conv.h"
#include "test_util.h"

namespace infera::gpu::test {
namespace {

DevBuf upload_bytes(const void* p, size_t n) {
  DevBuf b(n + 16);
  check_gpu(gpuMemcpyHtoD(b.ptr, p, n), "upload");
  check_gpu(gpuDeviceSynchronize(), "upload sync");
  return b;
}
template <class T>
DevBuf upload_vec(const std::vector<T>& v) {
  return upload_bytes(v.data(), v.size() * sizeof(T));
}
std::vector<uint8_t> download_bytes(const DevBuf& b, size_t n) {
  std::vector<uint8_t> v(n);
  check_gpu(gpuMemcpyDtoH(v.data(), b.ptr, n), "download");
  return v;
}

// A failure that belongs to no variant (a case without candidates, a bad shape accepted):
// counted under KernelId::kCount, which the driver reports.
void fail_case(Ctx& ctx, const std::string& what) {
  std::printf("  FAIL %s\n", what.c_str());
  ctx.results.by_id[KernelId::kCount].failures++;
}

// Exact-match result: err is the fraction of differing elements (tolerance 0 for kS8).
Compare exact(size_t bad, size_t total, size_t first_bad, double worst) {
  Compare c;
  c.err = total ? static_cast<double>(bad) / static_cast<double>(total) : 0.0;
  c.bad_index = first_bad;
  c.worst = worst;
  return c;
}

struct QCase {
  std::string name;
  QConvShape s;
  bool bias = true;
  int x_extra = 0, y_off = 0, y_extra = 0, z_extra = 0;  // wider buffers (x offset: s.x_c_offset)
  bool ties = false;           // power-of-two scales: exact results, some on x.5 (rounding half to even)
  int bias_mag = 20000;        // bias in [-bias_mag, bias_mag]
  bool unknown_bound = false;  // acc_bound -1: every element through requant_value
};

// The reference of ops/quant_conv.cpp for one output element (acc already sum (x - x_zp) * w): the
// engine's own QRequant.
int requant_ref(const QConvShape& s, int32_t acc, const int32_t* bias, int k, double scale, bool has_z, int zv,
                int z_zp, float z_scale, double inv_y, int y_zp) {
  const QRequant rq = QRequant::make(s.act, inv_y, static_cast<double>(z_scale), z_zp, y_zp, s.y_uint8);
  return static_cast<int>(rq(static_cast<int64_t>(acc) + (bias ? bias[k] : 0), scale, rq.sy(scale), has_z, zv));
}

// Where some residual byte makes QRequant's fused multiply-add (float(z - z_zp) * zs + u, one
// rounding) and the product rounded apart give different outputs, sets zb to the first such byte:
// an epilogue whose compiler split the fma, or contracted other steps into it, fails on these
// elements (random data hits them about once in 1e5). Leaves zb when there is none.
void pick_hard_residual(const QConvShape& s, int64_t a, double scale, int z_zp, float z_scale, double inv_y, int y_zp,
                        uint8_t& zb) {
  const QRequant rq = QRequant::make(s.act, inv_y, static_cast<double>(z_scale), z_zp, y_zp, s.y_uint8);
  const float u = static_cast<float>(a) * rq.sy(scale);
  for (int b = 0; b < 256; ++b) {
    const int zv = s.z_uint8 ? b : static_cast<int>(static_cast<int8_t>(b));
    volatile float t = static_cast<float>(zv - z_zp) * rq.zs;  // rounded apart
    const double r1 = std::nearbyint(double(std::fma(static_cast<float>(zv - z_zp), rq.zs, u)) + y_zp);
    const double r2 = std::nearbyint(double(u + t) + y_zp);
    if (r1 != r2 && r1 > rq.lo && r1 < rq.hi && r2 > rq.lo && r2 < rq.hi) {
      zb = static_cast<uint8_t>(b);
      return;
    }
  }
}

void run_qcase(Ctx& ctx, QCase cc) {
  QConvShape& s = cc.s;
  Rng& rng = ctx.rng;
  const int P = s.p(), Q = s.q();
  const int64_t xps = s.c + s.x_c_offset + cc.x_extra;
  if (cc.x_extra || s.x_c_offset) s.x_pixel_stride = xps;
  const int64_t yps = s.k + cc.y_off + cc.y_extra, zps = s.k + cc.z_extra;
  if (cc.y_off || cc.y_extra) s.y_pixel_stride = yps, s.y_c_offset = cc.y_off;
  if (cc.z_extra) s.z_pixel_stride = zps;
  const int64_t npix_in = static_cast<int64_t>(s.n) * s.h * s.w, npix_out = static_cast<int64_t>(s.n) * P * Q;
  const int64_t kred = static_cast<int64_t>(s.r) * s.s * s.c;
  std::vector<int8_t> x(npix_in * xps), w(s.k * kred);
  for (auto& v : x) v = static_cast<int8_t>(rng.range(-128, 127));
  for (auto& v : w) v = static_cast<int8_t>(rng.range(-127, 127));
  std::vector<int32_t> bias(s.k), wsum(s.k, 0);
  for (auto& v : bias) v = rng.range(-cc.bias_mag, cc.bias_mag);
  for (int k = 0; k < s.k; ++k)
    for (int64_t i = 0; i < kred; ++i) wsum[k] += w[k * kred + i];
  std::vector<uint8_t> z(s.has_residual ? npix_out * zps : 0);
  for (auto& v : z) v = static_cast<uint8_t>(rng.range(0, 255));
  // Scales that spread the outputs over the whole int8 range (some saturate).
  float x_scale = rng.uniform(0.01f, 0.05f);
  std::vector<float> w_scales(s.k);
  for (auto& v : w_scales) v = rng.uniform(0.002f, 0.02f);
  float y_scale = static_cast<float>(x_scale * 0.01 * std::sqrt(static_cast<double>(kred)) * 5000.0 / 80.0);
  float z_scale = y_scale * rng.uniform(0.5f, 2.f);
  if (cc.ties) {  // v / y_scale = (acc + bias) / 1024 + (z - z_zp) / 2: exact, with x.5 ties among them
    x_scale = 1.f / 64, y_scale = 1.f, z_scale = 0.5f;
    for (auto& v : w_scales) v = 1.f / 16;
  }
  const int y_zp = s.y_uint8 ? rng.range(100, 150) : rng.range(-10, 10);
  const int z_zp = s.z_uint8 ? rng.range(100, 150) : rng.range(-10, 10);
  std::vector<double> scale(s.k);
  for (int k = 0; k < s.k; ++k) scale[k] = double(x_scale) * double(w_scales[k]);
  const double inv_y = 1.0 / static_cast<double>(y_scale);

  std::vector<int> ref(npix_out * s.k);
  parallel_for(npix_out, [&](int64_t m) {
    const int img = static_cast<int>(m / (P * Q)), pp = static_cast<int>(m / Q % P), qq = static_cast<int>(m % Q);
    for (int k = 0; k < s.k; ++k) {
      int32_t acc = 0;
      for (int r = 0; r < s.r; ++r) {
        const int ih = pp * s.stride_h - s.pad_t + r * s.dil_h;
        if (ih < 0 || ih >= s.h) continue;
        for (int q = 0; q < s.s; ++q) {
          const int iw = qq * s.stride_w - s.pad_l + q * s.dil_w;
          if (iw < 0 || iw >= s.w) continue;
          const int8_t* xp = &x[((static_cast<int64_t>(img) * s.h + ih) * s.w + iw) * xps + s.x_c_offset];
          const int8_t* wp = &w[((static_cast<int64_t>(k) * s.r + r) * s.s + q) * s.c];
          for (int c = 0; c < s.c; ++c) acc += (int32_t(xp[c]) - s.x_zero_point) * int32_t(wp[c]);
        }
      }
      if (s.has_residual && !cc.ties)
        pick_hard_residual(s, int64_t{acc} + (cc.bias ? bias[k] : 0), scale[k], z_zp, z_scale, inv_y, y_zp,
                           z[m * zps + k]);
      int zv = 0;
      if (s.has_residual) zv = s.z_uint8 ? int(z[m * zps + k]) : int(static_cast<int8_t>(z[m * zps + k]));
      ref[m * s.k + k] = requant_ref(s, acc, cc.bias ? bias.data() : nullptr, k, scale[k], s.has_residual, zv, z_zp,
                                     z_scale, inv_y, y_zp);
    }
  });

  DevBuf dx = upload_vec(x), dw = upload_vec(w), db = upload_vec(bias), ds = upload_vec(scale), dws = upload_vec(wsum),
         drows = upload_vec(qconv_epilogue_rows(scale.data(), s.k, inv_y));
  DevBuf dz = z.empty() ? DevBuf() : upload_vec(z);
  const std::vector<Candidate> cands = qconv_candidates(s, ctx.dev);
  if (cands.empty()) {
    fail_case(ctx, cc.name + ": no candidate");
    return;
  }
  const size_t ybytes = static_cast<size_t>(npix_out * yps);
  for (const Candidate& c : cands) {
    DevBuf dy(ybytes + 16), dsplit(c.workspace_bytes);
    check_gpu(gpuMemsetAsync(dy.ptr, 0x5a, dy.bytes, ctx.stream), "memset");
    if (dsplit.bytes) check_gpu(gpuMemsetAsync(dsplit.ptr, 0x7f, dsplit.bytes, ctx.stream), "memset");
    QConvTensors t;
    t.ws = dsplit.ptr, t.ws_bytes = dsplit.bytes;
    t.x = {dx.ptr, s.x_pixel_stride, 0};
    t.w = static_cast<const int8_t*>(dw.ptr);
    t.y = {dy.ptr, yps, cc.y_off};
    t.bias = cc.bias ? static_cast<const int32_t*>(db.ptr) : nullptr;
    t.scale = static_cast<const double*>(ds.ptr);
    t.wsum = static_cast<const int32_t*>(dws.ptr);
    if (s.has_residual) t.z = {dz.ptr, zps, 0};
    t.z_scale = static_cast<double>(z_scale);
    t.z_zero_point = z_zp;
    t.inv_y = inv_y;
    t.y_zero_point = y_zp;
    t.epi_rows = static_cast<const int32_t*>(drows.ptr);
    t.acc_bound =
        cc.unknown_bound ? -1 : qconv_acc_bound(w.data(), s.k, kred, cc.bias ? bias.data() : nullptr, s.x_zero_point);
    t.sy_max = cc.unknown_bound ? -1.f : qconv_sy_max(scale.data(), s.k, inv_y);
    const Status st = qconv_forward(s, c, t, ctx.stream);
    // The CUTLASS epilogue has only the short float path: a layer without the host's bounds (|a| <
    // 2^31, no float overflow) must be refused (the search then takes one of ours), never run.
    if ((s8_cutlass_gemm_is_variant(c.id) || s8_cutlass_conv_is_variant(c.id)) &&
        (t.acc_bound < 0 || t.acc_bound >= (int64_t{1} << 31) || t.sy_max < 0.f)) {
      check_gpu(gpuStreamSynchronize(ctx.stream), "sync");
      ctx.results.record(c.id, cc.name + " (refused: no host bounds)", Compare{}, DType::kS8, false,
                         st.ok() ? "ran without the host's bounds" : nullptr);
      continue;
    }
    check_gpu(gpuStreamSynchronize(ctx.stream), "sync");
    const std::vector<uint8_t> out = download_bytes(dy, dy.bytes);
    size_t bad = 0, first = 0;
    double worst = 0;
    bool outside = false;
    for (int64_t m = 0; m < npix_out; ++m)
      for (int64_t ch = 0; ch < yps; ++ch) {
        const uint8_t o = out[m * yps + ch];
        if (ch < cc.y_off || ch >= cc.y_off + s.k) {
          outside = outside || o != 0x5a;
          continue;
        }
        const int k = static_cast<int>(ch - cc.y_off);
        const int got = s.y_uint8 ? int(o) : int(static_cast<int8_t>(o));
        const int want = ref[m * s.k + k];
        if (got != want) {
          if (!bad) first = static_cast<size_t>(m * s.k + k);
          ++bad;
          worst = std::max(worst, std::fabs(double(got - want)));
        }
      }
    for (size_t i = ybytes; i < out.size(); ++i) outside = outside || out[i] != 0x5a;
    ctx.results.record(c.id, cc.name, exact(bad, ref.size(), first, worst), DType::kS8, outside,
                       st.ok() ? nullptr : st.error);
  }
}

QConvShape qshape(int n, int h, int w, int c, int k, int r, int stride, int pad) {
  QConvShape s;
  s.n = n, s.h = h, s.w = w, s.c = c, s.k = k, s.r = r, s.s = r;
  s.stride_h = s.stride_w = stride;
  s.pad_t = s.pad_l = s.pad_b = s.pad_r = pad;
  return s;
}

Activation qact(Rng& rng) {
  static const std::vector<Activation> acts = {
      {ActKind::kIdentity, 0, 0}, {ActKind::kRelu, 0, 0}, {ActKind::kLeakyRelu, 0.1f, 0}, {ActKind::kClip, -1.5f, 3.f}};
  return rng.pick(acts);
}

void run_qconv(Ctx& ctx) {
  Rng& rng = ctx.rng;
  std::vector<QCase> cases;
  auto add = [&](const std::string& name, QConvShape s) {
    QCase c;
    c.name = name;
    c.s = s;
    c.s.act = qact(rng);
    cases.push_back(c);
    return &cases.back();
  };
  // The ResNet-50 kinds: 1x1 (plain GEMM), 1x1 stride 2, 3x3 pad 1 (stride 1 and 2), 7x7 stem.
  add("1x1 64->256", qshape(2, 14, 14, 64, 256, 1, 1, 0));
  add("1x1 s2 256->512", qshape(2, 14, 14, 256, 512, 1, 2, 0));
  add("3x3 p1 64->64", qshape(2, 14, 14, 64, 64, 3, 1, 1));
  add("3x3 s2 p1 128->128", qshape(2, 15, 15, 128, 128, 3, 2, 1));
  add("7x7 s2 p3 C4 (scalar)", qshape(1, 32, 32, 4, 64, 7, 2, 3));
  add("3x3 p1 C24 K20 (scalar)", qshape(2, 9, 11, 24, 20, 3, 1, 1));
  add("1x1 C6 K13 (scalar)", qshape(3, 5, 7, 6, 13, 1, 1, 0));
  add("1x1 2048 K1000 (FC as conv)", qshape(4, 1, 1, 2048, 1000, 1, 1, 0));
  {
    QCase* c = add("3x3 p1 residual", qshape(2, 8, 8, 32, 48, 3, 1, 1));
    c->s.has_residual = true;
    c->s.act = {ActKind::kRelu, 0, 0};
  }
  {
    QCase* c = add("1x1 residual uint8 z, uint8 y", qshape(2, 7, 7, 64, 64, 1, 1, 0));
    c->s.has_residual = true;
    c->s.z_uint8 = true;
    c->s.y_uint8 = true;
  }
  for (const bool res : {false, true}) {
    QCase* c = add(res ? "1x1 exact ties, residual" : "3x3 p1 exact ties",
                   res ? qshape(2, 7, 7, 64, 64, 1, 1, 0) : qshape(2, 8, 8, 32, 48, 3, 1, 1));
    c->ties = true;
    c->s.has_residual = res;
  }
  {
    QCase* c = add("3x3 no pad, x zero point", qshape(2, 9, 9, 32, 40, 3, 1, 0));
    c->s.x_zero_point = 17;
    c->bias = false;
  }
  {
    QCase* c = add("1x1 x slice, y slice", qshape(2, 6, 6, 32, 64, 1, 1, 0));
    c->s.x_c_offset = 16;
    c->x_extra = 16;
    c->y_off = 32;
    c->y_extra = 8;
  }
  {  // 16-byte rows everywhere: the CUTLASS GEMM takes the slices too (TMA with row strides)
    QCase* c = add("1x1 x, y, residual slices on 16-byte rows", qshape(2, 6, 6, 32, 64, 1, 1, 0));
    c->s.x_c_offset = 16;
    c->y_off = 16;
    c->y_extra = 16;
    c->z_extra = 16;
    c->s.has_residual = true;
  }
  {
    QCase* c = add("3x3 dilation 2 pad 2", qshape(1, 12, 12, 32, 32, 3, 1, 2));
    c->s.dil_h = c->s.dil_w = 2;
  }
  // The epilogue's three paths: |acc + bias| <= 2^22 (the magic-constant conversion: the 1x1 64->256
  // above), up to 2^31 (a conversion instruction: a large bias here), past it or unknown (every
  // element through requant_value).
  {
    QCase* c = add("1x1 64->64 bias near 2^30", qshape(2, 7, 7, 64, 64, 1, 1, 0));
    c->bias_mag = 1 << 30;
    c->s.has_residual = true;
  }
  {
    QCase* c = add("1x1 64->64 bias past the int32 bound", qshape(2, 7, 7, 64, 64, 1, 1, 0));
    c->bias_mag = 2100000000;
  }
  {
    QCase* c = add("3x3 p1 unknown bound, residual", qshape(2, 8, 8, 32, 48, 3, 1, 1));
    c->unknown_bound = true;
    c->s.has_residual = true;
  }
  // Deep layers at batch 1: grids of a few blocks, where the split-K variant is offered (int32
  // partials summed in a second pass, then the epilogue: with a residual and uint8 y, with an input
  // zero point, into a channel slice of y).
  {
    QCase* c = add("3x3 p1 256->128 7x7 split-K, residual, uint8 y", qshape(1, 7, 7, 256, 128, 3, 1, 1));
    c->s.has_residual = true;
    c->s.y_uint8 = true;
  }
  {
    QCase* c = add("3x3 no pad 128->72 split-K, x zero point", qshape(1, 9, 9, 128, 72, 3, 1, 0));
    c->s.x_zero_point = -9;
  }
  {
    QCase* c = add("1x1 1024->200 split-K, y slice", qshape(1, 4, 4, 1024, 200, 1, 1, 0));
    c->y_off = 8;
    c->y_extra = 16;
  }
  // The persistent variant (K <= 256): M tiles enough that each block walks several (the prefetch of
  // the next tile and its residual into the other buffer), a channel tail in its N tile (K 200), the
  // residual through shared memory (pixel stride 256) and from global memory (pixel stride 200, not
  // a multiple of 16), a strided gather with 4 k-tiles.
  {
    QCase* c = add("1x1 64->256 many tiles per block, residual", qshape(32, 56, 56, 64, 256, 1, 1, 0));
    c->s.has_residual = true;
    c->s.act = {ActKind::kRelu, 0, 0};
  }
  {
    QCase* c = add("1x1 128->200 many tiles, residual, uint8 y", qshape(16, 40, 40, 128, 200, 1, 1, 0));
    c->s.has_residual = true;
    c->s.y_uint8 = true;
  }
  add("1x1 s2 256->72 many tiles", qshape(16, 30, 30, 256, 72, 1, 2, 0));
  // An RGB stem after the space-to-depth the backend applies (gpu_conv.cpp): 4x4, C = 16, stride 1.
  add("4x4 C16 stem after space-to-depth", qshape(2, 19, 19, 16, 64, 4, 1, 0));
  // Seeded random shapes.
  for (int i = 0; i < 12; ++i) {
    const int r = rng.pick(std::vector<int>{1, 1, 3, 3, 5});
    const int stride = rng.range(1, 2), pad = r > 1 ? rng.range(0, r / 2) : 0;
    const int c = rng.coin(0.7) ? 16 * rng.range(1, 8) : 2 * rng.range(1, 20);
    QCase* q = add("random",
                   qshape(rng.range(1, 3), rng.range(r, 17), rng.range(r, 17), c, rng.range(1, 140), r, stride, pad));
    q->s.has_residual = rng.coin(0.3);
    q->s.y_uint8 = rng.coin(0.2);
    q->bias = rng.coin(0.8);
    char buf[160];
    std::snprintf(buf, sizeof buf, "random n%d %dx%d c%d k%d r%d s%d p%d%s", q->s.n, q->s.h, q->s.w, q->s.c, q->s.k, r,
                  stride, pad, q->s.has_residual ? " res" : "");
    q->name = buf;
  }
  for (const QCase& c : cases) run_qcase(ctx, c);

  // What the kernels decline, with one clear error: odd C, uint8-style zero point with padding,
  // an activation outside the exact double epilogue.
  QConvShape odd = qshape(1, 8, 8, 3, 16, 3, 1, 1);
  QConvShape zp_pad = qshape(1, 8, 8, 16, 16, 3, 1, 1);
  zp_pad.x_zero_point = 5;
  QConvShape sig = qshape(1, 8, 8, 16, 16, 1, 1, 0);
  sig.act = {ActKind::kSigmoid, 0, 0};
  for (const QConvShape* s : {&odd, &zp_pad, &sig})
    if (qconv_check(*s).ok() || !qconv_candidates(*s, ctx.dev).empty())
      fail_case(ctx, "a shape the int8 kernels must decline was accepted");
}

// ---- QuantizeLinear / DequantizeLinear
void run_quant(Ctx& ctx) {
  Rng& rng = ctx.rng;
  for (int i = 0; i < 8; ++i) {
    const DType ft = i % 2 ? DType::kF16 : DType::kF32;
    const bool u8 = i % 4 >= 2;
    const int64_t n = rng.range(1, 200000) + (i == 0 ? 3 : 0);
    const float scale = rng.uniform(0.005f, 0.1f);
    const int zp = u8 ? rng.range(0, 255) : rng.range(-128, 127);
    // Values around the range, exact ties (k + 0.5) * scale, and NaN / infinities.
    std::vector<float> x(n);
    for (int64_t j = 0; j < n; ++j) {
      const int kind = rng.range(0, 9);
      float v = kind < 6   ? rng.uniform(-200.f, 200.f) * scale
                : kind < 9 ? (static_cast<float>(rng.range(-140, 140)) + 0.5f) * scale
                           : (j % 3 == 0 ? NAN : (j % 3 == 1 ? INFINITY : -INFINITY));
      x[j] = round_to(ft, v);
    }
    std::vector<uint8_t> ref(n);
    const float lo = u8 ? 0.f : -128.f, hi = u8 ? 255.f : 127.f;
    for (int64_t j = 0; j < n; ++j) {
      float v = std::nearbyint(x[j] / scale) + static_cast<float>(zp);
      v = v < lo ? lo : v > hi ? hi : v;
      const int64_t r = v == v ? static_cast<int64_t>(v) : 0;
      ref[j] = static_cast<uint8_t>(r & 0xff);
    }
    DevBuf dx = upload(ft, x);
    DevBuf dy(n + 16);
    QuantDesc d;
    d.quantize = true, d.float_dtype = ft, d.uint8 = u8, d.n = n, d.x = dx.ptr, d.y = dy.ptr, d.scale = scale,
    d.zero_point = zp;
    Status st = quant_linear(d, ctx.stream);
    check_gpu(gpuStreamSynchronize(ctx.stream), "sync");
    std::vector<uint8_t> out = download_bytes(dy, n);
    size_t bad = 0, first = 0;
    for (int64_t j = 0; j < n; ++j)
      if (out[j] != ref[j]) first = bad++ ? first : static_cast<size_t>(j);
    char name[96];
    std::snprintf(name, sizeof name, "quantize %s -> %s n=%lld", ft == DType::kF16 ? "f16" : "f32", u8 ? "u8" : "s8",
                  static_cast<long long>(n));
    ctx.results.record(KernelId::s8_quantize_linear, name, exact(bad, n, first, 0), DType::kS8, false,
                       st.ok() ? nullptr : st.error);

    // Dequantize the reference bytes back.
    DevBuf dq = upload_vec(ref);
    DevBuf df(n * dtype_size(ft) + 16);
    QuantDesc e = d;
    e.quantize = false, e.x = dq.ptr, e.y = df.ptr;
    st = quant_linear(e, ctx.stream);
    check_gpu(gpuStreamSynchronize(ctx.stream), "sync");
    const std::vector<float> got = download(ft, df, n);
    bad = 0;
    for (int64_t j = 0; j < n; ++j) {
      const int v = u8 ? int(ref[j]) : int(static_cast<int8_t>(ref[j]));
      const float want = round_to(ft, static_cast<float>(v - zp) * scale);
      if (std::memcmp(&want, &got[j], 4) != 0) first = bad++ ? first : static_cast<size_t>(j);
    }
    std::snprintf(name, sizeof name, "dequantize %s -> %s n=%lld", u8 ? "u8" : "s8", ft == DType::kF16 ? "f16" : "f32",
                  static_cast<long long>(n));
    ctx.results.record(KernelId::s8_dequantize_linear, name, exact(bad, n, first, 0), DType::kS8, false,
                       st.ok() ? nullptr : st.error);
  }
  // Bad parameters: one clear error, nothing launched.
  QuantDesc bad;
  bad.n = 4, bad.x = bad.y = reinterpret_cast<void*>(16), bad.scale = 0.f;
  if (quant_linear(bad, ctx.stream).ok()) fail_case(ctx, "quantize accepted scale 0");
}

}  // namespace

void run_int8_suite(Ctx& ctx) {
  run_qconv(ctx);
  run_quant(ctx);
}

}  // namespace infera::gpu::test
