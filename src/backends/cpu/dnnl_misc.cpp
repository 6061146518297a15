// Softmax / LogSoftmax (plain layout; opset < 13 coerces to 2-D at axis) and Concat (any
// axis plain; along channels blocked when every input's channel count fills whole blocks).
#include <algorithm>
#include <cstring>

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
  // At batch 1 the planner may make the inputs dense slices of the output (their producers write
  // them in place): nothing left to copy.
  s.concat_in_place = p.axis == 1 && req.out_dims(0)[0] == 1;
  if (p.blockable) {
    std::vector<int> all(req.inputs.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    s.input_formats = blocked_slots(req.inputs, all);
    s.output_formats = blocked_slots(req.outputs, {0});
  }
  return s;
}

namespace {

// A Concat whose inputs and output share one format in which every input is a contiguous run per
// outer index: plain (any axis), or oneDNN's blocked nChw8c/16c along channels with every input's C
// a multiple of the block (then input i holds C_i/block x H x W x block floats per image, where the
// output holds its channels). Then the Concat is a list of memcpys, split into pieces of at most
// 64 KiB shared by the threads: oneDNN's "simple:any" concat ran at ~5 GB/s on one thread (30% of
// SqueezeNet's batch-1 time, measured 2026-12-01).
std::unique_ptr<DnnlKernel> copy_concat_create(const StepRequest& req, const ConcatPlan& p, Format f) {
  const Dims y = req.out_dims(0);
  const size_t es = dtype_size(req.outputs[0]->dtype);
  if (!es) return nullptr;
  int64_t outer = 1;
  for (int a = 0; a < p.axis; ++a) outer *= y[a];
  std::vector<size_t> run(req.inputs.size());  // bytes of input i per outer index
  size_t out_run = 0;
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    const Dims d = req.in_dims(i);
    size_t r = es;
    for (size_t a = static_cast<size_t>(p.axis); a < d.size(); ++a) r *= static_cast<size_t>(d[a]);
    run[i] = r;
    out_run += r;
  }
  CopyPieces pieces;
  for (int64_t o = 0; o < outer; ++o) {
    size_t dst = static_cast<size_t>(o) * out_run;
    for (size_t i = 0; i < run.size(); ++i) {
      pieces.add(static_cast<int>(i), static_cast<size_t>(o) * run[i], 0, dst, run[i]);
      dst += run[i];
    }
  }
  auto k = std::make_unique<DnnlKernel>("dnnl concat");
  k->set_impl(std::string("infera copy (") + (f == Format::kPlain ? "plain" : "blocked") + ", " +
              std::to_string(pieces.size()) + " pieces)");
  std::move(pieces).attach(*k);
  return k;
}

}  // namespace

std::unique_ptr<DnnlKernel> concat_create(const StepRequest& req) {
  using namespace dnnl;
  ConcatPlan p;
  if (!plan_concat(req, p)) return nullptr;
  {
    const Format f = req.out_format(0);
    bool same = true;
    for (size_t i = 0; i < req.inputs.size(); ++i) same = same && req.in_format(i) == f;
    if (same && (f == Format::kPlain || (f == dnnl_blocked_format() && p.blockable)))
      if (auto k = copy_concat_create(req, p, f)) return k;
  }
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

// ---------------------------------------------------------------- Transpose
// The channels-last moves of 4-D values as one oneDNN reorder, in the formats the neighbours use
// (ConvNeXt's blocks: conv -> (0,2,3,1) -> LayerNorm / Linear on channels -> (0,3,1,2) -> residual
// Add): Y = X.transpose(0,2,3,1) is X's [N,C,H,W] written in oneDNN's nhwc order, which are Y's
// plain bytes, so X may come blocked (nChw16c / nChw8c) with no reorder to plain before; and
// (0,3,1,2) reads plain [N,H,W,C] as [N,C,H,W] in nhwc order and writes plain or blocked. Other
// permutations stay with the reference kernel.
namespace infera::cpu {
namespace {

enum class ChannelMove { kNone, kToLast, kToSecond };

ChannelMove channel_move(const StepRequest& req) {
  const Node& n = *req.node;
  if (!n.is_onnx("Transpose") || !n.has_attr("perm") || req.inputs.size() != 1 || req.outputs.size() != 1)
    return ChannelMove::kNone;
  if (!req.has_in(0) || req.inputs[0]->value || req.in_dims(0).size() != 4) return ChannelMove::kNone;
  for (int64_t d : req.in_dims(0))
    if (d <= 0) return ChannelMove::kNone;
  const std::vector<int64_t> p = n.attr_ints("perm");
  if (p == std::vector<int64_t>{0, 2, 3, 1}) return ChannelMove::kToLast;
  if (p == std::vector<int64_t>{0, 3, 1, 2}) return ChannelMove::kToSecond;
  return ChannelMove::kNone;
}

}  // namespace

Support transpose_query(const StepRequest& req) {
  const ChannelMove m = channel_move(req);
  if (m == ChannelMove::kNone) return Support::no("a Transpose other than the 4-D channel moves (0,2,3,1) / (0,3,1,2)");
  Support s;
  s.ok = true;
  // The 4-D side (X of the move to last, Y of the move to second) may be blocked.
  if (m == ChannelMove::kToLast)
    s.input_formats = blocked_slots(req.inputs, {0});
  else
    s.output_formats = blocked_slots(req.outputs, {0});
  return s;
}

std::unique_ptr<DnnlKernel> transpose_create(const StepRequest& req) {
  using namespace dnnl;
  const ChannelMove m = channel_move(req);
  if (m == ChannelMove::kNone) return nullptr;
  // Both descriptors over the NCHW dims (X's for the move to last, Y's for the move to second);
  // the channels-last side is those dims in nhwc order.
  const Dims nchw = m == ChannelMove::kToLast ? req.in_dims(0) : req.out_dims(0);
  const memory::desc last(nchw, memory::data_type::f32, memory::format_tag::nhwc);
  const memory::desc from = m == ChannelMove::kToLast ? md_of(nchw, req.in_format(0)) : last;
  const memory::desc to = m == ChannelMove::kToLast ? last : md_of(nchw, req.out_format(0));
  auto k = std::make_unique<DnnlKernel>("dnnl transpose");
  memory src = k->bind_input(0, from), dst = k->bind_output(0, to);
  reorder::primitive_desc pd(engine(), from, engine(), to, user_scratchpad());
  k->set_impl(pd.impl_info_str());
  k->add_step(reorder(pd), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
  return k;
}

void CopyPieces::add(int in, size_t src, int out, size_t dst, size_t bytes) {
  constexpr size_t kPiece = 64 << 10;
  for (size_t b = 0; b < bytes; b += kPiece)
    pieces_.push_back({in, out, src + b, dst + b, std::min(kPiece, bytes - b)});
  total_ += bytes;
}

void CopyPieces::attach(DnnlKernel& k) && {
  k.set_after([pieces = std::move(pieces_), total = total_](ComputeContext& ctx) {
    const int n = static_cast<int>(pieces.size());
#pragma omp parallel for schedule(static) num_threads(std::max(1, ctx.num_threads)) if (total >= (256u << 10) && n > 1)
    for (int j = 0; j < n; ++j) {
      const Piece& q = pieces[static_cast<size_t>(j)];
      std::memcpy(static_cast<char*>(ctx.out(q.out).data) + q.dst, static_cast<const char*>(ctx.in(q.in).data) + q.src,
                  q.bytes);
    }
  });
}

}  // namespace infera::cpu
