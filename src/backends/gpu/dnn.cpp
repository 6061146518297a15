// cuDNN candidates for the fused convolution, through cuDNN's backend (graph) C API. Why not the
// header-only cudnn-frontend: its 1.3x headers pull an NVRTC-compiled experimental engine into every
// translation unit (a libnvrtc link dependency for nothing we use) and take ~40 s to compile, and
// its dynamic-loading mode dlopens a shared CUDA runtime next to our static one. The backend API
// is what the frontend calls underneath: tensors, a conv op, pointwise ops, an operation graph,
// heuristics, execution plans, a variant pack per run.
#include "backends/gpu/dnn.h"

#if defined(INFERA_HAVE_CUDNN)
#include <cudnn.h>

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <map>
#include <mutex>
#endif

namespace infera::gpu {

#if !defined(INFERA_HAVE_CUDNN)

int dnn_version() { return 0; }
bool dnn_fuses(const Activation&) { return false; }
std::vector<VendorCandidate> dnn_conv_candidates(const ConvShape&, const Epilogue&, bool, int, const DnnConvLayout&,
                                                 std::string* why, const std::string&) {
  if (why) *why = "cuDNN is not part of this build";
  return {};
}
Status dnn_conv_run(const VendorCandidate&, const ConvTensors&, void*, size_t, gpuStream_t) {
  return Status{"cudnn: not part of this build"};
}

#else  // INFERA_HAVE_CUDNN

namespace {

constexpr int kMaxCandidates = 4;   // of the heuristics' list: timing more rarely finds a better one
constexpr int kMaxAttempts = 8;     // plans finalized per graph and heuristics mode
constexpr int kMaxRtcAttempts = 2;  // of them runtime-compiled (NVRTC at finalize: the slow part of a build)

// cuDNN 9 deprecates the handle attributes of the operation graph and the plan in favour of a
// device-properties descriptor (9.8+); the handle path works on every 9.x, which we must support
// (the H200 machine's system cuDNN is 9.14).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kOpGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

class Desc {
 public:
  Desc() = default;
  explicit Desc(cudnnBackendDescriptorType_t t) {
    if (cudnnBackendCreateDescriptor(t, &d_) != CUDNN_STATUS_SUCCESS) d_ = nullptr;
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  Desc(Desc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  Desc& operator=(Desc&& o) noexcept {
    std::swap(d_, o.d_);
    return *this;
  }
  ~Desc() {
    if (d_) (void)cudnnBackendDestroyDescriptor(d_);
  }
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// Build-time errors carry cuDNN's own detail (cudnnGetLastErrorString) to the caller's *why.
struct BuildError {
  std::string msg;
  bool failed() const { return !msg.empty(); }
};
std::string cudnn_detail(const char* what, cudnnStatus_t st) {
  char last[512] = {0};
  cudnnGetLastErrorString(last, sizeof last);
  std::string s = std::string("cudnn: ") + what + ": " + cudnnGetErrorString(st);
  if (last[0]) s += std::string(" (") + last + ")";
  return s;
}
#define DNN_BUILD(expr, what, err)                                  \
  do {                                                              \
    const cudnnStatus_t dnn_st_ = (expr);                           \
    if (dnn_st_ != CUDNN_STATUS_SUCCESS) {                          \
      if (!(err).failed()) (err).msg = cudnn_detail(what, dnn_st_); \
      return false;                                                 \
    }                                                               \
  } while (0)

cudnnStatus_t set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n,
                  const void* v) {
  return cudnnBackendSetAttribute(d, a, t, n, v);
}
cudnnStatus_t set_desc(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a, const Desc& v) {
  cudnnBackendDescriptor_t p = v.get();
  return cudnnBackendSetAttribute(d, a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p);
}

// Handles per device: taken for one build or one run and given back, so two threads never use one
// handle at once (a cuDNN handle holds its stream). Never destroyed: plans refer to the handle
// they were built with, and destroying handles during process exit races the runtime's teardown.
class HandlePool {
 public:
  cudnnHandle_t take(int device, cudnnStatus_t* st) {
    {
      std::lock_guard<std::mutex> lock(m_);
      auto& v = free_[device];
      if (!v.empty()) {
        cudnnHandle_t h = v.back();
        v.pop_back();
        *st = CUDNN_STATUS_SUCCESS;
        return h;
      }
    }
    GpuDeviceScope scope(device);
    cudnnHandle_t h = nullptr;
    *st = scope.ok() ? cudnnCreate(&h) : CUDNN_STATUS_EXECUTION_FAILED;
    return *st == CUDNN_STATUS_SUCCESS ? h : nullptr;
  }
  void give(int device, cudnnHandle_t h) {
    std::lock_guard<std::mutex> lock(m_);
    free_[device].push_back(h);
  }

 private:
  std::mutex m_;
  std::map<int, std::vector<cudnnHandle_t> > free_;
};
HandlePool& handles() {
  static HandlePool* p = new HandlePool;  // leaked on purpose (see HandlePool)
  return *p;
}
struct HandleLease {
  int device;
  cudnnHandle_t h = nullptr;
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  explicit HandleLease(int d) : device(d) { h = handles().take(d, &st); }
  ~HandleLease() {
    if (h) handles().give(device, h);
  }
};

enum Uid : int64_t { kX = 1, kW = 2, kY = 3, kBias = 4, kZ = 5, kVirtual = 100 };

// Largest power of two (<= 16) that divides the byte offset of a channel slice: the alignment the
// plan may assume for that pointer, given a 16-byte aligned buffer.
int64_t slice_alignment(int64_t c_offset, size_t es) {
  const int64_t bytes = c_offset * static_cast<int64_t>(es);
  int64_t a = 16;
  while (a > 1 && bytes % a) a /= 2;
  return a;
}

// What a plan was built for; dnn_conv_run checks the tensors against it.
struct Signature {
  ConvShape s;
  bool bias = false, residual = false;
  Activation act;
  bool tf32 = false;
  int device = 0;
  int64_t y_ps = 0, y_coff = 0, z_ps = 0, z_coff = 0;
  int64_t x_align = 16, y_align = 16, z_align = 16;
};

std::string key_of(const Signature& g) {
  const ConvShape& s = g.s;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "d%d t%d n%d h%d w%d c%d k%d r%d s%d st%d,%d p%d,%d,%d,%d dl%d,%d g%d x%lld,%lld y%lld,%lld "
                "b%d z%d,%lld,%lld a%d,%.9g,%.9g tf%d",
                g.device, static_cast<int>(s.dtype), s.n, s.h, s.w, s.c, s.k, s.r, s.s, s.stride_h, s.stride_w, s.pad_t,
                s.pad_l, s.pad_b, s.pad_r, s.dil_h, s.dil_w, s.groups, static_cast<long long>(s.x_pixel_stride),
                static_cast<long long>(s.x_c_offset), static_cast<long long>(g.y_ps), static_cast<long long>(g.y_coff),
                g.bias ? 1 : 0, g.residual ? 1 : 0, static_cast<long long>(g.z_ps), static_cast<long long>(g.z_coff),
                static_cast<int>(g.act.kind), g.act.alpha, g.act.beta, g.tf32 ? 1 : 0);
  return buf;
}

// The operation graph and everything it refers to, kept alive as long as any plan of it.
struct DnnGraph {
  std::vector<Desc> keep;  // tensors, conv and pointwise descriptors, operations
  Desc graph;
};

struct DnnPlan {
  std::shared_ptr<DnnGraph> graph;
  Desc plan;
  Signature sig;
  size_t workspace = 0;
  std::mutex run_mutex;  // cuDNN does not promise that one plan may execute on two threads at once
};

bool make_tensor(Desc& out, int64_t uid, cudnnDataType_t dt, const int64_t dims[4], const int64_t strides[4],
                 int64_t align, bool is_virtual, BuildError& err) {
  Desc d(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  if (!d.get()) return err.msg = "cudnn: cannot create a tensor descriptor", false;
  DNN_BUILD(set(d.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt), "tensor type", err);
  DNN_BUILD(set(d.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims), "tensor dims", err);
  DNN_BUILD(set(d.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides), "tensor strides", err);
  DNN_BUILD(set(d.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid), "tensor uid", err);
  DNN_BUILD(set(d.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align), "tensor alignment", err);
  const bool v = is_virtual;
  DNN_BUILD(set(d.get(), CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v), "tensor virtual", err);
  DNN_BUILD(cudnnBackendFinalize(d.get()), "tensor finalize", err);
  out = std::move(d);
  return true;
}

// The pointwise mode and parameters for an activation; false when cuDNN has no single node for it.
struct PwAct {
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_IDENTITY;
  double lower = 0, upper = FLT_MAX, slope = 0;  // RELU_FWD: clamp(x, lower, upper), slope below lower
  double param = 1;                              // ELU alpha, SWISH beta, SOFTPLUS beta
};
bool pw_act(const Activation& a, PwAct& p) {
  switch (a.kind) {
    case ActKind::kRelu: p.mode = CUDNN_POINTWISE_RELU_FWD; return true;
    case ActKind::kLeakyRelu: p.mode = CUDNN_POINTWISE_RELU_FWD, p.slope = a.alpha; return true;
    case ActKind::kClip:
      if (!(a.alpha <= a.beta)) return false;
      p.mode = CUDNN_POINTWISE_RELU_FWD, p.lower = a.alpha, p.upper = a.beta;
      return true;
    case ActKind::kSigmoid: p.mode = CUDNN_POINTWISE_SIGMOID_FWD; return true;
    case ActKind::kTanh: p.mode = CUDNN_POINTWISE_TANH_FWD; return true;
    case ActKind::kElu: p.mode = CUDNN_POINTWISE_ELU_FWD, p.param = a.alpha; return true;
    case ActKind::kGelu: p.mode = CUDNN_POINTWISE_GELU_FWD; return true;
    case ActKind::kGeluTanh: p.mode = CUDNN_POINTWISE_GELU_APPROX_TANH_FWD; return true;
    case ActKind::kSwish: p.mode = CUDNN_POINTWISE_SWISH_FWD, p.param = a.alpha; return true;
    case ActKind::kSoftplus: p.mode = CUDNN_POINTWISE_SOFTPLUS_FWD, p.param = 1; return true;
    default: return false;
  }
}

// One pointwise op out = op(in, b) (b may be null for unary ops).
bool add_pointwise(DnnGraph& g, std::vector<cudnnBackendDescriptor_t>& ops, cudnnPointwiseMode_t mode, const PwAct* act,
                   const Desc& in, const Desc* b, const Desc& out, BuildError& err) {
  Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  if (!pw.get()) return err.msg = "cudnn: cannot create a pointwise descriptor", false;
  const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  DNN_BUILD(set(pw.get(), CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode), "pointwise mode", err);
  DNN_BUILD(set(pw.get(), CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec), "pointwise prec", err);
  if (act && mode == CUDNN_POINTWISE_RELU_FWD) {
    DNN_BUILD(set(pw.get(), CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, 1, &act->lower), "relu lower",
              err);
    DNN_BUILD(set(pw.get(), CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, 1, &act->upper), "relu upper",
              err);
    DNN_BUILD(set(pw.get(), CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_DOUBLE, 1, &act->slope),
              "relu slope", err);
  } else if (act && mode == CUDNN_POINTWISE_ELU_FWD) {
    DNN_BUILD(set(pw.get(), CUDNN_ATTR_POINTWISE_ELU_ALPHA, CUDNN_TYPE_DOUBLE, 1, &act->param), "elu alpha", err);
  } else if (act && mode == CUDNN_POINTWISE_SWISH_FWD) {
    DNN_BUILD(set(pw.get(), CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1, &act->param), "swish beta", err);
  } else if (act && mode == CUDNN_POINTWISE_SOFTPLUS_FWD) {
    DNN_BUILD(set(pw.get(), CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA, CUDNN_TYPE_DOUBLE, 1, &act->param), "softplus beta",
              err);
  }
  DNN_BUILD(cudnnBackendFinalize(pw.get()), "pointwise finalize", err);
  Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  if (!op.get()) return err.msg = "cudnn: cannot create a pointwise operation", false;
  DNN_BUILD(set_desc(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw), "pointwise op desc", err);
  DNN_BUILD(set_desc(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_XDESC, in), "pointwise x", err);
  if (b) DNN_BUILD(set_desc(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b), "pointwise b", err);
  DNN_BUILD(set_desc(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_YDESC, out), "pointwise y", err);
  DNN_BUILD(cudnnBackendFinalize(op.get()), "pointwise op finalize", err);
  ops.push_back(op.get());
  g.keep.push_back(std::move(pw));
  g.keep.push_back(std::move(op));
  return true;
}

// conv -> [+ bias] -> [+ z] -> [act] -> y, intermediates virtual fp32.
bool build_graph(const Signature& sig, cudnnHandle_t h, DnnGraph& g, BuildError& err) {
  const ConvShape& s = sig.s;
  const cudnnDataType_t io = s.dtype == DType::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const int64_t P = s.p(), Q = s.q(), K = s.k, cg = s.c / s.groups;
  const int64_t xps = s.x_pixel_stride ? s.x_pixel_stride : s.c;
  const int64_t yps = sig.y_ps ? sig.y_ps : K, zps = sig.z_ps ? sig.z_ps : K;
  const int64_t xd[4] = {s.n, s.c, s.h, s.w}, xs[4] = {s.h * s.w * xps, 1, s.w * xps, xps};
  const int64_t wd[4] = {K, cg, s.r, s.s}, ws[4] = {s.r * s.s * cg, 1, s.s * cg, cg};
  const int64_t yd[4] = {s.n, K, P, Q}, ys[4] = {P * Q * yps, 1, Q * yps, yps};
  const int64_t zs[4] = {P * Q * zps, 1, Q * zps, zps}, vs[4] = {P * Q * K, 1, Q * K, K};
  const int64_t bd[4] = {1, K, 1, 1}, bs[4] = {K, 1, K, K};
  PwAct act;
  const bool has_act = !sig.act.is_identity();
  if (has_act && !pw_act(sig.act, act)) return err.msg = "cudnn: activation not fusable", false;
  const int steps = (sig.bias ? 1 : 0) + (sig.residual ? 1 : 0) + (has_act ? 1 : 0);

  Desc x, w, y;
  if (!make_tensor(x, kX, io, xd, xs, sig.x_align, false, err)) return false;
  if (!make_tensor(w, kW, io, wd, ws, 16, false, err)) return false;
  if (!make_tensor(y, kY, io, yd, ys, sig.y_align, false, err)) return false;
  // Each step's output: the real y for the last one, else a virtual fp32 tensor.
  int64_t next_virtual = kVirtual;
  auto step_out = [&](int remaining, Desc& out) {
    if (remaining == 0) return true;  // caller uses y
    return make_tensor(out, next_virtual++, CUDNN_DATA_FLOAT, yd, vs, 16, true, err);
  };

  Desc conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  if (!conv.get()) return err.msg = "cudnn: cannot create a convolution descriptor", false;
  {
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t dims = 2, dil[2] = {s.dil_h, s.dil_w}, str[2] = {s.stride_h, s.stride_w};
    const int64_t pre[2] = {s.pad_t, s.pad_l}, post[2] = {s.pad_b, s.pad_r};
    DNN_BUILD(set(conv.get(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp), "conv comp", err);
    DNN_BUILD(set(conv.get(), CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode), "conv mode",
              err);
    DNN_BUILD(set(conv.get(), CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims), "conv dims", err);
    DNN_BUILD(set(conv.get(), CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil), "conv dil", err);
    DNN_BUILD(set(conv.get(), CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str), "conv stride", err);
    DNN_BUILD(set(conv.get(), CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pre), "conv pre pad", err);
    DNN_BUILD(set(conv.get(), CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post), "conv post pad", err);
    DNN_BUILD(cudnnBackendFinalize(conv.get()), "conv finalize", err);
  }
  std::vector<cudnnBackendDescriptor_t> ops;
  int remaining = steps;
  Desc cur;
  if (!step_out(remaining, cur)) return false;
  const Desc& conv_y = remaining ? cur : y;
  {
    Desc op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    if (!op.get()) return err.msg = "cudnn: cannot create a convolution operation", false;
    const float alpha = 1.f, beta = 0.f;
    DNN_BUILD(set_desc(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x), "conv x", err);
    DNN_BUILD(set_desc(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w), "conv w", err);
    DNN_BUILD(set_desc(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, conv_y), "conv y", err);
    DNN_BUILD(set_desc(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv), "conv desc", err);
    DNN_BUILD(set(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha), "conv alpha",
              err);
    DNN_BUILD(set(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta), "conv beta",
              err);
    DNN_BUILD(cudnnBackendFinalize(op.get()), "conv op finalize", err);
    ops.push_back(op.get());
    g.keep.push_back(std::move(op));
  }
  // cur holds the previous step's output (when it was virtual); each step makes the next.
  auto chain = [&](cudnnPointwiseMode_t mode, const PwAct* a, const Desc* b) {
    --remaining;
    Desc out;
    if (!step_out(remaining, out)) return false;
    if (!add_pointwise(g, ops, mode, a, cur, b, remaining ? out : y, err)) return false;
    g.keep.push_back(std::move(cur));
    cur = std::move(out);
    return true;
  };
  if (sig.bias) {
    Desc b;
    if (!make_tensor(b, kBias, CUDNN_DATA_FLOAT, bd, bs, 16, false, err)) return false;
    if (!chain(CUDNN_POINTWISE_ADD, nullptr, &b)) return false;
    g.keep.push_back(std::move(b));
  }
  if (sig.residual) {
    Desc z;
    if (!make_tensor(z, kZ, io, yd, zs, sig.z_align, false, err)) return false;
    if (!chain(CUDNN_POINTWISE_ADD, nullptr, &z)) return false;
    g.keep.push_back(std::move(z));
  }
  if (has_act && !chain(act.mode, &act, nullptr)) return false;

  g.graph = Desc(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  if (!g.graph.get()) return err.msg = "cudnn: cannot create an operation graph", false;
  DNN_BUILD(set(g.graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                static_cast<int64_t>(ops.size()), ops.data()),
            "graph ops", err);
  DNN_BUILD(set(g.graph.get(), kOpGraphHandle, CUDNN_TYPE_HANDLE, 1, &h), "graph handle", err);
  DNN_BUILD(cudnnBackendFinalize(g.graph.get()), "graph finalize", err);
  g.keep.push_back(std::move(x));
  g.keep.push_back(std::move(w));
  g.keep.push_back(std::move(y));
  g.keep.push_back(std::move(conv));
  return true;
}

// Engine configs of one heuristics mode (empty on failure: the mode does not take this graph).
std::vector<Desc> heuristics(const DnnGraph& g, cudnnBackendHeurMode_t mode, BuildError& err) {
  std::vector<Desc> out;
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  if (!heur.get()) return out;
  auto fail = [&](const char* what, cudnnStatus_t st) {
    if (!err.failed()) err.msg = cudnn_detail(what, st);
    return std::vector<Desc>{};
  };
  cudnnBackendDescriptor_t gp = g.graph.get();
  cudnnStatus_t st = set(heur.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &gp);
  if (st == CUDNN_STATUS_SUCCESS) st = set(heur.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendFinalize(heur.get());
  if (st != CUDNN_STATUS_SUCCESS) return fail("heuristics", st);
  int64_t count = 0;
  st = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                nullptr);
  if (st != CUDNN_STATUS_SUCCESS) return fail("heuristics count", st);
  if (count <= 0) return out;
  std::vector<Desc> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    if (!cfgs.back().get()) return out;
    raw.push_back(cfgs.back().get());
  }
  int64_t got = 0;
  st = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                raw.data());
  if (st != CUDNN_STATUS_SUCCESS) return fail("heuristics results", st);
  for (int64_t i = 0; i < got && i < count; ++i) out.push_back(std::move(cfgs[static_cast<size_t>(i)]));
  return out;
}

bool has_note(const std::vector<cudnnBackendNumericalNote_t>& notes, cudnnBackendNumericalNote_t n) {
  for (auto x : notes)
    if (x == n) return true;
  return false;
}

// The engine of a config: its global index, numerical and behaviour notes, and a readable name.
struct EngineInfo {
  int64_t index = -1;
  std::vector<cudnnBackendNumericalNote_t> notes;
  bool runtime_compiled = false;
  std::string name;
};
bool engine_info(const Desc& cfg, EngineInfo& e) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  if (!engine.get()) return false;
  int64_t n = 0;
  cudnnBackendDescriptor_t ep = engine.get();
  if (cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &ep) !=
      CUDNN_STATUS_SUCCESS)
    return false;
  if (cudnnBackendGetAttribute(ep, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &e.index) !=
      CUDNN_STATUS_SUCCESS)
    return false;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(ep, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes) != CUDNN_STATUS_SUCCESS)
    return false;
  e.notes.assign(notes, notes + std::min<int64_t>(n, CUDNN_NUMERICAL_NOTE_TYPE_COUNT));
  cudnnBackendBehaviorNote_t bnotes[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(ep, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, bnotes) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < std::min<int64_t>(n, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT); ++i)
      e.runtime_compiled = e.runtime_compiled || bnotes[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
  e.name = "cudnn_eng" + std::to_string(e.index);
  // The knob choices tell configs of one engine apart.
  int64_t nk = 0;
  if (cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &nk,
                               nullptr) == CUDNN_STATUS_SUCCESS &&
      nk > 0) {
    std::vector<Desc> knobs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < nk; ++i) {
      knobs.emplace_back(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
      raw.push_back(knobs.back().get());
    }
    if (cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, nk, &nk,
                                 raw.data()) == CUDNN_STATUS_SUCCESS)
      for (int64_t i = 0; i < nk && i < static_cast<int64_t>(raw.size()); ++i) {
        cudnnBackendKnobType_t type;
        int64_t value = 0, c = 0;
        if (cudnnBackendGetAttribute(raw[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                     CUDNN_TYPE_KNOB_TYPE, 1, &c, &type) == CUDNN_STATUS_SUCCESS &&
            cudnnBackendGetAttribute(raw[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64,
                                     1, &c, &value) == CUDNN_STATUS_SUCCESS)
          e.name += "_k" + std::to_string(static_cast<int>(type)) + "=" + std::to_string(value);
      }
  }
  if (has_note(e.notes, CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) e.name += "_tc";
  if (has_note(e.notes, CUDNN_NUMERICAL_NOTE_WINOGRAD)) e.name += "_wino";
  if (e.runtime_compiled) e.name += "_rtc";
  return true;
}

// Numerics we accept (see dnn.h): never fp16 reduction or down-converted inputs; fp32 without
// TF32 also no tensor cores (TF32) and no FFT.
bool notes_ok(const EngineInfo& e, const Signature& sig) {
  if (has_note(e.notes, CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)) return false;
  if (has_note(e.notes, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) return false;
  if (sig.s.dtype == DType::kF32 && !sig.tf32)
    if (has_note(e.notes, CUDNN_NUMERICAL_NOTE_TENSOR_CORE) || has_note(e.notes, CUDNN_NUMERICAL_NOTE_FFT))
      return false;
  // Seen on the H200 with cuDNN 9.19: the runtime-compiled engine 8 computed a wrong fp32 result
  // (unwritten and wrong outputs inside y's slice) when x, y and z were channel slices of wider
  // buffers, while every other engine, and engine 8 in fp16, passed (tests/gpu/vendor_test.cpp,
  // case slices_1x1). Until a rerun shows which condition triggers it: no runtime-compiled engines
  // for fp32 with any sliced tensor.
  const bool sliced = sig.s.x_pixel_stride || sig.s.x_c_offset || sig.y_ps || sig.y_coff || sig.z_ps || sig.z_coff;
  if (sig.s.dtype == DType::kF32 && sliced && e.runtime_compiled) return false;
  return true;
}

std::vector<VendorCandidate> build_candidates(const Signature& sig, std::string& why, const std::string& only) {
  std::vector<VendorCandidate> out;
  HandleLease lease(sig.device);
  if (!lease.h) {
    why = cudnn_detail("cannot create a handle", lease.st);
    return out;
  }
  GpuDeviceScope scope(sig.device);
  auto g = std::make_shared<DnnGraph>();
  BuildError err;
  if (!build_graph(sig, lease.h, *g, err)) {
    why = err.msg;
    return out;
  }
  BuildError plan_err;
  int filtered = 0, attempts = 0, rtc_attempts = 0;
  // Mode A is the fast heuristic the brief asks for; B and the fallback list only when A offers
  // nothing that builds.
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B, CUDNN_HEUR_MODE_FALLBACK}) {
    std::vector<Desc> cfgs = heuristics(*g, mode, plan_err);
    for (const Desc& cfg : cfgs) {
      if (static_cast<int>(out.size()) >= kMaxCandidates || attempts >= kMaxAttempts) break;
      EngineInfo e;
      if (!engine_info(cfg, e)) continue;
      if (!notes_ok(e, sig)) {
        ++filtered;
        continue;
      }
      if (!only.empty() && e.name != only) continue;
      bool dup = false;
      for (const auto& c : out) dup = dup || c.name == e.name;
      if (dup || (e.runtime_compiled && rtc_attempts >= kMaxRtcAttempts)) continue;
      rtc_attempts += e.runtime_compiled ? 1 : 0;
      auto p = std::make_shared<DnnPlan>();
      p->graph = g;
      p->sig = sig;
      p->plan = Desc(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      if (!p->plan.get()) continue;
      ++attempts;
      cudnnBackendDescriptor_t cp = cfg.get();
      cudnnStatus_t st = set(p->plan.get(), kPlanHandle, CUDNN_TYPE_HANDLE, 1, &lease.h);
      if (st == CUDNN_STATUS_SUCCESS)
        st = set(p->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cp);
      if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendFinalize(p->plan.get());
      if (st != CUDNN_STATUS_SUCCESS) {  // this engine cannot take the graph after all
        if (!plan_err.failed()) plan_err.msg = cudnn_detail(("plan " + e.name).c_str(), st);
        continue;
      }
      int64_t ws = 0, n = 0;
      if (cudnnBackendGetAttribute(p->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                   &ws) != CUDNN_STATUS_SUCCESS ||
          ws < 0 || static_cast<size_t>(ws) > kVendorMaxWorkspace)
        continue;
      p->workspace = static_cast<size_t>(ws);
      out.push_back(VendorCandidate{e.name, p->workspace, std::static_pointer_cast<void>(p)});
    }
    if (!out.empty()) break;
    attempts = rtc_attempts = 0;
  }
  if (out.empty())
    why = plan_err.failed()
              ? plan_err.msg
              : "cudnn: no engine config for this graph" +
                    (filtered ? " (" + std::to_string(filtered) + " left out: numerics, or known wrong for this layout)"
                              : std::string());
  return out;
}

struct Cache {
  std::mutex m;  // also serializes builds: they happen at plan build, not per run
  std::map<std::string, std::pair<std::vector<VendorCandidate>, std::string> > entries;
};
Cache& cache() {
  static Cache* c = new Cache;  // leaked with the plans it holds (they refer to pooled handles)
  return *c;
}

bool aligned(const void* p, int64_t a) { return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(a) == 0; }

}  // namespace

int dnn_version() {
  static const int v = [] {
    const size_t ver = cudnnGetVersion();
    return ver >= 90000 ? static_cast<int>(ver) : 0;  // the graph API as used here needs cuDNN 9
  }();
  return v;
}

bool dnn_fuses(const Activation& a) {
  PwAct p;
  return a.is_identity() || pw_act(a, p);
}

std::vector<VendorCandidate> dnn_conv_candidates(const ConvShape& s, const Epilogue& ep, bool tf32, int device,
                                                 const DnnConvLayout& layout, std::string* why,
                                                 const std::string& only) {
  auto no = [&](std::string msg) {
    if (why) *why = std::move(msg);
    return std::vector<VendorCandidate>{};
  };
  if (!dnn_version()) return no("cudnn: cuDNN 9 not found at run time");
  if (!conv_check(s).ok()) return no(std::string("cudnn: ") + conv_check(s).error);
  if (!dnn_fuses(ep.act)) {
    char buf[64];  // (the kind's number: the kernel library does not link the activation table's names)
    std::snprintf(buf, sizeof buf, "cudnn: activation kind %d is not fused", static_cast<int>(ep.act.kind));
    return no(buf);
  }
  if (tf32 && s.dtype != DType::kF32) tf32 = false;  // TF32 only means something for fp32 data
  Signature sig;
  sig.s = s;
  sig.bias = ep.bias != nullptr;
  sig.residual = ep.residual.data != nullptr;
  sig.act = ep.act;
  sig.tf32 = tf32;
  sig.device = device;
  sig.y_ps = layout.y_pixel_stride == s.k ? 0 : layout.y_pixel_stride;
  sig.y_coff = layout.y_c_offset;
  if (sig.residual) sig.z_ps = ep.residual.pixel_stride == s.k ? 0 : ep.residual.pixel_stride;
  if (sig.residual) sig.z_coff = ep.residual.c_offset;
  if (sig.s.x_pixel_stride == s.c) sig.s.x_pixel_stride = 0;
  const size_t es = dtype_size(s.dtype);
  sig.x_align = slice_alignment(s.x_c_offset, es);
  sig.y_align = slice_alignment(sig.y_coff, es);
  sig.z_align = slice_alignment(sig.z_coff, es);
  const std::string full = key_of(sig);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.m);
  auto it = c.entries.find(full);
  if (it == c.entries.end() && !only.empty()) it = c.entries.find(full + "|only " + only);
  if (it == c.entries.end()) {
    std::string msg;
    std::vector<VendorCandidate> cands = build_candidates(sig, msg, only);
    it = c.entries
             .emplace(only.empty() ? full : full + "|only " + only, std::make_pair(std::move(cands), std::move(msg)))
             .first;
  }
  if (it->second.first.empty() && why) *why = it->second.second;
  return it->second.first;
}

Status dnn_conv_run(const VendorCandidate& c, const ConvTensors& t, void* workspace, size_t workspace_bytes,
                    gpuStream_t stream) {
  auto* p = static_cast<DnnPlan*>(c.plan.get());
  if (!p) return Status{"cudnn: empty candidate"};
  const Signature& g = p->sig;
  const ConvShape& s = g.s;
  const size_t es = dtype_size(s.dtype);
  auto tight = [](int64_t ps, int64_t c) { return ps == 0 ? c : ps; };
  if (tight(t.x.pixel_stride, s.c) != tight(s.x_pixel_stride, s.c) || t.x.c_offset != s.x_c_offset)
    return Status{"cudnn: x placement differs from the plan's"};
  if (tight(t.y.pixel_stride, s.k) != tight(g.y_ps, s.k) || t.y.c_offset != g.y_coff)
    return Status{"cudnn: y placement differs from the plan's"};
  if ((t.ep.bias != nullptr) != g.bias) return Status{"cudnn: bias presence differs from the plan's"};
  if ((t.ep.residual.data != nullptr) != g.residual) return Status{"cudnn: residual presence differs from the plan's"};
  if (g.residual &&
      (tight(t.ep.residual.pixel_stride, s.k) != tight(g.z_ps, s.k) || t.ep.residual.c_offset != g.z_coff))
    return Status{"cudnn: residual placement differs from the plan's"};
  if (!(t.ep.act == g.act)) return Status{"cudnn: activation differs from the plan's"};
  if (workspace_bytes < p->workspace || (p->workspace && !workspace)) return Status{"cudnn: workspace too small"};
  const void* x = static_cast<const char*>(t.x.data) + t.x.c_offset * static_cast<int64_t>(es);
  void* y = static_cast<char*>(t.y.data) + t.y.c_offset * static_cast<int64_t>(es);
  const void* z = g.residual
                      ? static_cast<const char*>(t.ep.residual.data) + t.ep.residual.c_offset * static_cast<int64_t>(es)
                      : nullptr;
  if (!aligned(x, g.x_align) || !aligned(t.w, 16) || !aligned(y, g.y_align) || (g.bias && !aligned(t.ep.bias, 16)) ||
      (z && !aligned(z, g.z_align)))
    return Status{"cudnn: a tensor pointer is less aligned than the plan assumes (16 bytes)"};

  int64_t uids[5] = {kX, kW, kY, 0, 0};
  void* ptrs[5] = {const_cast<void*>(x), const_cast<void*>(t.w), y, nullptr, nullptr};
  int64_t n = 3;
  if (g.bias) uids[n] = kBias, ptrs[n++] = const_cast<float*>(t.ep.bias);
  if (z) uids[n] = kZ, ptrs[n++] = const_cast<void*>(z);
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  if (!pack.get()) return Status{"cudnn: cannot create a variant pack"};
  cudnnStatus_t st = set(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
  if (st == CUDNN_STATUS_SUCCESS)
    st = set(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
  if (st == CUDNN_STATUS_SUCCESS)
    st = set(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendFinalize(pack.get());
  if (st != CUDNN_STATUS_SUCCESS) return Status{cudnnGetErrorString(st)};
  HandleLease lease(g.device);
  if (!lease.h) return Status{cudnnGetErrorString(lease.st)};
  st = cudnnSetStream(lease.h, stream);
  if (st != CUDNN_STATUS_SUCCESS) return Status{cudnnGetErrorString(st)};
  {
    std::lock_guard<std::mutex> lock(p->run_mutex);
    st = cudnnBackendExecute(lease.h, p->plan.get(), pack.get());
  }
  (void)cudnnSetStream(lease.h, nullptr);  // a pooled handle must not keep a stream that may be destroyed
  if (st != CUDNN_STATUS_SUCCESS) return Status{cudnnGetErrorString(st)};
  return Status::success();
}

#endif  // INFERA_HAVE_CUDNN

}  // namespace infera::gpu
