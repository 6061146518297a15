// LayerNorm over the last axis and the sum / mean / max / min reductions against double-precision
// host references: columns from 1 to 20000 around every variant's edges (warp, block, loop;
// vector and scalar loads), row strides, misaligned rows, in place, without gamma / beta, the
// statistics outputs, ConvNeXt's shapes; reductions over the last and a middle axis with NaN
// injected (max / min must return NaN, the sums too).
#include <algorithm>

#include "test_util.h"

namespace infera::gpu::test {
namespace {

// Downloads y (poisoned outside the logical elements idx) and records against ref.
void record_out(Ctx& ctx, KernelId id, DType t, const std::string& what, const DevBuf& dy, size_t total,
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

struct LnOpts {
  int ld_extra = 0;
  bool gamma = true, beta = true, stats = false, in_place = false;
  int shift = 0;  // elements added to the x (and y) pointers: breaks 16-byte alignment
  float eps = 1e-5f;
  float offset = 0.f;  // added to every x: the statistics must not cancel
};

void layernorm_case(Ctx& ctx, DType t, int64_t rows, int cols, LnOpts o) {
  const int64_t ld = cols + o.ld_extra;
  const size_t total = static_cast<size_t>(rows * ld) + o.shift;
  std::vector<float> x = ctx.rng.values(t, total, -1.f, 1.f);
  for (float& v : x) v = round_to(t, v * 2.f + o.offset);
  std::vector<float> g(cols), b(cols);
  for (float& v : g) v = ctx.rng.uniform(0.5f, 1.5f);
  for (float& v : b) v = ctx.rng.uniform(-0.5f, 0.5f);
  std::vector<double> ref(static_cast<size_t>(rows) * cols), mref(rows), sref(rows);
  std::vector<size_t> idx(ref.size()), sidx(rows);
  parallel_for(rows, [&](int64_t r) {
    const float* row = x.data() + o.shift + r * ld;
    double s = 0, q = 0;
    for (int c = 0; c < cols; ++c) s += row[c];
    const double mean = s / cols;
    for (int c = 0; c < cols; ++c) q += (row[c] - mean) * (row[c] - mean);
    const double rstd = 1.0 / std::sqrt(q / cols + o.eps);
    for (int c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r) * cols + c;
      ref[i] = (row[c] - mean) * rstd * (o.gamma ? g[c] : 1.0) + (o.beta ? b[c] : 0.0);
      idx[i] = static_cast<size_t>(o.shift + r * ld + c);
    }
    mref[r] = mean, sref[r] = rstd, sidx[r] = static_cast<size_t>(r);
  });
  DevBuf dx = upload(t, x), dg = upload(DType::kF32, g), db = upload(DType::kF32, b);
  DevBuf dy = o.in_place ? DevBuf() : poisoned_buffer(t, total, ctx.stream);
  DevBuf dm = poisoned_buffer(DType::kF32, rows, ctx.stream), ds = poisoned_buffer(DType::kF32, rows, ctx.stream);
  const size_t es = dtype_size(t);
  LayerNormDesc d;
  d.dtype = t, d.rows = rows, d.cols = cols;
  d.x = static_cast<char*>(dx.ptr) + o.shift * es, d.ldx = ld;
  d.y = static_cast<char*>(o.in_place ? dx.ptr : dy.ptr) + o.shift * es, d.ldy = ld;
  d.gamma = o.gamma ? static_cast<const float*>(dg.ptr) : nullptr;
  d.beta = o.beta ? static_cast<const float*>(db.ptr) : nullptr;
  d.eps = o.eps;
  if (o.stats) d.mean = static_cast<float*>(dm.ptr), d.inv_std = static_cast<float*>(ds.ptr);
  const Status st = layernorm(d, ctx.stream);
  char what[160];
  std::snprintf(what, sizeof what, "layernorm %lldx%d ld+%d%s%s%s%s%s off %g", static_cast<long long>(rows), cols,
                o.ld_extra, o.shift ? " misaligned" : "", o.in_place ? " in-place" : "", o.gamma ? "" : " no-gamma",
                o.beta ? "" : " no-beta", o.stats ? " stats" : "", o.offset);
  const KernelId id = layernorm_variant(d);
  if (o.in_place) {  // the padding between rows keeps x's values: compare only the rows
    check_gpu(gpuStreamSynchronize(ctx.stream), "sync");
    ctx.results.record(id, what, st.ok() ? compare(download(t, dx, total), ref, idx) : Compare{INFINITY}, t, false,
                       st.error);
  } else {
    record_out(ctx, id, t, what, dy, total, ref, idx, st);
  }
  if (o.stats) {
    record_out(ctx, id, DType::kF32, std::string(what) + " mean", dm, rows, mref, sidx, st);
    record_out(ctx, id, DType::kF32, std::string(what) + " inv_std", ds, rows, sref, sidx, st);
  }
}

double ref_reduce(ReduceOp op, const std::vector<double>& v) {
  double r = op == ReduceOp::kMax ? -INFINITY : op == ReduceOp::kMin ? INFINITY : 0.0;
  for (double e : v) {
    if (std::isnan(e)) return NAN;
    r = op == ReduceOp::kMax ? std::max(r, e) : op == ReduceOp::kMin ? std::min(r, e) : r + e;
  }
  return op == ReduceOp::kMean ? r / static_cast<double>(v.size()) : r;
}

void reduce_case(Ctx& ctx, DType t, ReduceOp op, int64_t outer, int64_t red, int64_t inner, bool nans) {
  const size_t total = static_cast<size_t>(outer * red * inner);
  std::vector<float> x = ctx.rng.values(t, total, -1.f, 1.f);
  if (nans)  // a NaN in about one output of ten
    for (int64_t i = 0; i < outer * inner / 10 + 1; ++i) x[ctx.rng.range(0, static_cast<int>(total) - 1)] = NAN;
  std::vector<double> ref(static_cast<size_t>(outer * inner));
  std::vector<size_t> idx(ref.size());
  parallel_for(outer, [&](int64_t o) {
    std::vector<double> v(red);
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t r = 0; r < red; ++r) v[r] = x[(o * red + r) * inner + i];
      ref[o * inner + i] = ref_reduce(op, v);
      idx[o * inner + i] = static_cast<size_t>(o * inner + i);
    }
  });
  DevBuf dx = upload(t, x), dy = poisoned_buffer(t, ref.size(), ctx.stream);
  ReduceDesc d;
  d.dtype = t, d.op = op, d.outer = outer, d.reduce = red, d.inner = inner, d.x = dx.ptr, d.y = dy.ptr;
  const Status st = reduce(d, ctx.stream);
  static const char* names[] = {"sum", "mean", "max", "min"};
  char what[160];
  std::snprintf(what, sizeof what, "reduce %s %lldx%lldx%lld%s", names[static_cast<int>(op)],
                static_cast<long long>(outer), static_cast<long long>(red), static_cast<long long>(inner),
                nans ? " with NaN" : "");
  record_out(ctx, reduce_variant(d), t, what, dy, ref.size(), ref, idx, st);
}

void refusal_cases(Ctx& ctx) {
  static float dummy[64];
  auto expect_error = [&](KernelId id, const char* what, const Status& st) {
    if (st.ok())
      ctx.results.record(id, std::string("refuses ") + what, Compare{INFINITY}, DType::kF32, false,
                         "accepted bad arguments");
  };
  LayerNormDesc l;
  l.dtype = DType::kF32, l.rows = 2, l.cols = 4, l.x = dummy, l.y = dummy + 32;
  LayerNormDesc e = l;
  e.cols = 0;
  expect_error(KernelId::f32_layernorm_lastaxis_warp, "0 columns", layernorm(e, ctx.stream));
  e = l, e.ldx = 3;
  expect_error(KernelId::f32_layernorm_lastaxis_warp, "a row stride below the row", layernorm(e, ctx.stream));
  e = l, e.eps = -1.f;
  expect_error(KernelId::f32_layernorm_lastaxis_warp, "a negative epsilon", layernorm(e, ctx.stream));
  e = l, e.y = nullptr;
  expect_error(KernelId::f32_layernorm_lastaxis_warp, "a null output", layernorm(e, ctx.stream));
  ReduceDesc r;
  r.dtype = DType::kF32, r.outer = 2, r.reduce = 0, r.x = dummy, r.y = dummy + 32;
  expect_error(KernelId::f32_reduce_lastaxis_warp, "an empty reduction", reduce(r, ctx.stream));
  r.reduce = 4, r.op = static_cast<ReduceOp>(9);
  expect_error(KernelId::f32_reduce_lastaxis_warp, "an unknown op", reduce(r, ctx.stream));
  check_gpu(gpuStreamSynchronize(ctx.stream), "refusals sync");
}

}  // namespace

void run_norm_suite(Ctx& ctx) {
  Rng& rng = ctx.rng;
  refusal_cases(ctx);
  const int cols_list[] = {1,    2,    3,    7,    8,    31,   32,   33,   63,   64,    96,
                           100,  127,  192,  255,  384,  513,  768,  1000, 1024, 1025,  1536,
                           2047, 2048, 3072, 4095, 4096, 5000, 8191, 8192, 8193, 10007, 20000};
  for (DType t : {DType::kF16, DType::kF32}) {
    // ConvNeXt-T: LayerNorm over C of NHWC activations (stem / blocks), and the head.
    layernorm_case(ctx, t, 3136, 96, {});
    layernorm_case(ctx, t, 2 * 49, 768, {});
    layernorm_case(ctx, t, 7, 768, {.stats = true});
    for (int cols : cols_list) {
      LnOpts o;
      o.ld_extra = rng.pick(std::vector<int>{0, 0, 1, 8});
      o.shift = rng.coin(0.2) ? 1 : 0;
      o.gamma = !rng.coin(0.1), o.beta = !rng.coin(0.15), o.stats = rng.coin(0.3);
      o.offset = rng.coin() ? 2.f : 0.f;
      o.eps = rng.coin() ? 1e-5f : 1e-6f;
      const int64_t rows = std::max<int64_t>(1, std::min<int64_t>(rng.range(1, 67), 400000 / cols));
      layernorm_case(ctx, t, rows, cols, o);
    }
    layernorm_case(ctx, t, 13, 96, {.in_place = true});
    layernorm_case(ctx, t, 5, 3000, {.ld_extra = 8, .in_place = true});
    layernorm_case(ctx, t, 3, 9000, {.in_place = true});
    layernorm_case(ctx, t, 11, 4, {.gamma = false, .beta = false, .stats = true});

    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
      for (int64_t red : {1, 3, 8, 31, 100, 1000, 1024, 1025, 3136, 4099, 50000}) {
        const int64_t outer = std::max<int64_t>(1, std::min<int64_t>(rng.range(1, 300), 600000 / red));
        reduce_case(ctx, t, op, outer, red, 1, false);
        if (red == 100 || red == 3136) reduce_case(ctx, t, op, outer, red, 1, true);
      }
      for (int64_t inner : {2, 3, 31, 32, 33, 96, 200})
        for (int64_t red : {1, 2, 7, 49, 300, 3000}) {
          const int64_t outer = std::max<int64_t>(1, std::min<int64_t>(rng.range(1, 17), 600000 / (red * inner)));
          reduce_case(ctx, t, op, outer, red, inner, red == 49 && inner == 33);
        }
      reduce_case(ctx, t, op, 70000, 3, 2, false);  // outer beyond one grid row of blocks
    }
  }
}

}  // namespace infera::gpu::test
