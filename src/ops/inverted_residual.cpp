// com.infera.InvertedResidual (ops/inverted_residual.h). The reference runs the three reference
// convs it replaces (FusedConv kernels made from the same attributes) on full-size temporaries, so
// it rounds, orders its sums and propagates NaN exactly as the unfused graph's reference does.
#include "ops/inverted_residual.h"

#include <vector>

#include "ops/conv.h"
#include "ops/util.h"

namespace infera {
namespace {

Status read_pair(const Node& n, const char* name, size_t len, int64_t lo, std::vector<int64_t>& out) {
  std::vector<int64_t> v;
  Status s = read_window_ints(n, name, lo, v);
  if (!s.is_ok()) return s;
  if (v.empty()) return Status::ok();
  if (v.size() != len) return Status::error(node_message(n, "attribute %s must have %zu values", name, len));
  out = v;
  return Status::ok();
}

class InvertedResidualKernel : public InvertedResidualOp {
 public:
  InvertedResidualKernel(const Node& n, int64_t) {
    bad_ = activation_from_attrs(n, attrs_.expand, "expand");
    if (bad_.is_ok()) bad_ = activation_from_attrs(n, attrs_.dw, "dw");
    if (bad_.is_ok()) bad_ = read_pair(n, "strides", 2, 1, attrs_.strides);
    if (bad_.is_ok()) bad_ = read_pair(n, "pads", 4, 0, attrs_.pads);
  }
  Status init() const { return bad_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(kIrX) || !ctx.has_input(kIrWDw) || !ctx.has_input(kIrWProject))
      return ctx.error("expects inputs X, W_dw and W_project");
    if (ctx.has_input(kIrBExpand) && !ctx.has_input(kIrWExpand)) return ctx.error("B_expand without W_expand");
    for (size_t i = 0; i < kIrInputs; ++i)
      if (ctx.has_input(i) && ctx.in(i).dtype != DataType::kFloat32)
        return ctx.error("input %zu must be float32, found %s", i, dtype_name(ctx.in(i).dtype));
    const ValueInfo& x = ctx.in(kIrX);
    const bool expand = ctx.has_input(kIrWExpand);
    const Shape &wd = ctx.in(kIrWDw).shape, &wp = ctx.in(kIrWProject).shape;
    if (!wd.fully_known() || !wp.fully_known() || wd.rank() != 4 || wp.rank() != 4)
      return ctx.error("W_dw and W_project must be known 4-D shapes, found %s and %s", wd.str().c_str(),
                       wp.str().c_str());
    const int64_t e = wd.dims[0].value, kh = wd.dims[2].value, kw = wd.dims[3].value, m = wp.dims[0].value;
    if (wd.dims[1].value != 1 || wp.dims[1].value != e || wp.dims[2].value != 1 || wp.dims[3].value != 1)
      return ctx.error("W_dw %s and W_project %s are not [E, 1, K, K] and [M, E, 1, 1]", wd.str().c_str(),
                       wp.str().c_str());
    int64_t c = e;
    if (expand) {
      const Shape& we = ctx.in(kIrWExpand).shape;
      if (!we.fully_known() || we.rank() != 4 || we.dims[0].value != e || we.dims[2].value != 1 ||
          we.dims[3].value != 1)
        return ctx.error("W_expand %s is not [%lld, C, 1, 1]", we.str().c_str(), (long long)e);
      c = we.dims[1].value;
    }
    if (Status s = check_vector_inputs(ctx, {{kIrBExpand, e}, {kIrBDw, e}, {kIrBProject, m}}); !s.is_ok()) return s;
    if (!x.shape.rank_known) {
      ctx.set_output(0, DataType::kFloat32, Shape::unknown());
      return Status::ok();
    }
    if (x.shape.rank() != 4) return ctx.error("input X must be 4-D, found %s", x.shape.str().c_str());
    if (x.shape.dims[1].known() && x.shape.dims[1].value != c)
      return ctx.error("X has %lld channels, the block takes %lld", (long long)x.shape.dims[1].value, (long long)c);
    Shape y({x.shape.dims[0], Dim(m), Dim(), Dim()});
    const int64_t k[2] = {kh, kw};
    for (int d = 0; d < 2; ++d) {
      if (!x.shape.dims[2 + d].known()) continue;
      int64_t pb = attrs_.pads[d], pe = attrs_.pads[2 + d], out = 0;
      if (!conv_out_dim(x.shape.dims[2 + d].value + pb + pe, k[d], attrs_.strides[d], 1, AutoPad::kValid, false, pb, pe,
                        out))
        return ctx.error("the depthwise window does not fit X %s", x.shape.str().c_str());
      y.dims[2 + d] = Dim(out);
    }
    if (ctx.has_input(kIrZ)) {
      const Shape& z = ctx.in(kIrZ).shape;
      bool ok = !z.rank_known || z.rank() == 4;
      for (int i = 0; ok && z.rank_known && i < 4; ++i)
        if (z.dims[i].known() && y.dims[i].known() && z.dims[i].value != y.dims[i].value) ok = false;
      if (!ok) return ctx.error("residual Z %s must have the output shape %s", z.str().c_str(), y.str().c_str());
    }
    ctx.set_output(0, DataType::kFloat32, y);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(kIrX);
    const TensorRef &wd = ctx.in(kIrWDw), &wp = ctx.in(kIrWProject);
    if (x.rank() != 4 || wd.rank() != 4 || wp.rank() != 4) return ctx.error("X, W_dw and W_project must be 4-D");
    const bool expand = ctx.has_input(kIrWExpand);
    const int64_t e = wd.dims[0];
    auto opt = [&](size_t i) { return ctx.has_input(i) ? &ctx.in(i) : nullptr; };
    std::vector<int64_t> pads, ed, dd;
    // expand: X -> A [N, E, H, W]
    std::vector<float> a_buf;
    TensorRef a = x;
    if (expand) {
      ConvAttrs ca;
      Status s = conv_resolve(ca, x.dims, ctx.in(kIrWExpand).dims, pads, ed);
      if (!s.is_ok()) return ctx.error("expand: %s", s.message().c_str());
      a_buf.resize(static_cast<size_t>(Shape::of(ed).numel()));
      a = TensorRef{DataType::kFloat32, ed, a_buf.data()};
      Status r = run_conv(ctx, ca, attrs_.expand, x, ctx.in(kIrWExpand), opt(kIrBExpand), nullptr, a);
      if (!r.is_ok()) return r;
    }
    // depthwise: A -> D [N, E, OH, OW]
    ConvAttrs cd;
    cd.group = e;
    cd.strides = attrs_.strides;
    cd.pads = attrs_.pads;
    Status s = conv_resolve(cd, a.dims, wd.dims, pads, dd);
    if (!s.is_ok()) return ctx.error("depthwise: %s", s.message().c_str());
    std::vector<float> d_buf(static_cast<size_t>(Shape::of(dd).numel()));
    TensorRef d{DataType::kFloat32, dd, d_buf.data()};
    Status r = run_conv(ctx, cd, attrs_.dw, a, wd, opt(kIrBDw), nullptr, d);
    if (!r.is_ok()) return r;
    // project (+ Z): D -> Y
    return run_conv(ctx, ConvAttrs{}, Activation{}, d, wp, opt(kIrBProject), opt(kIrZ), ctx.out(0));
  }

 private:
  // One reference FusedConv of the block.
  static Status run_conv(ComputeContext& ctx, const ConvAttrs& a, Activation act, const TensorRef& x,
                         const TensorRef& w, const TensorRef* b, const TensorRef* z, TensorRef& y) {
    auto op = ConvOp::make_fused(a, act);
    std::vector<const TensorRef*> in{&x, &w, b, z};
    std::vector<TensorRef*> out{&y};
    ComputeContext c(ctx.node, in, out, ctx.num_threads);
    return op->compute(c);
  }

  Status bad_;
};

Attribute ints_attr(const std::vector<int64_t>& v) {
  Attribute a;
  a.kind = Attribute::kInts;
  a.ints = v;
  return a;
}

}  // namespace

void inverted_residual_to_attrs(Node& n, const InvertedResidualAttrs& a) {
  n.attrs["strides"] = ints_attr(a.strides);
  n.attrs["pads"] = ints_attr(a.pads);
  activation_to_attrs(n, a.expand, "expand");
  activation_to_attrs(n, a.dw, "dw");
}

void register_inverted_residual_ops(OpRegistry& r) {
  r.add("InvertedResidual", factory_of<InvertedResidualKernel>(), "com.infera");
}

}  // namespace infera
