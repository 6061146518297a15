// Softmax / LogSoftmax (plain layout; opset < 13 coerces to 2-D at axis) and Concat (any
// axis plain; along channels blocked when every input's channel count fills whole blocks).
#include "backends/cpu/dnnl_internal.h"
#include "ops/softmax.h"
#include "ops/tensor_ops.h"

namespace infera::cpu {
namespace {

struct SoftmaxPlan {
  Dims dims;
  int axis = 0;
  bool log = false;
};

bool plan_softmax(const StepRequest& req, SoftmaxPlan& p) {
  const auto* op = dynamic_cast<const SoftmaxOp*>(req.op);
  if (!op || op->kind() == SoftmaxKind::kHardmax || req.inputs.size() != 1 || !req.has_in(0)) return false;
  const Dims x = req.in_dims(0);
  if (x != req.out_dims(0) || x.empty() || x.size() > 6) return false;
  for (int64_t d : x)
    if (d <= 0) return false;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = op->axis();
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  p.log = op->kind() == SoftmaxKind::kLogSoftmax;
  if (!op->per_axis()) {  // [prod(dims < axis), prod(dims >= axis)], softmax over the second
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

// oneDNN's softmax takes the row maximum with max instructions that skip NaN and gives 0s for
// a row with NaN or +Inf, where the reference (and ONNX Runtime) give NaN (issue 7): every
// Softmax/LogSoftmax runs on the reference kernel. plan_softmax stays for when a NaN-keeping
// oneDNN is the one linked.
constexpr bool kDnnlSoftmaxKeepsNaN = false;

Support softmax_query(const StepRequest& req) {
  SoftmaxPlan p;
  if (!kDnnlSoftmaxKeepsNaN) return Support::no("oneDNN's softmax drops NaN (a row with NaN or +Inf gives 0s)");
  if (!plan_softmax(req, p)) return Support::no("a Softmax oneDNN does not take (Hardmax, rank > 6, empty)");
  Support s;
  s.ok = true;
  return s;
}

std::unique_ptr<DnnlKernel> softmax_create(const StepRequest& req) {
  using namespace dnnl;
  SoftmaxPlan p;
  if (!kDnnlSoftmaxKeepsNaN || !plan_softmax(req, p)) return nullptr;
  const memory::desc md = plain_md(p.dims);
  const bool log = p.log;
  auto k = std::make_unique<DnnlKernel>(log ? "dnnl logsoftmax" : "dnnl softmax");
  memory src = k->bind_input(0, md), dst = k->bind_output(0, md);
  if (log) {
    logsoftmax_forward::primitive_desc pd({prop_kind::forward_inference, md, p.axis}, user_scratchpad(), engine());
    k->set_impl(pd.impl_info_str());
    k->add_step(logsoftmax_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  } else {
    softmax_forward::primitive_desc pd({prop_kind::forward_inference, md, p.axis}, user_scratchpad(), engine());
    k->set_impl(pd.impl_info_str());
    k->add_step(softmax_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  }
  return k;
}

// ---------------------------------------------------------------- Concat
namespace {

struct ConcatPlan {
  int axis = 0;
  bool blockable = false;  // 4-D along channels, every input's C a multiple of the block
};

bool plan_concat(const StepRequest& req, ConcatPlan& p) {
  const auto* op = dynamic_cast<const ConcatOp*>(req.op);
  if (!op || req.inputs.empty() || req.inputs.size() > 64) return false;
  const Dims y = req.out_dims(0);
  const int64_t rank = static_cast<int64_t>(y.size());
  if (rank == 0 || rank > 6) return false;
  int64_t axis = op->axis();
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  p.axis = static_cast<int>(axis);
  int64_t sum = 0;
  p.blockable = rank == 4 && axis == 1;
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    if (!req.has_in(i)) return false;
    const Dims d = req.in_dims(i);
    if (static_cast<int64_t>(d.size()) != rank) return false;
    for (int64_t j = 0; j < rank; ++j) {
      if (d[j] <= 0) return false;
      if (j != axis && d[j] != y[j]) return false;
    }
    sum += d[axis];
    if (p.blockable && d[1] % format_channel_block(dnnl_blocked_format()) != 0) p.blockable = false;
  }
  return sum == y[axis];
}

}  // namespace

Support concat_query(const StepRequest& req) {
  ConcatPlan p;
  if (!plan_concat(req, p)) return Support::no("a Concat oneDNN does not take (rank > 6, empty inputs, > 64 inputs)");
  Support s;
  s.ok = true;
  if (p.blockable) {
    std::vector<int> all(req.inputs.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    s.input_formats = blocked_slots(req.inputs, all);
    s.output_formats = blocked_slots(req.outputs, {0});
  }
  return s;
}

std::unique_ptr<DnnlKernel> concat_create(const StepRequest& req) {
  using namespace dnnl;
  ConcatPlan p;
  if (!plan_concat(req, p)) return nullptr;
  // Computed in the inputs' format when they share one (oneDNN has only its reference concat
  // for mixed formats), else plain; reorders bridge to the output's format.
  Format f = req.in_format(0);
  for (size_t i = 1; i < req.inputs.size(); ++i)
    if (req.in_format(i) != f) f = Format::kPlain;
  auto k = std::make_unique<DnnlKernel>("dnnl concat");
  std::vector<memory::desc> srcs;
  std::unordered_map<int, memory> args;
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    const Dims d = req.in_dims(i);
    srcs.push_back(md_of(d, f));
    args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] =
        input_as(*k, static_cast<int>(i), md_of(d, req.in_format(i)), srcs.back());
  }
  const Dims y = req.out_dims(0);
  OutputAs out = output_as(*k, 0, md_of(y, req.out_format(0)), md_of(y, f));
  concat::primitive_desc pd(out.compute.get_desc(), p.axis, srcs, engine(), user_scratchpad());
  k->set_impl(pd.impl_info_str() + std::string(out.compute.get() != out.bound.get() ? " (via reorders)" : ""));
  args[DNNL_ARG_DST] = out.compute;
  k->add_step(concat(pd), args);
  out.finish(*k);
  return k;
}

}  // namespace infera::cpu
