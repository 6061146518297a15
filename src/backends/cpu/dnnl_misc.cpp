// Softmax / LogSoftmax (plain layout; opset < 13 coerces to 2-D at axis) and Concat (any
// axis plain; along channels blocked when every input's channel count fills whole blocks).
#include "backends/cpu/dnnl_internal.h"

namespace infera::cpu {
namespace {

struct SoftmaxPlan {
  Dims dims;
  int axis = 0;
};

bool plan_softmax(const AccelRequest& req, SoftmaxPlan& p) {
  if (req.inputs.size() != 1 || !has_in(req, 0)) return false;
  const Dims x = in_dims(req, 0);
  if (x != out_dims(req, 0) || x.empty() || x.size() > 6) return false;
  for (int64_t d : x)
    if (d <= 0) return false;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = req.node->attr_int("axis", req.opset < 13 ? 1 : -1);
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  if (req.opset < 13) {  // [prod(dims < axis), prod(dims >= axis)], softmax over the second
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= x[i];
    p.dims = {outer, inner};
    p.axis = 1;
  } else {
    p.dims = x;
    p.axis = static_cast<int>(axis);
  }
  return true;
}

}  // namespace

AccelSupport softmax_query(const AccelRequest& req) {
  SoftmaxPlan p;
  AccelSupport s;
  s.supported = plan_softmax(req, p);
  return s;
}

std::unique_ptr<AccelKernel> softmax_create(const AccelRequest& req) {
  using namespace dnnl;
  SoftmaxPlan p;
  if (!plan_softmax(req, p)) return nullptr;
  const memory::desc md = plain_md(p.dims);
  const bool log = req.node->op_type == "LogSoftmax";
  auto k = std::make_unique<DnnlKernel>(log ? "dnnl logsoftmax" : "dnnl softmax");
  memory src = k->bind_input(0, md), dst = k->bind_output(0, md);
  if (log) {
    logsoftmax_forward::primitive_desc pd({prop_kind::forward_inference, md, p.axis}, engine());
    k->set_impl(pd.impl_info_str());
    k->add_step(logsoftmax_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  } else {
    softmax_forward::primitive_desc pd({prop_kind::forward_inference, md, p.axis}, engine());
    k->set_impl(pd.impl_info_str());
    k->add_step(softmax_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  }
  log_impl(req, k->impl_name());
  return k;
}

// ---------------------------------------------------------------- Concat
namespace {

struct ConcatPlan {
  int axis = 0;
  bool blockable = false;  // 4-D along channels, every input's C a multiple of the block
};

bool plan_concat(const AccelRequest& req, ConcatPlan& p) {
  if (req.inputs.empty() || req.inputs.size() > 64) return false;
  const Dims y = out_dims(req, 0);
  const int64_t rank = static_cast<int64_t>(y.size());
  if (rank == 0 || rank > 6) return false;
  int64_t axis = req.node->attr_int("axis", 0);
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  p.axis = static_cast<int>(axis);
  int64_t sum = 0;
  p.blockable = rank == 4 && axis == 1;
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    if (!has_in(req, i)) return false;
    const Dims d = in_dims(req, i);
    if (static_cast<int64_t>(d.size()) != rank) return false;
    for (int64_t j = 0; j < rank; ++j) {
      if (d[j] <= 0) return false;
      if (j != axis && d[j] != y[j]) return false;
    }
    sum += d[axis];
    if (p.blockable && d[1] % blocked_channel_block() != 0) p.blockable = false;
  }
  return sum == y[axis];
}

}  // namespace

AccelSupport concat_query(const AccelRequest& req) {
  ConcatPlan p;
  AccelSupport s;
  if (!plan_concat(req, p)) return s;
  s.supported = true;
  if (p.blockable) {
    std::vector<int> all(req.inputs.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    s.input_blocked_ok = blocked_slots(req.inputs, all);
    s.output_blocked_ok = blocked_slots(req.outputs, {0});
  }
  return s;
}

std::unique_ptr<AccelKernel> concat_create(const AccelRequest& req) {
  using namespace dnnl;
  ConcatPlan p;
  if (!plan_concat(req, p)) return nullptr;
  auto k = std::make_unique<DnnlKernel>("dnnl concat");
  std::vector<memory::desc> srcs;
  std::unordered_map<int, memory> args;
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    srcs.push_back(md_of(in_dims(req, i), in_layout(req, i)));
    args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = k->bind_input(static_cast<int>(i), srcs.back());
  }
  const memory::desc dst_md = md_of(out_dims(req, 0), out_layout(req, 0));
  concat::primitive_desc pd(dst_md, p.axis, srcs, engine());
  k->set_impl(pd.impl_info_str());
  args[DNNL_ARG_DST] = k->bind_output(0, dst_md);
  k->add_step(concat(pd), std::move(args));
  log_impl(req, k->impl_name());
  return k;
}

}  // namespace infera::cpu
