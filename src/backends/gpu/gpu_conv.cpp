// The GPU's matrix ops: Conv / FusedConv (implicit GEMM, depthwise and grouped direct kernels,
// bias + residual + activation fused) and Gemm / FusedGemm / MatMul. Each layer times its
// candidate kernels once when the plan is made and keeps the fastest: ours, and unless
// SessionOptions::vendor_libraries is off, cuDNN's fused conv engines (dnn.h) and cuBLASLt's GEMM
// algorithms (blas.h) with the same epilogue. The winner is kept in the perf db (src/tune), so
// a later build times nothing. The winner and its time are in the step's implementation name
// (`infera info --device gpu --plan`).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

#include "backends/gpu/blas.h"
#include "backends/gpu/dnn.h"
#include "backends/gpu/gpu_internal.h"
#include "backends/gpu/kernels/s8_cutlass.h"
#include "ops/conv.h"
#include "ops/matmul.h"
#include "ops/quant.h"
#include "ops/quant_conv.h"
#include "tune/choice.h"

namespace infera::gpu_backend {
namespace {

// Device buffers for timing candidates, freed after.
struct Scratch {
  std::vector<DeviceBuffer> bufs;
  Result<void*> get(int device, size_t bytes) {
    auto b = DeviceBuffer::make(device, bytes);
    if (!b.is_ok()) return b.status();
    bufs.push_back(b.take());
    gpuError_t e = gpuMemsetAsync(bufs.back().get(), 0, std::max<size_t>(bytes, 1), nullptr);
    if (e == gpuSuccess) e = gpuDeviceSynchronize();
    if (e != gpuSuccess) return device_error("gpu: memset", gpu::Status{gpuGetErrorString(e)});
    return bufs.back().get();
  }
  // As get, but holding int8 values like a quantized activation after Relu (half 0, half in
  // [0, 127], a fixed pseudo-random pattern) rather than zeros: on an H100 (ResNet-50 int8, b256),
  // CUTLASS kernels chosen on zeros ran 20-30% over their timed speed in the network, ours 5-9%;
  // presumably the integer tensor cores draw less power on zeros (not yet verified on a GPU).
  Result<void*> get_s8_activations(int device, size_t bytes) {
    auto p = get(device, bytes);
    if (!p.is_ok() || !bytes) return p;
    std::vector<uint8_t> host(std::min<size_t>(bytes, size_t{1} << 20));
    uint32_t r = 0x9e3779b9u;
    for (uint8_t& v : host) {
      r = r * 1664525u + 1013904223u;  // an LCG: its high bits are random enough here
      v = (r >> 31) ? static_cast<uint8_t>((r >> 16) & 0x7f) : 0;
    }
    auto* d = static_cast<uint8_t*>(p.value());
    gpuError_t e = gpuMemcpyHtoD(d, host.data(), host.size());
    for (size_t have = host.size(); e == gpuSuccess && have < bytes; have *= 2)  // doubling copies
      e = gpuMemcpyAsync(d + have, d, std::min(have, bytes - have), nullptr);
    if (e == gpuSuccess) e = gpuDeviceSynchronize();
    if (e != gpuSuccess) return device_error("gpu: filling a timing input", gpu::Status{gpuGetErrorString(e)});
    return p;
  }
};

// Times launch() on a private stream: one warm-up, then the best of `reps`; stops after the first
// rep when that is over `cutoff` ms (a candidate far slower than the best so far: fp32 engines of
// cuDNN can take 100+ ms a layer at batch 256). +inf when it fails.
template <class F>
double time_ms(int device, F&& launch, double cutoff = DBL_MAX, int reps = 3) {
  gpuStream_t s = nullptr;
  gpuEvent_t a = nullptr, b = nullptr;
  double best = DBL_MAX;
  if (gpuSetDevice(device) != gpuSuccess || gpuStreamCreate(&s) != gpuSuccess) return best;
  if (gpuEventCreate(&a) == gpuSuccess && gpuEventCreate(&b) == gpuSuccess && launch(s).ok() &&
      gpuStreamSynchronize(s) == gpuSuccess) {
    for (int i = 0; i < reps; ++i) {
      float ms = 0;
      if (gpuEventRecord(a, s) != gpuSuccess || !launch(s).ok() || gpuEventRecord(b, s) != gpuSuccess ||
          gpuEventSynchronize(b) != gpuSuccess || gpuEventElapsedTime(&ms, a, b) != gpuSuccess) {
        best = DBL_MAX;
        break;
      }
      best = std::min(best, static_cast<double>(ms));
      if (best > cutoff) break;
    }
  }
  (void)gpuGetLastError();  // a failed candidate leaves its error; the next one starts clean
  if (a) (void)gpuEventDestroy(a);
  if (b) (void)gpuEventDestroy(b);
  (void)gpuStreamDestroy(s);
  return best;
}

// The perf db's device and library fields for this GPU (tune::Choice keys).
PerfKey gpu_key(const GpuConfig& c, const char* op, std::string shape, const Activation& act, std::string extra) {
  PerfKey k;
  k.device = "gpu: " + c.dev.name + " arch " + std::to_string(c.dev.info.arch) + " x" +
             std::to_string(c.dev.info.sm_count) + " sm";
  int drv = 0, rt = 0;
  (void)gpuDriverGetVersion(&drv);
  (void)gpuRuntimeGetVersion(&rt);
  k.libs = std::string(kGpuVendor) + " rt " + std::to_string(rt) + " drv " + std::to_string(drv) +
           (c.vendor_libs ? " cuDNN " + std::to_string(gpu::dnn_version()) + " cuBLASLt " +
                                std::to_string(gpu::blas_version()) + (gpu::s8_cutlass_built() ? " CUTLASS" : "")
                          : std::string(" ours only"));
  k.op = op;
  k.shape = std::move(shape);
  k.dtype = c.f16() ? "f16" : c.tf32 ? "tf32" : "f32";
  k.formats = c.f16() ? "nhwc_f16" : "nhwc";
  k.epilogue = extra + (act.is_identity() ? "" : std::string(extra.empty() ? "" : "+") + activation_name(act.kind));
  if (k.epilogue.empty()) k.epilogue = "-";
  return k;
}

// Whether run() (one launch on the default stream) turns a NaN written at in[0] into NaN at each of the
// `count` elements from out, as the reference does (NaN * w is NaN); in[0] is zero again after (the
// timing inputs are zeros). fp32 and fp16 data.
template <class F>
bool nan_reaches(gpu::DType dt, void* in, const void* out, int count, F&& run) {
  const bool f16 = dt == gpu::DType::kF16;
  const size_t es = f16 ? 2 : 4;
  const uint32_t nan32 = 0x7fc00000u, zero = 0;
  const uint16_t nan16 = 0x7e00u;
  std::vector<uint16_t> y16(f16 ? count : 0);
  std::vector<float> y32(f16 ? 0 : count);
  bool ok = gpuMemcpyHtoD(in, f16 ? static_cast<const void*>(&nan16) : &nan32, es) == gpuSuccess && run().ok() &&
            gpuDeviceSynchronize() == gpuSuccess &&
            gpuMemcpyDtoH(f16 ? static_cast<void*>(y16.data()) : y32.data(), out, count * es) == gpuSuccess;
  ok = gpuMemcpyHtoD(in, &zero, es) == gpuSuccess && ok;
  for (int c = 0; ok && c < count; ++c)
    ok = f16 ? (y16[c] & 0x7c00u) == 0x7c00u && (y16[c] & 0x3ffu) != 0 : std::isnan(y32[c]);
  return ok;
}

// One layer's kernel choice. The shared half (settings, perf db lookups and records) is
// tune::Choice: a layer the perf db has is made without timing (and cuDNN's engines, compiled
// at run time, only when the db names one). Else our candidates are timed first (a candidate
// stops one rep past 4x the best so far; --search exhaustive: no cutoff, 10 reps), then the vendor
// library's, timed only against a baseline of ours; the fastest is kept and stored.
struct Choice {
  int device = 0;
  gpu::Candidate ours;
  std::optional<gpu::VendorCandidate> vendor;  // set when the vendor's won
  std::string summary;                         // every candidate and its time, or "perf db ..."
  // Set by a layer whose vendor candidates may compute a different NaN than ours (a fused Relu
  // that maps NaN to 0): false drops that candidate, from the search and as a perf db winner.
  std::function<bool(const gpu::VendorCandidate&)> keeps_nan;

  // make_vendor(only) -> the vendor's candidates (empty when off or the epilogue does not fuse;
  // only != "": just that one where the library can build it alone, as a perf db winner needs);
  // run_ours(candidate, stream), run_vendor(candidate, workspace, workspace bytes, stream) -> gpu::Status.
  template <class MakeVendor, class RunOurs, class RunVendor>
  Status choose(const StepRequest& req, const PerfKey& key, const std::vector<gpu::Candidate>& cands, Scratch& sc,
                MakeVendor&& make_vendor, RunOurs&& run_ours, RunVendor&& run_vendor) {
    using SO = SessionOptions;
    const TuneSettings t = req.perf_db ? req.perf_db->settings() : TuneSettings{};
    std::vector<std::string> names;
    bool wino = false;
    for (const auto& cd : cands) {
      names.push_back(cd.name);
      wino = wino || tune::algo_of(cd.name) == SO::ConvAlgo::kWinograd;
    }
    std::vector<gpu::VendorCandidate> vc;
    bool vc_made = false;
    auto vendors = [&]() -> const std::vector<gpu::VendorCandidate>* {  // made on first use
      if (!vc_made) {
        vc = make_vendor(std::string());
        vc_made = true;
      }
      return &vc;
    };
    if (t.conv_algo == SO::ConvAlgo::kAuto && (t.winograd == SO::WinogradMode::kAuto || !wino)) {
      tune::Choice db(req.perf_db, key, tune::Allowed{});  // nothing forced: the db's entry applies
      if (auto i = db.known(names)) {
        ours = cands[*i], summary = db.summary();
        return Status::ok();
      }
      if (auto w = db.winner(); w && tune::algo_of(*w) == SO::ConvAlgo::kVendor) {
        // Only the engine the db names is built (cuDNN compiles runtime-compiled engines at build:
        // the other candidates would cost what the search did).
        std::vector<gpu::VendorCandidate> one = make_vendor(*w);
        std::vector<std::string> on;
        for (const auto& v : one) on.push_back(v.name);
        if (auto i = db.known(on); i && (!keeps_nan || keeps_nan(one[*i]))) {
          vendor = one[*i], summary = db.summary();
          return Status::ok();
        }
        std::vector<std::string> vn;
        for (const auto& v : *vendors()) vn.push_back(v.name);
        if (auto i = db.known(vn); i && (!keeps_nan || keeps_nan((*vendors())[*i]))) {
          vendor = (*vendors())[*i], summary = db.summary();
          return Status::ok();
        }
      }
    }
    for (const auto& v : *vendors()) names.push_back(v.name);
    const tune::Allowed allowed = tune::allowed_candidates(names, t);
    if (!allowed.note.empty() && req.verbose >= 1)
      std::fprintf(stderr, "%s\n",  // a name from the model: one escaped, capped line (Status's rule)
                   Status::error(StatusCode::kInternal, "infera: tune: node '" + req.node->name + "': " + allowed.note)
                       .message()
                       .c_str());
    auto take = [&](size_t i) {
      if (i < cands.size())
        ours = cands[i], vendor.reset();
      else
        vendor = (*vendors())[i - cands.size()];
    };
    if (allowed.index.size() == 1 || (req.perf_db && t.search == SO::SearchMode::kOff)) {
      take(allowed.index[0]);  // forced, the only one, or no search: the heuristic order's first
      return Status::ok();
    }
    tune::Choice ch(req.perf_db, key, allowed);
    std::vector<std::string> an;
    for (size_t i : allowed.index) an.push_back(names[i]);
    if (auto j = ch.known(an)) {
      const size_t i = allowed.index[*j];
      if (i < cands.size() || !keeps_nan || keeps_nan((*vendors())[i - cands.size()])) {
        take(i), summary = ch.summary();
        return Status::ok();
      }
    }
    size_t ws = 0;
    for (size_t i : allowed.index)
      if (i >= cands.size()) ws = std::max(ws, (*vendors())[i - cands.size()].workspace_bytes);
    Result<void*> w = static_cast<void*>(nullptr);
    double best = DBL_MAX;
    size_t best_i = names.size();
    bool any_ours = false;
    for (size_t i : allowed.index) {
      const double cutoff = best < DBL_MAX && !ch.exhaustive() ? 4 * best : DBL_MAX;
      double ms = DBL_MAX;
      if (i < cands.size()) {
        any_ours = true;
        ms = time_ms(
            device, [&](gpuStream_t st) { return run_ours(cands[i], st); }, cutoff, ch.reps());
      } else {
        if (any_ours && best == DBL_MAX) break;  // none of ours ran: no baseline for the vendor's
        if (w.is_ok() && !w.value()) w = sc.get(device, std::max<size_t>(ws, 1));
        if (!w.is_ok()) break;
        const gpu::VendorCandidate& v = (*vendors())[i - cands.size()];
        if (!keeps_nan || keeps_nan(v))  // else recorded as failed: never its winner
          ms = time_ms(
              device, [&](gpuStream_t st) { return run_vendor(v, w.value(), ws, st); }, cutoff, ch.reps());
      }
      ch.note(names[i], ms);
      if (ms < best) best = ms, best_i = i;
    }
    if (best_i == names.size()) return Status::error(StatusCode::kDeviceError, "gpu: every candidate failed to run");
    take(best_i);
    ch.store();
    summary = ch.summary();
    return Status::ok();
  }
  size_t workspace_bytes() const { return vendor ? vendor->workspace_bytes : ours.workspace_bytes; }
  // The step's implementation name: the winner, and how it was chosen.
  std::string name() const {
    const std::string n = vendor ? vendor->name : std::string(ours.name);
    return n + (summary.empty() ? "" : " (" + summary + ")");
  }
};

// ---------------------------------------------------------------- Conv / FusedConv
// The geometry both conv shapes share (gpu::ConvShape, gpu::QConvShape): NCHW x, OIHW w, the
// resolved pads.
template <class Shape>
void set_conv_geometry(Shape& s, const Dims& x, const Dims& w, const ConvAttrs& a, const std::vector<int64_t>& pads) {
  s.n = static_cast<int>(x[0]), s.c = static_cast<int>(x[1]), s.h = static_cast<int>(x[2]),
  s.w = static_cast<int>(x[3]);
  s.k = static_cast<int>(w[0]), s.r = static_cast<int>(w[2]), s.s = static_cast<int>(w[3]);
  s.stride_h = a.strides.empty() ? 1 : static_cast<int>(a.strides[0]);
  s.stride_w = a.strides.empty() ? 1 : static_cast<int>(a.strides[1]);
  s.dil_h = a.dilations.empty() ? 1 : static_cast<int>(a.dilations[0]);
  s.dil_w = a.dilations.empty() ? 1 : static_cast<int>(a.dilations[1]);
  s.pad_t = static_cast<int>(pads[0]), s.pad_l = static_cast<int>(pads[1]);
  s.pad_b = static_cast<int>(pads[2]), s.pad_r = static_cast<int>(pads[3]);
}

// A stride-2 convolution of few input channels (an RGB stem: C <= 4, R and S >= 3, no groups or
// dilation) as the equivalent stride-1 convolution of its input's 2x2 space-to-depth: 16 channels
// (4C, zero-padded), a ceil(R/2) x ceil(S/2) filter, no padding. The kernels then gather 16-byte
// vectors and reduce over K = 16 ceil(R/2) ceil(S/2) (7x7, C = 3: 256 instead of the 784 of C
// padded to 16 for int8, or element gathers for fp16); the transform is one cheap pass
// (nhwc_space_to_depth2) into the step's scratch. Exact for int8; fp16 sums only change order.
struct SpaceToDepthStem {
  bool on = false;
  int n = 0, h = 0, w = 0, c = 0, r = 0, s = 0, pad_t = 0, pad_l = 0;  // the model's conv
  int ho = 0, wo = 0;                                                  // the transformed input

  // Turns s (the model's conv) into the transformed one when it qualifies.
  template <class Shape>
  void apply(Shape& s_, int groups) {
    on = groups == 1 && s_.stride_h == 2 && s_.stride_w == 2 && s_.dil_h == 1 && s_.dil_w == 1 && s_.c <= 4 &&
         s_.r >= 3 && s_.s >= 3 && s_.x_c_offset == 0;
    if (!on) return;
    n = s_.n, h = s_.h, w = s_.w, c = s_.c, r = s_.r, s = s_.s, pad_t = s_.pad_t, pad_l = s_.pad_l;
    const int p = s_.p(), q = s_.q();
    s_.r = (r + 1) / 2, s_.s = (s + 1) / 2;
    ho = p + s_.r - 1, wo = q + s_.s - 1;
    s_.h = ho, s_.w = wo, s_.c = gpu::kSpaceToDepth2Channels;
    s_.stride_h = s_.stride_w = 1;
    s_.pad_t = s_.pad_l = s_.pad_b = s_.pad_r = 0;
    s_.x_pixel_stride = 0;
  }
  // The model's tap (r, s, channel) that the transformed filter's (r2, s2, c2) holds; false: a zero.
  bool source(int r2, int s2, int c2, int& rr, int& ss, int& ci) const {
    const int q = c2 / c;
    ci = c2 - q * c, rr = 2 * r2 + (q >> 1), ss = 2 * s2 + (q & 1);
    return q < 4 && rr < r && ss < s;
  }
  size_t bytes(size_t elem_bytes) const {
    return on ? static_cast<size_t>(n) * ho * wo * gpu::kSpaceToDepth2Channels * elem_bytes : 0;
  }
  gpu::Status run(size_t elem_bytes, gpu::InNhwc x, void* y, gpuStream_t st) const {
    return gpu::nhwc_space_to_depth2(elem_bytes, n, h, w, c, x, pad_t, pad_l, ho, wo, y, st);
  }
};

// Calls f(i, j) for every element i of the kernels' OHWI filter [k][r][s][c] (the stem's transformed
// one when st.on) that holds element j of the model's OIHW weights [k][c_model][R][S]; the others
// (padded channels, taps the transform leaves empty) are zeros.
template <class F>
void ohwi_from_oihw(int k, int r, int s, int c, int c_model, const SpaceToDepthStem& st, F&& f) {
  const int mr = st.on ? st.r : r, ms = st.on ? st.s : s;
  for (int o = 0; o < k; ++o)
    for (int r2 = 0; r2 < r; ++r2)
      for (int s2 = 0; s2 < s; ++s2)
        for (int c2 = 0; c2 < c; ++c2) {
          int rr = r2, ss = s2, ci = c2;
          if (st.on ? !st.source(r2, s2, c2, rr, ss, ci) : c2 >= c_model) continue;
          f(((static_cast<size_t>(o) * r + r2) * s + s2) * c + c2,
            ((static_cast<size_t>(o) * c_model + ci) * mr + rr) * ms + ss);
        }
}

// Scratch offsets past a first part, aligned for the kernels' vector loads.
constexpr size_t align256(size_t b) { return (b + 255) & ~size_t{255}; }

struct ConvPlan {
  gpu::ConvShape shape;  // the kernels' conv (the stem's transformed one)
  SpaceToDepthStem stem;
  Activation act;
  bool bias = false, residual = false;
};

bool plan_conv(const GpuConfig& c, const StepRequest& req, ConvPlan& p) {
  const auto* op = dynamic_cast<const ConvOp*>(req.op);
  if (!op || !req.has_in(0) || !req.has_in(1) || !req.inputs[1]->value || req.inputs[0]->value) return false;
  const Dims x = req.in_dims(0), w = req.in_dims(1), y = req.out_dims(0);
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return false;
  std::vector<int64_t> pads, yd;
  if (!conv_resolve(op->attrs(), x, w, pads, yd).is_ok() || yd != y) return false;
  for (int64_t v : pads)
    if (v < 0) return false;
  for (int64_t v : x)
    if (v <= 0 || v > (1 << 30)) return false;
  const ConvAttrs& a = op->attrs();
  gpu::ConvShape& s = p.shape;
  s.dtype = c.dtype();
  set_conv_geometry(s, x, w, a, pads);
  s.groups = static_cast<int>(a.group);
  if (!gpu::conv_check(s).ok() || s.p() != y[2] || s.q() != y[3]) return false;
  p.bias = req.has_in(2);
  if (p.bias && (!req.inputs[2]->value || req.in_dims(2) != Dims{y[1]})) return false;
  p.residual = op->fused() && req.has_in(3);
  if (p.residual && (req.inputs[3]->value || req.in_dims(3) != y)) return false;
  p.act = op->fused() ? op->activation() : Activation{};
  if (s.dtype == gpu::DType::kF16) p.stem.apply(s, s.groups);
  return true;
}

Support conv_query(const GpuConfig& c, const StepRequest& req) {
  ConvPlan p;
  if (!plan_conv(c, req, p)) return Support::no("a conv the GPU kernels do not take (rank, non-constant W, pads)");
  if (gpu::conv_candidates(p.shape, c.dev.info).empty()) return Support::no("no GPU conv kernel for this shape");
  const FormatSet act = format_bit(c.act_format(4));
  Support sup = support_all(req, {act, kPlainOnly, kPlainOnly, act}, {act});
  sup.sliced_outputs = act;  // every variant (ours and cuDNN's) writes through a pixel stride
  return sup;
}

class ConvKernel : public GpuKernel {
 public:
  ConvKernel(const GpuConfig& c, ConvPlan p) : GpuKernel(c, ""), p_(std::move(p)) {}

  Status init(const StepRequest& req) {
    const ChannelSlice slice = req.slice_of(0);  // Concat in place: y is a slice of a wider NHWC value
    y_ps_ = slice.channels, y_coff_ = slice.offset;
    // Weights OIHW (float32, host) -> OHWI in the conv's dtype, on the device (shared by the
    // session's plans).
    const gpu::ConvShape& s = p_.shape;
    const SpaceToDepthStem& st = p_.stem;
    const int cg = s.c / s.groups;
    const size_t n = static_cast<size_t>(s.k) * s.r * s.s * cg;
    const bool f16 = cfg_.f16();
    auto w = device_const(cfg_, req, 1, st.on ? "conv-w-s2d" : "conv-w",
                          layout_of(f16 ? "ohwi-f16" : "ohwi-f32", {s.k, s.r, s.s, cg}), n * (f16 ? 2 : 4), [&] {
                            std::vector<float> ohwi(n, 0.f);
                            const float* src = req.inputs[1]->value->data_as<float>();
                            ohwi_from_oihw(s.k, s.r, s.s, cg, st.on ? st.c : cg, st,
                                           [&](size_t i, size_t j) { ohwi[i] = src[j]; });
                            return float_bytes(ohwi.data(), n, f16);
                          });
    if (!w.is_ok()) return w.status();
    w_ = w.take();
    weight_bytes_ = w_->size();
    if (p_.bias) {
      const float* bias = req.inputs[2]->value->data_as<float>();
      auto b = device_const(cfg_, req, 2, "conv-b", layout_of("f32", {s.k}), static_cast<size_t>(s.k) * 4,
                            [&] { return float_bytes(bias, s.k, false); });
      if (!b.is_ok()) return b.status();
      bias_ = b.take();
      weight_bytes_ += bias_->size();
    }
    return choose(req);
  }

  // The stem's transformed input first (aligned), then the kernel's workspace.
  size_t scratch_bytes() const override {
    const size_t x2 = align256(p_.stem.bytes(gpu::dtype_size(p_.shape.dtype)));
    return x2 + choice_.workspace_bytes();
  }

  Status run(ComputeContext& ctx) const override {
    gpu::ConvTensors t;
    t.x = {ctx.in(0).data, 0, 0};
    void* ws = ctx.res.scratch;
    size_t ws_bytes = ctx.res.scratch_bytes;
    if (p_.stem.on) {
      const size_t es = gpu::dtype_size(p_.shape.dtype), x2 = align256(p_.stem.bytes(es));
      INFERA_GPU_OK(ctx.node.label(), p_.stem.run(es, t.x, ctx.res.scratch, stream(ctx)));
      t.x = {ctx.res.scratch, 0, 0};
      ws = static_cast<char*>(ctx.res.scratch) + x2, ws_bytes -= x2;
    }
    t.w = w_->data();
    t.y = {ctx.out(0).data, y_ps_, y_coff_};
    t.ep.bias = static_cast<const float*>(data_of(bias_));
    if (p_.residual) t.ep.residual = {ctx.in(3).data, 0, 0};
    t.ep.act = p_.act;
    if (choice_.vendor)
      INFERA_GPU_OK(ctx.node.label(), gpu::dnn_conv_run(*choice_.vendor, t, ws, ws_bytes, stream(ctx)));
    else
      INFERA_GPU_OK(ctx.node.label(), gpu::conv_forward(p_.shape, choice_.ours, t, ws, ws_bytes, stream(ctx)));
    return Status::ok();
  }

 private:
  // Times every candidate on zero data of this layer's shape and keeps the fastest.
  Status choose(const StepRequest& req_) {
    const gpu::ConvShape& s = p_.shape;
    std::vector<gpu::Candidate> cands = gpu::conv_candidates(s, cfg_.dev.info);
    if (cands.empty()) return Status::error(StatusCode::kInternal, "gpu: no conv candidate");
    const size_t es = gpu::dtype_size(s.dtype);
    size_t ws = 0;
    for (const auto& cd : cands) ws = std::max(ws, cd.workspace_bytes);
    Scratch sc;
    auto x = sc.get(cfg_.dev.index, static_cast<size_t>(s.n) * s.h * s.w * s.c * es);
    auto y = sc.get(cfg_.dev.index, static_cast<size_t>(s.n) * s.p() * s.q() * (y_ps_ ? y_ps_ : s.k) * es);
    auto z = sc.get(cfg_.dev.index, p_.residual ? static_cast<size_t>(s.n) * s.p() * s.q() * s.k * es : 1);
    auto w = sc.get(cfg_.dev.index, std::max<size_t>(ws, 1));
    if (!x.is_ok() || !y.is_ok() || !z.is_ok() || !w.is_ok())
      return Status::error(StatusCode::kOutOfMemory, "gpu: no device memory to time the conv kernels");
    gpu::ConvTensors t;
    t.x = {x.value(), 0, 0};
    t.w = w_->data();
    t.y = {y.value(), y_ps_, y_coff_};
    t.ep.bias = static_cast<const float*>(data_of(bias_));
    if (p_.residual) t.ep.residual = {z.value(), 0, 0};
    t.ep.act = p_.act;
    choice_.device = cfg_.dev.index;
    char shape[256];
    std::snprintf(shape, sizeof shape, "n%d c%d h%d w%d k%d r%d s%d st%dx%d p%d,%d,%d,%d d%dx%d g%d y%lld+%lld", s.n,
                  s.c, s.h, s.w, s.k, s.r, s.s, s.stride_h, s.stride_w, s.pad_t, s.pad_l, s.pad_b, s.pad_r, s.dil_h,
                  s.dil_w, s.groups, static_cast<long long>(y_ps_), static_cast<long long>(y_coff_));
    // A NaN at x[0] (image 0, pixel 0, channel 0) must reach output pixel 0 of every channel of
    // group 0 (NaN * w is NaN), as in the reference: cuDNN engines whose fused Relu maps NaN to 0
    // fail this (engine 11 of a [2,16,10,10] fp32 3x3 conv + Relu did on the H200, 2026-12-04).
    if (!p_.act.is_identity() && s.pad_t <= (s.r - 1) * s.dil_h && s.pad_l <= (s.s - 1) * s.dil_w &&
        (s.dtype == gpu::DType::kF32 || s.dtype == gpu::DType::kF16))
      choice_.keeps_nan = [&](const gpu::VendorCandidate& vc) {
        auto vw = sc.get(cfg_.dev.index, std::max<size_t>(vc.workspace_bytes, 1));
        return vw.is_ok() && nan_reaches(s.dtype, x.value(), static_cast<const char*>(y.value()) + y_coff_ * es,
                                         s.k / std::max(1, s.groups), [&] {
                                           return gpu::dnn_conv_run(vc, t, vw.value(), vc.workspace_bytes, nullptr);
                                         });
      };
    Status st = choice_.choose(
        req_,
        gpu_key(cfg_, "conv", shape, p_.act, std::string(p_.bias ? "bias" : "") + (p_.residual ? "+residual" : "")),
        cands, sc,
        [&](const std::string& only) {
          return cfg_.vendor_libs && gpu::dnn_fuses(p_.act)  // cuDNN's engines for the same fused conv
                     ? gpu::dnn_conv_candidates(s, t.ep, cfg_.tf32, cfg_.dev.index, {y_ps_, y_coff_}, nullptr, only)
                     : std::vector<gpu::VendorCandidate>{};
        },
        [&](const gpu::Candidate& cd, gpuStream_t stream) {
          return gpu::conv_forward(s, cd, t, w.value(), ws, stream);
        },
        [&](const gpu::VendorCandidate& vc, void* vw, size_t vws, gpuStream_t stream) {
          return gpu::dnn_conv_run(vc, t, vw, vws, stream);
        });
    choice_.keeps_nan = nullptr;  // it holds this function's buffers
    if (!st.is_ok()) return st.prefixed("conv: ");
    impl_ = choice_.name() + (p_.stem.on ? " [space-to-depth stem]" : "");
    return Status::ok();
  }

  ConvPlan p_;
  DeviceConst w_, bias_;
  int64_t y_ps_ = 0, y_coff_ = 0;  // y's pixel stride (0: tight) and channel offset in its buffer
  Choice choice_;                  // ours or cuDNN's engine
};

Result<std::unique_ptr<StepKernel>> conv_create(const GpuConfig& c, const StepRequest& req) {
  ConvPlan p;
  if (!plan_conv(c, req, p)) return std::unique_ptr<StepKernel>();
  auto k = std::make_unique<ConvKernel>(c, p);
  Status s = k->init(req);
  if (!s.is_ok()) return s;
  return std::unique_ptr<StepKernel>(std::move(k));
}

// ---------------------------------------------------------------- QConv (int8)
// com.infera.QConv (ops/quant_conv.h) on the integer matrix units: int8 NHWC in and out, weights
// repacked to OHWI int8 once, the requantization of the reference fused (bit-exact with it). A
// stride-2 stem of few channels runs as its space-to-depth (SpaceToDepthStem); else an odd channel
// count is padded to even, one under 16 to 16, in the scratch: the weights get zero channels, so
// the padded lanes add nothing whatever they hold.
struct QConvPlan {
  gpu::QConvShape shape;  // c: the padded count the kernel sees (the stem's transformed conv)
  SpaceToDepthStem stem;
  int c_real = 0;  // the model's channel count
  bool bias = false;
  float x_scale = 1.f, y_scale = 1.f, z_scale = 1.f;
  int z_zero_point = 0, y_zero_point = 0;
  std::vector<float> w_scales;
};

bool is_byte(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

bool plan_qconv(const StepRequest& req, QConvPlan& p) {
  const auto* op = dynamic_cast<const QConvOp*>(req.op);
  if (!op || !req.has_in(0) || !req.has_in(1) || !req.has_out(0) || req.inputs[0]->value || !req.inputs[1]->value)
    return false;
  if (req.inputs[0]->dtype != DataType::kInt8 || req.inputs[1]->dtype != DataType::kInt8 ||
      !is_byte(req.outputs[0]->dtype))
    return false;
  const Dims x = req.in_dims(0), w = req.in_dims(1), y = req.out_dims(0);
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return false;
  const ConvAttrs& a = op->attrs();
  std::vector<int64_t> pads, yd;
  if (a.group != 1 || !conv_resolve(a, x, w, pads, yd).is_ok() || yd != y || w[1] != x[1]) return false;
  for (int64_t v : x)
    if (v <= 0 || v > (1 << 30)) return false;
  const QConvParams& q = op->params();
  gpu::QConvShape& s = p.shape;
  set_conv_geometry(s, x, w, a, pads);
  p.c_real = s.c;
  // The transformed input's padding is 0: the stem's form needs x_zero_point 0. Else few channels
  // go to 16, the vector gathers and the warpgroup kernels' minimum (4x the MACs of C=4, on the
  // tensor cores with 16-byte loads: faster); others to even.
  if (q.x_zero_point == 0) p.stem.apply(s, 1);
  if (!p.stem.on) s.c = s.c < 16 ? 16 : s.c + s.c % 2;
  s.x_zero_point = static_cast<int>(q.x_zero_point);
  s.has_residual = op->has_residual(*req.node) && req.has_in(3);
  s.y_uint8 = req.outputs[0]->dtype == DataType::kUInt8;
  s.act = q.act;
  if (q.x_zero_point < -128 || q.x_zero_point > 127 || !gpu::qconv_check(s).ok() || s.p() != y[2] || s.q() != y[3])
    return false;
  if (q.w_scales.size() != 1 && q.w_scales.size() != static_cast<size_t>(s.k)) return false;
  p.bias = req.has_in(2);
  if (p.bias && (!req.inputs[2]->value || req.inputs[2]->dtype != DataType::kInt32 || req.in_dims(2) != Dims{y[1]}))
    return false;
  if (s.has_residual) {
    const ValueInfo* z = req.inputs[3];
    if (z->value || !is_byte(z->dtype) || req.in_dims(3) != y) return false;
    s.z_uint8 = z->dtype == DataType::kUInt8;
  }
  auto in_range = [](int64_t zp, DataType t) { return zp >= quant_min(t) && zp <= quant_max(t); };
  if (!in_range(q.y_zero_point, req.outputs[0]->dtype)) return false;
  if (s.has_residual && !in_range(q.z_zero_point, req.inputs[3]->dtype)) return false;
  p.x_scale = q.x_scale, p.y_scale = q.y_scale, p.z_scale = q.z_scale;
  p.z_zero_point = static_cast<int>(q.z_zero_point), p.y_zero_point = static_cast<int>(q.y_zero_point);
  p.w_scales = q.w_scales;
  return true;
}

Support qconv_query(const GpuConfig& c, const StepRequest& req) {
  QConvPlan p;
  if (!plan_qconv(req, p))
    return Support::no("a QConv the GPU's int8 kernels do not take (uint8 X, groups, zero point with padding, rank)");
  if (gpu::qconv_candidates(p.shape, c.dev.info).empty()) return Support::no("no GPU int8 conv kernel for this shape");
  const FormatSet nhwc = format_bit(Format::kNhwc);  // int8 storage: the value's dtype
  return support_all(req, {nhwc, kPlainOnly, kPlainOnly, nhwc}, {nhwc});
}

class QConvKernel : public GpuKernel {
 public:
  QConvKernel(const GpuConfig& c, QConvPlan p) : GpuKernel(c, ""), p_(std::move(p)) {}

  Status init(const StepRequest& req) {
    const gpu::QConvShape& s = p_.shape;
    const SpaceToDepthStem& st = p_.stem;
    const int cr = p_.c_real;
    // Weights OIHW int8 (host) -> OHWI with the channels padded to s.c (or the stem's transformed
    // filter); the filter sums serve a nonzero input zero point: sum (x - zp) w = sum x w - zp sum w.
    // On the device, shared by the session's plans; the scales' key is the weights' input too
    // (x_scale is the node's).
    const int8_t* src = req.inputs[1]->value->data_as<int8_t>();
    const size_t per_k = static_cast<size_t>(cr) * (st.on ? st.r * st.s : s.r * s.s);  // the model's filter
    const size_t n = static_cast<size_t>(s.k) * s.r * s.s * s.c;
    auto w = device_const(cfg_, req, 1, st.on ? "qconv-w-s2d" : "qconv-w",
                          layout_of("ohwi-s8", {s.k, s.r, s.s, s.c, cr}), n, [&] {
                            std::vector<uint8_t> ohwi(n, 0);
                            ohwi_from_oihw(s.k, s.r, s.s, s.c, cr, st,
                                           [&](size_t i, size_t j) { ohwi[i] = static_cast<uint8_t>(src[j]); });
                            return ohwi;
                          });
    auto ws = device_const(cfg_, req, 1, "qconv-wsum", layout_of("s32", {s.k}), s.k * sizeof(int32_t), [&] {
      std::vector<int32_t> wsum(s.k, 0);
      for (int k = 0; k < s.k; ++k)
        for (size_t i = 0; i < per_k; ++i) wsum[k] += src[k * per_k + i];
      return bytes_of(wsum);
    });
    std::vector<double> scale(s.k);  // gpu::QConvTensors::scale
    for (int k = 0; k < s.k; ++k)
      scale[k] = double(p_.x_scale) * double(p_.w_scales.size() == 1 ? p_.w_scales[0] : p_.w_scales[k]);
    auto sc = device_const(cfg_, req, 1, "qconv-scale", layout_of("f64", {s.k}), s.k * sizeof(double),
                           [&] { return bytes_of(scale); });
    // The CUTLASS candidates' epilogue row (gpu::QConvTensors::epi_rows): y_scale is the node's too.
    auto rows = device_const(cfg_, req, 1, "qconv-rows", layout_of("s32", {s.k}), s.k * sizeof(int32_t),
                             [&] { return bytes_of(gpu::qconv_epilogue_rows(scale.data(), s.k, inv_y())); });
    if (!w.is_ok()) return w.status();
    if (!sc.is_ok()) return sc.status();
    if (!ws.is_ok()) return ws.status();
    if (!rows.is_ok()) return rows.status();
    w_ = w.take(), scale_ = sc.take(), wsum_ = ws.take(), rows_ = rows.take();
    weight_bytes_ = w_->size() + scale_->size() + wsum_->size() + rows_->size();
    if (p_.bias) {
      const int32_t* bias = req.inputs[2]->value->data_as<int32_t>();
      auto b = device_const(cfg_, req, 2, "qconv-b", layout_of("s32", {s.k}), s.k * sizeof(int32_t),
                            [&] { return bytes_of(std::vector<int32_t>(bias, bias + s.k)); });
      if (!b.is_ok()) return b.status();
      bias_ = b.take();
      weight_bytes_ += bias_->size();
    }
    acc_bound_ = gpu::qconv_acc_bound(src, s.k, static_cast<int64_t>(per_k),
                                      p_.bias ? req.inputs[2]->value->data_as<int32_t>() : nullptr, s.x_zero_point);
    sy_max_ = gpu::qconv_sy_max(scale.data(), s.k, inv_y());
    pad_bytes_ = st.on ? st.bytes(1) : p_.c_real != s.c ? static_cast<size_t>(s.n) * s.h * s.w * s.c : 0;
    return choose(req);
  }

  // The stem's transform or the channel-padded input first (aligned), then a split-K workspace.
  size_t scratch_bytes() const override { return align256(pad_bytes_) + choice_.workspace_bytes(); }

  Status run(ComputeContext& ctx) const override {
    const void* x = ctx.in(0).data;
    if (p_.stem.on) {
      INFERA_GPU_OK(ctx.node.label(), p_.stem.run(1, {x, 0, 0}, ctx.res.scratch, stream(ctx)));
      x = ctx.res.scratch;
    } else if (pad_bytes_) {
      const gpu::QConvShape& s = p_.shape;
      INFERA_GPU_OK(ctx.node.label(), gpu::nhwc_pad_channels_s8(static_cast<int64_t>(s.n) * s.h * s.w, p_.c_real,
                                                                {x, 0, 0}, s.c, ctx.res.scratch, stream(ctx)));
      x = ctx.res.scratch;
    }
    gpu::QConvTensors t = tensors(x, ctx.out(0).data, p_.shape.has_residual ? ctx.in(3).data : nullptr);
    t.ws = static_cast<char*>(ctx.res.scratch) + align256(pad_bytes_);
    t.ws_bytes = ctx.res.scratch_bytes - std::min(ctx.res.scratch_bytes, align256(pad_bytes_));
    INFERA_GPU_OK(ctx.node.label(), gpu::qconv_forward(p_.shape, choice_.ours, t, stream(ctx)));
    return Status::ok();
  }

 private:
  gpu::QConvTensors tensors(const void* x, void* y, const void* z) const {
    gpu::QConvTensors t;
    t.x = {x, 0, 0};
    t.w = static_cast<const int8_t*>(w_->data());
    t.y = {y, 0, 0};
    t.bias = static_cast<const int32_t*>(data_of(bias_));
    t.scale = static_cast<const double*>(scale_->data());
    t.wsum = static_cast<const int32_t*>(wsum_->data());
    t.z = {z, 0, 0};
    t.z_scale = p_.z_scale;
    t.z_zero_point = p_.z_zero_point;
    t.inv_y = inv_y();
    t.y_zero_point = p_.y_zero_point;
    t.acc_bound = acc_bound_;
    t.sy_max = sy_max_;
    t.epi_rows = static_cast<const int32_t*>(rows_->data());
    return t;
  }
  double inv_y() const { return 1.0 / double(p_.y_scale); }  // gpu::QConvTensors::inv_y

  // Times the candidates on this layer's shape, weights and Relu-like inputs (or takes the perf db's winner).
  Status choose(const StepRequest& req) {
    const gpu::QConvShape& s = p_.shape;
    std::vector<gpu::Candidate> cands = gpu::qconv_candidates(s, cfg_.dev.info);
    // CUTLASS's kernels count as a vendor library (--no-vendor-libs: ours only).
    if (!cfg_.vendor_libs)
      std::erase_if(cands, [](const gpu::Candidate& cd) {
        return gpu::s8_cutlass_gemm_is_variant(cd.id) || gpu::s8_cutlass_conv_is_variant(cd.id);
      });
    if (cands.empty()) return Status::error(StatusCode::kInternal, "gpu: no int8 conv candidate");
    Scratch sc;
    const size_t ybytes = static_cast<size_t>(s.n) * s.p() * s.q() * s.k;
    auto x = sc.get_s8_activations(cfg_.dev.index, static_cast<size_t>(s.n) * s.h * s.w * s.c);
    auto y = sc.get(cfg_.dev.index, ybytes);
    auto z = sc.get_s8_activations(cfg_.dev.index, s.has_residual ? ybytes : 1);
    size_t wsb = 0;
    for (const auto& cd : cands) wsb = std::max(wsb, cd.workspace_bytes);
    auto w = sc.get(cfg_.dev.index, std::max<size_t>(wsb, 1));
    if (!x.is_ok() || !y.is_ok() || !z.is_ok() || !w.is_ok())
      return Status::error(StatusCode::kOutOfMemory, "gpu: no device memory to time the int8 conv kernels");
    gpu::QConvTensors t = tensors(x.value(), y.value(), s.has_residual ? z.value() : nullptr);
    t.ws = w.value(), t.ws_bytes = wsb;
    choice_.device = cfg_.dev.index;
    char shape[256];
    std::snprintf(shape, sizeof shape, "n%d c%d h%d w%d k%d r%d s%d st%dx%d p%d,%d,%d,%d d%dx%d xz%d", s.n, s.c, s.h,
                  s.w, s.k, s.r, s.s, s.stride_h, s.stride_w, s.pad_t, s.pad_l, s.pad_b, s.pad_r, s.dil_h, s.dil_w,
                  s.x_zero_point);
    PerfKey key =
        gpu_key(cfg_, "qconv", shape, s.act, std::string(p_.bias ? "bias" : "") + (s.has_residual ? "+residual" : ""));
    key.dtype = "s8";
    key.formats = std::string("nhwc_s8>nhwc_") + (s.y_uint8 ? "u8" : "s8");
    Status st = choice_.choose(
        req, key, cands, sc, [](const std::string&) { return std::vector<gpu::VendorCandidate>{}; },
        [&](const gpu::Candidate& cd, gpuStream_t stream) { return gpu::qconv_forward(s, cd, t, stream); },
        [](const gpu::VendorCandidate&, void*, size_t, gpuStream_t) { return gpu::Status{"no vendor int8 conv"}; });
    if (!st.is_ok()) return st.prefixed("qconv: ");
    impl_ = choice_.name() + (p_.stem.on   ? std::string(" [space-to-depth stem]")
                              : pad_bytes_ ? " [C " + std::to_string(p_.c_real) + " padded]"
                                           : std::string());
    return Status::ok();
  }

  QConvPlan p_;
  DeviceConst w_, bias_, scale_, wsum_, rows_;
  size_t pad_bytes_ = 0;    // scratch for the channel-padded input (odd C) or the stem's transform
  int64_t acc_bound_ = -1;  // gpu::QConvTensors::acc_bound
  float sy_max_ = -1.f;     // gpu::QConvTensors::sy_max
  Choice choice_;
};

Result<std::unique_ptr<StepKernel>> qconv_create(const GpuConfig& c, const StepRequest& req) {
  QConvPlan p;
  if (!plan_qconv(req, p)) return std::unique_ptr<StepKernel>();
  auto k = std::make_unique<QConvKernel>(c, p);
  Status s = k->init(req);
  if (!s.is_ok()) return s;
  return std::unique_ptr<StepKernel>(std::move(k));
}

// ---------------------------------------------------------------- Gemm / FusedGemm / MatMul
struct GemmPlan {
  gpu::GemmShape shape;
  Activation act;
  bool b_const = false;
  std::vector<float> bias;  // [N] (beta * C folded), empty: none
  float alpha = 1.f;
};

bool plan_gemm(const GpuConfig& c, const StepRequest& req, GemmPlan& p) {
  gpu::GemmShape& s = p.shape;
  s.dtype = c.dtype();
  if (const auto* op = dynamic_cast<const GemmOp*>(req.op)) {
    if (!req.has_in(0) || !req.has_in(1) || req.inputs[0]->value || !req.inputs[1]->value) return false;
    const Dims a = req.in_dims(0), b = req.in_dims(1);
    if (a.size() != 2 || b.size() != 2) return false;
    const GemmAttrs& g = op->attrs();
    s.trans_a = g.trans_a, s.trans_b = g.trans_b;
    s.m = static_cast<int>(g.trans_a ? a[1] : a[0]);
    s.k = static_cast<int>(g.trans_a ? a[0] : a[1]);
    s.n = static_cast<int>(g.trans_b ? b[0] : b[1]);
    if ((g.trans_b ? b[1] : b[0]) != s.k || req.out_dims(0) != Dims{s.m, s.n}) return false;
    p.alpha = g.alpha;
    p.b_const = true;
    if (req.has_in(2) && g.beta != 0.f) {
      const ValueInfo* cv = req.inputs[2];
      if (!cv->value || cv->value->numel() != s.n || (cv->shape.rank() == 2 && cv->shape.dims[0].value != 1))
        return false;  // a per-column bias only
      const float* cp = cv->value->data_as<float>();
      for (int i = 0; i < s.n; ++i) p.bias.push_back(g.beta * cp[i]);
    }
    p.act = op->activation();
  } else if (req.node->is_onnx("MatMul")) {
    if (!req.has_in(0) || !req.has_in(1) || req.inputs[0]->value) return false;
    const Dims a = req.in_dims(0), b = req.in_dims(1);
    if (a.size() < 2 || b.size() < 2) return false;
    p.b_const = req.inputs[1]->value != nullptr;
    if (b.size() == 2) {  // one B for every row of A: one GEMM of M = the product of A's leading dims
      int64_t m = 1;
      for (size_t i = 0; i + 1 < a.size(); ++i) m *= a[i];
      if (a.back() != b[0] || m > (1 << 30)) return false;
      s.m = static_cast<int>(m), s.k = static_cast<int>(b[0]), s.n = static_cast<int>(b[1]);
    } else {
      if (p.b_const || a.size() != b.size()) return false;
      int64_t batch = 1;
      for (size_t i = 0; i + 2 < a.size(); ++i) {
        if (a[i] != b[i]) return false;  // no broadcast of batch dims here
        batch *= a[i];
      }
      const size_t r = a.size();
      if (a[r - 1] != b[r - 2]) return false;
      s.batch = static_cast<int>(batch);
      s.m = static_cast<int>(a[r - 2]), s.k = static_cast<int>(a[r - 1]), s.n = static_cast<int>(b[r - 1]);
      s.stride_a = static_cast<int64_t>(s.m) * s.k, s.stride_b = static_cast<int64_t>(s.k) * s.n;
      s.stride_c = static_cast<int64_t>(s.m) * s.n;
    }
  } else {
    return false;
  }
  return gpu::gemm_check(s).ok() && !gpu::gemm_candidates(s, c.dev.info).empty();
}

Support gemm_query(const GpuConfig& c, const StepRequest& req) {
  GemmPlan p;
  if (!plan_gemm(c, req, p))
    return Support::no(
        "a Gemm/MatMul the GPU kernels do not take (non-constant B of Gemm, C broadcast, batch broadcast)");
  const FormatSet plain = format_bit(c.plain_format());
  return support_all(req, {plain, plain}, {plain});
}

class GemmKernel : public GpuKernel {
 public:
  GemmKernel(const GpuConfig& c, GemmPlan p) : GpuKernel(c, ""), p_(std::move(p)) {}

  Status init(const StepRequest& req) {
    // Constant B (alpha folded) in the device's storage type and the bias (beta * C), shared by
    // the session's plans.
    const bool f16 = cfg_.f16();
    if (p_.b_const) {
      const Tensor& bt = *req.inputs[1]->value;
      const size_t n = static_cast<size_t>(bt.numel());
      auto w = device_const(cfg_, req, 1, "gemm-b", layout_of(f16 ? "f16" : "f32", bt.dims()), n * (f16 ? 2 : 4), [&] {
        std::vector<float> b(bt.data_as<float>(), bt.data_as<float>() + n);
        if (p_.alpha != 1.f)
          for (float& v : b) v *= p_.alpha;
        return float_bytes(b.data(), n, f16);
      });
      if (!w.is_ok()) return w.status();
      b_ = w.take();
      weight_bytes_ += b_->size();
    }
    if (!p_.bias.empty()) {
      auto bb = device_const(cfg_, req, 2, "gemm-bias", layout_of("f32", {static_cast<int64_t>(p_.bias.size())}),
                             p_.bias.size() * 4, [&] { return bytes_of(p_.bias); });
      if (!bb.is_ok()) return bb.status();
      bias_ = bb.take();
      weight_bytes_ += bias_->size();
    }
    return choose(req);
  }

  size_t scratch_bytes() const override { return choice_.workspace_bytes(); }

  Status run(ComputeContext& ctx) const override {
    gpu::GemmTensors t;
    t.a = ctx.in(0).data;
    t.b = p_.b_const ? b_->data() : ctx.in(1).data;
    t.c = ctx.out(0).data;
    t.bias = static_cast<const float*>(data_of(bias_));
    t.act = p_.act;
    if (choice_.vendor)
      INFERA_GPU_OK(ctx.node.label(),
                    gpu::blas_gemm_run(*choice_.vendor, t, ctx.res.scratch, ctx.res.scratch_bytes, stream(ctx)));
    else
      INFERA_GPU_OK(ctx.node.label(),
                    gpu::gemm(p_.shape, choice_.ours, t, ctx.res.scratch, ctx.res.scratch_bytes, stream(ctx)));
    return Status::ok();
  }

 private:
  Status choose(const StepRequest& req_) {
    const gpu::GemmShape& s = p_.shape;
    std::vector<gpu::Candidate> cands = gpu::gemm_candidates(s, cfg_.dev.info);
    if (cands.empty()) return Status::error(StatusCode::kInternal, "gpu: no gemm candidate");
    const size_t es = gpu::dtype_size(s.dtype);
    size_t ws = 0;
    for (const auto& cd : cands) ws = std::max(ws, cd.workspace_bytes);
    Scratch sc;
    auto a = sc.get(cfg_.dev.index, static_cast<size_t>(s.batch) * s.m * s.k * es);
    auto b = sc.get(cfg_.dev.index, p_.b_const ? 1 : static_cast<size_t>(s.batch) * s.k * s.n * es);
    auto y = sc.get(cfg_.dev.index, static_cast<size_t>(s.batch) * s.m * s.n * es);
    auto w = sc.get(cfg_.dev.index, std::max<size_t>(ws, 1));
    if (!a.is_ok() || !b.is_ok() || !y.is_ok() || !w.is_ok())
      return Status::error(StatusCode::kOutOfMemory, "gpu: no device memory to time the gemm kernels");
    gpu::GemmTensors t;
    t.a = a.value();
    t.b = p_.b_const ? b_->data() : b.value();
    t.c = y.value();
    t.bias = static_cast<const float*>(data_of(bias_));
    t.act = p_.act;
    choice_.device = cfg_.dev.index;
    char shape[256];
    std::snprintf(shape, sizeof shape, "b%d m%d n%d k%d ta%d tb%d bconst%d", s.batch, s.m, s.n, s.k, s.trans_a ? 1 : 0,
                  s.trans_b ? 1 : 0, p_.b_const ? 1 : 0);
    // A NaN at A[0] must reach row 0 of C (every column): cuBLASLt's Relu epilogue may map it to 0
    // (algorithm 24 in fp16 did on the H200, 2026-12-04).
    if (!p_.act.is_identity() && (s.dtype == gpu::DType::kF32 || s.dtype == gpu::DType::kF16))
      choice_.keeps_nan = [&](const gpu::VendorCandidate& vc) {
        auto vw = sc.get(cfg_.dev.index, std::max<size_t>(vc.workspace_bytes, 1));
        return vw.is_ok() && nan_reaches(s.dtype, a.value(), y.value(), s.n, [&] {
                 return gpu::blas_gemm_run(vc, t, vw.value(), vc.workspace_bytes, nullptr);
               });
      };
    Status st = choice_.choose(
        req_, gpu_key(cfg_, "gemm", shape, p_.act, t.bias ? "bias" : ""), cands, sc,
        [&](const std::string&) {
          return cfg_.vendor_libs && gpu::blas_fuses(p_.act)
                     ? gpu::blas_gemm_candidates(s, t.bias != nullptr, p_.act, cfg_.tf32, cfg_.dev.index)
                     : std::vector<gpu::VendorCandidate>{};
        },
        [&](const gpu::Candidate& cd, gpuStream_t stream) { return gpu::gemm(s, cd, t, w.value(), ws, stream); },
        [&](const gpu::VendorCandidate& vc, void* vw, size_t vws, gpuStream_t stream) {
          return gpu::blas_gemm_run(vc, t, vw, vws, stream);
        });
    choice_.keeps_nan = nullptr;  // it holds this function's buffers
    if (!st.is_ok()) return st.prefixed("gemm: ");
    impl_ = choice_.name();
    return Status::ok();
  }

  GemmPlan p_;
  DeviceConst b_, bias_;
  Choice choice_;  // ours or cuBLASLt's algorithm
};

Result<std::unique_ptr<StepKernel>> gemm_create(const GpuConfig& c, const StepRequest& req) {
  GemmPlan p;
  if (!plan_gemm(c, req, p)) return std::unique_ptr<StepKernel>();
  auto k = std::make_unique<GemmKernel>(c, p);
  Status s = k->init(req);
  if (!s.is_ok()) return s;
  return std::unique_ptr<StepKernel>(std::move(k));
}

}  // namespace

const Family* conv_family(const StepRequest& req) {
  static const Family conv{conv_query, conv_create}, gemm{gemm_query, gemm_create},
      qconv{qconv_query, qconv_create, true};
  if (dynamic_cast<const ConvOp*>(req.op)) return &conv;
  if (dynamic_cast<const QConvOp*>(req.op)) return &qconv;
  if (dynamic_cast<const GemmOp*>(req.op) || req.node->op_type == "MatMul") return &gemm;
  return nullptr;
}

}  // namespace infera::gpu_backend
