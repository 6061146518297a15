// Unary activations (eltwise chains), BatchNormalization (inference, global stats) and binary
// Add/Sub/Mul/Div/Max/Min (one operand full-size, the other broadcast) through oneDNN.
// All of them accept the blocked layout on 4-D activations.
#include <cmath>

#include "backends/cpu/dnnl_internal.h"

namespace infera::cpu {
namespace {

// Reads a constant float scalar input (Clip min/max); false if it is not a known constant.
bool const_scalar(const AccelRequest& req, size_t i, float& v) {
  if (!has_in(req, i)) return true;
  const auto& t = req.inputs[i]->value;
  if (!t || t->dtype() != DataType::kFloat32 || t->numel() != 1) return false;
  v = t->data_as<float>()[0];
  return true;
}

bool plan_eltwise(const AccelRequest& req, std::vector<EltOp>& ops) {
  const Node& n = *req.node;
  if (!has_in(req, 0) || in_dims(req, 0) != out_dims(req, 0) || req.outputs.size() != 1) return false;
  if (n.op_type == "Clip") {
    float lo = -INFINITY, hi = INFINITY;
    if (req.opset < 11) {
      lo = n.attr_float("min", lo);
      hi = n.attr_float("max", hi);
    } else if (!const_scalar(req, 1, lo) || !const_scalar(req, 2, hi)) {
      return false;
    }
    if (std::isnan(lo) || std::isnan(hi) || lo > hi) return false;  // reference semantics for lo > hi differ
    return activation_chain("Clip", true, lo, true, hi, ops);
  }
  if (req.inputs.size() != 1) return false;
  if (n.op_type == "Gelu") {
    const std::string a = n.attr_string("approximate", "none");
    if (a != "none" && a != "tanh") return false;
    return activation_chain(a == "tanh" ? "GeluTanh" : "Gelu", false, 0.f, false, 0.f, ops);
  }
  const char* alpha_name = "alpha";
  const char* beta_name = n.op_type == "Selu" ? "gamma" : "beta";
  return activation_chain(n.op_type, n.has_attr(alpha_name), n.attr_float(alpha_name, 0.f), n.has_attr(beta_name),
                          n.attr_float(beta_name, 0.f), ops) &&
         !ops.empty();
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
InPlaceData bind_data(DnnlKernel& k, const AccelRequest& req,
                      const std::function<std::string(const memory::desc&)>& impl_of) {
  const Dims d = in_dims(req, 0);
  const Layout ls = in_layout(req, 0), ld = out_layout(req, 0);
  Layout c = ld;
  for (Layout cand : {ld, ls, Layout::kPlain}) {
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
    k.add_step(dnnl::reorder(src, r.dst), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, r.dst}});
    r.src = r.dst;
  }
  return r;
}

}  // namespace

AccelSupport eltwise_query(const AccelRequest& req) {
  std::vector<EltOp> ops;
  AccelSupport s;
  if (!plan_eltwise(req, ops)) return s;
  s.supported = true;
  s.follows_input = true;
  s.input_blocked_ok = blocked_slots(req.inputs, {0});
  s.output_blocked_ok = blocked_slots(req.outputs, {0});
  return s;
}

std::unique_ptr<AccelKernel> eltwise_create(const AccelRequest& req) {
  using namespace dnnl;
  std::vector<EltOp> ops;
  if (!plan_eltwise(req, ops)) return nullptr;
  auto make_pd = [](const EltOp& e, const memory::desc& md) {
    return eltwise_forward::primitive_desc({prop_kind::forward_inference, e.alg, md, e.alpha, e.beta}, engine());
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
  log_impl(req, k->impl_name());
  return k;
}

// ---------------------------------------------------------------- BatchNormalization
namespace {

bool plan_bn(const AccelRequest& req) {
  const Node& n = *req.node;
  if (req.inputs.size() != 5 || req.outputs.size() < 1) return false;
  for (size_t i = 1; i < req.outputs.size(); ++i)
    if (has_out(req, i)) return false;  // training outputs
  for (size_t i = 0; i < 5; ++i)
    if (!has_in(req, i)) return false;
  if (n.attr_int("training_mode", 0) != 0 || n.attr_int("spatial", 1) != 1) return false;
  const Dims x = in_dims(req, 0);
  if (x.size() < 2 || x.size() > 5 || out_dims(req, 0) != x) return false;
  for (size_t i = 1; i < 5; ++i)
    if (in_dims(req, i) != Dims{x[1]}) return false;
  return true;
}

}  // namespace

AccelSupport bn_query(const AccelRequest& req) {
  AccelSupport s;
  if (!plan_bn(req)) return s;
  s.supported = true;
  s.input_blocked_ok = blocked_slots(req.inputs, {0});
  s.output_blocked_ok = blocked_slots(req.outputs, {0});
  return s;
}

std::unique_ptr<AccelKernel> bn_create(const AccelRequest& req) {
  using namespace dnnl;
  if (!plan_bn(req)) return nullptr;
  const float eps = req.node->attr_float("epsilon", 1e-5f);
  const auto flags =
      normalization_flags::use_global_stats | normalization_flags::use_scale | normalization_flags::use_shift;
  auto make_pd = [&](const memory::desc& md) {
    return batch_normalization_forward::primitive_desc({prop_kind::forward_inference, md, eps, flags}, engine());
  };
  auto k = std::make_unique<DnnlKernel>("dnnl batchnorm");
  InPlaceData io = bind_data(*k, req, [&](const memory::desc& md) { return make_pd(md).impl_info_str(); });
  batch_normalization_forward::primitive_desc pd = make_pd(io.dst.get_desc());
  k->set_impl(pd.impl_info_str());
  const memory::desc c_md = plain_md({in_dims(req, 0)[1]});
  k->add_step(batch_normalization_forward(pd), {{DNNL_ARG_SRC, io.src},
                                                {DNNL_ARG_DST, io.dst},
                                                {DNNL_ARG_SCALE, k->bind_input(1, c_md)},
                                                {DNNL_ARG_SHIFT, k->bind_input(2, c_md)},
                                                {DNNL_ARG_MEAN, k->bind_input(3, c_md)},
                                                {DNNL_ARG_VARIANCE, k->bind_input(4, c_md)}});
  io.out.finish(*k);
  log_impl(req, k->impl_name());
  return k;
}

// ---------------------------------------------------------------- binary
namespace {

struct BinaryPlan {
  dnnl::algorithm alg = dnnl::algorithm::binary_add;
  int full = 0, bcast = 1;  // input slots of src0 (output-sized) and src1 (broadcast)
  Dims y, b;                // output dims; src1 dims padded to the output rank
};

bool plan_binary(const AccelRequest& req, BinaryPlan& p) {
  using alg = dnnl::algorithm;
  const std::string& op = req.node->op_type;
  if (req.inputs.size() != 2 || !has_in(req, 0) || !has_in(req, 1)) return false;
  bool commutative = true;
  if (op == "Add")
    p.alg = alg::binary_add;
  else if (op == "Mul")
    p.alg = alg::binary_mul;
  else if (op == "Max")
    p.alg = alg::binary_max;
  else if (op == "Min")
    p.alg = alg::binary_min;
  else if (op == "Sub")
    p.alg = alg::binary_sub, commutative = false;
  else if (op == "Div")
    p.alg = alg::binary_div, commutative = false;
  else
    return false;
  p.y = out_dims(req, 0);
  if (p.y.empty() || p.y.size() > 6) return false;
  for (int64_t d : p.y)
    if (d <= 0) return false;
  const Dims a = in_dims(req, 0), b = in_dims(req, 1);
  if (a == p.y) {
    p.full = 0, p.bcast = 1;
  } else if (b == p.y && commutative) {
    p.full = 1, p.bcast = 0;
  } else {
    return false;
  }
  p.b = in_dims(req, p.bcast);
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

AccelSupport binary_query(const AccelRequest& req) {
  BinaryPlan p;
  AccelSupport s;
  if (!plan_binary(req, p)) return s;
  s.supported = true;
  s.follows_input = true;
  // Blocked only for broadcasts oneDNN has fast blocked kernels for: none, per channel
  // ([N or 1, C, 1, 1]), scalar. Others (e.g. [N,H,W,1] in a channels-last LayerNorm) run
  // plain, collapsed to a per-channel pattern.
  if (p.y.size() == 4 && (p.b == p.y || (p.b[2] == 1 && p.b[3] == 1))) {
    s.input_blocked_ok = blocked_slots(req.inputs, {0, 1});
    s.output_blocked_ok = blocked_slots(req.outputs, {0});
  }
  return s;
}

std::unique_ptr<AccelKernel> binary_create(const AccelRequest& req) {
  using namespace dnnl;
  BinaryPlan p;
  if (!plan_binary(req, p)) return nullptr;
  const bool b_native = req.inputs[p.bcast]->shape.rank() == static_cast<int>(p.y.size());
  const Layout la = in_layout(req, p.full), ly = out_layout(req, 0);
  const Layout lb = b_native ? in_layout(req, p.bcast) : Layout::kPlain;
  Dims y3, b3;
  if (p.y.size() != 4 || (la == Layout::kPlain && lb == Layout::kPlain && ly == Layout::kPlain)) {
    if (collapse_plain(p.y, p.b, y3, b3)) p.y = y3, p.b = b3;
  }
  const memory::desc b_md = md_of(p.b, lb);
  auto make_pd = [&](Layout al, Layout yl) {
    return binary::primitive_desc(binary::desc(p.alg, md_of(p.y, al), b_md, md_of(p.y, yl)), engine());
  };
  auto [ca, cy] = p.y.size() == 4
                      ? pick_layouts(la, ly, [&](Layout a, Layout y) { return make_pd(a, y).impl_info_str(); })
                      : std::pair<Layout, Layout>{la, ly};
  const binary::primitive_desc pd = make_pd(ca, cy);
  auto k = std::make_unique<DnnlKernel>("dnnl binary");
  k->set_impl(pd.impl_info_str() + std::string(ca != la || cy != ly ? " (via reorders)" : ""));
  memory a = input_as(*k, p.full, md_of(p.y, la), pd.src0_desc());
  memory b = k->bind_input(p.bcast, b_md);
  OutputAs out = output_as(*k, 0, md_of(p.y, ly), pd.dst_desc());
  k->add_step(binary(pd), {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, out.compute}});
  out.finish(*k);
  log_impl(req, k->impl_name());
  return k;
}

}  // namespace infera::cpu
