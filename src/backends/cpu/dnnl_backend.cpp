// The oneDNN backend's entry points (query/create dispatch, layout reorders, describe) and
// the shared kernel class. Op families live in dnnl_<family>.cpp.
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>

#include "backends/cpu/dnnl_internal.h"

namespace infera {
namespace cpu {

dnnl::engine& engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
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

memory::format_tag blocked_tag() {
  return blocked_channel_block() == 16 ? memory::format_tag::nChw16c : memory::format_tag::nChw8c;
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

memory::desc md_of(const Dims& dims, Layout l) {
  if (l == Layout::kBlocked && dims.size() == 4) return memory::desc(dims, memory::data_type::f32, blocked_tag());
  return plain_md(dims);
}

bool has_in(const AccelRequest& req, size_t i) { return i < req.inputs.size() && req.inputs[i] != nullptr; }
bool has_out(const AccelRequest& req, size_t i) { return i < req.outputs.size() && req.outputs[i] != nullptr; }
Dims in_dims(const AccelRequest& req, size_t i) { return req.inputs[i]->shape.concrete(); }
Dims out_dims(const AccelRequest& req, size_t i) { return req.outputs[i]->shape.concrete(); }
Layout in_layout(const AccelRequest& req, size_t i) {
  return i < req.input_layouts.size() ? req.input_layouts[i] : Layout::kPlain;
}
Layout out_layout(const AccelRequest& req, size_t i) {
  return i < req.output_layouts.size() ? req.output_layouts[i] : Layout::kPlain;
}

bool all_float32(const AccelRequest& req) {
  auto ok = [](const ValueInfo* v) {
    return !v || (v->dtype == DataType::kFloat32 && v->shape.rank_known && v->shape.fully_known());
  };
  for (auto* v : req.inputs)
    if (!ok(v)) return false;
  for (auto* v : req.outputs)
    if (!ok(v)) return false;
  return !req.outputs.empty() && req.outputs[0] != nullptr;
}

std::vector<bool> blocked_slots(const std::vector<const ValueInfo*>& vals, const std::vector<int>& slots) {
  std::vector<bool> r(vals.size(), false);
  for (int s : slots)
    if (s >= 0 && static_cast<size_t>(s) < vals.size() && vals[s] && !vals[s]->value && vals[s]->shape.rank() == 4)
      r[s] = true;
  return r;
}

// ---------------------------------------------------------------- activations
bool activation_chain(const std::string& name, bool has_alpha, float alpha, bool has_beta, float beta,
                      std::vector<EltOp>& out) {
  using alg = dnnl::algorithm;
  const float inf = std::numeric_limits<float>::infinity();
  auto a = [&](float d) { return has_alpha ? alpha : d; };
  auto b = [&](float d) { return has_beta ? beta : d; };
  out.clear();
  if (name.empty() || name == "Identity" || name == "none") return true;
  if (name == "Relu")
    out.push_back({alg::eltwise_relu, 0.f, 0.f});
  else if (name == "LeakyRelu")
    out.push_back({alg::eltwise_relu, a(0.01f), 0.f});
  else if (name == "Sigmoid")
    out.push_back({alg::eltwise_logistic, 0.f, 0.f});
  else if (name == "Tanh")
    out.push_back({alg::eltwise_tanh, 0.f, 0.f});
  else if (name == "Elu")
    out.push_back({alg::eltwise_elu, a(1.f), 0.f});
  else if (name == "Clip")
    out.push_back({alg::eltwise_clip, a(-inf), b(inf)});
  else if (name == "HardSwish")
    out.push_back({alg::eltwise_hardswish, 0.f, 0.f});
  else if (name == "HardSigmoid") {
    out.push_back({alg::eltwise_linear, a(0.2f), b(0.5f)});
    out.push_back({alg::eltwise_clip, 0.f, 1.f});
  } else if (name == "Selu") {
    out.push_back({alg::eltwise_elu, a(1.67326319217681884765625f), 0.f});
    out.push_back({alg::eltwise_linear, b(1.05070102214813232421875f), 0.f});
  } else if (name == "Softplus")
    out.push_back({alg::eltwise_soft_relu, 0.f, 0.f});
  else if (name == "Swish")
    out.push_back({alg::eltwise_swish, a(1.f), 0.f});  // x * sigmoid(alpha x): SiLU
  else if (name == "Mish")
    out.push_back({alg::eltwise_mish, 0.f, 0.f});
  else if (name == "Gelu")
    out.push_back({alg::eltwise_gelu_erf, 0.f, 0.f});
  else if (name == "GeluTanh")
    out.push_back({alg::eltwise_gelu_tanh, 0.f, 0.f});
  else if (name == "Exp")
    out.push_back({alg::eltwise_exp, 0.f, 0.f});
  else if (name == "Log")
    out.push_back({alg::eltwise_log, 0.f, 0.f});
  else if (name == "Sqrt")
    out.push_back({alg::eltwise_sqrt, 0.f, 0.f});
  else if (name == "Abs")
    out.push_back({alg::eltwise_abs, 0.f, 0.f});
  else if (name == "Neg")
    out.push_back({alg::eltwise_linear, -1.f, 0.f});
  else
    return false;
  return true;
}

bool fused_activation(const Node& n, std::vector<EltOp>& out) {
  return activation_chain(n.attr_string("activation", ""), n.has_attr("activation_alpha"),
                          n.attr_float("activation_alpha", 0.f), n.has_attr("activation_beta"),
                          n.attr_float("activation_beta", 0.f), out);
}

void append_eltwise_ops(dnnl::post_ops& po, const std::vector<EltOp>& ops) {
  for (const EltOp& e : ops) po.append_eltwise(1.f, e.alg, e.alpha, e.beta);
}

// ---------------------------------------------------------------- kernel
memory DnnlKernel::bind_input(int i, const memory::desc& md) {
  memory m(md, engine(), DNNL_MEMORY_NONE);
  bindings_.push_back({m, false, i});
  return m;
}

memory DnnlKernel::bind_output(int i, const memory::desc& md) {
  memory m(md, engine(), DNNL_MEMORY_NONE);
  bindings_.push_back({m, true, i});
  return m;
}

memory DnnlKernel::own(const memory::desc& md, bool is_weight) {
  memory m(md, engine());
  if (is_weight) weight_bytes_ += md.get_size();
  return m;
}

void DnnlKernel::add_step(const dnnl::primitive& p, std::unordered_map<int, memory> args, When when, int in, int out) {
  steps_.push_back({p, std::move(args), when, in, out});
}

Status DnnlKernel::run(ComputeContext& ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx.num_threads > 0 && omp_get_max_threads() != ctx.num_threads) omp_set_num_threads(ctx.num_threads);
  try {
    if (!stream_) stream_ = std::make_unique<dnnl::stream>(engine());
    for (Binding& b : bindings_) {
      void* p = nullptr;
      if (b.output) {
        if (ctx.has_output(b.slot)) p = ctx.out(b.slot).data;
      } else if (ctx.has_input(b.slot)) {
        p = ctx.in(b.slot).data;
      }
      if (!p) return ctx.error("oneDNN kernel: no buffer for %s %d", b.output ? "output" : "input", b.slot);
      b.mem.set_data_handle(p);
    }
    for (Step& s : steps_) {
      if (s.when != When::kAlways && (ctx.in(s.in).data == ctx.out(s.out).data) != (s.when == When::kIfAliased))
        continue;
      s.prim.execute(*stream_, s.args);
    }
    stream_->wait();
  } catch (const dnnl::error& e) {
    return ctx.error("oneDNN: %s", e.what());
  }
  return Status::ok();
}

memory reorder_owned(DnnlKernel& k, const memory& src, const memory::desc& md) {
  memory dst = k.own(md);
  dnnl::stream s(engine());
  memory from = src;
  dnnl::reorder(from, dst).execute(s, from, dst);
  s.wait();
  return dst;
}

void log_impl(const AccelRequest& req, const std::string& impl) {
  if (verbose() < 2) return;
  std::string l;  // layouts, e.g. "BP>B": inputs blocked, plain; output blocked
  for (size_t i = 0; i < req.inputs.size(); ++i)
    l += !req.inputs[i] ? '-' : in_layout(req, i) == Layout::kBlocked ? 'B' : 'P';
  l += '>';
  for (size_t i = 0; i < req.outputs.size(); ++i)
    l += !req.outputs[i] ? '-' : out_layout(req, i) == Layout::kBlocked ? 'B' : 'P';
  std::fprintf(stderr, "infera dnnl: %s [%s] %s -> %s\n", req.node->label().c_str(), l.c_str(),
               req.outputs[0]->shape.str().c_str(), impl.c_str());
}

std::pair<Layout, Layout> pick_layouts(Layout src, Layout dst,
                                       const std::function<std::string(Layout, Layout)>& impl_of, bool gemm_ok) {
  using L = Layout;
  const std::pair<L, L> cands[] = {
      {src, dst}, {src, L::kBlocked}, {L::kBlocked, L::kBlocked}, {L::kPlain, L::kBlocked}, {L::kPlain, L::kPlain}};
  // Rank: reference 0, im2col/gemm 1, direct jit/brgemm 2; the first best candidate wins.
  auto rank = [gemm_ok](const std::string& impl) {
    if (impl.rfind("ref", 0) == 0) return 0;
    return !gemm_ok && impl.find("gemm") != std::string::npos && impl.find("brg") == std::string::npos ? 1 : 2;
  };
  std::pair<L, L> best{src, dst};
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

memory input_as(DnnlKernel& k, int slot, const memory::desc& given, const memory::desc& want) {
  memory bound = k.bind_input(slot, given);
  if (given == want) return bound;
  memory scratch = k.own(want, false);
  k.add_step(dnnl::reorder(bound, scratch), {{DNNL_ARG_FROM, bound}, {DNNL_ARG_TO, scratch}});
  return scratch;
}

OutputAs output_as(DnnlKernel& k, int slot, const memory::desc& given, const memory::desc& want) {
  memory bound = k.bind_output(slot, given);
  return {given == want ? bound : k.own(want, false), bound};
}

void OutputAs::finish(DnnlKernel& k) const {
  if (compute.get() == bound.get()) return;
  k.add_step(dnnl::reorder(compute, bound), {{DNNL_ARG_FROM, compute}, {DNNL_ARG_TO, bound}});
}

// ---------------------------------------------------------------- dispatch
namespace {

struct Family {
  AccelSupport (*query)(const AccelRequest&);
  std::unique_ptr<AccelKernel> (*create)(const AccelRequest&);
};

const Family* family_of(const Node& n) {
  static const std::map<std::string, Family> table = [] {
    std::map<std::string, Family> t;
    const Family conv{conv_query, conv_create}, gemm{gemm_query, gemm_create}, mm{matmul_query, matmul_create},
        pool{pool_query, pool_create}, bn{bn_query, bn_create}, elt{eltwise_query, eltwise_create},
        bin{binary_query, binary_create}, sm{softmax_query, softmax_create}, cat{concat_query, concat_create};
    t["Conv"] = conv;
    t["com.infera.FusedConv"] = conv;
    t["ConvTranspose"] = {deconv_query, deconv_create};
    t["Gemm"] = gemm;
    t["com.infera.FusedGemm"] = gemm;
    t["MatMul"] = mm;
    for (const char* p : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) t[p] = pool;
    t["BatchNormalization"] = bn;
    for (const char* e : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Clip", "HardSigmoid", "HardSwish", "Selu",
                          "Softplus", "Exp", "Log", "Sqrt", "Abs", "Neg", "Mish", "Gelu"})
      t[e] = elt;
    t["com.infera.Gelu"] = elt;
    for (const char* b : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) t[b] = bin;
    t["Softmax"] = sm;
    t["LogSoftmax"] = sm;
    t["Concat"] = cat;
    return t;
  }();
  std::string key = (n.domain.empty() || n.domain == "ai.onnx") ? n.op_type : n.domain + "." + n.op_type;
  auto it = table.find(key);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace
}  // namespace cpu

AccelSupport dnnl_query(const AccelRequest& req) {
  if (!req.node || !cpu::all_float32(req)) return {};
  const cpu::Family* f = cpu::family_of(*req.node);
  if (!f) return {};
  try {
    AccelSupport s = f->query(req);
    if (!s.supported) return {};
    s.input_blocked_ok.resize(req.inputs.size(), false);
    s.output_blocked_ok.resize(req.outputs.size(), false);
    return s;
  } catch (const std::exception&) {
    return {};
  }
}

Result<std::unique_ptr<AccelKernel>> dnnl_create(const AccelRequest& req) {
  if (!dnnl_query(req).supported) return std::unique_ptr<AccelKernel>();
  const cpu::Family* f = cpu::family_of(*req.node);
  if (req.num_threads > 0 && omp_get_max_threads() != req.num_threads) omp_set_num_threads(req.num_threads);
  try {
    return f->create(req);
  } catch (const dnnl::error& e) {
    if (cpu::verbose()) std::fprintf(stderr, "infera dnnl: %s declined: %s\n", req.node->label().c_str(), e.what());
    return std::unique_ptr<AccelKernel>();
  }
}

int blocked_channel_block() {
  static const int block = [] {
    using isa = dnnl::cpu_isa;
    switch (dnnl::get_effective_cpu_isa()) {
      case isa::avx512_core:
      case isa::avx512_core_vnni:
      case isa::avx512_core_bf16:
      case isa::avx512_core_amx:
      case isa::avx512_mic:
      case isa::avx512_mic_4ops: return 16;
      default: return 8;
    }
  }();
  return block;
}

size_t blocked_bytes(const std::vector<int64_t>& dims) {
  if (dims.size() != 4) {
    size_t n = 4;
    for (int64_t d : dims) n *= static_cast<size_t>(d);
    return n;
  }
  const int64_t b = blocked_channel_block();
  const int64_t c = (dims[1] + b - 1) / b * b;
  return static_cast<size_t>(dims[0]) * c * dims[2] * dims[3] * sizeof(float);
}

namespace {
using cpu::Dims;
using dnnl::memory;

// Reorder primitives between plain and blocked, made once per (dims, direction).
Status reorder_layout(const TensorRef& src, TensorRef& dst, bool to_blocked) {
  if (src.dtype != DataType::kFloat32 || dst.dtype != DataType::kFloat32 || src.dims != dst.dims)
    return Status::error("reorder: expected two float32 tensors of the same dims");
  struct Entry {
    dnnl::reorder prim;
    memory src, dst;
    dnnl::stream stream;
  };
  static std::mutex mu;
  static std::map<std::pair<Dims, bool>, std::unique_ptr<Entry>> cache;
  std::lock_guard<std::mutex> lock(mu);
  try {
    auto& e = cache[{src.dims, to_blocked}];
    if (!e) {
      using cpu::md_of;
      memory s(md_of(src.dims, to_blocked ? Layout::kPlain : Layout::kBlocked), cpu::engine(), DNNL_MEMORY_NONE);
      memory d(md_of(src.dims, to_blocked ? Layout::kBlocked : Layout::kPlain), cpu::engine(), DNNL_MEMORY_NONE);
      e = std::make_unique<Entry>(Entry{dnnl::reorder(s, d), s, d, dnnl::stream(cpu::engine())});
    }
    e->src.set_data_handle(src.data);
    e->dst.set_data_handle(dst.data);
    e->prim.execute(e->stream, e->src, e->dst);
    e->stream.wait();
  } catch (const dnnl::error& err) {
    return Status::error(std::string("reorder: oneDNN: ") + err.what());
  }
  return Status::ok();
}

}  // namespace

Status reorder_to_plain(const TensorRef& blocked, TensorRef& plain) { return reorder_layout(blocked, plain, false); }
Status reorder_to_blocked(const TensorRef& plain, TensorRef& blocked) { return reorder_layout(plain, blocked, true); }

static const char* isa_name(dnnl::cpu_isa isa) {
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

std::string dnnl_describe() {
  const dnnl_version_t* v = dnnl_version();
  char buf[256];
  std::snprintf(buf, sizeof buf, "oneDNN %d.%d.%d%s%s%s, ISA %s, channel block %d", v->major, v->minor, v->patch,
                std::strcmp(v->hash, "N/A") ? " (" : "", std::strcmp(v->hash, "N/A") ? v->hash : "",
                std::strcmp(v->hash, "N/A") ? ")" : "", isa_name(dnnl::get_effective_cpu_isa()),
                blocked_channel_block());
  std::string r = buf;
  // Probes through dnnl_create, so that infera's own choices (layouts, Winograd) show:
  // ResNet-50's 3x3 conv 64->64 and 1x1 conv 64->256 at 56x56, batch 1.
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
    auto w = Tensor::make(DataType::kFloat32, {m, 64, k, k});
    if (!w.is_ok()) return r;
    ValueInfo x{DataType::kFloat32, Shape::of({1, 64, 56, 56}), nullptr};
    ValueInfo wi{DataType::kFloat32, Shape::of({m, 64, k, k}), std::make_shared<Tensor>(w.take())};
    ValueInfo y{DataType::kFloat32, Shape::of({1, m, 56, 56}), nullptr};
    for (Layout l : {Layout::kBlocked, Layout::kPlain}) {
      AccelRequest req;
      req.node = &n;
      req.opset = 17;
      req.inputs = {&x, &wi};
      req.outputs = {&y};
      req.input_layouts = {l, Layout::kPlain};
      req.output_layouts = {l};
      auto kern = dnnl_create(req);
      std::snprintf(buf, sizeof buf, "\nconv %lldx%lld 64->%lld 56x56 %s: ", (long long)k, (long long)k, (long long)m,
                    l == Layout::kBlocked ? "blocked" : "plain");
      r += buf;
      r += kern.is_ok() && kern.value() ? kern.value()->impl_name() : "declined";
    }
  }
  return r;
}

void dnnl_set_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

}  // namespace infera
