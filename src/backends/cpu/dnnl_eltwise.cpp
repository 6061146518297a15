// Unary activations (eltwise chains), BatchNormalization (inference, global stats) and binary
// Add/Sub/Mul/Div/Max/Min (one operand full-size, the other broadcast) through oneDNN.
// All of them accept the blocked format on 4-D activations. Attributes from the typed ops.
#include <cmath>
#include <limits>

#include "backends/cpu/dnnl_internal.h"
#include "ops/elementwise.h"
#include "ops/norm.h"

namespace infera::cpu {
namespace {

// Reads a constant float scalar input (Clip min/max); false if it is not a known constant.
bool const_scalar(const StepRequest& req, size_t i, float& v) {
  if (!req.has_in(i)) return true;
  const auto& t = req.inputs[i]->value;
  if (!t || t->dtype() != DataType::kFloat32 || t->numel() != 1) return false;
  v = t->data_as<float>()[0];
  return true;
}

// The activation of a unary activation step (Clip: constant bounds), false for other steps.
bool activation_step(const StepRequest& req, Activation& a) {
  if (!req.has_in(0) || req.in_dims(0) != req.out_dims(0) || req.outputs.size() != 1) return false;
  if (const auto* clip = dynamic_cast<const ClipOp*>(req.op)) {
    // No bound: the reference's (and ONNX Runtime's) lowest/max float, so that Clip(+Inf) = FLT_MAX.
    a = activation_default(ActKind::kClip);
    a.alpha = std::numeric_limits<float>::lowest();
    a.beta = std::numeric_limits<float>::max();
    if (clip->opset() < 11) {
      a.alpha = clip->attr_min();
      a.beta = clip->attr_max();
    } else if (!const_scalar(req, 1, a.alpha) || !const_scalar(req, 2, a.beta)) {
      return false;
    }
    return !std::isnan(a.alpha) && !std::isnan(a.beta) && a.alpha <= a.beta;  // else reference semantics differ
  }
  if (const auto* act = dynamic_cast<const ActivationOp*>(req.op)) {
    a = act->activation();
    return req.inputs.size() == 1;
  }
  return false;
}

// Relu, Clip and HardSigmoid, whose oneDNN eltwise drops NaN, run as our own loop on the data in
// whatever format the planner gave it (elementwise: the format does not matter, except that the
// padded lanes of a blocked format must stay zero), so that a blocked tensor between two oneDNN
// steps needs no reorder to plain and back. Written so that NaN compares false and stays.
bool own_activation(const StepRequest& req, Activation& a) {
  if (!activation_step(req, a) || nan_safe(a)) return false;
  return a.kind == ActKind::kRelu || a.kind == ActKind::kClip || a.kind == ActKind::kHardSigmoid;
}

// For our elementwise loops: when input 0 and output 0 of the step (dims d) have different formats,
// a oneDNN reorder of the input into the output, where the loop then runs in place. True if added.
bool reorder_into_output(DnnlKernel& k, const StepRequest& req, const Dims& d) {
  const Format ls = req.in_format(0), ld = req.out_format(0);
  if (ls == ld) return false;
  memory src = k.bind_input(0, md_of(d, ls)), dst = k.bind_output(0, md_of(d, ld));
  k.add_step(dnnl::reorder(
                 dnnl::reorder::primitive_desc(engine(), src.get_desc(), engine(), dst.get_desc(), user_scratchpad())),
             {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
  return true;
}

// The padded lanes (channels C % block .. block of the last channel block) of a blocked y
// [batch][cb][hw][block] back to zero, after a loop whose f(0) may be non-zero.
void zero_padded_lanes(float* y, int64_t batch, int64_t cb, int64_t hw, int64_t block, int64_t C) {
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t j = 0; j < hw; ++j)
      for (int64_t c = C % block; c < block; ++c) y[((i * cb + cb - 1) * hw + j) * block + c] = 0.f;
}

std::unique_ptr<DnnlKernel> own_activation_create(const StepRequest& req, const Activation& a) {
  const Dims d = req.in_dims(0);
  auto k = std::make_unique<DnnlKernel>("infera activation");
  const bool reorder = reorder_into_output(*k, req, d);
  k->set_after(activation_after(a, d, req.out_format(0), !reorder));
  k->set_impl(std::string(activation_name(a.kind)) + " loop (oneDNN's drops NaN)" + (reorder ? " (via reorder)" : ""));
  return k;
}

bool plan_eltwise(const StepRequest& req, std::vector<EltOp>& ops) {
  using alg = dnnl::algorithm;
  const Node& n = *req.node;
  if (!req.has_in(0) || req.in_dims(0) != req.out_dims(0) || req.outputs.size() != 1) return false;
  Activation a;
  if (activation_step(req, a)) return nan_safe(a) && eltwise_chain(a, ops) && !ops.empty();
  if (req.inputs.size() != 1 || dynamic_cast<const ClipOp*>(req.op) || dynamic_cast<const ActivationOp*>(req.op))
    return false;
  // Exp is left out: oneDNN's eltwise_exp gives exp(NaN) = +Inf (measured, oneDNN 2.6).
  static const std::pair<const char*, alg> math[] = {
      {"Log", alg::eltwise_log}, {"Sqrt", alg::eltwise_sqrt}, {"Abs", alg::eltwise_abs}, {"Neg", alg::eltwise_linear}};
  for (const auto& [name, a] : math)
    if (n.op_type == name) {
      ops = {{a, a == alg::eltwise_linear ? -1.f : 0.f, 0.f}};
      return true;
    }
  return false;
}

// Eltwise and batch norm take one descriptor for src and dst. Picks the layout to compute in
// (Y's, else X's, else plain: the first where every step has a fast implementation; oneDNN
// has only reference kernels for ops that turn 0 into non-0 on zero-padded blocked data),
// binds X and Y, and returns {data to read, data to write}: when X is not in that layout it
// is reordered into the written one first and the op runs in place. `finish` adds the
// reorder into Y when Y is not in that layout.
struct InPlaceData {
  memory src, dst;
  OutputAs out;
};
InPlaceData bind_data(DnnlKernel& k, const StepRequest& req,
                      const std::function<std::string(const memory::desc&)>& impl_of) {
  const Dims d = req.in_dims(0);
  const Format ls = req.in_format(0), ld = req.out_format(0);
  Format c = ld;
  for (Format cand : {ld, ls, Format::kPlain}) {
    try {
      if (impl_of(md_of(d, cand)).find("ref") == std::string::npos) {
        c = cand;
        break;
      }
    } catch (const dnnl::error&) {
    }
  }
  InPlaceData r;
  memory src = k.bind_input(0, md_of(d, ls));
  r.out = output_as(k, 0, md_of(d, ld), md_of(d, c));
  r.dst = r.out.compute;
  r.src = src;
  if (ls != c) {
    k.add_step(dnnl::reorder(dnnl::reorder::primitive_desc(engine(), src.get_desc(), engine(), r.dst.get_desc(),
                                                           user_scratchpad())),
               {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, r.dst}});
    r.src = r.dst;
  }
  return r;
}

}  // namespace

Support eltwise_query(const StepRequest& req) {
  std::vector<EltOp> ops;
  Activation own;
  if (!plan_eltwise(req, ops) && !own_activation(req, own))
    return Support::no("an activation oneDNN has no eltwise for (or Clip bounds not constant)");
  Support s;
  s.ok = true;
  s.follows_input = true;
  s.input_formats = blocked_slots(req.inputs, {0});
  s.output_formats = blocked_slots(req.outputs, {0});
  return s;
}

std::unique_ptr<DnnlKernel> eltwise_create(const StepRequest& req) {
  using namespace dnnl;
  std::vector<EltOp> ops;
  Activation own;
  if (own_activation(req, own)) return own_activation_create(req, own);
  if (!plan_eltwise(req, ops)) return nullptr;
  auto make_pd = [](const EltOp& e, const memory::desc& md) {
    return eltwise_forward::primitive_desc({prop_kind::forward_inference, e.alg, md, e.alpha, e.beta},
                                           user_scratchpad(), engine());
  };
  auto k = std::make_unique<DnnlKernel>("dnnl eltwise");
  InPlaceData io = bind_data(*k, req, [&](const memory::desc& md) {
    std::string impls;
    for (const EltOp& e : ops) impls += std::string(make_pd(e, md).impl_info_str()) + " ";
    return impls;
  });
  std::string impl;
  for (size_t i = 0; i < ops.size(); ++i) {
    eltwise_forward::primitive_desc pd = make_pd(ops[i], io.dst.get_desc());
    impl += std::string(i ? "+" : "") + pd.impl_info_str();
    k->add_step(eltwise_forward(pd), {{DNNL_ARG_SRC, i == 0 ? io.src : io.dst}, {DNNL_ARG_DST, io.dst}});
  }
  io.out.finish(*k);
  k->set_impl(impl + (io.dst.get() != io.out.bound.get() || io.src.get() == io.dst.get() ? " (via reorders)" : ""));
  return k;
}

// ---------------------------------------------------------------- BatchNormalization
// With constant statistics (every exported model): our own loop, y = act(x * a[c] + b[c]) with a, b
// folded in double as the reference folds them, in one pass in whatever format the planner gave
// (oneDNN's bnorm_jit ran DenseNet's 62 norms at 22-35 GB/s, and the Relu after each was a second
// pass); com.infera.FusedBatchNorm's activation is applied in the same pass (Relu and Clip in the
// loop, NaN kept; any other kind on the chunk just written). Else oneDNN's batch normalization.
namespace {

const BatchNormOp* plan_bn(const StepRequest& req) {
  const auto* op = dynamic_cast<const BatchNormOp*>(req.op);
  if (!op || req.inputs.size() != 5 || req.outputs.size() < 1) return nullptr;
  for (size_t i = 1; i < req.outputs.size(); ++i)
    if (req.has_out(i)) return nullptr;  // training outputs
  for (size_t i = 0; i < 5; ++i)
    if (!req.has_in(i)) return nullptr;
  if (op->training() || !op->spatial()) return nullptr;
  const Dims x = req.in_dims(0);
  if (x.size() < 2 || x.size() > 5 || req.out_dims(0) != x) return nullptr;
  for (size_t i = 1; i < 5; ++i)
    if (req.in_dims(i) != Dims{x[1]}) return nullptr;
  return op;
}

bool constant_stats(const StepRequest& req) {
  for (size_t i = 1; i < 5; ++i)
    if (!req.inputs[i]->value || req.inputs[i]->value->dtype() != DataType::kFloat32) return false;
  return true;
}

// act: 0 none, 1 Relu, 2 Clip [lo, hi]; written so that NaN compares false and stays.
template <int kAct>
inline float bn_act(float v, float lo, float hi) {
  if (kAct == 1) return v < 0.f ? 0.f : v;
  if (kAct == 2) {
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
  }
  return v;
}

// The loops also return max |y| (m) and whether some y is NaN or +-Inf (bad): the output's bound
// (RunResources) for the convs after it, at no extra read.
struct MaxAbs {
  float m = 0.f;
  int bad = 0;
};

// Blocked rows: `pixels` groups of B channels, coefficients a[0..B), b[0..B). The max runs per lane
// (a reduction clause on the B-lane loop reduced across lanes at every pixel, and an integer NaN flag
// beside the float lanes: 2.6-9x slower on DenseNet's norms, measured).
template <int kAct, int B>
inline void bn_block(const float* x, float* y, int64_t pixels, const float* a, const float* b, float lo, float hi,
                     MaxAbs& r) {
  // z collects v * 0: NaN as soon as one v is NaN or +-Inf.
  float m[B] = {}, z[B] = {};
  for (int64_t p = 0; p < pixels; ++p) {
#pragma omp simd
    for (int l = 0; l < B; ++l) {
      const float v = bn_act<kAct>(x[p * B + l] * a[l] + b[l], lo, hi), av = std::fabs(v);
      y[p * B + l] = v;
      m[l] = av > m[l] ? av : m[l];
      z[l] += v * 0.f;
    }
  }
  for (int l = 0; l < B; ++l) {
    r.m = std::max(r.m, m[l]);
    r.bad |= z[l] != 0.f;  // NaN != 0
  }
}

// A plain row: n values of one channel.
template <int kAct>
inline void bn_row(const float* x, float* y, int64_t n, float a, float b, float lo, float hi, MaxAbs& r) {
  float m = r.m, z = 0.f;  // z: NaN as soon as one v is NaN or +-Inf
#pragma omp simd reduction(max : m) reduction(+ : z)
  for (int64_t i = 0; i < n; ++i) {
    const float v = bn_act<kAct>(x[i] * a + b, lo, hi), av = std::fabs(v);
    y[i] = v;
    m = av > m ? av : m;
    z += v * 0.f;
  }
  r.m = m;
  r.bad |= z != 0.f;
}

// Where the loop reads X: row (image n, channel group g) of the output comes from row (n * cb[p] +
// local[g]) of piece p = piece[g], x[p] its first float (one piece for a BatchNormalization, one
// per concatenated input for ConcatBatchNorm).
struct BnSrc {
  const float* const* x;
  const int* piece;
  const int64_t* cb;
  const int64_t* local;
};

// Rows [r0, r1) of `len` floats: row r holds channel group r % cb (of `block` channels).
template <int kAct>
INFERA_CLONES MaxAbs bn_rows(const BnSrc& s, float* y, int64_t r0, int64_t r1, int64_t len, int block, int64_t cb,
                             const float* a, const float* b, float lo, float hi) {
  MaxAbs r;
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t g = i % cb, c = g * block;
    const int p = s.piece[g];
    const float* xr = s.x[p] + ((i / cb) * s.cb[p] + s.local[g]) * len;
    float* yr = y + i * len;
    if (block == 16)
      bn_block<kAct, 16>(xr, yr, len / 16, a + c, b + c, lo, hi, r);
    else if (block == 8)
      bn_block<kAct, 8>(xr, yr, len / 8, a + c, b + c, lo, hi, r);
    else
      bn_row<kAct>(xr, yr, len, a[c], b[c], lo, hi, r);
  }
  return r;
}

struct BnLoop {
  Activation act;
  int vec = 0;    // the activation in the loop: 0 none, 1 Relu, 2 Clip; else act applied after
  int block = 1;  // channels per row group: 1 (plain: a row is one channel's pixels), 8 or 16
  int64_t C = 0, cb = 0, rows = 0, len = 0;
  std::vector<float> a, b;  // per channel, zero on a blocked format's padded lanes

  // The pieces X is read from, in channel order: input slot `slot`, or the scratch at byte `temp`
  // (a reorder put it there), or the output (temp == kInOutput: a reorder put the input there).
  static constexpr size_t kFromInput = SIZE_MAX, kInOutput = SIZE_MAX - 1;
  struct Piece {
    int slot = 0;
    size_t temp = kFromInput;
  };
  std::vector<Piece> pieces;
  std::vector<int64_t> piece_cb;     // channel groups per piece
  std::vector<int> group_piece;      // per output channel group
  std::vector<int64_t> group_local;  // its group within that piece

  // Pieces of c[i] channels each (groups of `block`, whole groups unless a single piece).
  void set_pieces(std::vector<Piece> ps, const std::vector<int64_t>& c) {
    pieces = std::move(ps);
    piece_cb.clear();
    group_piece.clear();
    group_local.clear();
    for (size_t p = 0; p < pieces.size(); ++p) {
      piece_cb.push_back((c[p] + block - 1) / block);
      for (int64_t g = 0; g < piece_cb.back(); ++g) {
        group_piece.push_back(static_cast<int>(p));
        group_local.push_back(g);
      }
    }
  }

  void operator()(ComputeContext& ctx) const {
    float* y = ctx.out(0).ptr<float>();
    std::vector<const float*> xs(pieces.size());
    for (size_t p = 0; p < pieces.size(); ++p) {
      const Piece& q = pieces[p];
      xs[p] = q.temp == kInOutput    ? y
              : q.temp == kFromInput ? ctx.in(q.slot).ptr<const float>()
                                     : reinterpret_cast<const float*>(static_cast<char*>(ctx.res.scratch) + q.temp);
    }
    const BnSrc src{xs.data(), group_piece.data(), piece_cb.data(), group_local.data()};
    const int threads = rows * len >= (int64_t(1) << 15) ? std::max(1, ctx.num_threads) : 1;
    float m = 0.f;
    int bad = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(max : m) reduction(| : bad)
    for (int j = 0; j < threads; ++j) {
      const int64_t r0 = rows * j / threads, r1 = rows * (j + 1) / threads;
      MaxAbs r;
      if (vec == 1) {
        r = bn_rows<1>(src, y, r0, r1, len, block, cb, a.data(), b.data(), 0.f, 0.f);
      } else if (vec == 2) {
        r = bn_rows<2>(src, y, r0, r1, len, block, cb, a.data(), b.data(), act.alpha, act.beta);
      } else {
        r = bn_rows<0>(src, y, r0, r1, len, block, cb, a.data(), b.data(), 0.f, 0.f);
        if (!act.is_identity()) {
          apply_activation(act, y + r0 * len, (r1 - r0) * len);  // in cache: the chunk just written
          r.bad = 1;                                             // no bound claimed for the other kinds
        }
      }
      m = std::max(m, r.m);
      bad |= r.bad;
    }
    ctx.res.set_out_bound(0, bad ? RunResources::kNoBound : m);
    if (block > 1 && C % block != 0 && (vec == 2 || (vec == 0 && !act.is_identity())))
      zero_padded_lanes(y, rows / cb, cb, len / block, block, C);
  }
};

// The loop's coefficients (bn_affine; zero on a blocked format's padded lanes) and geometry for
// output dims d in format ld, from scale, B, mean, var (float32 [C]).
BnLoop bn_loop(const Activation& act, float eps, const Dims& d, Format ld, const float* g, const float* be,
               const float* m, const float* v) {
  BnLoop L;
  L.act = act;
  L.vec = act.is_identity() ? 0 : act.kind == ActKind::kRelu ? 1 : act.kind == ActKind::kClip ? 2 : 0;
  L.block = d.size() == 4 ? std::max(1, format_channel_block(ld)) : 1;
  L.C = d[1];
  L.cb = (L.C + L.block - 1) / L.block;
  int64_t hw = 1;
  for (size_t i = 2; i < d.size(); ++i) hw *= d[i];
  L.rows = d[0] * L.cb;
  L.len = hw * L.block;
  L.a.assign(static_cast<size_t>(L.cb * L.block), 0.f);
  L.b.assign(L.a.size(), 0.f);
  bn_affine(g, be, m, v, eps, L.C, L.a.data(), L.b.data());
  return L;
}

}  // namespace

Support bn_query(const StepRequest& req) {
  const BatchNormOp* op = plan_bn(req);
  if (!op) return Support::no("a BatchNormalization oneDNN does not take (training mode, not spatial)");
  if (op->fused() && !constant_stats(req))
    return Support::no("a FusedBatchNorm with statistics that are not float32 constants");
  Support s;
  s.ok = true;
  s.input_formats = blocked_slots(req.inputs, {0});
  s.output_formats = blocked_slots(req.outputs, {0});
  return s;
}

std::unique_ptr<DnnlKernel> bn_create(const StepRequest& req) {
  using namespace dnnl;
  const BatchNormOp* op = plan_bn(req);
  if (!op) return nullptr;
  const Dims d = req.in_dims(0);
  if (constant_stats(req)) {
    BnLoop L = bn_loop(op->activation(), op->epsilon(), d, req.out_format(0), req.inputs[1]->value->data_as<float>(),
                       req.inputs[2]->value->data_as<float>(), req.inputs[3]->value->data_as<float>(),
                       req.inputs[4]->value->data_as<float>());
    auto k = std::make_unique<DnnlKernel>("infera batchnorm");
    const bool reorder = reorder_into_output(*k, req, d);
    BnLoop::Piece x;
    if (reorder) x.temp = BnLoop::kInOutput;
    L.set_pieces({x}, {L.C});
    const std::string act = L.act.is_identity() ? "" : std::string(" + ") + activation_name(L.act.kind);
    k->set_after(std::move(L));
    k->set_impl("loop" + act + (reorder ? " (via reorder)" : ""));
    return k;
  }
  const float eps = op->epsilon();
  const auto flags =
      normalization_flags::use_global_stats | normalization_flags::use_scale | normalization_flags::use_shift;
  auto make_pd = [&](const memory::desc& md) {
    return batch_normalization_forward::primitive_desc({prop_kind::forward_inference, md, eps, flags},
                                                       user_scratchpad(), engine());
  };
  auto k = std::make_unique<DnnlKernel>("dnnl batchnorm");
  InPlaceData io = bind_data(*k, req, [&](const memory::desc& md) { return make_pd(md).impl_info_str(); });
  batch_normalization_forward::primitive_desc pd = make_pd(io.dst.get_desc());
  k->set_impl(pd.impl_info_str());
  const memory::desc c_md = plain_md({d[1]});
  k->add_step(batch_normalization_forward(pd), {{DNNL_ARG_SRC, io.src},
                                                {DNNL_ARG_DST, io.dst},
                                                {DNNL_ARG_SCALE, k->bind_input(1, c_md)},
                                                {DNNL_ARG_SHIFT, k->bind_input(2, c_md)},
                                                {DNNL_ARG_MEAN, k->bind_input(3, c_md)},
                                                {DNNL_ARG_VARIANCE, k->bind_input(4, c_md)}});
  io.out.finish(*k);
  return k;
}

// ---------------------------------------------------------------- ConcatBatchNorm
// The BatchNormalization loop reading each output channel group from the concatenated input that
// holds it: no concatenated value is written. In oneDNN's blocked format when every input's C is
// a multiple of the block (DenseNet: 32-channel growth), else plain; an input the planner gives in
// another format than the output's is reordered into scratch first.
namespace {

const ConcatBatchNormOp* plan_concat_bn(const StepRequest& req, std::vector<int64_t>& channels) {
  const auto* op = dynamic_cast<const ConcatBatchNormOp*>(req.op);
  constexpr size_t k0 = ConcatBatchNormOp::kFirstX;
  if (!op || req.inputs.size() <= k0 || req.outputs.size() != 1 || !req.has_out(0)) return nullptr;
  const Dims y = req.out_dims(0);
  if (y.size() < 2 || y.size() > 5) return nullptr;
  for (size_t i = 0; i < k0; ++i)
    if (!req.has_in(i) || !req.inputs[i]->value || req.inputs[i]->value->dtype() != DataType::kFloat32 ||
        req.in_dims(i) != Dims{y[1]})
      return nullptr;
  channels.clear();
  int64_t sum = 0;
  for (size_t i = k0; i < req.inputs.size(); ++i) {
    if (!req.has_in(i) || req.inputs[i]->value) return nullptr;
    Dims d = req.in_dims(i);
    if (d.size() != y.size()) return nullptr;
    channels.push_back(d[1]);
    sum += d[1];
    d[1] = y[1];
    if (d != y) return nullptr;
  }
  return sum == y[1] ? op : nullptr;
}

}  // namespace

Support concat_bn_query(const StepRequest& req) {
  std::vector<int64_t> c;
  if (!plan_concat_bn(req, c)) return Support::no("a ConcatBatchNorm whose statistics are not float32 constants");
  Support s;
  s.ok = true;
  const int64_t block = format_channel_block(dnnl_blocked_format());
  bool whole = req.out_dims(0).size() == 4;
  for (int64_t ci : c) whole = whole && ci % block == 0;
  if (whole) {
    std::vector<int> xs;
    for (size_t i = ConcatBatchNormOp::kFirstX; i < req.inputs.size(); ++i) xs.push_back(static_cast<int>(i));
    s.input_formats = blocked_slots(req.inputs, xs);
    s.output_formats = blocked_slots(req.outputs, {0});
  }
  return s;
}

std::unique_ptr<DnnlKernel> concat_bn_create(const StepRequest& req) {
  std::vector<int64_t> c;
  const ConcatBatchNormOp* op = plan_concat_bn(req, c);
  if (!op) return nullptr;
  const Dims y = req.out_dims(0);
  const Format ld = req.out_format(0);
  BnLoop L = bn_loop(op->activation(), op->epsilon(), y, ld, req.inputs[0]->value->data_as<float>(),
                     req.inputs[1]->value->data_as<float>(), req.inputs[2]->value->data_as<float>(),
                     req.inputs[3]->value->data_as<float>());
  for (int64_t ci : c)
    if (ci % L.block != 0) return nullptr;  // the query offers blocked formats only for whole groups
  auto k = std::make_unique<DnnlKernel>("infera concat batchnorm");
  std::vector<BnLoop::Piece> pieces(c.size());
  int reorders = 0;
  for (size_t p = 0; p < c.size(); ++p) {
    const int slot = static_cast<int>(ConcatBatchNormOp::kFirstX + p);
    pieces[p].slot = slot;
    if (req.in_format(slot) == ld) continue;
    const Dims d = req.in_dims(slot);
    const dnnl::memory in = k->bind_input(slot, md_of(d, req.in_format(slot))), to = k->temp(md_of(d, ld));
    k->add_step(dnnl::reorder(
                    dnnl::reorder::primitive_desc(engine(), in.get_desc(), engine(), to.get_desc(), user_scratchpad())),
                {{DNNL_ARG_FROM, in}, {DNNL_ARG_TO, to}});
    pieces[p].temp = k->temp_offset(to);
    ++reorders;
  }
  L.set_pieces(std::move(pieces), c);
  const std::string act = L.act.is_identity() ? "" : std::string(" + ") + activation_name(L.act.kind);
  k->set_impl("loop" + act + " (" + std::to_string(c.size()) + " inputs" +
              (reorders ? ", " + std::to_string(reorders) + " via reorder" : "") + ")");
  k->set_after(std::move(L));
  return k;
}

// ---------------------------------------------------------------- binary
namespace {

struct BinaryPlan {
  dnnl::algorithm alg = dnnl::algorithm::binary_add;
  int full = 0, bcast = 1;  // input slots of src0 (output-sized) and src1 (broadcast)
  Dims y, b;                // output dims; src1 dims padded to the output rank
};

bool plan_binary(const StepRequest& req, BinaryPlan& p) {
  using alg = dnnl::algorithm;
  const auto* op = dynamic_cast<const BinaryOp*>(req.op);
  if (!op || req.inputs.size() != 2 || !req.has_in(0) || !req.has_in(1)) return false;
  bool commutative = true;
  switch (op->kind()) {
    case BinaryKind::kAdd: p.alg = alg::binary_add; break;
    case BinaryKind::kMul: p.alg = alg::binary_mul; break;
    // binary_max/min return src1 where src0 is NaN (max/min instructions): Max(NaN, 1) = 1, where
    // the reference gives NaN. Declined: the reference kernel runs them.
    case BinaryKind::kMax:
    case BinaryKind::kMin: return false;
    case BinaryKind::kSub: p.alg = alg::binary_sub, commutative = false; break;
    case BinaryKind::kDiv: p.alg = alg::binary_div, commutative = false; break;
    default: return false;
  }
  p.y = req.out_dims(0);
  if (p.y.empty() || p.y.size() > 6) return false;
  for (int64_t d : p.y)
    if (d <= 0) return false;
  const Dims a = req.in_dims(0), b = req.in_dims(1);
  if (a == p.y) {
    p.full = 0, p.bcast = 1;
  } else if (b == p.y && commutative) {
    p.full = 1, p.bcast = 0;
  } else {
    return false;
  }
  p.b = req.in_dims(p.bcast);
  if (p.b.size() > p.y.size()) return false;
  p.b.insert(p.b.begin(), p.y.size() - p.b.size(), 1);
  for (size_t i = 0; i < p.y.size(); ++i)
    if (p.b[i] != 1 && p.b[i] != p.y[i]) return false;
  return true;
}

// For plain data the broadcast pattern matters, not the rank: merges dims into [A, B, C] with
// src1 [1, B, 1] (per-channel style, which has jit kernels) when src1 is broadcast only on
// leading and trailing dims, e.g. [N,C,H,W] * [N,C,1,1] or [N,H,W,C] - [N,H,W,1].
// False when the pattern does not fit.
bool collapse_plain(const Dims& y, const Dims& b, Dims& y3, Dims& b3) {
  std::vector<std::pair<bool, int64_t>> seg;  // (src1 full along it, size)
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] == 1) continue;
    const bool full = b[i] == y[i];
    if (!seg.empty() && seg.back().first == full) {
      seg.back().second *= y[i];
    } else {
      seg.emplace_back(full, y[i]);
    }
  }
  int64_t a = 1, m = 1, c = 1;
  size_t i = 0;
  if (i < seg.size() && !seg[i].first) a = seg[i++].second;
  if (i < seg.size() && seg[i].first) m = seg[i++].second;
  if (i < seg.size() && !seg[i].first) c = seg[i++].second;
  if (i != seg.size()) return false;
  if (m == 1) c *= a, a = 1;  // a scalar: one long row (the kernels split the last dim)
  y3 = {a, m, c};
  b3 = {1, m, 1};
  return true;
}

}  // namespace

Support binary_query(const StepRequest& req) {
  BinaryPlan p;
  if (!plan_binary(req, p)) return Support::no("a binary op or broadcast oneDNN does not take");
  Support s;
  s.ok = true;
  s.follows_input = true;
  // Blocked only for broadcasts oneDNN has fast blocked kernels for: none, per channel
  // ([N or 1, C, 1, 1]), scalar. Others (e.g. [N,H,W,1] in a channels-last LayerNorm) run
  // plain, collapsed to a per-channel pattern.
  // Div on zero-padded blocked data divides 0 by 0: oneDNN has only its reference kernel there.
  if (p.y.size() == 4 && p.alg != dnnl::algorithm::binary_div && (p.b == p.y || (p.b[2] == 1 && p.b[3] == 1))) {
    s.input_formats = blocked_slots(req.inputs, {0, 1});
    s.output_formats = blocked_slots(req.outputs, {0});
  }
  // The output may overwrite the full-size operand (Add of a residual: in place).
  s.in_place.emplace_back(p.full, 0);
  return s;
}

std::unique_ptr<DnnlKernel> binary_create(const StepRequest& req) {
  using namespace dnnl;
  BinaryPlan p;
  if (!plan_binary(req, p)) return nullptr;
  const bool b_native = req.inputs[p.bcast]->shape.rank() == static_cast<int>(p.y.size());
  const Format la = req.in_format(p.full), ly = req.out_format(0);
  Format lb = b_native ? req.in_format(p.bcast) : Format::kPlain;
  // A per-channel operand [1, C, 1, 1] has the same bytes plain and blocked when C fills whole
  // blocks: described in the full operand's blocked format, oneDNN takes its jit kernel (with a
  // plain one beside blocked data it has only its reference kernel, and the step went through
  // reorders: ConvNeXt's layer scale, 0.6 -> 3.8 ms in total).
  if (lb == Format::kPlain && la != Format::kPlain && p.y.size() == 4 && p.b.size() == 4 && p.b[0] == 1 &&
      p.b[2] == 1 && p.b[3] == 1 && p.b[1] % format_channel_block(la) == 0)
    lb = la;
  Dims y3, b3;
  if (p.y.size() != 4 || (la == Format::kPlain && lb == Format::kPlain && ly == Format::kPlain)) {
    if (collapse_plain(p.y, p.b, y3, b3)) p.y = y3, p.b = b3;
  }
  const memory::desc b_md = md_of(p.b, lb);
  auto make_pd = [&](Format al, Format yl) {
    return binary::primitive_desc(binary::desc(p.alg, md_of(p.y, al), b_md, md_of(p.y, yl)), user_scratchpad(),
                                  engine());
  };
  auto [ca, cy] = p.y.size() == 4
                      ? pick_formats(la, ly, [&](Format a, Format y) { return make_pd(a, y).impl_info_str(); })
                      : std::pair<Format, Format>{la, ly};
  const binary::primitive_desc pd = make_pd(ca, cy);
  auto k = std::make_unique<DnnlKernel>("dnnl binary");
  k->set_impl(pd.impl_info_str() + std::string(ca != la || cy != ly ? " (via reorders)" : ""));
  memory a = input_as(*k, p.full, md_of(p.y, la), pd.src0_desc());
  memory b = k->bind_input(p.bcast, b_md);
  OutputAs out = output_as(*k, 0, md_of(p.y, ly), pd.dst_desc());
  k->add_step(binary(pd), {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, out.compute}});
  out.finish(*k);
  return k;
}

// ---------------------------------------------------------------- NaN-keeping activations

bool nan_safe(const Activation& a) {
  switch (a.kind) {
    case ActKind::kRelu:
    case ActKind::kClip:
    case ActKind::kHardSigmoid: return false;
    case ActKind::kLeakyRelu: return a.alpha != 0.f;
    default: return true;
  }
}

bool fused_activation(const Activation& a, std::vector<EltOp>& ops, bool& loop) {
  ops.clear();
  loop = false;
  if (a.kind == ActKind::kIdentity) return true;
  if (!nan_safe(a)) {
    loop = a.kind == ActKind::kRelu || a.kind == ActKind::kClip || a.kind == ActKind::kHardSigmoid;
    return loop;
  }
  return eltwise_chain(a, ops);
}

namespace {

// The loops below are built for AVX-512, AVX2 and the baseline (the tree compiles for x86-64,
// where they ran at SSE2 width: the NaN guard's read of a 1.2M-float input took 0.26 ms on one
// core, 0.09 ms as the AVX-512 clone; measured 2026-12-02) and run on chunks shared by the threads.
// Written so that NaN compares false and stays (x < 0 is false for NaN: y = x).
INFERA_CLONES void relu_range(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.f ? 0.f : x[i];
}

INFERA_CLONES void clip_range(const float* x, float* y, int64_t n, float al, float be) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] < al ? al : x[i];
    y[i] = v > be ? be : v;
  }
}

INFERA_CLONES void hardsigmoid_range(const float* x, float* y, int64_t n, float al, float be) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float v = al * x[i] + be;
    v = v < 0.f ? 0.f : v;
    y[i] = v > 1.f ? 1.f : v;
  }
}

// max |p[i]|, or +Inf when some p[i] is NaN or +-Inf (NaN compares false: caught by the second test).
INFERA_CLONES float max_abs_range(const float* p, int64_t n) {
  float m = 0.f;
  int bad = 0;
#pragma omp simd reduction(max : m) reduction(| : bad)
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(p[i]);
    m = a > m ? a : m;
    bad |= !(a <= std::numeric_limits<float>::max());
  }
  return bad ? std::numeric_limits<float>::infinity() : m;
}

// [0, n) in `parts` chunks of whole 64-byte lines: chunk j.
std::pair<int64_t, int64_t> chunk(int64_t n, int parts, int j) {
  const int64_t per = (n / parts + 15) / 16 * 16;
  const int64_t b = std::min(n, per * j), e = j + 1 == parts ? n : std::min(n, per * (j + 1));
  return {b, e};
}

void activation_loop(const Activation& a, const float* x, float* y, int64_t n, int nth) {
  const float al = a.alpha, be = a.beta;
  const int threads = n >= (int64_t(1) << 15) ? std::max(1, nth) : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int j = 0; j < threads; ++j) {
    const auto [b, e] = chunk(n, threads, j);
    switch (a.kind) {
      case ActKind::kRelu: relu_range(x + b, y + b, e - b); break;
      case ActKind::kClip: clip_range(x + b, y + b, e - b, al, be); break;
      default: hardsigmoid_range(x + b, y + b, e - b, al, be); break;  // kHardSigmoid
    }
  }
}

}  // namespace

float max_abs(const float* p, int64_t n, int threads) {
  const int nth = n >= (int64_t(1) << 16) ? std::max(1, threads) : 1;
  if (nth == 1) return max_abs_range(p, n);
  float m = 0.f;
#pragma omp parallel for num_threads(nth) schedule(static) reduction(max : m)
  for (int j = 0; j < nth; ++j) {
    const auto [b, e] = chunk(n, nth, j);
    m = std::max(m, max_abs_range(p + b, e - b));
  }
  return m;
}

std::function<void(ComputeContext&)> activation_after(const Activation& a, const Dims& d, Format f, bool from_input) {
  // Elementwise: the format does not matter, except that the padded lanes of a blocked format
  // must stay zero.
  const int64_t b = d.size() == 4 ? std::max(1, format_channel_block(f)) : 1;
  const int64_t C = d.size() >= 2 ? d[1] : 1, cb = (C + b - 1) / b;
  int64_t hw = 1;
  for (size_t i = 2; i < d.size(); ++i) hw *= d[i];
  const int64_t batch = d.empty() ? 1 : d[0];
  const int64_t n = d.size() >= 2 ? batch * cb * b * hw : (d.empty() ? 1 : d[0]);
  const bool fix_padding = b > 1 && C % b != 0;
  if (a.kind == ActKind::kIdentity && !fix_padding) return nullptr;
  return [a, from_input, n, b, C, cb, hw, batch, fix_padding](ComputeContext& ctx) {
    float* y = ctx.out(0).ptr<float>();
    const float* x = from_input ? ctx.in(0).ptr<const float>() : y;
    if (a.kind != ActKind::kIdentity) activation_loop(a, x, y, n, ctx.num_threads);
    if (fix_padding) zero_padded_lanes(y, batch, cb, hw, b, C);  // f(0) may be non-zero (HardSigmoid)
  };
}

}  // namespace infera::cpu
