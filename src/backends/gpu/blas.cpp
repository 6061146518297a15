// cuBLASLt candidates for GEMM: layouts and heuristics once per distinct problem (cached for the
// life of the process), then per run a matmul descriptor initialized on the stack (the bias pointer
// is one of its attributes, so a shared descriptor could not be used by two runs at once).
#include "backends/gpu/blas.h"

#if defined(INFERA_GPU_CUDA)
#include <cublasLt.h>

#include <cstdio>
#include <map>
#include <mutex>
#endif

namespace infera::gpu {

#if !defined(INFERA_GPU_CUDA)

int blas_version() { return 0; }
bool blas_fuses(const Activation&) { return false; }
std::vector<VendorCandidate> blas_gemm_candidates(const GemmShape&, bool, Activation, bool, int, const BlasResidual&,
                                                  std::string* why) {
  if (why) *why = "cuBLASLt is not part of this build";
  return {};
}
Status blas_gemm_run(const VendorCandidate&, const GemmTensors&, void*, size_t, gpuStream_t) {
  return Status{"cublaslt: not part of this build"};
}

#else  // INFERA_GPU_CUDA

namespace {

constexpr int kMaxCandidates = 5;
constexpr int kHeuristicRequests = 8;
constexpr size_t kLtMaxWorkspace = size_t{32} << 20;
constexpr size_t kAlign = 256;  // cuBLASLt wants its workspace 256-byte aligned

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

class Layout {
 public:
  Layout() = default;
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
  ~Layout() {
    if (l_) (void)cublasLtMatrixLayoutDestroy(l_);
  }
  cublasStatus_t init(cudaDataType_t t, uint64_t rows, uint64_t cols, int64_t ld, int batch, int64_t stride) {
    cublasStatus_t st = cublasLtMatrixLayoutCreate(&l_, t, rows, cols, ld);
    if (st != CUBLAS_STATUS_SUCCESS) return l_ = nullptr, st;
    if (batch > 1) {
      const int32_t b = batch;
      st = cublasLtMatrixLayoutSetAttribute(l_, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b);
      if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutSetAttribute(l_, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
    }
    return st;
  }
  cublasLtMatrixLayout_t get() const { return l_; }

 private:
  cublasLtMatrixLayout_t l_ = nullptr;
};

// What a plan was built for; blas_gemm_run checks the tensors against it.
struct BlasPlan {
  GemmShape s;  // leading dimensions resolved (never 0)
  bool bias = false;
  BlasResidual res;  // ldr / stride_r resolved
  Activation act;
  bool tf32 = false;
  int device = 0;
  cublasLtHandle_t handle = nullptr;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t io = CUDA_R_16F;
  cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;  // of cuBLASLt's A (our B) and B (our A)
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  Layout la, lb, lc, ld;  // cuBLASLt's A (our B), B (our A), C (residual), D (our C)
  cublasLtMatmulAlgo_t algo{};
  size_t bias_scratch = 0;  // fp16 bias copy at the head of the workspace
  size_t lt_workspace = 0;
};

struct Cache {
  std::mutex m;
  std::map<int, cublasLtHandle_t> handles;  // one per device, never destroyed (plans refer to it)
  std::map<int, void*> dummy_bias;          // a device pointer for the heuristics query (never read)
  std::map<std::string, std::pair<std::vector<VendorCandidate>, std::string> > entries;
};
Cache& cache() {
  static Cache* c = new Cache;  // leaked on purpose: no teardown race with the CUDA runtime at exit
  return *c;
}

bool epilogue_of(bool bias, const Activation& a, cublasLtEpilogue_t& e) {
  if (a.is_identity())
    e = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  else if (a.kind == ActKind::kRelu)
    e = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (a.kind == ActKind::kGeluTanh)
    e = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else
    return false;
  return true;
}

std::string lt_error(const char* what, cublasStatus_t st) {
  return std::string("cublaslt: ") + what + ": " + cublasLtGetStatusName(st);
}

std::string algo_name(const cublasLtMatmulAlgo_t& a) {
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) {
    uint32_t v = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&a, attr, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS) return -1;
    return static_cast<int>(v);
  };
  char buf[128];
  std::snprintf(buf, sizeof buf, "cublaslt_a%d_t%d_s%d_k%d_r%d_sw%d", get(CUBLASLT_ALGO_CONFIG_ID),
                get(CUBLASLT_ALGO_CONFIG_TILE_ID), get(CUBLASLT_ALGO_CONFIG_STAGES_ID),
                get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM), get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
                get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING));
  return buf;
}

// The matmul descriptor of a plan, on the caller's stack; bias may be null (heuristics query).
cublasStatus_t init_desc(const BlasPlan& p, cublasLtMatmulDescOpaque_t& mem, const void* bias) {
  cublasLtMatmulDesc_t d = &mem;
  cublasStatus_t st = cublasLtMatmulDescInit(d, p.compute, CUDA_R_32F);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &p.op_a, sizeof p.op_a);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &p.op_b, sizeof p.op_b);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &p.epilogue, sizeof p.epilogue);
  if (st == CUBLAS_STATUS_SUCCESS && bias)
    st = cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  return st;
}

std::string key_of(const GemmShape& s, bool bias, const Activation& a, bool tf32, int device, const BlasResidual& r) {
  char buf[384];
  std::snprintf(buf, sizeof buf,
                "d%d t%d b%d m%d n%d k%d ta%d tb%d ld%lld,%lld,%lld st%lld,%lld,%lld bias%d r%d,%lld,%lld "
                "a%d,%.9g,%.9g tf%d",
                device, static_cast<int>(s.dtype), s.batch, s.m, s.n, s.k, s.trans_a ? 1 : 0, s.trans_b ? 1 : 0,
                static_cast<long long>(s.lda), static_cast<long long>(s.ldb), static_cast<long long>(s.ldc),
                static_cast<long long>(s.stride_a), static_cast<long long>(s.stride_b),
                static_cast<long long>(s.stride_c), bias ? 1 : 0, r.present ? 1 : 0, static_cast<long long>(r.ldr),
                static_cast<long long>(r.stride_r), static_cast<int>(a.kind), a.alpha, a.beta, tf32 ? 1 : 0);
  return buf;
}

// Builds the layouts once, asks the heuristics, and makes one candidate per usable algorithm.
std::vector<VendorCandidate> build_candidates(const GemmShape& s, bool bias, const Activation& act, bool tf32,
                                              int device, const BlasResidual& res, cublasLtHandle_t h,
                                              const void* dummy_bias, std::string& why) {
  std::vector<VendorCandidate> out;
  const size_t bias_scratch = bias && s.dtype == DType::kF16 ? round_up(static_cast<size_t>(s.n) * 2, kAlign) : 0;
  // A plain array: nvcc 13's front end asserts on std::vector<cublasLtMatmulHeuristicResult_t> in C++20.
  cublasLtMatmulHeuristicResult_t results[kHeuristicRequests] = {};
  int found = 0;
  // A template plan: every candidate shares its layouts' values but owns its own descriptors.
  auto make_plan = [&](std::shared_ptr<BlasPlan>& p, std::string& err) {
    p = std::make_shared<BlasPlan>();
    p->s = s;
    p->s.lda = s.lda ? s.lda : (s.trans_a ? s.m : s.k);
    p->s.ldb = s.ldb ? s.ldb : (s.trans_b ? s.k : s.n);
    p->s.ldc = s.ldc ? s.ldc : s.n;
    p->bias = bias;
    p->res = res;
    if (res.present && !p->res.ldr) p->res.ldr = p->s.ldc;
    if (res.present && !p->res.stride_r) p->res.stride_r = s.stride_c;
    p->act = act;
    p->tf32 = tf32;
    p->device = device;
    p->handle = h;
    p->io = s.dtype == DType::kF16 ? CUDA_R_16F : CUDA_R_32F;
    p->compute = s.dtype == DType::kF32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    epilogue_of(bias, act, p->epilogue);
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLASLt's A is our B.
    p->op_a = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    p->op_b = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const uint64_t M = static_cast<uint64_t>(s.m), N = static_cast<uint64_t>(s.n), K = static_cast<uint64_t>(s.k);
    cublasStatus_t st = s.trans_b ? p->la.init(p->io, K, N, p->s.ldb, s.batch, s.stride_b)
                                  : p->la.init(p->io, N, K, p->s.ldb, s.batch, s.stride_b);
    if (st == CUBLAS_STATUS_SUCCESS)
      st = s.trans_a ? p->lb.init(p->io, M, K, p->s.lda, s.batch, s.stride_a)
                     : p->lb.init(p->io, K, M, p->s.lda, s.batch, s.stride_a);
    if (st == CUBLAS_STATUS_SUCCESS) st = p->ld.init(p->io, N, M, p->s.ldc, s.batch, s.stride_c);
    if (st == CUBLAS_STATUS_SUCCESS)
      st = res.present ? p->lc.init(p->io, N, M, p->res.ldr, s.batch, p->res.stride_r)
                       : p->lc.init(p->io, N, M, p->s.ldc, s.batch, s.stride_c);
    if (st != CUBLAS_STATUS_SUCCESS) err = lt_error("matrix layout", st);
    p->bias_scratch = bias_scratch;
    return st == CUBLAS_STATUS_SUCCESS;
  };
  std::shared_ptr<BlasPlan> tmpl;
  if (!make_plan(tmpl, why)) return out;
  cublasLtMatmulDescOpaque_t mem;
  cublasStatus_t st = init_desc(*tmpl, mem, bias ? dummy_bias : nullptr);
  if (st != CUBLAS_STATUS_SUCCESS) return why = lt_error("matmul descriptor", st), out;
  cublasLtMatmulPreference_t pref = nullptr;
  st = cublasLtMatmulPreferenceCreate(&pref);
  if (st != CUBLAS_STATUS_SUCCESS) return why = lt_error("preference", st), out;
  const uint64_t max_ws = kLtMaxWorkspace;
  const uint32_t align = 16;  // the pointers blas_gemm_run accepts
  st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof max_ws);
  for (auto a : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                 CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceSetAttribute(pref, a, &align, sizeof align);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(h, &mem, tmpl->la.get(), tmpl->lb.get(), tmpl->lc.get(), tmpl->ld.get(), pref,
                                        kHeuristicRequests, results, &found);
  (void)cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS) return why = lt_error("heuristics", st), out;
  for (int i = 0; i < found && static_cast<int>(out.size()) < kMaxCandidates; ++i) {
    const cublasLtMatmulHeuristicResult_t& r = results[i];
    if (r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > kLtMaxWorkspace) continue;
    std::string name = algo_name(r.algo);
    bool dup = false;
    for (const auto& c : out) dup = dup || c.name == name;
    if (dup) {
      name += '_';
      name += std::to_string(i);
    }
    std::shared_ptr<BlasPlan> p;
    if (!make_plan(p, why)) return {};
    p->algo = r.algo;
    p->lt_workspace = r.workspaceSize;
    // Bias copy, then the Lt workspace at the next 256-byte boundary of wherever the caller's starts.
    const size_t ws = bias_scratch + (r.workspaceSize ? kAlign + r.workspaceSize : 0);
    out.push_back(VendorCandidate{name, ws, std::static_pointer_cast<void>(p)});
  }
  if (out.empty()) {
    char buf[96];  // (GCC 12 warns falsely on literal + std::to_string)
    std::snprintf(buf, sizeof buf, "cublaslt: no usable algorithm for this GEMM (%d offered)", found);
    why = buf;
  }
  return out;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

int blas_version() { return static_cast<int>(cublasLtGetVersion()); }

bool blas_fuses(const Activation& a) {
  cublasLtEpilogue_t e;
  return epilogue_of(false, a, e);
}

std::vector<VendorCandidate> blas_gemm_candidates(const GemmShape& s, bool bias, Activation act, bool tf32, int device,
                                                  const BlasResidual& residual, std::string* why) {
  auto no = [&](std::string msg) {
    if (why) *why = std::move(msg);
    return std::vector<VendorCandidate>{};
  };
  const Status chk = gemm_check(s);
  if (!chk.ok()) return no(std::string("cublaslt: ") + chk.error);
  if (!blas_fuses(act)) {
    char buf[64];  // (the kind's number: the kernel library does not link the activation table's names)
    std::snprintf(buf, sizeof buf, "cublaslt: activation kind %d is not fused", static_cast<int>(act.kind));
    return no(buf);
  }
  if (s.dtype != DType::kF32) tf32 = false;
  BlasResidual res = residual;
  if (!res.present) res.ldr = res.stride_r = 0;
  const std::string key = key_of(s, bias, act, tf32, device, res);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.m);
  auto it = c.entries.find(key);
  if (it == c.entries.end()) {
    std::string msg;
    std::vector<VendorCandidate> cands;
    auto h = c.handles.find(device);
    if (h == c.handles.end()) {
      GpuDeviceScope scope(device);
      cublasLtHandle_t lt = nullptr;
      const cublasStatus_t st = scope.ok() ? cublasLtCreate(&lt) : CUBLAS_STATUS_NOT_INITIALIZED;
      if (st == CUBLAS_STATUS_SUCCESS)
        h = c.handles.emplace(device, lt).first;
      else
        msg = lt_error("cannot create a handle", st);
    }
    if (h != c.handles.end()) {
      GpuDeviceScope scope(device);
      void*& dummy = c.dummy_bias[device];
      if (!dummy && cudaMalloc(&dummy, 256) != cudaSuccess) dummy = nullptr, (void)cudaGetLastError();
      cands = build_candidates(s, bias, act, tf32, device, res, h->second, dummy, msg);
    }
    it = c.entries.emplace(key, std::make_pair(std::move(cands), std::move(msg))).first;
  }
  if (it->second.first.empty() && why) *why = it->second.second;
  return it->second.first;
}

Status blas_gemm_run(const VendorCandidate& c, const GemmTensors& t, void* workspace, size_t workspace_bytes,
                     gpuStream_t stream) {
  const auto* p = static_cast<const BlasPlan*>(c.plan.get());
  if (!p) return Status{"cublaslt: empty candidate"};
  if (!t.a || !t.b || !t.c) return Status{"cublaslt: null A, B or C"};
  if ((t.bias != nullptr) != p->bias) return Status{"cublaslt: bias presence differs from the plan's"};
  if ((t.residual != nullptr) != p->res.present) return Status{"cublaslt: residual presence differs from the plan's"};
  if (p->res.present &&
      ((t.ldr ? t.ldr : p->s.ldc) != p->res.ldr || (t.stride_r ? t.stride_r : p->s.stride_c) != p->res.stride_r))
    return Status{"cublaslt: residual placement differs from the plan's"};
  if (!(t.act == p->act)) return Status{"cublaslt: activation differs from the plan's"};
  if (!aligned16(t.a) || !aligned16(t.b) || !aligned16(t.c) || (t.bias && !aligned16(t.bias)) ||
      (t.residual && !aligned16(t.residual)) || (c.workspace_bytes && !aligned16(workspace)))
    return Status{"cublaslt: a pointer is not 16-byte aligned"};
  if (workspace_bytes < c.workspace_bytes || (c.workspace_bytes && !workspace))
    return Status{"cublaslt: workspace too small"};
  const void* bias = t.bias;
  char* ws = static_cast<char*>(workspace);
  if (p->bias_scratch) {  // cuBLASLt's bias has D's type: an fp16 copy of ours
    const Status st = cast(DType::kF32, DType::kF16, p->s.n, t.bias, ws, stream);
    if (!st.ok()) return st;
    bias = ws;
  }
  void* lt_ws = nullptr;
  if (p->lt_workspace) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(ws) + p->bias_scratch;
    lt_ws = reinterpret_cast<void*>(round_up(base, kAlign));
  }
  cublasLtMatmulDescOpaque_t mem;
  cublasStatus_t st = init_desc(*p, mem, bias);
  if (st != CUBLAS_STATUS_SUCCESS) return Status{cublasLtGetStatusString(st)};
  const float alpha = 1.f, beta = p->res.present ? 1.f : 0.f;
  const void* cin = p->res.present ? t.residual : t.c;
  st = cublasLtMatmul(p->handle, &mem, &alpha, t.b, p->la.get(), t.a, p->lb.get(), &beta, cin, p->lc.get(), t.c,
                      p->ld.get(), &p->algo, lt_ws, p->lt_workspace, stream);
  if (st != CUBLAS_STATUS_SUCCESS) return Status{cublasLtGetStatusString(st)};
  return Status::success();
}

#endif  // INFERA_GPU_CUDA

}  // namespace infera::gpu
