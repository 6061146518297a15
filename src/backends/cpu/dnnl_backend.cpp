// The oneDNN backend: the Backend implementation (supports / create / conversions / describe),
// the shared kernel class and the helpers of the op families (dnnl_<family>.cpp).
#include "backends/cpu/dnnl_backend.h"

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "backends/cpu/dnnl_internal.h"
#include "backends/cpu/omp_throttle.h"
#include "graph/serialize.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/inverted_residual.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/pool.h"
#include "ops/quant_conv.h"
#include "ops/softmax.h"
#include "ops/squeeze_excite.h"
#include "ops/tensor_ops.h"

namespace infera {
namespace cpu {

dnnl::engine& engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// A node's label for the verbose lines: names from the model escaped and capped (Status::error's rule).
static std::string safe_label(const Node& n) { return Status::error(StatusCode::kInternal, n.label()).message(); }

OmpThreadsScope::OmpThreadsScope(int n) : prev_(omp_get_max_threads()), n_(n) {
  if (n_ > 0 && n_ != prev_) omp_set_num_threads(n_);
}
OmpThreadsScope::~OmpThreadsScope() {
  if (n_ > 0 && n_ != prev_) omp_set_num_threads(prev_);
}

int verbose() {
  static const int v = [] {
    const char* e = std::getenv("INFERA_VERBOSE");
    return e && *e ? std::atoi(e) : 0;
  }();
  return v;
}

memory::format_tag plain_tag(int rank) {
  using tag = memory::format_tag;
  switch (rank) {
    case 1: return tag::a;
    case 2: return tag::ab;
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    case 6: return tag::abcdef;
    default: return tag::undef;
  }
}

memory::desc plain_md(const Dims& dims) {
  if (dims.empty()) return memory::desc({1}, memory::data_type::f32, memory::format_tag::a);
  if (dims.size() > 6) {  // plain strides for higher ranks
    Dims strides(dims.size(), 1);
    for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
    return memory::desc(dims, memory::data_type::f32, strides);
  }
  return memory::desc(dims, memory::data_type::f32, plain_tag(static_cast<int>(dims.size())));
}

memory::desc md_of(const Dims& dims, Format f) {
  if (dims.size() == 4 && f == Format::kNChw16c)
    return memory::desc(dims, memory::data_type::f32, memory::format_tag::nChw16c);
  if (dims.size() == 4 && f == Format::kNChw8c)
    return memory::desc(dims, memory::data_type::f32, memory::format_tag::nChw8c);
  return plain_md(dims);
}

dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr a) {
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

bool all_float32(const StepRequest& req) {
  auto ok = [](const ValueInfo* v) {
    return !v || (v->dtype == DataType::kFloat32 && v->shape.rank_known && v->shape.fully_known());
  };
  for (auto* v : req.inputs)
    if (!ok(v)) return false;
  for (auto* v : req.outputs)
    if (!ok(v)) return false;
  return !req.outputs.empty() && req.outputs[0] != nullptr;
}

std::vector<FormatSet> blocked_slots(const std::vector<const ValueInfo*>& vals, const std::vector<int>& slots) {
  std::vector<FormatSet> r(vals.size(), kPlainOnly);
  for (int s : slots)
    if (s >= 0 && static_cast<size_t>(s) < vals.size() && vals[s] && !vals[s]->value && vals[s]->shape.rank() == 4)
      r[s] |= format_bit(dnnl_blocked_format());
  return r;
}

// ---------------------------------------------------------------- activations
bool eltwise_chain(const Activation& a, std::vector<EltOp>& out) {
  using alg = dnnl::algorithm;
  out.clear();
  switch (a.kind) {
    case ActKind::kIdentity: return true;
    case ActKind::kRelu: out.push_back({alg::eltwise_relu, 0.f, 0.f}); return true;
    case ActKind::kLeakyRelu: out.push_back({alg::eltwise_relu, a.alpha, 0.f}); return true;
    case ActKind::kSigmoid: out.push_back({alg::eltwise_logistic, 0.f, 0.f}); return true;
    case ActKind::kTanh: out.push_back({alg::eltwise_tanh, 0.f, 0.f}); return true;
    case ActKind::kElu: out.push_back({alg::eltwise_elu, a.alpha, 0.f}); return true;
    case ActKind::kClip: out.push_back({alg::eltwise_clip, a.alpha, a.beta}); return true;
    case ActKind::kHardSwish: out.push_back({alg::eltwise_hardswish, 0.f, 0.f}); return true;
    case ActKind::kHardSigmoid:
      out.push_back({alg::eltwise_linear, a.alpha, a.beta});
      out.push_back({alg::eltwise_clip, 0.f, 1.f});
      return true;
    case ActKind::kSelu:
      out.push_back({alg::eltwise_elu, a.alpha, 0.f});
      out.push_back({alg::eltwise_linear, a.beta, 0.f});
      return true;
    case ActKind::kSoftplus: out.push_back({alg::eltwise_soft_relu, 0.f, 0.f}); return true;
    case ActKind::kSwish: out.push_back({alg::eltwise_swish, a.alpha, 0.f}); return true;  // x * sigmoid(alpha x)
    case ActKind::kMish: out.push_back({alg::eltwise_mish, 0.f, 0.f}); return true;
    case ActKind::kGelu: out.push_back({alg::eltwise_gelu_erf, 0.f, 0.f}); return true;
    case ActKind::kGeluTanh: out.push_back({alg::eltwise_gelu_tanh, 0.f, 0.f}); return true;
    default: return false;
  }
}

void append_eltwise_ops(dnnl::post_ops& po, const std::vector<EltOp>& ops) {
  for (const EltOp& e : ops) po.append_eltwise(1.f, e.alg, e.alpha, e.beta);
}

// ---------------------------------------------------------------- kernel
memory DnnlKernel::placeholder(Kind kind, int index, const memory::desc& md) {
  memory m = kind == Kind::kOwned ? memory(md, engine()) : memory(md, engine(), DNNL_MEMORY_NONE);
  slots_.push_back({kind, index, m, md});
  return m;
}

memory DnnlKernel::bind_input(int i, const memory::desc& md) { return placeholder(Kind::kInput, i, md); }
memory DnnlKernel::bind_output(int i, const memory::desc& md) { return placeholder(Kind::kOutput, i, md); }

memory DnnlKernel::temp(const memory::desc& md) {
  const int offset = static_cast<int>(temp_bytes_);
  temp_bytes_ += (md.get_size() + 63) / 64 * 64;
  return placeholder(Kind::kTemp, offset, md);
}

memory DnnlKernel::temp_alias(const memory& t, const memory::desc& md) {
  const int slot = slot_of(t);
  if (slot < 0 || slots_[slot].kind != Kind::kTemp || md.get_size() > slots_[slot].md.get_size())
    throw dnnl::error(dnnl_invalid_arguments, "temp_alias: no temporary of this kernel at least that large");
  return placeholder(Kind::kTemp, slots_[slot].index, md);
}

memory DnnlKernel::own(const memory::desc& md) {
  weight_bytes_ += md.get_size();
  return placeholder(Kind::kOwned, -1, md);
}

memory DnnlKernel::adopt(const memory::desc& md, std::shared_ptr<const PackedBlob> blob) {
  weight_bytes_ += md.get_size();
  memory m(md, engine(), const_cast<void*>(blob->data()));  // weights: only read by the primitives
  blobs_.push_back(std::move(blob));
  slots_.push_back({Kind::kOwned, -1, m, md});
  return m;
}

int DnnlKernel::slot_of(const memory& m) const {
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].handle.get() == m.get()) return static_cast<int>(i);
  return -1;
}

void DnnlKernel::add_step(const dnnl::primitive& p, const std::unordered_map<int, memory>& args) {
  Step s;
  s.prim = p;
  for (const auto& [arg, mem] : args) {
    const int slot = slot_of(mem);
    if (slot < 0) throw dnnl::error(dnnl_invalid_arguments, "a primitive argument is no memory of this kernel");
    s.args.push_back({arg, slot});
  }
  const_dnnl_primitive_desc_t pd = p.get_primitive_desc();
  const_dnnl_primitive_attr_t attr = nullptr;
  dnnl_scratchpad_mode_t mode = dnnl_scratchpad_mode_library;
  if (dnnl_primitive_desc_get_attr(pd, &attr) != dnnl_success ||
      dnnl_primitive_attr_get_scratchpad_mode(attr, &mode) != dnnl_success || mode != dnnl_scratchpad_mode_user)
    throw dnnl::error(dnnl_invalid_arguments, "a primitive was made without user_scratchpad()");
  const dnnl_memory_desc_t* smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (smd) s.scratchpad = memory::desc(*smd);
  scratchpad_bytes_ = std::max(scratchpad_bytes_, s.scratchpad.get_size());
  steps_.push_back(std::move(s));
}

struct DnnlKernel::State : KernelState {
  dnnl::stream stream;
  std::vector<memory> mems;                        // per slot (owned slots share the kernel's)
  std::vector<memory> scratchpads;                 // per step (empty when none)
  std::vector<std::vector<dnnl_exec_arg_t>> args;  // per step, ready for dnnl_primitive_execute
};

std::unique_ptr<KernelState> DnnlKernel::make_state() const {
  auto st = std::make_unique<State>();
  st->stream = dnnl::stream(engine());
  for (const Slot& s : slots_)
    st->mems.push_back(s.kind == Kind::kOwned ? s.handle : memory(s.md, engine(), DNNL_MEMORY_NONE));
  for (const Step& step : steps_) {
    std::vector<dnnl_exec_arg_t> a;
    for (const Arg& x : step.args) a.push_back({x.arg, st->mems[x.slot].get()});
    memory pad;
    if (step.scratchpad.get_size() > 0) {
      pad = memory(step.scratchpad, engine(), DNNL_MEMORY_NONE);
      a.push_back({DNNL_ARG_SCRATCHPAD, pad.get()});
    }
    st->scratchpads.push_back(pad);
    st->args.push_back(std::move(a));
  }
  return st;
}

Status DnnlKernel::run(ComputeContext& ctx) const {
  auto* st = static_cast<State*>(ctx.res.state);
  if (!st) return ctx.error("oneDNN kernel run without its state");
  if (ctx.res.scratch_bytes < scratch_bytes())
    return ctx.error("oneDNN kernel: %zu scratch bytes given, %zu needed", ctx.res.scratch_bytes, scratch_bytes());
  char* scratch = static_cast<char*>(ctx.res.scratch);
  omp_throttle_tick();
  try {
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      void* p = nullptr;
      switch (s.kind) {
        case Kind::kOwned: continue;
        case Kind::kInput: p = ctx.has_input(s.index) ? ctx.in(s.index).data : nullptr; break;
        case Kind::kOutput: p = ctx.has_output(s.index) ? ctx.out(s.index).data : nullptr; break;
        case Kind::kTemp: p = scratch + s.index; break;
      }
      if (!p)
        return ctx.error("oneDNN kernel: no buffer for %s %d", s.kind == Kind::kOutput ? "output" : "input", s.index);
      st->mems[i].set_data_handle(p);
    }
    if (before_) before_(ctx);
    const bool alt = use_alt_ && use_alt_(ctx);
    const size_t first = alt ? split_ : 0, last = alt ? steps_.size() : std::min(split_, steps_.size());
    for (size_t i = first; i < last; ++i) {
      if (st->scratchpads[i]) st->scratchpads[i].set_data_handle(scratch + temp_bytes_);
      const auto& a = st->args[i];
      dnnl_status_t rc =
          dnnl_primitive_execute(steps_[i].prim.get(), st->stream.get(), static_cast<int>(a.size()), a.data());
      if (rc != dnnl_success) return ctx.error("oneDNN: primitive execution failed (status %d)", static_cast<int>(rc));
    }
    st->stream.wait();
    const auto& after = alt ? alt_after_ : after_;
    if (after) after(ctx);
  } catch (const dnnl::error& e) {
    return ctx.error("oneDNN: %s", e.what());
  }
  return Status::ok();
}

static memory reorder_owned(DnnlKernel& k, const memory& src, const memory::desc& md) {
  memory dst = k.own(md);
  dnnl::stream s(engine());
  memory from = src;
  dnnl::reorder(from, dst).execute(s, from, dst);
  s.wait();
  return dst;
}

std::string packed_layout(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.ndims < 0 || d.ndims > DNNL_MAX_NDIMS) return "";
  ByteWriter w;
  const auto dims = [&](const dnnl_dims_t& a, int n) {
    for (int i = 0; i < n; ++i) w.i64(a[i]);
  };
  w.i32(d.ndims);
  dims(d.dims, d.ndims);
  w.i32(d.data_type);
  dims(d.padded_dims, d.ndims);
  dims(d.padded_offsets, d.ndims);
  w.i64(d.offset0);
  w.i32(d.format_kind);
  if (d.format_kind == dnnl_blocked) {
    const dnnl_blocking_desc_t& b = d.format_desc.blocking;
    if (b.inner_nblks < 0 || b.inner_nblks > DNNL_MAX_NDIMS) return "";
    dims(b.strides, d.ndims);
    w.i32(b.inner_nblks);
    dims(b.inner_blks, b.inner_nblks);
    dims(b.inner_idxs, b.inner_nblks);
  } else if (d.format_kind == dnnl_format_kind_wino) {
    const dnnl_wino_desc_t& x = d.format_desc.wino_desc;
    for (int v :
         {static_cast<int>(x.wino_format), x.r, x.alpha, x.ic, x.oc, x.ic_block, x.oc_block, x.ic2_block, x.oc2_block})
      w.i32(v);
    w.f32(x.adj_scale);
    w.u64(x.size);
  } else {
    return "";
  }
  w.u64(d.extra.flags);
  w.i32(d.extra.compensation_mask);
  w.f32(d.extra.scale_adjust);
  w.i32(d.extra.asymm_compensation_mask);
  return w.out;
}

memory packed_weights(DnnlKernel& k, const StepRequest& req, const std::string& what, const memory& src,
                      const memory::desc& md) {
  std::string layout = req.packed ? packed_layout(md) : std::string();
  if (layout.empty() || req.node->inputs.size() < 2 || req.node->outputs.empty()) return reorder_owned(k, src, md);
  const std::string key =
      PackedWeights::key_of("dnnl:" + what, req.node->inputs[1], req.node->outputs[0], req.node->name);
  const size_t bytes = md.get_size();
  if (std::shared_ptr<const PackedBlob> b = req.packed->find(key, layout, bytes)) return k.adopt(md, std::move(b));
  std::shared_ptr<PackedBlob> blob = PackedBlob::make(bytes);
  if (!blob) throw std::bad_alloc();
  memory dst(md, engine(), blob->data());
  dnnl::stream s(engine());
  memory from = src;
  dnnl::reorder(from, dst).execute(s, from, dst);
  s.wait();
  // Only Winograd-transformed weights go into saved plans: a reorder into blocks costs about what
  // reading its bytes back from the file does (measured: docs/saved_plans.md).
  const bool save = md.data.format_kind == dnnl_format_kind_wino;
  return k.adopt(md, req.packed->put(key, layout, std::move(blob), save));
}

void log_impl(const StepRequest& req, const std::string& impl) {
  if (std::max(req.verbose, verbose()) < 2) return;
  std::string l;  // formats, e.g. "nChw16c,plain>nChw16c"
  for (size_t i = 0; i < req.inputs.size(); ++i)
    l += std::string(i ? "," : "") + (!req.inputs[i] ? "-" : format_name(req.in_format(i)));
  l += '>';
  for (size_t i = 0; i < req.outputs.size(); ++i)
    l += std::string(i ? "," : "") + (!req.outputs[i] ? "-" : format_name(req.out_format(i)));
  std::fprintf(stderr, "infera dnnl: %s [%s] %s -> %s\n", safe_label(*req.node).c_str(), l.c_str(),
               req.outputs[0]->shape.str().c_str(), impl.c_str());
}

std::pair<Format, Format> pick_formats(Format src, Format dst,
                                       const std::function<std::string(Format, Format)>& impl_of, bool gemm_ok) {
  const Format P = Format::kPlain, B = dnnl_blocked_format();
  // B8: the 8-channel blocks where B is the 16-channel one. oneDNN 2.6's avx512 jit convs take
  // grouped convs whose groups hold 8 channels (RegNet's group width 8) in nChw8c only; in
  // nChw16c it has only its reference conv, and plain is im2col + gemm, 4-8x slower than the jit
  // one (measured, 2026-12-02). Reorders to and from B8 bridge (a small fraction of the conv).
  const Format B8 = B == Format::kNChw16c ? Format::kNChw8c : B;
  const std::pair<Format, Format> cands[] = {{src, dst}, {src, B}, {B, B}, {B8, B8}, {P, B}, {P, P}};
  // Rank: reference 0, im2col/gemm 1, direct jit/brgemm 2; the first best candidate wins.
  auto rank = [gemm_ok](const std::string& impl) {
    if (impl.rfind("ref", 0) == 0) return 0;
    return !gemm_ok && impl.find("gemm") != std::string::npos && impl.find("brg") == std::string::npos ? 1 : 2;
  };
  std::pair<Format, Format> best{src, dst};
  int best_rank = -1;
  for (size_t i = 0; i < std::size(cands) && best_rank < 2; ++i) {
    bool seen = false;
    for (size_t j = 0; j < i; ++j) seen = seen || cands[j] == cands[i];
    if (seen) continue;
    try {
      const int r = rank(impl_of(cands[i].first, cands[i].second));
      if (r > best_rank) best = cands[i], best_rank = r;
    } catch (const dnnl::error&) {
    }
  }
  return best;
}

static dnnl::reorder make_reorder(const memory::desc& from, const memory::desc& to) {
  return dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to, user_scratchpad()));
}

memory input_as(DnnlKernel& k, int slot, const memory::desc& given, const memory::desc& want) {
  memory bound = k.bind_input(slot, given);
  if (given == want) return bound;
  memory scratch = k.temp(want);
  k.add_step(make_reorder(given, want), {{DNNL_ARG_FROM, bound}, {DNNL_ARG_TO, scratch}});
  return scratch;
}

OutputAs output_as(DnnlKernel& k, int slot, const memory::desc& given, const memory::desc& want) {
  memory bound = k.bind_output(slot, given);
  return {given == want ? bound : k.temp(want), bound};
}

void OutputAs::finish(DnnlKernel& k) const {
  if (compute.get() == bound.get()) return;
  k.add_step(make_reorder(compute.get_desc(), bound.get_desc()), {{DNNL_ARG_FROM, compute}, {DNNL_ARG_TO, bound}});
}

// Whether oneDNN makes a Winograd convolution here (oneDNN 2.6: AVX-512 only), probed once on a
// ResNet-like 3x3 stride-1 conv.
bool has_winograd() {
  static const bool yes = [] {
    using dnnl::memory;
    try {
      const memory::data_type f = memory::data_type::f32;
      const memory::desc x({2, 32, 14, 14}, f, memory::format_tag::any), w({32, 32, 3, 3}, f, memory::format_tag::any),
          y({2, 32, 14, 14}, f, memory::format_tag::any);
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_winograd, x, w,
                                        y, {1, 1}, {1, 1}, {1, 1});
      dnnl::convolution_forward::primitive_desc pd(d, engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return yes;
}

// ---------------------------------------------------------------- dispatch
namespace {

struct Family {
  Support (*query)(const StepRequest&);
  std::unique_ptr<DnnlKernel> (*create)(const StepRequest&);
  // Takes values other than float32 (QConv and pools: int8; Resize: its int64 sizes); its query
  // checks the dtypes. Every other family is float32 only.
  bool any_dtype = false;
};

// The family of a step, from its typed op (a few math ops have no typed attributes).
const Family* family_of(const StepRequest& req) {
  static const Family conv{conv_query, conv_create}, deconv{deconv_query, deconv_create}, gemm{gemm_query, gemm_create},
      mm{matmul_query, matmul_create}, pool{pool_query, pool_create, true}, bn{bn_query, bn_create},
      elt{eltwise_query, eltwise_create}, bin{binary_query, binary_create}, sm{softmax_query, softmax_create},
      cat{concat_query, concat_create}, qconv{qconv_query, qconv_create, true},
      resize{resize_query, resize_create, true}, tr{transpose_query, transpose_create},
      ln{layernorm_query, layernorm_create}, shuffle{shuffle_query, shuffle_create},
      se{squeeze_excite_query, squeeze_excite_create}, catbn{concat_bn_query, concat_bn_create},
      ir{inverted_residual_query, inverted_residual_create};
  const OpKernel* op = req.op;
  if (dynamic_cast<const QConvOp*>(op)) return &qconv;
  if (dynamic_cast<const ConvOp*>(op)) return &conv;
  if (dynamic_cast<const ConvTransposeOp*>(op)) return &deconv;
  if (dynamic_cast<const GemmOp*>(op)) return &gemm;
  if (dynamic_cast<const PoolOp*>(op) || dynamic_cast<const GlobalPoolOp*>(op)) return &pool;
  if (dynamic_cast<const BatchNormOp*>(op)) return &bn;
  if (dynamic_cast<const ConcatBatchNormOp*>(op)) return &catbn;
  if (dynamic_cast<const ActivationOp*>(op) || dynamic_cast<const ClipOp*>(op)) return &elt;
  if (dynamic_cast<const BinaryOp*>(op)) return &bin;
  if (dynamic_cast<const SoftmaxOp*>(op)) return &sm;
  if (dynamic_cast<const ConcatOp*>(op)) return &cat;
  if (dynamic_cast<const ChannelShuffleOp*>(op)) return &shuffle;
  if (dynamic_cast<const SqueezeExciteOp*>(op)) return &se;
  if (dynamic_cast<const InvertedResidualOp*>(op)) return &ir;
  const Node& n = *req.node;
  const bool onnx = n.domain.empty() || n.domain == "ai.onnx";
  if (onnx && n.op_type == "MatMul") return &mm;
  if (onnx && n.op_type == "Resize") return &resize;
  if (onnx && n.op_type == "Transpose") return &tr;
  if ((onnx || n.domain == "com.infera") && n.op_type == "LayerNormalization") return &ln;
  if (onnx &&
      (n.op_type == "Exp" || n.op_type == "Log" || n.op_type == "Sqrt" || n.op_type == "Abs" || n.op_type == "Neg"))
    return &elt;
  return nullptr;
}

const char* isa_name(dnnl::cpu_isa isa) {
  using i = dnnl::cpu_isa;
  switch (isa) {
    case i::sse41: return "sse41";
    case i::avx: return "avx";
    case i::avx2: return "avx2";
    case i::avx2_vnni: return "avx2_vnni";
    case i::avx512_mic: return "avx512_mic";
    case i::avx512_mic_4ops: return "avx512_mic_4ops";
    case i::avx512_core: return "avx512_core";
    case i::avx512_core_vnni: return "avx512_core_vnni";
    case i::avx512_core_bf16: return "avx512_core_bf16";
    case i::avx512_core_amx: return "avx512_core_amx";
    default: return "all";
  }
}

class DnnlBackend : public Backend {
 public:
  const char* name() const override { return "dnnl"; }
  Device device() const override { return Device::cpu(); }

  Support supports(const StepRequest& req) const override {
    if (!req.node || !req.op) return Support::no("no node");
    const Family* f = family_of(req);
    if (!f) return Support::no("oneDNN has no kernel for this op");
    if (!f->any_dtype && !all_float32(req)) return Support::no("float32 only");
    try {
      Support s = f->query(req);
      if (!s.ok) {
        if (s.reason.empty()) s.reason = "shapes or attributes oneDNN does not take";
        return s;
      }
      s.input_formats.resize(req.inputs.size(), kPlainOnly);
      s.output_formats.resize(req.outputs.size(), kPlainOnly);
      return s;
    } catch (const std::exception& e) {
      return Support::no(e.what());
    }
  }

  Result<std::unique_ptr<StepKernel>> create(const StepRequest& req) const override {
    Support s = supports(req);
    if (!s.ok) return std::unique_ptr<StepKernel>();
    const Family* f = family_of(req);
    OmpThreadsScope threads(req.num_threads);
    try {
      std::unique_ptr<DnnlKernel> k = f->create(req);
      if (!k) return std::unique_ptr<StepKernel>();
      // oneDNN's reference implementations ("ref:any") are slower than our own kernels.
      if (k->impl_name().find("ref:") != std::string::npos) {
        if (std::max(req.verbose, verbose()) >= 1)
          std::fprintf(stderr, "infera dnnl: %s declined: oneDNN offers only its reference implementation: %s\n",
                       safe_label(*req.node).c_str(), k->impl_name().c_str());
        return std::unique_ptr<StepKernel>();
      }
      log_impl(req, k->impl_name());
      return std::unique_ptr<StepKernel>(std::move(k));
    } catch (const dnnl::error& e) {
      if (std::max(req.verbose, verbose()) >= 1)
        std::fprintf(stderr, "infera dnnl: %s declined: %s\n", safe_label(*req.node).c_str(), e.what());
      return std::unique_ptr<StepKernel>();
    }
  }

  Result<std::unique_ptr<StepKernel>> create_convert(const ConvertRequest& req) const override {
    if (req.value && (req.value->dtype == DataType::kInt8 || req.value->dtype == DataType::kUInt8))
      return int8_convert(req);  // dnnl_qconv.cpp: int8 NCHW <-> NHWC
    const Format B = dnnl_blocked_format();
    if (!req.from_device.is_cpu() || !req.to_device.is_cpu() || !req.value || req.value->dtype != DataType::kFloat32 ||
        req.value->shape.rank() != 4 || !req.value->shape.fully_known())
      return std::unique_ptr<StepKernel>();
    if (!((req.from == Format::kPlain && req.to == B) || (req.from == B && req.to == Format::kPlain)))
      return std::unique_ptr<StepKernel>();
    const Dims d = req.value->shape.concrete();
    OmpThreadsScope threads(req.num_threads);
    try {
      auto k = std::make_unique<DnnlKernel>("dnnl reorder");
      memory src = k->bind_input(0, md_of(d, req.from)), dst = k->bind_output(0, md_of(d, req.to));
      dnnl::reorder::primitive_desc pd(engine(), src.get_desc(), engine(), dst.get_desc(), user_scratchpad());
      k->set_impl(pd.impl_info_str());
      k->add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
      return std::unique_ptr<StepKernel>(std::move(k));
    } catch (const dnnl::error&) {
      return std::unique_ptr<StepKernel>();
    }
  }

  size_t value_bytes(const ValueInfo& v, Format f) const override {
    return format_bytes(f, v.dtype, v.shape.concrete());
  }

  BackendInfo info() const override {
    BackendInfo b;
    b.name = name();
    b.device = "cpu";
    b.available = true;
    const dnnl_version_t* v = dnnl_version();
    char buf[256];
    std::snprintf(buf, sizeof buf, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    b.version = buf;
    std::snprintf(buf, sizeof buf, "%s%s%s, ISA %s, blocked format %s", b.version.c_str(),
                  std::strcmp(v->hash, "N/A") ? " git " : "", std::strcmp(v->hash, "N/A") ? v->hash : "",
                  isa_name(dnnl::get_effective_cpu_isa()), format_name(dnnl_blocked_format()));
    b.details = buf;
    b.details += std::string("\nconv algorithms: ") +
                 (has_winograd() ? "direct, winograd (the perf db times both for 3x3 stride-1 convs)"
                                 : "direct (no Winograd in oneDNN on this ISA: the CPU's convs have nothing to tune)");
    b.details += std::string("\nint8 conv: ") + (int8_conv_exact() ? "oneDNN int8 (VNNI, exact)"
                                                                   : "exact fp32 path (no VNNI: oneDNN's int8 convs "
                                                                     "halve the weights)");
    b.details += probe();
    return b;
  }

 private:
  // The implementations picked for ResNet-50's 3x3 conv 64->64 and 1x1 conv 64->256 at 56x56,
  // batch 1, through create(), so that infera's own choices (formats, Winograd) show.
  std::string probe() const {
    std::string r;
    for (int64_t m : {64, 256}) {
      const int64_t k = m == 64 ? 3 : 1;
      Node n;
      n.name = "probe";
      n.op_type = "Conv";
      n.inputs = {0, 1};
      n.outputs = {2};
      Attribute pads;
      pads.kind = Attribute::kInts;
      pads.ints.assign(4, k / 2);
      n.attrs["pads"] = pads;
      auto op = make_kernel(n, 17);
      auto w = Tensor::make(DataType::kFloat32, {m, 64, k, k});
      if (!op.is_ok() || !w.is_ok()) return r;
      ValueInfo x{DataType::kFloat32, Shape::of({1, 64, 56, 56}), nullptr};
      ValueInfo wi{DataType::kFloat32, Shape::of({m, 64, k, k}), std::make_shared<Tensor>(w.take())};
      ValueInfo y{DataType::kFloat32, Shape::of({1, m, 56, 56}), nullptr};
      for (Format f : {dnnl_blocked_format(), Format::kPlain}) {
        StepRequest req;
        req.node = &n;
        req.op = op.value().get();
        req.opset = 17;
        req.inputs = {&x, &wi};
        req.outputs = {&y};
        req.input_formats = {f, Format::kPlain};
        req.output_formats = {f};
        auto kern = create(req);
        char buf[128];
        std::snprintf(buf, sizeof buf, "\nconv %lldx%lld 64->%lld 56x56 %s: ", (long long)k, (long long)k, (long long)m,
                      format_name(f));
        r += buf;
        r += kern.is_ok() && kern.value() ? kern.value()->impl_name() : "declined";
      }
    }
    return r;
  }
};

}  // namespace
}  // namespace cpu

Format dnnl_blocked_format() {
  static const Format f = [] {
    using isa = dnnl::cpu_isa;
    switch (dnnl::get_effective_cpu_isa()) {
      case isa::avx512_core:
      case isa::avx512_core_vnni:
      case isa::avx512_core_bf16:
      case isa::avx512_core_amx:
      case isa::avx512_mic:
      case isa::avx512_mic_4ops: return Format::kNChw16c;
      default: return Format::kNChw8c;
    }
  }();
  return f;
}

std::shared_ptr<const Backend> make_dnnl_backend() { return std::make_shared<cpu::DnnlBackend>(); }

}  // namespace infera
