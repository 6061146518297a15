// Conv and com.infera.FusedConv (X, W, B?, Z?; act(conv + B + Z)) through oneDNN convolution:
// constant weights reordered once into the primitive's format, residual Z as a sum post-op
// (in place when the planner gave Y Z's buffer; else a binary-add post-op or a copy into Y
// first), the activation as eltwise post-ops. Attributes come from the typed ConvOp. 3x3 stride-1 convs time
// oneDNN's direct and Winograd algorithms and keep the faster in the perf db (pick_algorithm;
// INFERA_DNNL_WINOGRAD=0 or --winograd off: direct only). 1-D convs run as 2-D with H = 1. ConvTranspose (2-D,
// non-negative pads) through oneDNN deconvolution.
#include <omp.h>

#include <array>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <tuple>

#include "backends/cpu/dnnl_internal.h"
#include "ops/conv.h"
#include "tune/choice.h"
#include "tune/keys.h"

namespace infera::cpu {
namespace {

struct ConvPlan {
  Dims x, w, y;  // 4-D (1-D convs get H = 1), w as oneDNN wants it ([g, M/g, C/g, kh, kw] when grouped)
  Dims strides, dilates, pad_l, pad_r;
  int64_t group = 1;
  bool has_bias = false, has_z = false;
  std::vector<EltOp> act;
  // Relu/Clip/HardSigmoid, whose post-ops map NaN to a bound (nan_safe): guarded (conv_create).
  bool nan_guard = false;
  Activation loop_act;  // the activation as activation_after runs it
  // Dead taps trimmed (trim_dead_taps): w holds kernel rows/columns [tap0, tap0 + w[-2..-1]) of
  // the model's kernel of full_k taps; pads shrunk to match.
  bool trimmed = false;
  Dims tap0{0, 0}, full_k{1, 1};
};

// Kernel rows/columns that read only padding for every output (e.g. DeepLabV3's ASPP 3x3 conv of
// dilation 36 on a 28x28 map: only the centre tap ever meets the image) are cut off the kernel and
// the pads shrunk by as much, which keeps the output size: a 3x3 conv of 9x the work becomes the 1x1
// conv it is (measured: 82 ms on oneDNN's im2col gemm, its jit takes no such dilation). The result
// differs only where a cut weight is not finite (0 * Inf): conv_create then plans without the cut.
void trim_dead_taps(ConvPlan& p) {
  const size_t kd = p.w.size() - 2;  // the kernel's spatial dims in p.w
  Dims k0(2, 0), k1(2, 0), pl = p.pad_l, pr = p.pad_r;
  bool cut = false;
  for (int i = 0; i < 2; ++i) {
    const int64_t K = p.w[kd + i], dil = p.dilates[i] + 1, s = p.strides[i], in = p.x[2 + i], out = p.y[2 + i];
    // Tap k reads input rows k * dil - pad_l + o * s for o in [0, out): live when one is in [0, in).
    auto live = [&](int64_t k) {
      const int64_t lo = k * dil - p.pad_l[i], hi = lo + (out - 1) * s;
      return hi >= 0 && lo <= in - 1;
    };
    int64_t a = 0, b = K - 1;
    while (a < K && !live(a)) ++a;
    while (b > a && !live(b)) --b;
    if (a >= K) return;  // no live tap at all: leave it to oneDNN
    pl[i] = p.pad_l[i] - a * dil;
    pr[i] = p.pad_r[i] - (K - 1 - b) * dil;
    if (pl[i] < 0 || pr[i] < 0) return;
    k0[i] = a, k1[i] = b;
    cut = cut || a > 0 || b < K - 1;
  }
  if (!cut) return;
  p.trimmed = true;
  p.tap0 = k0;
  p.full_k = {p.w[kd], p.w[kd + 1]};
  p.w[kd] = k1[0] - k0[0] + 1;
  p.w[kd + 1] = k1[1] - k0[1] + 1;
  p.pad_l = pl, p.pad_r = pr;
}

// The trimmed kernel's weights (p.w, goihw/oihw order) from the model's; false when a cut weight is
// not finite (its 0 * w would be NaN in the reference).
bool trimmed_weights(const ConvPlan& p, const float* w, std::vector<float>& out) {
  const size_t kd = p.w.size() - 2;
  int64_t outer = 1;
  for (size_t i = 0; i < kd; ++i) outer *= p.w[i];
  const int64_t KH = p.full_k[0], KW = p.full_k[1], kh = p.w[kd], kw = p.w[kd + 1];
  out.resize(static_cast<size_t>(outer * kh * kw));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t y = 0; y < KH; ++y)
      for (int64_t x = 0; x < KW; ++x) {
        const float v = w[(o * KH + y) * KW + x];
        const int64_t ty = y - p.tap0[0], tx = x - p.tap0[1];
        if (ty >= 0 && ty < kh && tx >= 0 && tx < kw)
          out[static_cast<size_t>((o * kh + ty) * kw + tx)] = v;
        else if (!std::isfinite(v))
          return false;
      }
  return true;
}

bool plan_conv(const StepRequest& req, ConvPlan& p, bool trim = true) {
  const auto* op = dynamic_cast<const ConvOp*>(req.op);
  if (!op || !req.has_in(0) || !req.has_in(1) || !req.inputs[1]->value) return false;
  const Dims x = req.in_dims(0), w = req.in_dims(1), y = req.out_dims(0);
  const int rank = static_cast<int>(x.size());
  if ((rank != 3 && rank != 4) || w.size() != x.size() || y.size() != x.size()) return false;
  const ConvAttrs& a = op->attrs();
  std::vector<int64_t> pads, yd;
  if (!conv_resolve(a, x, w, pads, yd).is_ok() || yd != y) return false;
  const int k = rank - 2;
  for (int64_t v : pads)
    if (v < 0) return false;
  for (int64_t v : y)
    if (v <= 0) return false;
  p.group = a.group;
  auto spatial = [&](const std::vector<int64_t>& v, int64_t dflt, int64_t sub) {
    Dims r;
    if (k == 1) r.push_back(dflt - sub);
    for (int i = 0; i < k; ++i) r.push_back((static_cast<int>(v.size()) == k ? v[i] : dflt) - sub);
    return r;
  };
  p.strides = spatial(a.strides, 1, 0);
  p.dilates = spatial(a.dilations, 1, 1);
  p.pad_l = spatial(std::vector<int64_t>(pads.begin(), pads.begin() + k), 0, 0);
  p.pad_r = spatial(std::vector<int64_t>(pads.begin() + k, pads.end()), 0, 0);
  auto to4 = [&](const Dims& d) { return k == 1 ? Dims{d[0], d[1], 1, d[2]} : d; };
  p.x = to4(x);
  p.y = to4(y);
  Dims w4 = to4(w);
  if (p.group > 1) {
    if (w4[0] % p.group != 0) return false;
    p.w = {p.group, w4[0] / p.group, w4[1], w4[2], w4[3]};
  } else {
    p.w = w4;
  }
  if (trim) trim_dead_taps(p);
  p.has_bias = req.has_in(2);
  if (p.has_bias && req.in_dims(2) != Dims{y[1]}) return false;
  if (op->fused()) {
    p.has_z = req.has_in(3);
    if (p.has_z && req.in_dims(3) != y) return false;
    const Activation& a = op->activation();
    if (!eltwise_chain(a, p.act)) return false;
    p.loop_act = a.kind == ActKind::kLeakyRelu && a.alpha == 0.f ? activation_default(ActKind::kRelu) : a;
    p.nan_guard = !nan_safe(a);
  } else if (req.inputs.size() > 3) {
    return false;
  }
  return true;
}

// A dilated conv as a conv without dilation on the batch of its sub-images (TensorFlow's atrous
// conv, "space to batch"): with stride 1, dilation D and H, pad_l, pad_r multiples of D (per
// spatial dim), output row o = oo * D + r reads input rows oo * D + r + k * D - pad_l only:
// rows r, r + D, ... of the input, with kernel row k at offset k - pad_l / D. So each of the
// Dh x Dw phases (r, s) is a conv of the same weights, without dilation, pads / D, on the
// (H / Dh) x (W / Dw) image of the input's rows r mod Dh and columns s mod Dw. oneDNN's Winograd
// (3x3, dilation 1) then does DeepLabV3's dilated 3x3 convs (dilation 2 and 4 on 28x28 maps)
// 1.7-1.9x faster than its direct kernel (measured here, reorders included). Only where no
// channel lane is padded in any format the reorders see (their views carry no padding).
struct SpaceToBatch {
  bool ok = false;
  int64_t dh = 1, dw = 1;
  Dims x, y, pad_l, pad_r;  // the sub-images' conv: N * dh * dw images
};

SpaceToBatch space_to_batch(const ConvPlan& p, std::initializer_list<Format> formats) {
  SpaceToBatch s;
  if (p.x.size() != 4 || p.group != 1 || p.trimmed || p.has_z || p.w[2] != 3 || p.w[3] != 3 ||
      p.strides != Dims{1, 1} || p.dilates == Dims{0, 0})
    return s;
  for (Format f : formats) {
    const int64_t b = std::max(1, format_channel_block(f));
    if (p.x[1] % b != 0 || p.y[1] % b != 0) return s;
  }
  const int64_t d[2] = {p.dilates[0] + 1, p.dilates[1] + 1};
  s.x = {p.x[0] * d[0] * d[1], p.x[1], 0, 0};
  s.y = {p.y[0] * d[0] * d[1], p.y[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (p.x[2 + i] % d[i] || p.pad_l[i] % d[i] || p.pad_r[i] % d[i] || p.y[2 + i] % d[i]) return s;
    s.x[2 + i] = p.x[2 + i] / d[i];
    s.y[2 + i] = p.y[2 + i] / d[i];
    s.pad_l.push_back(p.pad_l[i] / d[i]);
    s.pad_r.push_back(p.pad_r[i] / d[i]);
  }
  s.dh = d[0], s.dw = d[1];
  s.ok = true;
  return s;
}

// The 6-D view (n, phase row r, phase column s, c, h', w') of a 4-D value in format f (plain or
// channel-blocked, no padded lane): of the whole image (dims {N, C, H, W}: rows h' * dh + r) when
// !batched, else of the sub-images' batch (image (n * dh + r) * dw + s, dims {N * dh * dw, C, H /
// dh, W / dw}). A reorder between the two moves every phase at once.
memory::desc phase_view(const Dims& whole, int64_t dh, int64_t dw, Format f, bool batched) {
  const int64_t b = std::max(1, format_channel_block(f)), N = whole[0], C = whole[1], H = whole[2], W = whole[3];
  const int64_t h = H / dh, w = W / dw, cb = C / b;
  dnnl_memory_desc_t m = md_of({N, C, H, W}, f).data;  // data type, format kind, inner blocks
  const int64_t dims[6] = {N, dh, dw, C, h, w};
  const std::array<int64_t, 6> strides =
      batched
          ? std::array<int64_t, 6>{dh * dw * cb * h * w * b, dw * cb * h * w * b, cb * h * w * b, h * w * b, w * b, b}
          : std::array<int64_t, 6>{cb * H * W * b, W * b, b, H * W * b, dh * W * b, dw * b};
  m.ndims = 6;
  for (int i = 0; i < 6; ++i) {
    m.dims[i] = m.padded_dims[i] = dims[i];
    m.padded_offsets[i] = 0;
    m.format_desc.blocking.strides[i] = strides[i];
  }
  dnnl_blocking_desc_t& bd = m.format_desc.blocking;
  for (int i = 0; i < bd.inner_nblks; ++i) bd.inner_idxs[i] = 3;  // the channel block: dim 1 -> 3
  return memory::desc(m);
}

bool winograd_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("INFERA_DNNL_WINOGRAD");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

// ---- the algorithm: direct vs Winograd (docs/perfdb.md)
struct ConvPick {
  dnnl::algorithm alg = dnnl::algorithm::convolution_auto;
  std::string note;  // appended to the implementation name: "[winograd: 1.2 ms of: ...]"
  std::optional<dnnl::convolution_forward::primitive_desc> pd;  // made already for alg, if any
};

std::string dims_str(const Dims& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

std::string dims_str(const Dims& a, const Dims& b) { return dims_str(a) + "," + dims_str(b); }

PerfKey conv_key(const StepRequest& req, const ConvPlan& p, Format cs, Format cd) {
  PerfKey k;
  k.device = tune::cpu_device_name();
  k.libs = tune::cpu_libs();
  k.op = "conv";
  k.shape = "x" + dims_str(p.x) + " w" + dims_str(p.w) + " y" + dims_str(p.y) + " s" + dims_str(p.strides) + " d" +
            dims_str(p.dilates) + " p" + dims_str(p.pad_l, p.pad_r) + " g" + std::to_string(p.group);
  k.dtype = "f32";
  k.formats = std::string(format_name(cs)) + ">" + format_name(cd);
  std::string ep;
  if (p.has_bias) ep += "bias";
  if (p.has_z) ep += std::string(ep.empty() ? "" : "+") + "sum";
  for (const EltOp& e : p.act)
    ep += (ep.empty() ? "" : "+") + std::string("elt") + std::to_string(static_cast<int>(e.alg));
  k.epilogue = ep.empty() ? "-" : ep;
  return k;
}

// How a candidate is timed: its conv alone, or (phases) with the reorders into and out of the
// sub-images' batch that the kernel runs around it (from the whole images in formats ls, ld).
struct TimedConv {
  const dnnl::convolution_forward::primitive_desc* pd = nullptr;
  const SpaceToBatch* phases = nullptr;
  Dims x, y;  // the whole conv's dims (phases only)
  Format ls = Format::kPlain, ld = Format::kPlain, cs = Format::kPlain, cd = Format::kPlain;  // whole, batch
};

// Times candidates on zero data of their shapes: one warm-up each, then rounds that run every
// candidate once in turn (a load change on a shared machine hits all of them alike), at least
// min_reps rounds and more until ~20 ms have passed (up to max_reps): the best of many runs is
// the one that was not preempted. Best time per candidate in ms (DBL_MAX: failed).
std::vector<double> time_convs(const std::vector<TimedConv>& cands, bool bias, int threads, int min_reps,
                               int max_reps) {
  using namespace dnnl;
  const int prev = omp_get_max_threads();
  if (threads > 0) omp_set_num_threads(threads);
  auto zeroed = [](const memory::desc& md) {
    memory m(md, engine());
    if (md.get_size()) std::memset(m.get_data_handle(), 0, md.get_size());
    return m;
  };
  // With a scratchpad of its own, as every primitive of the backend (user_scratchpad).
  auto reorder_step = [&](const memory& from, const memory& to) {
    const reorder::primitive_desc pd(engine(), from.get_desc(), engine(), to.get_desc(), user_scratchpad());
    std::unordered_map<int, memory> a{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    if (pd.scratchpad_desc().get_size()) a[DNNL_ARG_SCRATCHPAD] = zeroed(pd.scratchpad_desc());
    return std::pair<primitive, std::unordered_map<int, memory>>{dnnl::reorder(pd), a};
  };
  std::vector<std::vector<std::pair<primitive, std::unordered_map<int, memory>>>> cs;
  std::vector<memory> owners;  // the whole images the phase views point into (views do not own)
  std::vector<double> best(cands.size(), DBL_MAX);
  try {
    for (const TimedConv& t : cands) {
      const auto* pd = t.pd;
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, zeroed(pd->src_desc())},
                                           {DNNL_ARG_WEIGHTS, zeroed(pd->weights_desc())},
                                           {DNNL_ARG_DST, zeroed(pd->dst_desc())}};
      if (bias) args[DNNL_ARG_BIAS] = zeroed(pd->bias_desc());
      if (pd->scratchpad_desc().get_size()) args[DNNL_ARG_SCRATCHPAD] = zeroed(pd->scratchpad_desc());
      cs.emplace_back();
      if (t.phases) {
        const SpaceToBatch& s = *t.phases;
        const memory x = owners.emplace_back(zeroed(md_of(t.x, t.ls)));
        const memory y = owners.emplace_back(zeroed(md_of(t.y, t.ld)));
        auto view = [&](const memory& m, const Dims& whole, Format f, bool batched) {
          return memory(phase_view(whole, s.dh, s.dw, f, batched), engine(), m.get_data_handle());
        };
        cs.back().push_back(reorder_step(view(x, t.x, t.ls, false), view(args[DNNL_ARG_SRC], t.x, t.cs, true)));
        cs.back().emplace_back(convolution_forward(*pd), args);
        cs.back().push_back(reorder_step(view(args[DNNL_ARG_DST], t.y, t.cd, true), view(y, t.y, t.ld, false)));
      } else {
        cs.back().emplace_back(convolution_forward(*pd), args);
      }
    }
    stream st(engine());
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    for (int r = 0; r <= max_reps; ++r) {
      for (size_t i = 0; i < cs.size(); ++i) {
        const auto t0 = clock::now();
        for (auto& [prim, args] : cs[i]) prim.execute(st, args);
        st.wait();
        const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
        if (r > 0) best[i] = std::min(best[i], ms);  // round 0 warms up
      }
      if (r >= min_reps && std::chrono::duration<double, std::milli>(clock::now() - start).count() > 20) break;
    }
  } catch (const dnnl::error&) {
    best.assign(cands.size(), DBL_MAX);
  }
  if (threads > 0) omp_set_num_threads(prev);
  return best;
}

// Direct or Winograd for this conv. Without a search (no database handle, --search off) the
// fixed rule of before: Winograd for 3x3 stride-1 convs of >= 196 output pixels per image
// batch. With one, both are made and timed on the real shapes and the winner is kept in the
// perf db; a later build finds it and times nothing. make(alg) makes the primitive descriptor
// (throws dnnl::error where oneDNN has no implementation).
// A dilated conv's Winograd candidate is the conv of its sub-images (phases.ok: space_to_batch),
// timed with the reorders around it; make(winograd) must make that conv's descriptor.
template <class Make>
ConvPick pick_algorithm(const StepRequest& req, const ConvPlan& p, bool four, Format ls, Format ld, Format cs,
                        Format cd, const SpaceToBatch& phases, Make&& make) {
  using dnnl::algorithm;
  ConvPick pick;
  const bool wino_shape = four && p.group == 1 && p.w[2] == 3 && p.w[3] == 3 && p.strides == Dims{1, 1} &&
                          (p.dilates == Dims{0, 0} || phases.ok);
  const TuneSettings t = req.perf_db ? req.perf_db->settings() : TuneSettings{};
  const bool search = req.perf_db && t.search != SessionOptions::SearchMode::kOff;
  const bool wino_off = !winograd_enabled() || t.winograd == SessionOptions::WinogradMode::kOff;
  // The candidates oneDNN can make for this conv: "direct" always, "winograd" where it has one.
  std::vector<std::string> names{"direct"};
  std::optional<dnnl::convolution_forward::primitive_desc> wino;
  if (wino_shape && !(wino_off && t.conv_algo != SessionOptions::ConvAlgo::kWinograd)) {
    try {
      wino = make(algorithm::convolution_winograd);
      names.push_back("winograd");
    } catch (const dnnl::error&) {
    }
  }
  TuneSettings eff = t;
  if (!winograd_enabled()) eff.winograd = SessionOptions::WinogradMode::kOff;
  const tune::Allowed allowed = tune::allowed_candidates(names, eff);
  std::string forced_note = allowed.note;
  if (!forced_note.empty() && t.conv_algo == SessionOptions::ConvAlgo::kWinograd && !wino)
    forced_note =
        std::string("--conv-algo winograd: oneDNN has no Winograd for this conv") +
        (wino_shape ? " on this ISA" : " (3x3, stride 1, group 1; dilated: sizes and pads multiples of the dilation)") +
        "; using direct";
  // --winograd on where oneDNN has none for this shape on this CPU (AVX2): said, not silent.
  const bool wino_missing =
      wino_shape && !wino && winograd_enabled() &&
      (t.winograd == SessionOptions::WinogradMode::kOn || t.conv_algo == SessionOptions::ConvAlgo::kWinograd);
  if (wino_missing && forced_note.empty())
    forced_note = "--winograd on: oneDNN has no Winograd for this conv on this ISA; using direct";
  if (!forced_note.empty() && req.verbose >= 1)
    std::fprintf(stderr, "%s\n",  // the node name from the model: one escaped, capped line
                 Status::error(StatusCode::kInternal, "infera: tune: node '" + req.node->name + "': " + forced_note)
                     .message()
                     .c_str());
  // "direct" is oneDNN's direct algorithm where it was chosen over Winograd (timed or forced);
  // else convolution_auto, as before the search (the same kernels for shapes without Winograd).
  auto use = [&](const std::string& n, bool chosen) {
    if (n == "winograd") pick.pd = wino;
    pick.alg = n == "winograd" ? algorithm::convolution_winograd
               : chosen        ? algorithm::convolution_direct
                               : algorithm::convolution_auto;
  };
  if (allowed.index.size() == 1 || (!search && allowed.filtered)) {
    use(names[allowed.index[0]], allowed.filtered);  // forced (or the only one)
    // Said whenever the user forced an algorithm, also where it was the only candidate anyway.
    if (wino_missing)
      pick.note = " [direct: no Winograd on this ISA]";
    else if (allowed.filtered || t.conv_algo != SessionOptions::ConvAlgo::kAuto)
      pick.note = " [" + names[allowed.index[0]] + ": forced]";
    return pick;
  }
  if (!search) {  // the fixed rule
    // 3x3 stride 1: Winograd does 2.25-4x fewer multiplies. Measured on Zen 4 (2 threads),
    // ResNet-50 shapes: 1.2-1.7x faster than the direct kernel from 14x14 at batch 1 up (the
    // auto heuristic takes it only for big batches), slower on 7x7 at batch 1.
    use(wino && p.y[0] * p.y[2] * p.y[3] >= 196 ? "winograd" : "direct", false);
    return pick;
  }
  tune::Choice choice(req.perf_db, conv_key(req, p, cs, cd), allowed);
  std::vector<std::string> allowed_names;
  for (size_t i : allowed.index) allowed_names.push_back(names[i]);
  if (!choice.known(allowed_names)) {
    std::optional<dnnl::convolution_forward::primitive_desc> direct;
    try {
      direct = make(algorithm::convolution_direct);
    } catch (const dnnl::error&) {
    }
    std::vector<TimedConv> cands;
    std::vector<std::string> timed;
    for (const std::string& n : allowed_names) {
      TimedConv c;
      c.pd = n == "winograd" ? &*wino : direct ? &*direct : nullptr;
      if (n == "winograd" && p.dilates != Dims{0, 0})
        c.phases = &phases, c.x = p.x, c.y = p.y, c.ls = ls, c.ld = ld, c.cs = cs, c.cd = cd;
      if (c.pd)
        cands.push_back(c), timed.push_back(n);
      else
        choice.note(n, DBL_MAX);
    }
    const std::vector<double> ms =
        time_convs(cands, p.has_bias, req.num_threads, choice.reps(), choice.exhaustive() ? 100 : 30);
    for (size_t i = 0; i < timed.size(); ++i) choice.note(timed[i], ms[i]);
    choice.store();
  }
  if (choice.best().empty()) {  // both failed to run: oneDNN's own choice
    use("direct", false);
    return pick;
  }
  use(choice.best(), true);
  pick.note = " [" + choice.best() + ": " + choice.summary() + "]";
  if (req.verbose >= 1)
    std::fprintf(stderr, "%s\n",  // the node name from the model: one escaped, capped line
                 Status::error(StatusCode::kInternal, "infera: tune: node '" + req.node->name +
                                                          "' conv: " + choice.best() + " (" + choice.summary() + ")")
                     .message()
                     .c_str());
  return pick;
}

}  // namespace

bool own_conv_request(const StepRequest& req, OwnConv& c) {
  c.op = dynamic_cast<const ConvOp*>(req.op);
  if (!c.op || !req.has_in(0) || !req.has_in(1) || !req.inputs[1]->value || !req.has_out(0)) return false;
  if (!all_float32(req) || req.slice_of(0).sliced()) return false;
  c.x = req.in_dims(0), c.w = req.in_dims(1), c.y = req.out_dims(0);
  if (c.x.size() != 4 || c.w.size() != 4 || c.y.size() != 4) return false;
  const ConvAttrs& at = c.op->attrs();
  std::vector<int64_t> yd;
  if (!conv_resolve(at, c.x, c.w, c.pads, yd).is_ok() || yd != c.y) return false;
  for (int64_t v : c.pads)
    if (v < 0) return false;
  for (int64_t v : at.dilations)
    if (v != 1) return false;
  for (int64_t v : c.y)
    if (v <= 0) return false;
  c.sh = at.strides.empty() ? 1 : at.strides[0], c.sw = at.strides.empty() ? 1 : at.strides[1];
  c.has_bias = req.has_in(2), c.has_z = c.op->fused() && req.has_in(3);
  if (c.has_bias && req.in_dims(2) != Dims{c.y[1]}) return false;
  if (c.has_z && req.in_dims(3) != c.y) return false;
  return c.op->fused() || req.inputs.size() <= 3;
}

double max_filter_abs_sum(const Tensor& w) {
  const int64_t per = w.numel() / std::max<int64_t>(1, w.dims()[0]);
  double smax = 0;
  for (int64_t m = 0; m < w.dims()[0]; ++m) {
    double sum = 0;
    for (int64_t i = 0; i < per; ++i) sum += std::fabs(static_cast<double>(w.data_as<float>()[m * per + i]));
    smax = std::max(smax, sum);  // NaN weights: smax stays, but sum is NaN: below
    if (!(sum <= 1e300)) smax = INFINITY;
  }
  return smax;
}

void carry_conv_bound(DnnlKernel& k, double smax, bool has_bias, float bias_max, bool has_z, const Activation& act) {
  if (!std::isfinite(smax) || (has_bias && !(bias_max <= FLT_MAX))) return;
  const float sm = static_cast<float>(smax), mb = has_bias ? bias_max : 0.f;
  k.set_before([sm, mb, has_z, act](ComputeContext& ctx) {
    const float mx = ctx.res.in_bound(0), mz = has_z ? ctx.res.in_bound(3) : 0.f;
    const bool known = mx <= FLT_MAX && mz <= FLT_MAX;
    ctx.res.set_out_bound(0, known ? activation_bound(act, (mx * sm + mz + mb) * 1.0625f) : RunResources::kNoBound);
  });
}

namespace {

// oneDNN 2.6's depthwise kernel (jit_dw) splits its work over threads in units of (4 channel
// blocks, output row): with a block count that is not a multiple of 4, the last unit holds
// fewer blocks and one thread gets most of the work. At batch 1 on 2 threads, 72 or 80 channels
// (5 blocks: units of 4 and 1) run 1.1x faster than on one thread, 64 channels 1.9x (measured on
// Zen 4, 2026-12-07; MNASNet's 72-channel 56x56 convs, EfficientNet's 144-channel ones). The
// thread holding the most blocks, relative to an even share, from balance211 over the units.
double dw_thread_imbalance(int64_t blocks, int64_t rows, int nthr) {
  const int64_t per = std::min<int64_t>(4, blocks), units_c = (blocks + per - 1) / per, units = units_c * rows;
  double worst = 0;
  for (int t = 0; t < nthr; ++t) {  // balance211: the first units % nthr threads take one more
    const int64_t n1 = (units + nthr - 1) / nthr, n2 = n1 - 1, t1 = units - n2 * nthr;
    const int64_t start = t < t1 ? n1 * t : t1 * n1 + (t - t1) * n2, end = start + (t < t1 ? n1 : n2);
    double work = 0;
    for (int64_t u = start; u < end; ++u) {
      const int64_t c = u / rows;
      work += static_cast<double>(std::min(per, blocks - c * per));
    }
    worst = std::max(worst, work);
  }
  return worst / (static_cast<double>(blocks * rows) / nthr);
}

// INFERA_DW_SPLIT=off: one conv as before (for A/B timing in one binary).
bool dw_split_off() {
  static const bool off = [] {
    const char* v = std::getenv("INFERA_DW_SPLIT");
    return v && std::string(v) == "off";
  }();
  return off;
}

}  // namespace

Support conv_query(const StepRequest& req) {
  ConvPlan p;
  if (!plan_conv(req, p)) return Support::no("a conv oneDNN does not take (non-constant W, rank, pads, activation)");
  Support s;
  s.ok = true;
  s.input_formats = blocked_slots(req.inputs, {0, 3});
  s.output_formats = blocked_slots(req.outputs, {0});
  if (p.has_z) s.in_place.emplace_back(3, 0);  // the residual's buffer becomes Y: sum post-op in place
  return s;
}

std::unique_ptr<DnnlKernel> conv_create(const StepRequest& req) {
  if (auto g = group8_conv_create(req)) return g;
  if (auto s = smallspatial_conv_create(req)) return s;
  using namespace dnnl;
  ConvPlan p;
  if (!plan_conv(req, p)) return nullptr;
  std::vector<float> w_trim;  // the trimmed kernel (trim_dead_taps), else empty
  if (p.trimmed && !trimmed_weights(p, req.inputs[1]->value->data_as<float>(), w_trim)) {
    w_trim.clear();
    p = ConvPlan();
    if (!plan_conv(req, p, false)) return nullptr;
  }
  const bool four = req.inputs[0]->shape.rank() == 4;
  const Format ls = four ? req.in_format(0) : Format::kPlain, ld = four ? req.out_format(0) : Format::kPlain;
  const memory::desc w_any(p.w, memory::data_type::f32, memory::format_tag::any);
  const memory::desc b_md =
      p.has_bias ? memory::desc({p.y[1]}, memory::data_type::f32, memory::format_tag::a) : memory::desc();
  const memory::desc z_md =
      p.has_z ? md_of(p.y, req.inputs[3]->shape.rank() == 4 ? req.in_format(3) : Format::kPlain) : memory::desc();
  // residual: 0 none, 1 sum post-op, 2 binary-add post-op reading Z.
  algorithm alg = algorithm::convolution_auto;
  SpaceToBatch phases;  // .ok while making (and once chosen, running) the conv of the sub-images
  bool batched = false;
  auto make_pd = [&](Format sl, Format dl, int residual, bool with_act = true) {
    convolution_forward::desc d =
        batched ? convolution_forward::desc(prop_kind::forward_inference, alg, md_of(phases.x, sl), w_any, b_md,
                                            md_of(phases.y, dl), p.strides, Dims{0, 0}, phases.pad_l, phases.pad_r)
                : convolution_forward::desc(prop_kind::forward_inference, alg, md_of(p.x, sl), w_any, b_md,
                                            md_of(p.y, dl), p.strides, p.dilates, p.pad_l, p.pad_r);
    post_ops po;
    if (residual == 1) po.append_sum(1.f);
    if (residual == 2) po.append_binary(algorithm::binary_add, z_md);
    if (with_act) append_eltwise_ops(po, p.act);
    primitive_attr attr;
    attr.set_post_ops(po);
    return convolution_forward::primitive_desc(d, user_scratchpad(attr), engine());
  };
  const int residual = p.has_z ? 1 : 0;
  bool pointwise = true;  // 1x1, stride 1, no padding: gemm needs no im2col
  for (size_t i = 0; i < 2; ++i)
    pointwise = pointwise && p.w[p.w.size() - 2 + i] == 1 && p.strides[i] == 1 && p.pad_l[i] == 0 && p.pad_r[i] == 0;
  // Not a structured binding: clang < 16 (the fuzz build) cannot capture one in the lambda below.
  const std::pair<Format, Format> picked =
      four ? pick_formats(
                 ls, ld, [&](Format a, Format b) { return make_pd(a, b, residual).impl_info_str(); }, pointwise)
           : std::pair<Format, Format>{ls, ld};
  const Format cs = picked.first, cd = picked.second;
  convolution_forward::primitive_desc pd = make_pd(cs, cd, residual);
  if (four && has_winograd()) phases = space_to_batch(p, {ls, ld, cs, cd});
  ConvPick pick = pick_algorithm(req, p, four, ls, ld, cs, cd, phases, [&](algorithm a) {
    alg = a;
    batched = phases.ok && a == algorithm::convolution_winograd;
    return make_pd(cs, cd, residual);
  });
  alg = pick.alg;
  batched = phases.ok && alg == algorithm::convolution_winograd;
  if (pick.pd)
    pd = *pick.pd;
  else if (alg != algorithm::convolution_auto)
    pd = make_pd(cs, cd, residual);

  // oneDNN's gemm-based conv applies post-ops in its own kernel, whose logistic maps NaN to a
  // number (measured, oneDNN 2.6; its jit convs keep NaN): there the eltwise chain runs as eltwise
  // primitives on the conv's output instead, or as our loop for the NaN-dropping ones (a slow path
  // already: odd shapes, plain formats).
  std::vector<EltOp> separate;
  bool loop_always = false;
  if (!p.act.empty() && std::string(pd.impl_info_str()).find("gemm") != std::string::npos) {
    if (p.nan_guard)
      loop_always = true;
    else
      separate = p.act;
    p.act.clear();
    pd = make_pd(cs, cd, residual);
  }
  const bool guarded = p.nan_guard && !loop_always;
  auto k = std::make_unique<DnnlKernel>(
      p.has_z || !p.act.empty() || loop_always || !separate.empty() ? "dnnl fused conv" : "dnnl conv");
  std::string impl = pd.impl_info_str() + std::string(cs != ls || cd != ld ? " (via reorders)" : "") + pick.note;
  if (batched)
    impl += " (dilation " + std::to_string(phases.dh) + "x" + std::to_string(phases.dw) + " as a batch of " +
            std::to_string(phases.dh * phases.dw) + " sub-images)";
  if (p.trimmed)
    impl += " (dead taps cut: " + std::to_string(p.full_k[0]) + "x" + std::to_string(p.full_k[1]) + " -> " +
            std::to_string(p.w[p.w.size() - 2]) + "x" + std::to_string(p.w.back()) + ")";
  if (!separate.empty()) impl += " + eltwise primitives";
  if (loop_always) impl += std::string(" + ") + activation_name(p.loop_act.kind) + " loop (NaN kept)";
  if (guarded) impl += " (NaN guard)";
  k->set_impl(impl);
  const memory::format_tag wtag = p.group > 1 ? memory::format_tag::goihw : memory::format_tag::oihw;
  memory w_user(memory::desc(p.w, memory::data_type::f32, wtag), engine(),
                p.trimmed ? static_cast<void*>(w_trim.data()) : const_cast<void*>(req.inputs[1]->value->data()));
  const std::string wwhat = p.trimmed ? "conv-trimmed" : "conv";
  // Depthwise at batch 1 in nChw16c, no residual, constant bias: the channels where jit_dw's thread
  // split leaves one thread >= 15% over an even share run as two convs (dw_thread_imbalance).
  int64_t dw_split = 0;
  bool dw_split_used = false;
  if (four && !batched && p.group > 1 && p.group == p.x[1] && p.group == p.y[1] && p.x[0] == 1 && !p.has_z &&
      ls == Format::kNChw16c && cs == ls && ld == cs && cd == cs && req.num_threads > 1 &&
      (!p.has_bias || req.inputs[2]->value) && !dw_split_off()) {
    const int64_t blocks = (p.y[1] + 15) / 16;
    if (blocks > 4 && blocks % 4 != 0 && dw_thread_imbalance(blocks, p.y[2], req.num_threads) >= 1.15)
      dw_split = blocks / 4 * 64;
  }
  memory w = packed_weights(*k, req, wwhat, w_user, pd.weights_desc());
  // The steps of one way to compute Y with cpd (with_act: cpd has the activation post-ops).
  auto add_steps = [&](const convolution_forward::primitive_desc& cpd, bool with_act, const std::vector<EltOp>& tail) {
    memory wl =
        cpd.weights_desc() == pd.weights_desc() ? w : packed_weights(*k, req, wwhat, w_user, cpd.weights_desc());
    if (batched) {  // the sub-images: a reorder into their batch, the conv, a reorder back (no Z here)
      auto phase_reorder = [&](const memory& from, const memory& to) {
        k->add_step(dnnl::reorder(
                        reorder::primitive_desc(engine(), from.get_desc(), engine(), to.get_desc(), user_scratchpad())),
                    {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
      };
      memory xb = k->temp(cpd.src_desc()), yb = k->temp(cpd.dst_desc());
      phase_reorder(k->bind_input(0, phase_view(p.x, phases.dh, phases.dw, ls, false)),
                    k->temp_alias(xb, phase_view(p.x, phases.dh, phases.dw, cs, true)));
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, xb}, {DNNL_ARG_WEIGHTS, wl}, {DNNL_ARG_DST, yb}};
      if (p.has_bias) args[DNNL_ARG_BIAS] = k->bind_input(2, b_md);
      k->add_step(convolution_forward(cpd), args);
      phase_reorder(k->temp_alias(yb, phase_view(p.y, phases.dh, phases.dw, cd, true)),
                    k->bind_output(0, phase_view(p.y, phases.dh, phases.dw, ld, false)));
      if (!tail.empty()) throw dnnl::error(dnnl_unimplemented, "eltwise primitives after a batched conv");
      return;
    }
    if (dw_split > 0 && tail.empty() && std::string(cpd.impl_info_str()).find("jit_dw") != std::string::npos) {
      // Two depthwise convs, over the channels [0, dw_split) and the rest, each spread over every
      // thread: views of X and Y at the second part's first block (batch 1, nChw16c: a block is
      // contiguous), its weights and bias sliced.
      std::vector<std::pair<convolution_forward::primitive_desc, int64_t>> parts;
      for (int64_t c0 : {int64_t{0}, dw_split}) {
        const int64_t cn = (c0 == 0 ? dw_split : p.y[1] - dw_split);
        memory::desc xs = md_of({1, cn, p.x[2], p.x[3]}, cs), ys = md_of({1, cn, p.y[2], p.y[3]}, cd);
        xs.data.offset0 = c0 * p.x[2] * p.x[3];
        ys.data.offset0 = c0 * p.y[2] * p.y[3];
        const memory::desc wa({cn, 1, 1, p.w[3], p.w[4]}, memory::data_type::f32, memory::format_tag::any);
        const memory::desc bm =
            p.has_bias ? memory::desc({cn}, memory::data_type::f32, memory::format_tag::a) : memory::desc();
        convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, xs, wa, bm, ys,
                                    p.strides, p.dilates, p.pad_l, p.pad_r);
        post_ops po;
        if (with_act) append_eltwise_ops(po, p.act);
        primitive_attr attr;
        attr.set_post_ops(po);
        convolution_forward::primitive_desc part(d, user_scratchpad(attr), engine());
        if (std::string(part.impl_info_str()).find("jit_dw") == std::string::npos) break;
        parts.emplace_back(part, c0);
      }
      if (parts.size() == 2) {
        dw_split_used = true;
        const float* wsrc = p.trimmed ? w_trim.data() : static_cast<const float*>(req.inputs[1]->value->data());
        const float* bsrc = p.has_bias ? static_cast<const float*>(req.inputs[2]->value->data()) : nullptr;
        const int64_t taps = p.w[3] * p.w[4];
        for (auto& [part, c0] : parts) {
          const int64_t cn = part.src_desc().dims()[1];
          memory w_part(memory::desc({cn, 1, 1, p.w[3], p.w[4]}, memory::data_type::f32, memory::format_tag::goihw),
                        engine(), const_cast<float*>(wsrc + c0 * taps));
          std::unordered_map<int, memory> args{
              {DNNL_ARG_SRC, k->bind_input(0, part.src_desc())},
              {DNNL_ARG_WEIGHTS,
               packed_weights(*k, req, wwhat + "-dw" + std::to_string(c0), w_part, part.weights_desc())},
              {DNNL_ARG_DST, k->bind_output(0, part.dst_desc())}};
          if (p.has_bias) {
            memory b = k->own(part.bias_desc());
            std::memcpy(b.get_data_handle(), bsrc + c0, static_cast<size_t>(cn) * sizeof(float));
            args[DNNL_ARG_BIAS] = b;
          }
          k->add_step(convolution_forward(part), args);
        }
        return;
      }
    }
    memory src = input_as(*k, 0, md_of(p.x, ls), cpd.src_desc());
    OutputAs out = output_as(*k, 0, md_of(p.y, ld), cpd.dst_desc());
    memory dst = out.compute;
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wl}, {DNNL_ARG_DST, dst}};
    if (p.has_bias) args[DNNL_ARG_BIAS] = k->bind_input(2, b_md);
    if (!p.has_z) {
      k->add_step(convolution_forward(cpd), args);
    } else if (dst.get() != out.bound.get()) {
      // Computing in a temporary: copy Z into it, sum, reorder into Y.
      memory z = k->bind_input(3, z_md);
      k->add_step(dnnl::reorder(reorder::primitive_desc(engine(), z_md, engine(), dst.get_desc(), user_scratchpad())),
                  {{DNNL_ARG_FROM, z}, {DNNL_ARG_TO, dst}});
      k->add_step(convolution_forward(cpd), args);
    } else if (req.alias_of(0) == 3) {
      // Y is Z's buffer (the planner made the step in place): sum post-op, nothing to copy.
      k->add_step(convolution_forward(cpd), args);
    } else {
      // Read Z through a binary-add post-op (no copy pass) when the same kernel takes it;
      // else copy Z into Y and sum.
      memory z = k->bind_input(3, z_md);
      bool binary_ok = false;
      if (z_md == cpd.dst_desc() && is_blocked(cd)) {
        try {
          convolution_forward::primitive_desc pd_bin = make_pd(cs, cd, 2, with_act);
          if (std::string(pd_bin.impl_info_str()) == cpd.impl_info_str() &&
              pd_bin.weights_desc() == cpd.weights_desc()) {
            args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = z;
            k->add_step(convolution_forward(pd_bin), args);
            binary_ok = true;
          }
        } catch (const dnnl::error&) {
        }
      }
      if (!binary_ok) {
        k->add_step(dnnl::reorder(reorder::primitive_desc(engine(), z_md, engine(), dst.get_desc(), user_scratchpad())),
                    {{DNNL_ARG_FROM, z}, {DNNL_ARG_TO, dst}});
        k->add_step(convolution_forward(cpd), args);
      }
    }
    for (const EltOp& e : tail) {
      eltwise_forward::desc ed(prop_kind::forward_inference, e.alg, dst.get_desc(), e.alpha, e.beta);
      k->add_step(eltwise_forward(eltwise_forward::primitive_desc(ed, user_scratchpad(), engine())),
                  {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}});
    }
    out.finish(*k);
  };
  add_steps(pd, true, separate);
  const double smax = max_filter_abs_sum(*req.inputs[1]->value);
  const float bias_max = p.has_bias && req.inputs[2]->value ? max_abs(req.inputs[2]->value->data_as<float>(), p.y[1], 1)
                                                            : RunResources::kNoBound;
  if (guarded) {
    // Relu/Clip/HardSigmoid post-ops map a NaN pre-activation to the bound, where the reference
    // keeps NaN. A NaN there needs a NaN or Inf among X, Z and B, or a sum that overflows: with
    // every |value| <= t (t = FLT_MAX / ((max_m sum |W[m]| + 2) * 2^24): room for Winograd's
    // transforms) none can happen, and the fused primitive is exact. Else the run takes the
    // alternative: the conv without the activation, then the NaN-keeping loop (activation_after),
    // which also zeroes padded lanes. The magnitudes come from the run's bounds (RunResources) when
    // the producer of X or Z proved one (a guarded conv that took the fused path: its output is
    // finite with |y| <= (|X| max * smax + |Z| max + |B| max), capped by the activation's range),
    // else from one read of the input; this conv then proves its own output's bound. A chain of
    // convs reads its input once every ~log(t) / log(smax) layers instead of at every layer
    // (the reads cost 7-13% of MobileNetV2 / MNASNet / RegNetY at batch 1, measured 2026-12-04).
    const float t = std::isfinite(smax) ? static_cast<float>(FLT_MAX / ((smax + 2.0) * 16777216.0))
                                        : -1.f;  // -1: never exact (0 * Inf)
    auto bound_elems = [&](int slot, const Dims& d) {
      const Format f = d.size() == 4 ? req.in_format(slot) : Format::kPlain;
      const int64_t b = d.size() == 4 ? std::max(1, format_channel_block(f)) : 1;
      int64_t n = d[0] * ((d[1] + b - 1) / b) * b;
      for (size_t i = 2; i < d.size(); ++i) n *= d[i];
      return n;
    };
    struct Guard {
      float t, smax, cap;  // cap: the activation's range (Clip, HardSigmoid), else +Inf
      int64_t nx, nz, nb;
      float bmax;  // |B| max of a constant bias, < 0: read B each run
    } gd{t,
         static_cast<float>(std::isfinite(smax) ? smax : 0.0),
         RunResources::kNoBound,
         bound_elems(0, req.in_dims(0)),
         p.has_z ? bound_elems(3, req.in_dims(3)) : 0,
         p.has_bias ? p.y[1] : 0,
         -1.f};
    if (p.loop_act.kind == ActKind::kClip)
      gd.cap = std::max(std::fabs(p.loop_act.alpha), std::fabs(p.loop_act.beta));
    else if (p.loop_act.kind == ActKind::kHardSigmoid)
      gd.cap = 1.f;
    if (p.has_bias && req.inputs[2]->value) gd.bmax = bias_max;
    k->begin_alternative(
        [gd](ComputeContext& ctx) {
          auto magnitude = [&](size_t slot, int64_t n) {
            const float b = ctx.res.in_bound(slot);
            return b <= gd.t ? b : max_abs(ctx.in(slot).ptr<const float>(), n, ctx.num_threads);
          };
          const float mx = magnitude(0, gd.nx), mz = gd.nz ? magnitude(3, gd.nz) : 0.f;
          const float mb = !gd.nb ? 0.f : gd.bmax >= 0 ? gd.bmax : max_abs(ctx.in(2).ptr<const float>(), gd.nb, 1);
          const bool exact = mx <= gd.t && mz <= gd.t && mb <= gd.t;
          // Float rounding of the sums (and Winograd's transforms) stays far below 1/16 of the bound.
          ctx.res.set_out_bound(0,
                                exact ? std::min(gd.cap, (mx * gd.smax + mz + mb) * 1.0625f) : RunResources::kNoBound);
          return !exact;
        },
        activation_after(p.loop_act, p.y, ld));
    add_steps(make_pd(cs, cd, residual, false), false, {});
  } else {
    // Padded lanes of a blocked output back to zero (oneDNN computes them as 0 * x: NaN where
    // the input holds NaN); and the loop where it always runs.
    auto after = activation_after(loop_always ? p.loop_act : activation_default(ActKind::kIdentity), p.y, ld);
    if (after) k->set_after(std::move(after));
    // An activation that keeps NaN (or none: a projection, a downsample, a residual sum; or the
    // NaN-keeping loop): the output's bound follows from the inputs' when the run knows them (no
    // read), so that the guarded convs after it need none (a squeeze-excitation gate's Sigmoid: 1).
    carry_conv_bound(*k, smax, p.has_bias, bias_max, p.has_z, p.loop_act);
  }
  if (dw_split_used)
    k->set_impl(impl + " (channels split " + std::to_string(dw_split) + " + " + std::to_string(p.y[1] - dw_split) +
                ": thread balance)");
  return k;
}

}  // namespace infera::cpu

// ---------------------------------------------------------------- ConvTranspose
namespace infera::cpu {
namespace {

struct DeconvPlan {
  Dims x, w, y;  // 4-D; w as oneDNN's logical [M, C] (or [g, M/g, C/g]) dims over ONNX's storage
  Dims strides, dilates, pad_l, pad_r;
  int64_t group = 1;
  bool has_bias = false;
};

bool plan_deconv(const StepRequest& req, DeconvPlan& p) {
  const auto* op = dynamic_cast<const ConvTransposeOp*>(req.op);
  if (!op || !req.has_in(0) || !req.has_in(1) || !req.inputs[1]->value || req.inputs.size() > 3) return false;
  const Dims x = req.in_dims(0), w = req.in_dims(1), y = req.out_dims(0);
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return false;
  const ConvTransposeAttrs& a = op->attrs();
  std::vector<int64_t> pads, yd;
  if (!conv_transpose_resolve(a, x, w, pads, yd).is_ok() || yd != y) return false;
  p.group = a.group;
  if (p.group < 1 || x[1] != w[0] || w[0] % p.group != 0 || y[1] != w[1] * p.group) return false;
  for (int i = 0; i < 2; ++i) {
    const int64_t s = a.strides.empty() ? 1 : a.strides[i], d = a.dilations.empty() ? 1 : a.dilations[i];
    const int64_t ek = (w[2 + i] - 1) * d + 1, pl = pads[i];
    const int64_t pr = (x[2 + i] - 1) * s + ek - pl - y[2 + i];  // < 0 with output_padding: oneDNN takes it
    if (pl < 0 || y[2 + i] <= 0) return false;
    p.strides.push_back(s), p.dilates.push_back(d - 1), p.pad_l.push_back(pl), p.pad_r.push_back(pr);
  }
  p.x = x, p.y = y;
  p.w = p.group > 1 ? Dims{p.group, w[1], w[0] / p.group, w[2], w[3]} : Dims{w[1], w[0], w[2], w[3]};
  p.has_bias = req.has_in(2);
  if (p.has_bias && req.in_dims(2) != Dims{y[1]}) return false;
  return true;
}

}  // namespace

Support deconv_query(const StepRequest& req) {
  DeconvPlan p;
  if (!plan_deconv(req, p)) return Support::no("a ConvTranspose oneDNN does not take (2-D, constant W, pads >= 0)");
  Support s;
  s.ok = true;
  s.input_formats = blocked_slots(req.inputs, {0});
  s.output_formats = blocked_slots(req.outputs, {0});
  return s;
}

std::unique_ptr<DnnlKernel> deconv_create(const StepRequest& req) {
  using namespace dnnl;
  DeconvPlan p;
  if (!plan_deconv(req, p)) return nullptr;
  const Format ls = req.in_format(0), ld = req.out_format(0);
  const memory::desc w_any(p.w, memory::data_type::f32, memory::format_tag::any);
  const memory::desc b_md = p.has_bias ? plain_md({p.y[1]}) : memory::desc();
  auto make_pd = [&](Format sl, Format dl) {
    deconvolution_forward::desc d(prop_kind::forward_inference, algorithm::deconvolution_direct, md_of(p.x, sl), w_any,
                                  b_md, md_of(p.y, dl), p.strides, p.dilates, p.pad_l, p.pad_r);
    return deconvolution_forward::primitive_desc(d, user_scratchpad(), engine());
  };
  auto [cs, cd] = pick_formats(ls, ld, [&](Format a, Format b) { return make_pd(a, b).impl_info_str(); });
  const deconvolution_forward::primitive_desc pd = make_pd(cs, cd);
  auto k = std::make_unique<DnnlKernel>("dnnl deconv");
  k->set_impl(pd.impl_info_str() + std::string(cs != ls || cd != ld ? " (via reorders)" : ""));
  // ONNX stores W as [C_in, M/g, kh, kw]: oneDNN's iohw (giohw when grouped) over the same bytes.
  const memory::format_tag wtag = p.group > 1 ? memory::format_tag::giohw : memory::format_tag::iohw;
  memory w_user(memory::desc(p.w, memory::data_type::f32, wtag), engine(),
                const_cast<void*>(req.inputs[1]->value->data()));
  std::unordered_map<int, memory> args;
  args[DNNL_ARG_WEIGHTS] = packed_weights(*k, req, "deconv", w_user, pd.weights_desc());
  args[DNNL_ARG_SRC] = input_as(*k, 0, md_of(p.x, ls), pd.src_desc());
  OutputAs out = output_as(*k, 0, md_of(p.y, ld), pd.dst_desc());
  args[DNNL_ARG_DST] = out.compute;
  if (p.has_bias) args[DNNL_ARG_BIAS] = k->bind_input(2, b_md);
  k->add_step(deconvolution_forward(pd), args);
  out.finish(*k);
  return k;
}

}  // namespace infera::cpu
