// The GPU's data-movement and normalization ops: Transpose, Slice, Split, Concat (any axis the
// channel-concat kernel does not take), Expand, com.infera.ChannelShuffle as strided copies; LayerNormalization;
// ReduceSum / ReduceMean / ReduceMax / ReduceMin over a contiguous run of axes.
//
// A strided copy sees logical (ONNX) indices and physical strides, so the same kernel reads and
// writes NHWC values: a rank-4 value in NHWC stores (n, c, h, w) at ((n * H + h) * W + w) * C + c.
// That makes ConvNeXt's permute(0, 2, 3, 1) of a convolution's NHWC output a straight copy.
#include <algorithm>
#include <numeric>

#include "backends/gpu/gpu_internal.h"
#include "ops/tensor_ops.h"

namespace infera::gpu_backend {
namespace {

// Element strides of a value's logical dims in its format (plain: row-major; NHWC: above).
Dims physical_strides(const Dims& d, Format f) {
  Dims s = strides_of(d);
  if (is_nhwc(f) && d.size() == 4) s = {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
  return s;
}

// The formats a rank-r operand may take: plain, and NHWC for rank 4.
FormatSet movable(const GpuConfig& c, size_t rank) {
  FormatSet s = format_bit(c.plain_format());
  if (rank == 4) s |= format_bit(c.act_format(4));
  return s;
}

// One strided copy in logical terms: y[i] = x[x_offset + sum_k i_k * x_strides[k]] over dims,
// y at y_offset + sum_k i_k * y_strides[k], with y's strides from its format.
struct Copy {
  size_t x_slot = 0, y_slot = 0;
  Dims dims, x_strides, y_strides;
  int64_t x_offset = 0, y_offset = 0;
};

// Drops unit dims (their stride does not matter) so that the kernel's rank limit rarely bites.
void squeeze(Copy& c) {
  Copy o = c;
  o.dims.clear(), o.x_strides.clear(), o.y_strides.clear();
  for (size_t k = 0; k < c.dims.size(); ++k)
    if (c.dims[k] != 1) {
      o.dims.push_back(c.dims[k]);
      o.x_strides.push_back(c.x_strides[k]);
      o.y_strides.push_back(c.y_strides[k]);
    }
  c = std::move(o);
}

class CopyKernel : public GpuKernel {
 public:
  CopyKernel(const GpuConfig& c, std::string what, std::vector<Copy> copies)
      : GpuKernel(c, std::move(what)), copies_(std::move(copies)) {}

  Status run(ComputeContext& ctx) const override {
    for (const Copy& c : copies_) {
      gpu::StridedCopy d;
      d.elem_bytes = cfg_.f16() ? 2 : 4;
      d.rank = static_cast<int>(c.dims.size());
      for (int k = 0; k < d.rank; ++k)
        d.dims[k] = c.dims[k], d.x_strides[k] = c.x_strides[k], d.y_strides[k] = c.y_strides[k];
      d.x = ctx.in(c.x_slot).data, d.x_offset = c.x_offset;
      d.y = ctx.out(c.y_slot).data, d.y_offset = c.y_offset;
      INFERA_GPU_OK(ctx.node.label(), gpu::strided_copy(d, stream(ctx)));
    }
    return Status::ok();
  }

 private:
  std::vector<Copy> copies_;
};

// The copies of a data-movement step for the given formats, or false when the step is not one
// the GPU takes. Called with all-plain formats by query() and with the planned ones by create().
bool plan_copies(const StepRequest& req, std::vector<Copy>& out, std::string& what) {
  out.clear();
  if (!req.has_in(0) || req.inputs[0]->value) return false;
  const Dims x = req.in_dims(0);
  const size_t r = x.size();
  const Dims xs = physical_strides(x, req.in_format(0));
  auto y_strides = [&](size_t slot) { return physical_strides(req.out_dims(slot), req.out_format(slot)); };

  if (req.node->is_onnx("Transpose")) {
    if (!req.has_out(0)) return false;
    std::vector<int64_t> perm = req.node->attr_ints("perm");
    if (!req.node->has_attr("perm")) {
      perm.resize(r);
      std::iota(perm.rbegin(), perm.rend(), 0);
    }
    if (perm.size() != r) return false;
    Copy c;
    c.dims = req.out_dims(0);
    c.y_strides = y_strides(0);
    for (size_t k = 0; k < r; ++k) {
      if (perm[k] < 0 || perm[k] >= static_cast<int64_t>(r)) return false;
      c.x_strides.push_back(xs[perm[k]]);
    }
    out.push_back(std::move(c));
    what = "transpose (strided copy)";
  } else if (req.node->is_onnx("Slice")) {
    if (!req.has_out(0)) return false;
    std::vector<int64_t> starts, ends, axes, steps;
    if (req.opset < 10) {
      starts = req.node->attr_ints("starts"), ends = req.node->attr_ints("ends"), axes = req.node->attr_ints("axes");
    } else {
      std::vector<int64_t>* vals[] = {&starts, &ends, &axes, &steps};
      for (size_t i = 1; i <= 4; ++i) {
        if (!req.has_in(i)) continue;
        if (!req.inputs[i]->value || !read_ints(*req.inputs[i]->value, *vals[i - 1])) return false;
      }
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) return false;
    Copy c;
    c.dims = req.out_dims(0);
    c.y_strides = y_strides(0);
    c.x_strides = xs;
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t a = axes[i];
      if (!normalize_axis(a, static_cast<int64_t>(r)) || steps[i] == 0) return false;
      const AxisSlice s = clamp_slice(x[a], starts[i], ends[i], steps[i]);
      if (s.count != c.dims[a]) return false;  // disagrees with shape inference: leave it to the reference
      c.x_offset += s.start * xs[a];
      c.x_strides[a] = s.step * xs[a];
    }
    out.push_back(std::move(c));
    what = "slice (strided copy)";
  } else if (req.node->is_onnx("Split")) {
    int64_t axis = req.node->attr_int("axis", 0);
    if (!normalize_axis(axis, static_cast<int64_t>(r))) return false;
    int64_t offset = 0;
    for (size_t o = 0; o < req.outputs.size(); ++o) {
      if (!req.has_out(o)) return false;  // output offsets come from every output's dims
      Copy c;
      c.y_slot = o;
      c.dims = req.out_dims(o);
      if (c.dims.size() != r) return false;
      c.y_strides = y_strides(o);
      c.x_strides = xs;
      c.x_offset = offset * xs[axis];
      offset += c.dims[axis];
      out.push_back(std::move(c));
    }
    if (offset != x[axis]) return false;
    what = "split (strided copies)";
  } else if (const auto* op = dynamic_cast<const ConcatOp*>(req.op)) {
    if (!req.has_out(0)) return false;
    const Dims y = req.out_dims(0);
    int64_t axis = op->axis();
    if (!normalize_axis(axis, static_cast<int64_t>(y.size()))) return false;
    int64_t offset = 0;
    const Dims ys = y_strides(0);
    for (size_t i = 0; i < req.inputs.size(); ++i) {
      if (!req.has_in(i) || req.inputs[i]->value) return false;
      Copy c;
      c.x_slot = i;
      c.dims = req.in_dims(i);
      if (c.dims.size() != y.size()) return false;
      c.x_strides = physical_strides(c.dims, req.in_format(i));
      c.y_strides = ys;
      c.y_offset = offset * ys[axis];
      offset += c.dims[axis];
      out.push_back(std::move(c));
    }
    if (offset != y[axis]) return false;
    what = "concat (strided copies)";
  } else if (const auto* cs = dynamic_cast<const ChannelShuffleOp*>(req.op)) {
    // Output o holds shuffled channels [first, first + S), seen as [N, S/g, g, d...]: shuffled channel
    // j g + i is X's i C/g + j. Parts that start or end off a multiple of g: the reference's.
    const int64_t grp = cs->group(), c = r >= 2 ? x[1] : 0;
    if (grp <= 0 || c <= 0 || c % grp != 0) return false;
    const std::vector<int64_t> parts = cs->split().empty() ? std::vector<int64_t>{c} : cs->split();
    if (parts.size() != req.outputs.size()) return false;
    int64_t first = 0;
    for (size_t o = 0; o < parts.size(); ++o) {
      if (!req.has_out(o) || first % grp != 0 || parts[o] % grp != 0) return false;
      const Dims yd = req.out_dims(o), ys = y_strides(o);
      if (yd.size() != r || yd[1] != parts[o]) return false;
      Copy cp;
      cp.y_slot = o;
      cp.dims = {yd[0], parts[o] / grp, grp};
      cp.x_strides = {xs[0], xs[1], c / grp * xs[1]};
      cp.y_strides = {ys[0], grp * ys[1], ys[1]};
      for (size_t k = 2; k < r; ++k) {
        cp.dims.push_back(yd[k]);
        cp.x_strides.push_back(xs[k]);
        cp.y_strides.push_back(ys[k]);
      }
      cp.x_offset = first / grp * xs[1];
      first += parts[o];
      out.push_back(std::move(cp));
    }
    if (first != c) return false;
    what = "channel shuffle (strided copies)";
  } else if (req.node->is_onnx("Expand")) {
    if (!req.has_out(0) || !req.has_in(1) || !req.inputs[1]->value) return false;
    Copy c;
    c.dims = req.out_dims(0);
    if (c.dims.size() < r) return false;
    c.y_strides = y_strides(0);
    c.x_strides.assign(c.dims.size(), 0);
    const size_t lead = c.dims.size() - r;
    for (size_t k = 0; k < r; ++k) {
      if (x[k] != 1 && x[k] != c.dims[lead + k]) return false;
      c.x_strides[lead + k] = x[k] == 1 ? 0 : xs[k];
    }
    out.push_back(std::move(c));
    what = "expand (strided copy)";
  } else {
    return false;
  }
  for (Copy& c : out) {
    squeeze(c);
    if (c.dims.size() > static_cast<size_t>(gpu::kMaxCopyRank)) return false;
  }
  return true;
}

Support copy_query(const GpuConfig& c, const StepRequest& req) {
  std::vector<Copy> copies;
  std::string what;
  if (!plan_copies(req, copies, what)) return Support::no("a data-movement step the GPU does not take");
  std::vector<FormatSet> in(req.inputs.size()), outs(req.outputs.size());
  for (size_t i = 0; i < req.inputs.size(); ++i)
    if (req.has_in(i)) in[i] = movable(c, req.inputs[i]->shape.rank());
  for (size_t o = 0; o < req.outputs.size(); ++o)
    if (req.has_out(o)) outs[o] = movable(c, req.outputs[o]->shape.rank());
  return support_all(req, in, outs);
}

Result<std::unique_ptr<StepKernel>> copy_create(const GpuConfig& c, const StepRequest& req) {
  std::vector<Copy> copies;
  std::string what;
  if (!plan_copies(req, copies, what)) return std::unique_ptr<StepKernel>();
  return std::unique_ptr<StepKernel>(std::make_unique<CopyKernel>(c, what, std::move(copies)));
}

// ---------------------------------------------------------------- LayerNormalization
// Over the trailing axes from `axis` on: a [rows][cols] matrix of plain values. Scale and B are
// constants of cols elements; the optional Mean / InvStdDev outputs are fp32 statistics, taken in
// fp32 runs only (fp16 storage would need a cast).
struct LnPlan {
  int64_t rows = 1;
  int cols = 1;
  float eps = 1e-5f;
};

bool plan_layernorm(const GpuConfig& c, const StepRequest& req, LnPlan& p) {
  if (req.node->op_type != "LayerNormalization" || !req.has_in(0) || req.inputs[0]->value || !req.has_out(0))
    return false;
  if (req.node->attr_int("stash_type", 1) != 1) return false;
  const Dims x = req.in_dims(0);
  int64_t axis = req.node->attr_int("axis", -1);
  if (!normalize_axis(axis, static_cast<int64_t>(x.size()))) return false;
  int64_t rows = 1, cols = 1;
  for (size_t k = 0; k < x.size(); ++k) (static_cast<int64_t>(k) < axis ? rows : cols) *= x[k];
  if (cols < 1 || cols > (1 << 30)) return false;
  for (size_t i = 1; i <= 2; ++i)
    if (req.has_in(i) && (!req.inputs[i]->value || req.inputs[i]->value->numel() != cols)) return false;
  if (!req.has_in(1)) return false;
  if (c.f16() && (req.has_out(1) || req.has_out(2))) return false;
  p.rows = rows, p.cols = static_cast<int>(cols), p.eps = req.node->attr_float("epsilon", 1e-5f);
  return p.eps > 0.f;
}

class LayerNormKernel : public GpuKernel {
 public:
  LayerNormKernel(const GpuConfig& c, LnPlan p) : GpuKernel(c, ""), p_(p) {}

  Status init(const StepRequest& req) {
    for (size_t i = 1; i <= 2; ++i) {
      if (!req.has_in(i)) continue;
      const Tensor& t = *req.inputs[i]->value;
      auto b = DeviceBuffer::upload(cfg_.dev.index, t.data_as<float>(), static_cast<size_t>(p_.cols) * 4);
      if (!b.is_ok()) return b.status();
      (i == 1 ? gamma_ : beta_) = b.take();
      weight_bytes_ += static_cast<size_t>(p_.cols) * 4;
    }
    gpu::LayerNormDesc d = desc(nullptr, nullptr);
    impl_ = std::string("layernorm ") + gpu::kernel_info(gpu::layernorm_variant(d)).name;
    return Status::ok();
  }

  Status run(ComputeContext& ctx) const override {
    gpu::LayerNormDesc d = desc(ctx.in(0).data, ctx.out(0).data);
    if (ctx.has_output(1)) d.mean = static_cast<float*>(ctx.out(1).data);
    if (ctx.has_output(2)) d.inv_std = static_cast<float*>(ctx.out(2).data);
    INFERA_GPU_OK(ctx.node.label(), gpu::layernorm(d, stream(ctx)));
    return Status::ok();
  }

 private:
  gpu::LayerNormDesc desc(const void* x, void* y) const {
    gpu::LayerNormDesc d;
    d.dtype = cfg_.dtype();
    d.rows = p_.rows, d.cols = p_.cols, d.eps = p_.eps;
    d.x = x, d.y = y;
    d.gamma = static_cast<const float*>(gamma_.get());
    d.beta = static_cast<const float*>(beta_.get());
    return d;
  }
  LnPlan p_;
  DeviceBuffer gamma_, beta_;
};

Support ln_query(const GpuConfig& c, const StepRequest& req) {
  LnPlan p;
  if (!plan_layernorm(c, req, p)) return Support::no("a LayerNormalization the GPU does not take");
  const FormatSet plain = format_bit(c.plain_format());
  Support s = support_all(req, {plain}, {plain, kPlainOnly, kPlainOnly});
  s.in_place.emplace_back(0, 0);
  return s;
}

Result<std::unique_ptr<StepKernel>> ln_create(const GpuConfig& c, const StepRequest& req) {
  LnPlan p;
  if (!plan_layernorm(c, req, p)) return std::unique_ptr<StepKernel>();
  auto k = std::make_unique<LayerNormKernel>(c, p);
  Status s = k->init(req);
  if (!s.is_ok()) return s;
  return std::unique_ptr<StepKernel>(std::move(k));
}

// ---------------------------------------------------------------- reductions
// The reduced axes must be one contiguous run of the input's physical order, and the kept axes
// must keep their logical order there, so that the output is plain: [outer][reduce][inner].
struct ReducePlan {
  gpu::ReduceOp op = gpu::ReduceOp::kSum;
  int64_t outer = 1, reduce = 1, inner = 1;
};

bool reduce_kind(const StepRequest& req, gpu::ReduceOp& op) {
  if (req.node->is_onnx("ReduceSum"))
    op = gpu::ReduceOp::kSum;
  else if (req.node->is_onnx("ReduceMean"))
    op = gpu::ReduceOp::kMean;
  else if (req.node->is_onnx("ReduceMax"))
    op = gpu::ReduceOp::kMax;
  else if (req.node->is_onnx("ReduceMin"))
    op = gpu::ReduceOp::kMin;
  else
    return false;
  return true;
}

bool plan_reduce(const StepRequest& req, Format in_format, ReducePlan& p) {
  if (!reduce_kind(req, p.op) || !req.has_in(0) || req.inputs[0]->value || !req.has_out(0)) return false;
  const Dims x = req.in_dims(0);
  const int64_t r = static_cast<int64_t>(x.size());
  const int64_t axes_input_from = p.op == gpu::ReduceOp::kSum ? 13 : 18;
  std::vector<int64_t> axes;
  if (req.opset < axes_input_from) {
    axes = req.node->attr_ints("axes");
  } else if (req.has_in(1)) {
    if (!req.inputs[1]->value || !read_ints(*req.inputs[1]->value, axes)) return false;
  }
  std::vector<bool> reduced(r, axes.empty());
  if (axes.empty() && req.node->attr_int("noop_with_empty_axes", 0) != 0) return false;
  for (int64_t a : axes) {
    if (!normalize_axis(a, r)) return false;
    reduced[a] = true;
  }
  std::vector<int64_t> order(r);
  std::iota(order.begin(), order.end(), 0);
  if (is_nhwc(in_format) && r == 4) order = {0, 2, 3, 1};
  // Physical positions: kept, then reduced, then kept; kept axes in increasing logical order.
  int phase = 0;
  int64_t last_kept = -1;
  for (int64_t pos = 0; pos < r; ++pos) {
    const int64_t a = order[pos];
    if (x[a] == 1) continue;  // a unit axis is anywhere
    if (reduced[a]) {
      if (phase == 2) return false;
      phase = 1;
      p.reduce *= x[a];
    } else {
      if (a < last_kept) return false;
      last_kept = a;
      if (phase == 1) phase = 2;
      (phase == 0 ? p.outer : p.inner) *= x[a];
    }
  }
  return true;
}

class ReduceKernel : public GpuKernel {
 public:
  ReduceKernel(const GpuConfig& c, ReducePlan p) : GpuKernel(c, ""), p_(p) {
    impl_ = std::string("reduce ") + gpu::kernel_info(gpu::reduce_variant(desc(nullptr, nullptr))).name;
  }
  Status run(ComputeContext& ctx) const override {
    INFERA_GPU_OK(ctx.node.label(), gpu::reduce(desc(ctx.in(0).data, ctx.out(0).data), stream(ctx)));
    return Status::ok();
  }

 private:
  gpu::ReduceDesc desc(const void* x, void* y) const {
    gpu::ReduceDesc d;
    d.dtype = cfg_.dtype(), d.op = p_.op;
    d.outer = p_.outer, d.reduce = p_.reduce, d.inner = p_.inner;
    d.x = x, d.y = y;
    return d;
  }
  ReducePlan p_;
};

Support reduce_query(const GpuConfig& c, const StepRequest& req) {
  ReducePlan p;
  if (!plan_reduce(req, c.plain_format(), p))
    return Support::no("a reduction the GPU does not take (reduced axes not one contiguous run)");
  FormatSet in = format_bit(c.plain_format());
  ReducePlan q;
  if (req.in_dims(0).size() == 4 && plan_reduce(req, c.act_format(4), q)) in |= format_bit(c.act_format(4));
  return support_all(req, {in}, {format_bit(c.plain_format())});
}

Result<std::unique_ptr<StepKernel>> reduce_create(const GpuConfig& c, const StepRequest& req) {
  ReducePlan p;
  if (!plan_reduce(req, req.in_format(0), p)) return std::unique_ptr<StepKernel>();
  return std::unique_ptr<StepKernel>(std::make_unique<ReduceKernel>(c, p));
}

}  // namespace

const Family* memops_family(const StepRequest& req) {
  static const Family copy{copy_query, copy_create}, ln{ln_query, ln_create}, red{reduce_query, reduce_create};
  if (req.node->is_onnx("Transpose") || req.node->is_onnx("Slice") || req.node->is_onnx("Split") ||
      req.node->is_onnx("Expand") || dynamic_cast<const ConcatOp*>(req.op) ||
      dynamic_cast<const ChannelShuffleOp*>(req.op))
    return &copy;
  if (req.node->op_type == "LayerNormalization" &&
      (req.node->domain.empty() || req.node->domain == "ai.onnx" || req.node->domain == "com.infera"))
    return &ln;
  gpu::ReduceOp op;
  if (reduce_kind(req, op)) return &red;
  return nullptr;
}

}  // namespace infera::gpu_backend
