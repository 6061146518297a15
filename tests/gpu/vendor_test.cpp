// The vendor-library candidates (dnn.h: cuDNN convolutions, blas.h: cuBLASLt GEMMs) against a
// double-precision CPU reference on seeded random cases: ResNet-50's conv shapes and odd ones
// (C=3, channels not a multiple of 8, 1x1 spatial, stride 2, dilation 2, groups, depthwise,
// asymmetric pads, batch 7, slices of wider buffers), every fusable activation, GEMMs of every
// transpose combination with batch strides, broadcast B, bias / residual / activation epilogues.
// Every candidate offered is run on a poisoned output and must stay inside its slice. Then: runs
// from several threads at once (each with its own stream) and runs replayed from a captured graph.
// Tolerances (normalized error): fp32 1e-5, TF32 1e-3, fp16 1e-2.
//   vendor_test [--seed N] [--verbose] [--budget-s S]   exit 0: all passed; 1: a failure; 77: no GPU / no vendor
//   library
// Not in test_kernels (build_cuda.sh links every tests/gpu/test_*.cpp there without cuDNN): built by
// tests/gpu/build_vendor.sh.
#include <atomic>
#include <chrono>
#include <cstdlib>

#include "backends/gpu/blas.h"
#include "backends/gpu/dnn.h"
#include "test_util.h"

using namespace infera::gpu;
using namespace infera::gpu::test;
using infera::Activation;
using infera::ActKind;

namespace {

enum class Prec { kF16, kF32, kTf32 };
const char* act_name(ActKind k) {  // (activation_name lives in the ops library, not linked here)
  static const char* names[] = {"identity",    "relu",      "leakyrelu", "sigmoid", "tanh",     "clip",
                                "hardsigmoid", "hardswish", "elu",       "selu",    "celu",     "softplus",
                                "softsign",    "swish",     "mish",      "gelu",    "gelutanh", "thresholdedrelu"};
  static_assert(sizeof names / sizeof names[0] == static_cast<size_t>(ActKind::kCount));
  return names[static_cast<int>(k)];
}
const char* prec_name(Prec p) { return p == Prec::kF16 ? "f16" : p == Prec::kF32 ? "f32" : "tf32"; }
DType prec_dtype(Prec p) { return p == Prec::kF16 ? DType::kF16 : DType::kF32; }
double prec_tol(Prec p) { return p == Prec::kF16 ? 1e-2 : p == Prec::kF32 ? 1e-5 : 1e-3; }

struct Tally {
  int cases = 0, runs = 0, failures = 0, none_offered = 0;
  double max_err[3] = {0, 0, 0};
  std::vector<std::string> failed;
  bool verbose = false;
  void record(const std::string& what, Prec p, const Compare& c, const char* status, bool outside) {
    ++runs;
    const bool fail = status || outside || c.nonfinite || !(c.err <= prec_tol(p));
    double& m = max_err[static_cast<int>(p)];
    if (std::isfinite(c.err) && c.err > m) m = c.err;
    if (fail) {
      ++failures;
      char buf[512];
      std::snprintf(buf, sizeof buf, "%s: %s err=%.3g worst=%.3g%s%s", what.c_str(), status ? status : "", c.err,
                    c.worst, outside ? " WROTE OUTSIDE ITS SLICE" : "", c.nonfinite ? " NON-FINITE" : "");
      failed.push_back(buf);
    }
    if (verbose || fail) std::printf("  %-90s err %.3g%s\n", what.c_str(), c.err, fail ? "  FAIL" : "");
  }
};

struct Env {
  gpuStream_t stream = nullptr;
  Rng rng{1};
  Tally tally;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double budget_s = 1e9;
  int not_run = 0;      // cases left out because the time budget was spent (the run then fails)
  double build_ms = 0;  // time spent in dnn_conv_candidates / blas_gemm_candidates
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  bool over_budget() {
    if (elapsed() <= budget_s) return false;
    ++not_run;
    return true;
  }
};
template <class F>
auto timed(Env& env, F&& f) {
  const auto b = std::chrono::steady_clock::now();
  auto r = f();
  env.build_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - b).count();
  return r;
}

// ---------------------------------------------------------------- convolution
struct ConvCase {
  std::string name;
  ConvShape s;  // dtype set per precision
  bool bias = true, residual = false;
  Activation act{ActKind::kRelu, 0, 0};
  bool must_have = false;  // ResNet-50 shapes: cuDNN must offer a candidate
  int x_off = 0, x_extra = 0, y_off = 0, y_extra = 0, r_off = 0, r_extra = 0;  // slices of wider buffers
};

// Host tensors of one case in float (rounded to the precision's storage).
struct ConvData {
  std::vector<float> x, w, bias, res;
};

std::vector<double> conv_reference(const ConvCase& cc, const ConvData& d, int64_t xps, int64_t rps) {
  const ConvShape& s = cc.s;
  const int P = s.p(), Q = s.q(), Cg = s.c / s.groups, Kg = s.k / s.groups;
  const int64_t npix_out = static_cast<int64_t>(s.n) * P * Q;
  std::vector<double> ref(static_cast<size_t>(npix_out) * s.k);
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
          const float* xp = &d.x[((static_cast<int64_t>(img) * s.h + ih) * s.w + iw) * xps + cc.x_off + g * Cg];
          const float* wp = &d.w[((static_cast<int64_t>(k) * s.r + r) * s.s + q) * Cg];
          for (int c = 0; c < Cg; ++c) acc += static_cast<double>(xp[c]) * wp[c];
        }
      }
      if (cc.bias) acc += d.bias[k];
      if (cc.residual) acc += d.res[m * rps + cc.r_off + k];
      ref[m * s.k + k] = infera::activation_ref<double>(cc.act, acc);
    }
  });
  return ref;
}

void run_conv_case(Env& env, ConvCase cc, Prec prec) {
  if (env.over_budget()) return;
  ConvShape& s = cc.s;
  s.dtype = prec_dtype(prec);
  const DType t = s.dtype;
  const int P = s.p(), Q = s.q(), Cg = s.c / s.groups;
  const int64_t xps = s.c + cc.x_off + cc.x_extra, yps = s.k + cc.y_off + cc.y_extra, rps = s.k + cc.r_off + cc.r_extra;
  if (xps != s.c || cc.x_off) s.x_pixel_stride = xps, s.x_c_offset = cc.x_off;
  const int64_t npix_in = static_cast<int64_t>(s.n) * s.h * s.w, npix_out = static_cast<int64_t>(s.n) * P * Q;
  ConvData d;
  d.x = env.rng.values(t, static_cast<size_t>(npix_in * xps));
  const float wscale = 1.f / std::sqrt(static_cast<float>(s.r * s.s * Cg));
  d.w = env.rng.values(t, static_cast<size_t>(s.k) * s.r * s.s * Cg, -wscale, wscale);
  d.bias = env.rng.values(DType::kF32, s.k, -0.5f, 0.5f);
  d.res = env.rng.values(t, static_cast<size_t>(npix_out * rps));
  const std::vector<double> ref = conv_reference(cc, d, xps, rps);
  std::vector<size_t> idx(ref.size());
  for (int64_t m = 0; m < npix_out; ++m)
    for (int k = 0; k < s.k; ++k) idx[m * s.k + k] = static_cast<size_t>(m * yps + cc.y_off + k);

  DevBuf dx = upload(t, d.x), dw = upload(t, d.w), db = upload(DType::kF32, d.bias), dr = upload(t, d.res);
  Epilogue ep;
  ep.bias = cc.bias ? static_cast<const float*>(db.ptr) : nullptr;
  if (cc.residual) ep.residual = {dr.ptr, rps, cc.r_off};
  ep.act = cc.act;
  std::string why;
  const std::vector<VendorCandidate> cands = timed(env, [&] {
    return dnn_conv_candidates(s, ep, prec == Prec::kTf32, 0, DnnConvLayout{yps, cc.y_off}, &why);
  });
  ++env.tally.cases;
  const std::string label = "conv " + cc.name + " " + prec_name(prec);
  if (cands.empty()) {
    ++env.tally.none_offered;
    std::printf("  %-60s no cuDNN candidate: %s%s\n", label.c_str(), why.c_str(), cc.must_have ? "  FAIL" : "");
    if (cc.must_have) {
      ++env.tally.runs, ++env.tally.failures;
      env.tally.failed.push_back(label + ": no candidate: " + why);
    }
    return;
  }
  for (const VendorCandidate& c : cands) {
    DevBuf dy = poisoned_buffer(t, static_cast<size_t>(npix_out * yps), env.stream);
    DevBuf ws(c.workspace_bytes);
    ConvTensors ten;
    ten.x = {dx.ptr, s.x_pixel_stride, s.x_c_offset};
    ten.w = dw.ptr;
    ten.y = {dy.ptr, yps, cc.y_off};
    ten.ep = ep;
    const Status st = dnn_conv_run(c, ten, ws.ptr, ws.bytes, env.stream);
    check_gpu(gpuStreamSynchronize(env.stream), "dnn sync");
    const std::vector<float> out = download(t, dy, static_cast<size_t>(npix_out * yps));
    bool outside = false;
    if (yps != s.k) {  // channels outside [y_off, y_off + K) must still hold the poison
      const std::vector<bool> poison = poisoned(t, dy, static_cast<size_t>(npix_out * yps));
      for (int64_t i = 0; i < npix_out * yps && !outside; ++i) {
        const int64_t ch = i % yps;
        if ((ch < cc.y_off || ch >= cc.y_off + s.k) && !poison[static_cast<size_t>(i)]) outside = true;
      }
    }
    env.tally.record(label + " " + c.name, prec, compare(out, ref, idx), st.ok() ? nullptr : st.error, outside);
  }
}

ConvCase conv_case(const char* name, int n, int c, int k, int h, int w, int r, int stride, int pad) {
  ConvCase cc;
  cc.name = name;
  ConvShape& s = cc.s;
  s.n = n, s.c = c, s.k = k, s.h = h, s.w = w, s.r = s.s = r;
  s.stride_h = s.stride_w = stride;
  s.pad_t = s.pad_l = s.pad_b = s.pad_r = pad;
  return cc;
}

void conv_suite(Env& env) {
  std::printf("== cuDNN convolutions (%.1f s)\n", env.elapsed());
  // ResNet-50's distinct conv shapes (tests/gpu/resnet50_conv_shapes.txt) at batch 1, with the
  // network's epilogues: bias + ReLU, and bias + residual + ReLU on the expanding 1x1s.
  const struct {
    const char* name;
    int c, k, h, w, r, stride, pad;
    bool residual;
  } resnet[] = {
      {"conv1", 3, 64, 224, 224, 7, 2, 3, false},
      {"l1_1x1_64_64", 64, 64, 56, 56, 1, 1, 0, false},
      {"l1_1x1_256_64", 256, 64, 56, 56, 1, 1, 0, false},
      {"l1_3x3_64", 64, 64, 56, 56, 3, 1, 1, false},
      {"l1_1x1_64_256", 64, 256, 56, 56, 1, 1, 0, true},
      {"l2_1x1_256_128", 256, 128, 56, 56, 1, 1, 0, false},
      {"l2_3x3_128_s2", 128, 128, 56, 56, 3, 2, 1, false},
      {"l2_ds_256_512_s2", 256, 512, 56, 56, 1, 2, 0, false},
      {"l2_1x1_128_512", 128, 512, 28, 28, 1, 1, 0, true},
      {"l2_1x1_512_128", 512, 128, 28, 28, 1, 1, 0, false},
      {"l2_3x3_128", 128, 128, 28, 28, 3, 1, 1, false},
      {"l3_1x1_512_256", 512, 256, 28, 28, 1, 1, 0, false},
      {"l3_3x3_256_s2", 256, 256, 28, 28, 3, 2, 1, false},
      {"l3_ds_512_1024_s2", 512, 1024, 28, 28, 1, 2, 0, false},
      {"l3_1x1_256_1024", 256, 1024, 14, 14, 1, 1, 0, true},
      {"l3_1x1_1024_256", 1024, 256, 14, 14, 1, 1, 0, false},
      {"l3_3x3_256", 256, 256, 14, 14, 3, 1, 1, false},
      {"l4_1x1_1024_512", 1024, 512, 14, 14, 1, 1, 0, false},
      {"l4_3x3_512_s2", 512, 512, 14, 14, 3, 2, 1, false},
      {"l4_ds_1024_2048_s2", 1024, 2048, 14, 14, 1, 2, 0, false},
      {"l4_1x1_512_2048", 512, 2048, 7, 7, 1, 1, 0, true},
      {"l4_1x1_2048_512", 2048, 512, 7, 7, 1, 1, 0, false},
      {"l4_3x3_512", 512, 512, 7, 7, 3, 1, 1, false},
  };
  for (Prec p : {Prec::kF16, Prec::kF32, Prec::kTf32})
    for (const auto& l : resnet) {
      ConvCase cc = conv_case(l.name, 1, l.c, l.k, l.h, l.w, l.r, l.stride, l.pad);
      cc.residual = l.residual;
      cc.must_have = true;
      run_conv_case(env, cc, p);
    }
  std::printf("-- odd shapes (%.1f s, %.0f ms building plans so far)\n", env.elapsed(), env.build_ms);
  // Odd shapes and epilogues; "no candidate" is allowed here (reported), a wrong answer is not.
  std::vector<ConvCase> odd;
  odd.push_back(conv_case("stem_c3_32x32_b2", 2, 3, 64, 32, 32, 7, 2, 3));
  odd.push_back(conv_case("c13_k17_3x3_b7", 7, 13, 17, 9, 11, 3, 1, 1));
  odd.back().residual = true;
  odd.push_back(conv_case("hw1x1_c64_k96", 3, 64, 96, 1, 1, 1, 1, 0));
  odd.push_back(conv_case("k10_3x3_s2_odd", 2, 16, 10, 15, 13, 3, 2, 1));
  odd.back().bias = false, odd.back().act = {};
  {
    ConvCase cc = conv_case("dil2_3x3", 2, 32, 32, 17, 17, 3, 1, 2);
    cc.s.dil_h = cc.s.dil_w = 2;
    odd.push_back(cc);
  }
  {
    ConvCase cc = conv_case("groups4_3x3", 2, 32, 48, 12, 12, 3, 1, 1);
    cc.s.groups = 4;
    odd.push_back(cc);
  }
  {
    ConvCase cc = conv_case("depthwise_3x3_s2", 2, 32, 32, 14, 14, 3, 2, 1);
    cc.s.groups = 32;
    odd.push_back(cc);
  }
  {
    ConvCase cc = conv_case("asym_pad_3x3", 1, 24, 40, 10, 9, 3, 1, 0);
    cc.s.pad_t = 0, cc.s.pad_l = 1, cc.s.pad_b = 2, cc.s.pad_r = 1;
    odd.push_back(cc);
  }
  {
    ConvCase cc = conv_case("slices_1x1", 2, 64, 32, 8, 8, 1, 1, 0);  // Concat in place: x, y, z in wider buffers
    cc.x_off = 8, cc.x_extra = 16, cc.y_off = 16, cc.y_extra = 8, cc.r_off = 8, cc.r_extra = 0;
    cc.residual = true;
    odd.push_back(cc);
  }
  {
    ConvCase cc = conv_case("slices_3x3_noepi", 1, 32, 24, 9, 9, 3, 1, 1);
    cc.x_off = 32, cc.y_off = 24, cc.y_extra = 16, cc.bias = false, cc.act = {};
    odd.push_back(cc);
  }
  for (Prec p : {Prec::kF16, Prec::kF32, Prec::kTf32})
    for (const ConvCase& cc : odd) run_conv_case(env, cc, p);
  // Every activation cuDNN fuses, after bias + residual, on one small shape.
  const Activation acts[] = {{ActKind::kIdentity, 0, 0}, {ActKind::kRelu, 0, 0},     {ActKind::kLeakyRelu, 0.1f, 0},
                             {ActKind::kClip, 0, 6},     {ActKind::kClip, -1, 1},    {ActKind::kSigmoid, 0, 0},
                             {ActKind::kTanh, 0, 0},     {ActKind::kElu, 1, 0},      {ActKind::kElu, 0.5f, 0},
                             {ActKind::kGelu, 0, 0},     {ActKind::kGeluTanh, 0, 0}, {ActKind::kSwish, 1, 0},
                             {ActKind::kSwish, 1.5f, 0}, {ActKind::kSoftplus, 0, 0}};
  for (Prec p : {Prec::kF16, Prec::kF32})
    for (const Activation& a : acts) {
      ConvCase cc = conv_case("act_", 2, 32, 40, 10, 10, 3, 1, 1);
      cc.name += act_name(a.kind);
      if (a.alpha != 0 || a.beta != 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "_%g_%g", a.alpha, a.beta);
        cc.name += buf;
      }
      cc.residual = true, cc.act = a;
      run_conv_case(env, cc, p);
    }
  if (dnn_fuses({ActKind::kHardSwish, 0, 0}) || dnn_fuses({ActKind::kMish, 0, 0})) {
    ++env.tally.failures;
    env.tally.failed.push_back("dnn_fuses claims an activation it has no node for");
  }
}

// ---------------------------------------------------------------- GEMM
struct GemmCase {
  std::string name;
  GemmShape s;
  bool bias = true;
  bool residual = false;
  Activation act;
};

void run_gemm_case(Env& env, GemmCase gc, Prec prec) {
  if (env.over_budget()) return;
  GemmShape& s = gc.s;
  s.dtype = prec_dtype(prec);
  const DType t = s.dtype;
  const int64_t lda = s.lda ? s.lda : (s.trans_a ? s.m : s.k), ldb = s.ldb ? s.ldb : (s.trans_b ? s.k : s.n);
  const int64_t ldc = s.ldc ? s.ldc : s.n;
  const int64_t rows_a = s.trans_a ? s.k : s.m, rows_b = s.trans_b ? s.n : s.k;
  const int64_t sa = s.batch > 1 ? s.stride_a : 0, sb = s.batch > 1 ? s.stride_b : 0, sc = s.stride_c;
  const int64_t na = (s.batch - 1) * sa + rows_a * lda, nb = (s.batch - 1) * sb + rows_b * ldb;
  const int64_t nc = (s.batch - 1) * sc + s.m * ldc;
  std::vector<float> a = env.rng.values(t, static_cast<size_t>(na));
  const float bscale = 1.f / std::sqrt(static_cast<float>(s.k));
  std::vector<float> b = env.rng.values(t, static_cast<size_t>(nb), -bscale, bscale);
  std::vector<float> bias = env.rng.values(DType::kF32, s.n, -0.5f, 0.5f);
  std::vector<float> res = env.rng.values(t, static_cast<size_t>(nc));
  std::vector<double> ref(static_cast<size_t>(s.batch) * s.m * s.n), ref_erf;
  std::vector<size_t> idx(ref.size());
  const bool probe_gelu = gc.act.kind == ActKind::kGeluTanh;  // which GELU is cuBLASLt's?
  if (probe_gelu) ref_erf.resize(ref.size());
  parallel_for(static_cast<int64_t>(s.batch) * s.m, [&](int64_t bm) {
    const int64_t bi = bm / s.m, m = bm % s.m;
    for (int n = 0; n < s.n; ++n) {
      double acc = 0;
      for (int k = 0; k < s.k; ++k) {
        const double av = a[bi * sa + (s.trans_a ? k * lda + m : m * lda + k)];
        const double bv = b[bi * sb + (s.trans_b ? n * ldb + k : k * ldb + n)];
        acc += av * bv;
      }
      if (gc.bias) acc += bias[n];
      if (gc.residual) acc += res[bi * sc + m * ldc + n];
      const size_t o = static_cast<size_t>(bm * s.n + n);
      ref[o] = infera::activation_ref<double>(gc.act, acc);
      if (probe_gelu) ref_erf[o] = infera::activation_ref<double>({ActKind::kGelu, 0, 0}, acc);
      idx[o] = static_cast<size_t>(bi * sc + m * ldc + n);
    }
  });
  DevBuf da = upload(t, a), dbm = upload(t, b), dbias = upload(DType::kF32, bias), dr = upload(t, res);
  std::string why;
  BlasResidual br;
  br.present = gc.residual;
  const std::vector<VendorCandidate> cands =
      timed(env, [&] { return blas_gemm_candidates(s, gc.bias, gc.act, prec == Prec::kTf32, 0, br, &why); });
  ++env.tally.cases;
  const std::string label = "gemm " + gc.name + " " + prec_name(prec);
  if (cands.empty()) {  // cuBLASLt takes every plain GEMM: no candidate is a failure
    ++env.tally.runs, ++env.tally.failures, ++env.tally.none_offered;
    env.tally.failed.push_back(label + ": no candidate: " + why);
    std::printf("  %-60s no cuBLASLt candidate: %s  FAIL\n", label.c_str(), why.c_str());
    return;
  }
  for (const VendorCandidate& c : cands) {
    DevBuf dc = poisoned_buffer(t, static_cast<size_t>(nc), env.stream);
    DevBuf ws(c.workspace_bytes);
    GemmTensors ten;
    ten.a = da.ptr, ten.b = dbm.ptr, ten.c = dc.ptr;
    ten.bias = gc.bias ? static_cast<const float*>(dbias.ptr) : nullptr;
    ten.residual = gc.residual ? dr.ptr : nullptr;
    ten.act = gc.act;
    const Status st = blas_gemm_run(c, ten, ws.ptr, ws.bytes, env.stream);
    check_gpu(gpuStreamSynchronize(env.stream), "blas sync");
    const std::vector<float> out = download(t, dc, static_cast<size_t>(nc));
    bool outside = false;
    if (ldc != s.n || (s.batch > 1 && sc != s.m * ldc)) {  // padding and batch gaps keep the poison
      const std::vector<bool> poison = poisoned(t, dc, static_cast<size_t>(nc));
      for (int64_t i = 0; i < nc && !outside; ++i) {
        const int64_t o = s.batch > 1 && sc ? i % sc : i;
        if ((o >= s.m * ldc || o % ldc >= s.n) && !poison[static_cast<size_t>(i)]) outside = true;
      }
    }
    const Compare cmp = compare(out, ref, idx);
    env.tally.record(label + " " + c.name, prec, cmp, st.ok() ? nullptr : st.error, outside);
    if (probe_gelu && prec == Prec::kF32)
      std::printf("  gelu probe %s: err vs tanh-GELU %.3g, vs erf-GELU %.3g\n", c.name.c_str(), cmp.err,
                  compare(out, ref_erf, idx).err);
  }
}

void gemm_suite(Env& env) {
  std::printf("== cuBLASLt GEMMs (%.1f s)\n", env.elapsed());
  std::vector<GemmCase> cases;
  auto add = [&](const char* name, int batch, int m, int n, int k, bool ta, bool tb, bool bias, bool res,
                 Activation act) {
    GemmCase g;
    g.name = name;
    g.s.batch = batch, g.s.m = m, g.s.n = n, g.s.k = k, g.s.trans_a = ta, g.s.trans_b = tb;
    g.s.stride_a = static_cast<int64_t>(m) * k, g.s.stride_b = static_cast<int64_t>(k) * n;
    g.s.stride_c = static_cast<int64_t>(m) * n;
    g.bias = bias, g.residual = res, g.act = act;
    cases.push_back(g);
    return &cases.back();
  };
  const Activation id{}, relu{ActKind::kRelu, 0, 0}, gelu_t{ActKind::kGeluTanh, 0, 0};
  add("resnet_fc_b1", 1, 1, 1000, 2048, false, true, true, false, id);
  add("resnet_fc_b7", 1, 7, 1000, 2048, false, true, true, false, id);
  add("resnet_fc_b256", 1, 256, 1000, 2048, false, true, true, false, relu);
  add("odd_nn", 1, 37, 53, 71, false, false, true, false, relu);
  add("odd_nt", 1, 37, 53, 71, false, true, false, false, id);
  add("odd_tn", 1, 37, 53, 72, true, false, true, true, relu);
  add("odd_tt", 1, 40, 24, 33, true, true, true, false, gelu_t);
  add("gelu_probe", 1, 64, 96, 128, false, true, true, false, gelu_t);
  add("batch3_nn_res", 3, 29, 48, 64, false, false, true, true, id);
  add("batch4_bcastB", 4, 33, 40, 56, false, true, true, false, relu)->s.stride_b = 0;
  {
    GemmCase* g = add("padded_ld", 2, 20, 30, 40, false, false, true, true, relu);
    g->s.lda = 48, g->s.ldb = 40, g->s.ldc = 32;
    g->s.stride_a = 20 * 48 + 8, g->s.stride_b = 40 * 40, g->s.stride_c = 20 * 32 + 16;
  }
  add("k1_m1", 1, 1, 16, 1, false, false, true, false, relu);
  for (Prec p : {Prec::kF16, Prec::kF32, Prec::kTf32})
    for (const GemmCase& g : cases) run_gemm_case(env, g, p);
  if (blas_fuses({ActKind::kGelu, 0, 0}) || blas_fuses({ActKind::kSigmoid, 0, 0})) {
    ++env.tally.failures;
    env.tally.failed.push_back("blas_fuses claims an activation cuBLASLt has no epilogue for");
  }
}

// ---------------------------------------------------------------- threads and graphs
// One conv and one GEMM problem with device inputs and the reference, shared by the threads.
struct Shared {
  ConvShape cs;
  ConvCase cc;
  DevBuf dx, dw, db, dz;
  std::vector<double> cref;
  GemmShape gs;
  DevBuf ga, gb, gbias;
  std::vector<double> gref;
  VendorCandidate conv_c, gemm_c;
};

void make_shared(Env& env, Shared& sh, DType t) {
  sh.cc = conv_case("mt_3x3", 4, 64, 64, 14, 14, 3, 1, 1);
  sh.cc.residual = true;
  sh.cc.s.dtype = t;
  sh.cs = sh.cc.s;
  ConvData d;
  const int64_t npix_out = 4LL * 14 * 14;
  d.x = env.rng.values(t, 4 * 14 * 14 * 64);
  d.w = env.rng.values(t, 64 * 9 * 64, -0.04f, 0.04f);
  d.bias = env.rng.values(DType::kF32, 64, -0.5f, 0.5f);
  d.res = env.rng.values(t, static_cast<size_t>(npix_out * 64));
  sh.cref = conv_reference(sh.cc, d, 64, 64);
  sh.dx = upload(t, d.x), sh.dw = upload(t, d.w), sh.db = upload(DType::kF32, d.bias), sh.dz = upload(t, d.res);
  sh.gs.dtype = t, sh.gs.m = 96, sh.gs.n = 80, sh.gs.k = 64, sh.gs.trans_b = true;
  std::vector<float> a = env.rng.values(t, 96 * 64), b = env.rng.values(t, 80 * 64, -0.1f, 0.1f);
  std::vector<float> bias = env.rng.values(DType::kF32, 80);
  sh.gref.resize(96 * 80);
  for (int m = 0; m < 96; ++m)
    for (int n = 0; n < 80; ++n) {
      double acc = bias[n];
      for (int k = 0; k < 64; ++k) acc += static_cast<double>(a[m * 64 + k]) * b[n * 64 + k];
      sh.gref[m * 80 + n] = acc > 0 ? acc : 0;
    }
  sh.ga = upload(t, a), sh.gb = upload(t, b), sh.gbias = upload(DType::kF32, bias);
}

// Enqueues the shared conv and GEMM into (y, c) on stream.
bool enqueue_pair(const Shared& sh, const VendorCandidate& cc, const VendorCandidate& gc, void* y, void* c, void* ws,
                  size_t ws_bytes, gpuStream_t st, std::string& err) {
  ConvTensors ct;
  ct.x = {sh.dx.ptr, 0, 0}, ct.w = sh.dw.ptr, ct.y = {y, 0, 0};
  ct.ep.bias = static_cast<const float*>(sh.db.ptr), ct.ep.residual = {sh.dz.ptr, 0, 0};
  ct.ep.act = {ActKind::kRelu, 0, 0};
  Status s = dnn_conv_run(cc, ct, ws, ws_bytes, st);
  if (!s.ok()) return err = std::string("conv: ") + s.error, false;
  GemmTensors gt;
  gt.a = sh.ga.ptr, gt.b = sh.gb.ptr, gt.c = c, gt.bias = static_cast<const float*>(sh.gbias.ptr);
  gt.act = {ActKind::kRelu, 0, 0};
  s = blas_gemm_run(gc, gt, ws, ws_bytes, st);
  if (!s.ok()) return err = std::string("gemm: ") + s.error, false;
  return true;
}

void concurrency_suite(Env& env) {
  std::printf("== threads and captured graphs (%.1f s)\n", env.elapsed());
  for (DType t : {DType::kF16, DType::kF32}) {
    const Prec prec = t == DType::kF16 ? Prec::kF16 : Prec::kF32;
    Shared sh;
    make_shared(env, sh, t);
    // Candidate lists requested by 4 threads at once for one new shape must agree.
    Epilogue ep;
    ep.bias = static_cast<const float*>(sh.db.ptr), ep.residual = {sh.dz.ptr, 0, 0}, ep.act = {ActKind::kRelu, 0, 0};
    std::vector<std::vector<VendorCandidate>> got(4);
    std::vector<std::vector<VendorCandidate>> got_g(4);
    {
      std::vector<std::thread> th;
      for (int i = 0; i < 4; ++i)
        th.emplace_back([&, i] {
          check_gpu(gpuSetDevice(0), "device");
          got[i] = dnn_conv_candidates(sh.cs, ep, false, 0);
          got_g[i] = blas_gemm_candidates(sh.gs, true, {ActKind::kRelu, 0, 0}, false, 0);
        });
      for (auto& x : th) x.join();
    }
    bool agree = !got[0].empty() && !got_g[0].empty();
    for (int i = 1; i < 4; ++i)
      agree = agree && got[i].size() == got[0].size() && got_g[i].size() == got_g[0].size() &&
              got[i][0].plan == got[0][0].plan && got_g[i][0].plan == got_g[0][0].plan;
    ++env.tally.cases, ++env.tally.runs;
    if (!agree) {
      ++env.tally.failures;
      env.tally.failed.push_back(std::string("concurrent candidate queries disagree or are empty (") +
                                 (t == DType::kF16 ? "f16)" : "f32)"));
      continue;
    }
    sh.conv_c = got[0][0], sh.gemm_c = got_g[0][0];
    const size_t ws_bytes = std::max(sh.conv_c.workspace_bytes, sh.gemm_c.workspace_bytes);
    const size_t ny = sh.cref.size(), nc = sh.gref.size();
    std::vector<size_t> cidx(ny), gidx(nc);
    for (size_t i = 0; i < ny; ++i) cidx[i] = i;
    for (size_t i = 0; i < nc; ++i) gidx[i] = i;
    // 4 threads, own stream and buffers each, 25 rounds of conv + GEMM.
    struct Out {
      DevBuf y, c, ws;
      std::string err;
    };
    std::vector<Out> outs(4);
    for (auto& o : outs) o.y = DevBuf(ny * dtype_size(t)), o.c = DevBuf(nc * dtype_size(t)), o.ws = DevBuf(ws_bytes);
    std::vector<std::thread> th;
    for (int i = 0; i < 4; ++i)
      th.emplace_back([&, i] {
        check_gpu(gpuSetDevice(0), "device");
        gpuStream_t st;
        check_gpu(gpuStreamCreate(&st), "stream");
        for (int r = 0; r < 25 && outs[i].err.empty(); ++r)
          enqueue_pair(sh, sh.conv_c, sh.gemm_c, outs[i].y.ptr, outs[i].c.ptr, outs[i].ws.ptr, ws_bytes, st,
                       outs[i].err);
        check_gpu(gpuStreamSynchronize(st), "thread sync");
        check_gpu(gpuStreamDestroy(st), "stream");
      });
    for (auto& x : th) x.join();
    for (int i = 0; i < 4; ++i) {
      const std::string w = std::string("thread ") + std::to_string(i) + " " + prec_name(prec);
      const char* e = outs[i].err.empty() ? nullptr : outs[i].err.c_str();
      env.tally.record(w + " conv " + sh.conv_c.name, prec, compare(download(t, outs[i].y, ny), sh.cref, cidx), e,
                       false);
      env.tally.record(w + " gemm " + sh.gemm_c.name, prec, compare(download(t, outs[i].c, nc), sh.gref, gidx), e,
                       false);
    }
    // Captured into a graph, replayed three times.
    DevBuf y = poisoned_buffer(t, ny, env.stream), c = poisoned_buffer(t, nc, env.stream), ws(ws_bytes);
    check_gpu(gpuStreamSynchronize(env.stream), "sync");
    gpuGraph_t graph = nullptr;
    gpuGraphExec_t exec = nullptr;
    std::string err;
    check_gpu(gpuStreamBeginCapture(env.stream), "capture");
    const bool ok = enqueue_pair(sh, sh.conv_c, sh.gemm_c, y.ptr, c.ptr, ws.ptr, ws_bytes, env.stream, err);
    const gpuError_t ce = gpuStreamEndCapture(env.stream, &graph);
    if (ok && ce == gpuSuccess && gpuGraphInstantiate(&exec, graph) == gpuSuccess) {
      for (int r = 0; r < 3; ++r) check_gpu(gpuGraphLaunch(exec, env.stream), "replay");
      check_gpu(gpuStreamSynchronize(env.stream), "replay sync");
    } else if (err.empty()) {
      err = std::string("capture: ") + gpuGetErrorString(ce);
    }
    const char* e = err.empty() ? nullptr : err.c_str();
    const std::string w = std::string("graph replay ") + prec_name(prec);
    env.tally.record(w + " conv " + sh.conv_c.name, prec, compare(download(t, y, ny), sh.cref, cidx), e, false);
    env.tally.record(w + " gemm " + sh.gemm_c.name, prec, compare(download(t, c, nc), sh.gref, gidx), e, false);
    if (exec) check_gpu(gpuGraphExecDestroy(exec), "graph");
    if (graph) check_gpu(gpuGraphDestroy(graph), "graph");
  }
}

}  // namespace

int main(int argc, char** argv) {
  Env env;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--verbose")) {
      env.tally.verbose = true;
    } else if (!std::strcmp(argv[i], "--budget-s") && i + 1 < argc) {
      env.budget_s = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--seed N] [--verbose] [--budget-s S]\n", argv[0]);
      return 1;
    }
  }
  env.rng = Rng(seed);
  int count = 0;
  if (gpuGetDeviceCount(&count) != gpuSuccess || count == 0) {
    std::printf("no GPU: vendor tests SKIPPED\n");
    return 77;
  }
  check_gpu(gpuSetDevice(0), "device");
  gpuDeviceProp prop;
  check_gpu(gpuGetDeviceProperties(&prop, 0), "props");
  std::printf("%s, cuDNN %d, cuBLASLt %d, seed %llu\n", prop.name, dnn_version(), blas_version(),
              static_cast<unsigned long long>(seed));
  if (!dnn_version() || !blas_version()) {
    std::printf("cuDNN 9 or cuBLASLt missing at run time: vendor tests SKIPPED\n");
    return 77;
  }
  check_gpu(gpuStreamCreate(&env.stream), "stream");
  gemm_suite(env);
  concurrency_suite(env);
  conv_suite(env);
  check_gpu(gpuStreamDestroy(env.stream), "stream");
  const Tally& t = env.tally;
  std::printf("max normalized error: f16 %.3g, f32 %.3g, tf32 %.3g\n", t.max_err[0], t.max_err[1], t.max_err[2]);
  for (const std::string& f : t.failed) std::printf("FAILED %s\n", f.c_str());
  std::printf("vendor: %d cases (%d without a vendor candidate), %d candidate runs, %.1f s (%.0f ms building plans)\n",
              t.cases, t.none_offered, t.runs, env.elapsed(), env.build_ms);
  if (env.not_run) std::printf("NOT RUN: %d cases, the time budget of %.0f s was spent\n", env.not_run, env.budget_s);
  std::printf("%d passed, %d failed\n", t.runs - t.failures, t.failures + env.not_run);
  return t.failures || env.not_run ? 1 : 0;
}
