// GEMM / batched MatMul variants against a double-precision reference: every candidate that
// gemm_candidates offers, over transposes, broadcast batches, odd sizes and the epilogue.
#include "test_util.h"

namespace infera::gpu::test {
namespace {

struct GemmCase {
  GemmShape s;
  bool bias = false, residual = false;
  Activation act;
  bool broadcast_b = false;
  int ldc_extra = 0;
};

void run_case(Ctx& ctx, GemmCase gc) {
  GemmShape& s = gc.s;
  const DType t = s.dtype;
  Rng& rng = ctx.rng;
  const int64_t lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n, ldc = s.n + gc.ldc_extra;
  s.lda = lda, s.ldb = ldb, s.ldc = ldc;
  const int64_t a_elems = static_cast<int64_t>(s.m) * s.k, b_elems = static_cast<int64_t>(s.k) * s.n;
  const int64_t c_elems = static_cast<int64_t>(s.m) * ldc;
  s.stride_a = a_elems;
  s.stride_b = gc.broadcast_b ? 0 : b_elems;
  s.stride_c = c_elems;
  const int nb = gc.broadcast_b ? 1 : s.batch;
  const float scale = 1.f / std::sqrt(static_cast<float>(s.k));
  std::vector<float> a = rng.values(t, a_elems * s.batch), b = rng.values(t, b_elems * nb, -scale, scale);
  std::vector<float> bias = rng.values(DType::kF32, s.n, -0.5f, 0.5f), res = rng.values(t, c_elems * s.batch);
  std::vector<double> ref(static_cast<size_t>(s.batch) * s.m * s.n);
  std::vector<size_t> idx(ref.size());
  parallel_for(static_cast<int64_t>(s.batch) * s.m, [&](int64_t bm) {
    const int bi = static_cast<int>(bm / s.m), m = static_cast<int>(bm % s.m);
    const float* ab = &a[bi * a_elems];
    const float* bb = &b[(gc.broadcast_b ? 0 : bi) * b_elems];
    for (int n = 0; n < s.n; ++n) {
      double acc = 0;
      for (int k = 0; k < s.k; ++k) {
        const double av = s.trans_a ? ab[k * lda + m] : ab[m * lda + k];
        const double bv = s.trans_b ? bb[n * ldb + k] : bb[k * ldb + n];
        acc += av * bv;
      }
      if (gc.bias) acc += bias[n];
      if (gc.residual) acc += res[bi * c_elems + m * ldc + n];
      const size_t o = (static_cast<size_t>(bi) * s.m + m) * s.n + n;
      ref[o] = activation_ref<double>(gc.act, acc);
      idx[o] = static_cast<size_t>(bi * c_elems + m * ldc + n);
    }
  });
  DevBuf da = upload(t, a), dbm = upload(t, b), dbias = upload(DType::kF32, bias), dr = upload(t, res);
  char what[200];
  std::snprintf(what, sizeof what, "b%d %dx%dx%d ta%d tb%d%s%s ldc+%d", s.batch, s.m, s.n, s.k, s.trans_a, s.trans_b,
                gc.broadcast_b ? " bcastB" : "", gc.residual ? " res" : "", gc.ldc_extra);
  for (const Candidate& c : gemm_candidates(s, ctx.dev)) {
    DevBuf dc = poisoned_buffer(t, c_elems * s.batch, ctx.stream);
    DevBuf ws(c.workspace_bytes);
    GemmTensors ten;
    ten.a = da.ptr, ten.b = dbm.ptr, ten.c = dc.ptr;
    ten.bias = gc.bias ? static_cast<const float*>(dbias.ptr) : nullptr;
    ten.residual = gc.residual ? dr.ptr : nullptr;
    ten.ldr = ldc, ten.stride_r = c_elems;
    ten.act = gc.act;
    const Status st = gemm(s, c, ten, ws.ptr, ws.bytes, ctx.stream);
    check_gpu(gpuStreamSynchronize(ctx.stream), "gemm sync");
    const std::vector<float> out = download(t, dc, c_elems * s.batch);
    const std::vector<bool> poison = poisoned(t, dc, c_elems * s.batch);
    std::vector<bool> logical(out.size(), false);
    for (size_t i : idx) logical[i] = true;
    bool outside = false;
    for (size_t i = 0; i < out.size(); ++i) outside = outside || (!logical[i] && !poison[i]);
    std::string w = what;
    w += " splits=" + std::to_string(c.splits);
    ctx.results.record(c.id, w, st.ok() ? compare(out, ref, idx) : Compare{INFINITY}, t, outside, st.error);
  }
}

}  // namespace

void run_gemm_suite(Ctx& ctx) {
  for (DType t : {DType::kF16, DType::kF32}) {
    auto mk = [&](int batch, int m, int n, int k, bool ta, bool tb) {
      GemmCase g;
      g.s.dtype = t, g.s.batch = batch, g.s.m = m, g.s.n = n, g.s.k = k, g.s.trans_a = ta, g.s.trans_b = tb;
      return g;
    };
    std::vector<GemmCase> cases;
    GemmCase g = mk(1, 1, 1000, 2048, false, true);  // ResNet FC at batch 1: split-K
    g.bias = true;
    cases.push_back(g);
    g = mk(1, 256, 1000, 2048, false, true);
    g.bias = true;
    cases.push_back(g);
    g = mk(1, 7, 13, 37, false, true);  // odd: scalar gather
    g.bias = true, g.act = {ActKind::kRelu, 0, 0};
    cases.push_back(g);
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        g = mk(3, 33, 45, 64, ta, tb);
        g.residual = true, g.act = {ActKind::kSigmoid, 0, 0};
        cases.push_back(g);
        g = mk(2, 17, 9, 11, ta, tb);
        g.broadcast_b = true, g.bias = true, g.ldc_extra = 3;
        cases.push_back(g);
      }
    g = mk(7, 130, 72, 96, false, true);
    g.bias = true, g.residual = true, g.act = {ActKind::kGelu, 0, 0}, g.ldc_extra = 8;
    cases.push_back(g);
    g = mk(1, 300, 256, 512, false, true);
    g.act = {ActKind::kClip, -1.f, 1.f};
    cases.push_back(g);
    for (int i = 0; i < 8; ++i) {
      Rng& r = ctx.rng;
      g = mk(r.range(1, 3), r.range(1, 150), r.range(1, 150), r.range(1, 200), r.coin(), r.coin(0.7));
      g.bias = r.coin(), g.residual = r.coin(), g.act = random_act(r), g.broadcast_b = r.coin(0.3);
      cases.push_back(g);
    }
    for (const GemmCase& c : cases) run_case(ctx, c);
  }
}

}  // namespace infera::gpu::test
