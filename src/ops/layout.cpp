// Ops that move elements without changing them, as strided copies: Transpose, Expand, Tile,
// DepthToSpace, SpaceToDepth. Type-agnostic: elements are copied by size.
#include <algorithm>

#include "infera/limits.h"
#include "ops/tensor_ops.h"

namespace infera {
namespace {

// ---------------------------------------------------------------- Transpose
class TransposeKernel : public OpKernel {
 public:
  TransposeKernel(const Node& n, int64_t) : has_perm_(n.has_attr("perm")), perm_(n.attr_ints("perm")) {}
  Status init() { return Status::ok(); }

  std::vector<int64_t> perm_for(int64_t r) const {
    if (has_perm_) return perm_;
    std::vector<int64_t> p(r);
    for (int64_t i = 0; i < r; ++i) p[i] = r - 1 - i;
    return p;
  }
  Status infer(InferContext& ctx) const override {
    const ValueInfo& x = ctx.in(0);
    if (!x.shape.rank_known) {
      ctx.set_output(0, x.dtype, has_perm_ ? Shape::of_rank(perm_.size()) : Shape());
      return Status::ok();
    }
    const int64_t r = x.shape.rank();
    std::vector<int64_t> p = perm_for(r);
    std::vector<int64_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    bool ok = static_cast<int64_t>(p.size()) == r;
    for (int64_t i = 0; ok && i < r; ++i) ok = sorted[i] == i;
    if (!ok)
      return ctx.error("attribute 'perm' %s is not a permutation of the %lld axes of input shape %s",
                       ints_str(p).c_str(), (long long)r, x.shape.str().c_str());
    std::vector<Dim> out(r);
    for (int64_t i = 0; i < r; ++i) out[i] = x.shape.dims[p[i]];
    ctx.set_output(0, x.dtype, Shape(std::move(out)));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    std::vector<int64_t> p = perm_for(x.rank()), st = strides_of(x.dims), dims(x.rank()), ist(x.rank());
    for (int i = 0; i < x.rank(); ++i) {
      dims[i] = x.dims[p[i]];
      ist[i] = st[p[i]];
    }
    strided_copy(x.data, ctx.out(0).data, dtype_size(x.dtype), dims, ist, 0, ctx.num_threads);
    return Status::ok();
  }

 private:
  bool has_perm_;
  std::vector<int64_t> perm_;
};

// ---------------------------------------------------------------- Expand
class ExpandKernel : public OpKernel {
 public:
  ExpandKernel(const Node&, int64_t) {}
  Status init() { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(1)) return ctx.error("expects inputs 'input' and 'shape'");
    Status s = expect_dtype(ctx, 1, "shape", {DataType::kInt64});
    if (!s.is_ok()) return s;
    const ValueInfo& x = ctx.in(0);
    const Shape& ss = ctx.in(1).shape;
    if (ss.rank_known && ss.rank() != 1) return ctx.error("input 'shape' must be 1-D, found rank %d", ss.rank());
    std::vector<int64_t> shape;
    if (!known_ints(ctx, 1, shape)) {
      if (ss.rank_known && ss.dims[0].value > limits::kMaxRank)  // before making a Shape of that rank
        return ctx.error("output rank %lld is more than the limit of %d", (long long)ss.dims[0].value,
                         limits::kMaxRank);
      if (x.shape.rank_known && ss.rank_known && ss.dims[0].known())
        ctx.set_output(0, x.dtype, Shape::of_rank(std::max<int64_t>(x.shape.rank(), ss.dims[0].value)));
      else
        ctx.set_output(0, x.dtype, Shape());
      return Status::ok();
    }
    for (int64_t d : shape)
      if (d < 0) return ctx.error("input 'shape' %s has a negative dim", ints_str(shape).c_str());
    Shape out;
    if (!broadcast_shapes(x.shape, Shape::of(shape), out))
      return ctx.error("cannot expand input of shape %s to %s", x.shape.str().c_str(), ints_str(shape).c_str());
    s = check_output_size(ctx, out);
    if (!s.is_ok()) return s;
    ctx.set_output(0, x.dtype, out);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    std::vector<int64_t> bd;
    if (!broadcast_dims(x.dims, y.dims, bd) || bd != y.dims)
      return ctx.error("cannot expand input of shape %s to %s", ints_str(x.dims).c_str(), ints_str(y.dims).c_str());
    strided_copy(x.data, y.data, dtype_size(x.dtype), y.dims, broadcast_strides(x.dims, y.dims), 0, ctx.num_threads);
    return Status::ok();
  }
};

// ---------------------------------------------------------------- Tile
class TileKernel : public OpKernel {
 public:
  TileKernel(const Node&, int64_t) {}
  Status init() { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(1)) return ctx.error("expects inputs 'input' and 'repeats'");
    Status s = expect_dtype(ctx, 1, "repeats", {DataType::kInt64});
    if (!s.is_ok()) return s;
    const ValueInfo& x = ctx.in(0);
    std::vector<int64_t> rep;
    if (!x.shape.rank_known) {
      ctx.set_output(0, x.dtype, Shape());
      return Status::ok();
    }
    const int64_t r = x.shape.rank();
    const Shape& rs = ctx.in(1).shape;
    if (rs.rank_known && (rs.rank() != 1 || (rs.dims[0].known() && rs.dims[0].value != r)))
      return ctx.error("input 'repeats' must have shape [%lld] for input of rank %lld, found %s", (long long)r,
                       (long long)r, rs.str().c_str());
    if (!known_ints(ctx, 1, rep)) {
      ctx.set_output(0, x.dtype, Shape::of_rank(r));
      return Status::ok();
    }
    std::vector<Dim> out(r);
    for (int64_t i = 0; i < r; ++i) {
      if (rep[i] < 0) return ctx.error("input 'repeats' %s has a negative value", ints_str(rep).c_str());
      const Dim& d = x.shape.dims[i];
      if (rep[i] > (int64_t(1) << 40) || (d.known() && d.value > 0 && rep[i] > (int64_t(1) << 40) / d.value))
        return ctx.error("input 'repeats' %s makes the output too large", ints_str(rep).c_str());
      out[i] = rep[i] == 1 ? d : (d.known() ? Dim(d.value * rep[i]) : (rep[i] == 0 ? Dim(0) : Dim()));
    }
    Shape os(std::move(out));
    s = check_output_size(ctx, os);
    if (!s.is_ok()) return s;
    ctx.set_output(0, x.dtype, std::move(os));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    std::vector<int64_t> st = strides_of(x.dims), dims, ist;
    for (int i = 0; i < x.rank(); ++i) {
      if (x.dims[i] == 0 ? y.dims[i] != 0 : y.dims[i] % x.dims[i] != 0)
        return ctx.error("output dim %lld is not a multiple of input dim %lld", (long long)y.dims[i],
                         (long long)x.dims[i]);
      dims.push_back(x.dims[i] ? y.dims[i] / x.dims[i] : 0);
      ist.push_back(0);
      dims.push_back(x.dims[i]);
      ist.push_back(st[i]);
    }
    strided_copy(x.data, y.data, dtype_size(x.dtype), dims, ist, 0, ctx.num_threads);
    return Status::ok();
  }
};

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth
class SpaceDepthKernel : public OpKernel {
 public:
  SpaceDepthKernel(const Node& n, int64_t opset, bool to_space)
      : to_space_(to_space), b_(n.attr_int("blocksize", 0)), crd_(false) {
    std::string mode = n.attr_string("mode", "DCR");
    // DepthToSpace has 'mode' from opset 11, SpaceToDepth from opset 28.
    if ((to_space && opset >= 11) || (!to_space && opset >= 28)) {
      if (mode == "CRD")
        crd_ = true;
      else if (mode != "DCR")
        bad_ = Status::error(node_message(n, "attribute 'mode' must be DCR or CRD, found '%s'", mode.c_str()));
    }
    if (!n.has_attr("blocksize"))
      bad_ = Status::error(node_message(n, "attribute 'blocksize' is required"));
    else if (b_ <= 0 || b_ > (1 << 20))
      bad_ = Status::error(node_message(n, "attribute 'blocksize' must be positive, found %lld", (long long)b_));
  }
  Status init() { return bad_; }

  Status infer(InferContext& ctx) const override {
    const ValueInfo& x = ctx.in(0);
    if (!x.shape.rank_known) {
      ctx.set_output(0, x.dtype, Shape::of_rank(4));
      return Status::ok();
    }
    if (x.shape.rank() != 4) return ctx.error("input must be 4-D (N,C,H,W), found shape %s", x.shape.str().c_str());
    const Dim &n = x.shape.dims[0], &c = x.shape.dims[1], &h = x.shape.dims[2], &w = x.shape.dims[3];
    const int64_t bb = b_ * b_;
    if (to_space_) {
      if (c.known() && c.value % bb != 0)
        return ctx.error("input channels %lld must be divisible by blocksize^2 = %lld", (long long)c.value,
                         (long long)bb);
      ctx.set_output(0, x.dtype,
                     Shape({n, c.known() ? Dim(c.value / bb) : Dim(), h.known() ? Dim(h.value * b_) : Dim(),
                            w.known() ? Dim(w.value * b_) : Dim()}));
    } else {
      if ((h.known() && h.value % b_ != 0) || (w.known() && w.value % b_ != 0))
        return ctx.error("input height and width %s must be divisible by blocksize %lld", x.shape.str().c_str(),
                         (long long)b_);
      ctx.set_output(0, x.dtype,
                     Shape({n, c.known() ? Dim(c.value * bb) : Dim(), h.known() ? Dim(h.value / b_) : Dim(),
                            w.known() ? Dim(w.value / b_) : Dim()}));
    }
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    const int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3], b = b_;
    std::vector<int64_t> dims, st;
    if (to_space_) {
      const int64_t c = C / (b * b), hw = H * W;
      // Output viewed as [N, c, H, b1, W, b2]; the input as [N, b1, b2, c, H, W] (DCR)
      // or [N, c, b1, b2, H, W] (CRD).
      dims = {N, c, H, b, W, b};
      if (crd_)
        st = {C * hw, b * b * hw, W, b * hw, 1, hw};
      else
        st = {C * hw, hw, W, b * c * hw, 1, c * hw};
    } else {
      const int64_t h = H / b, w = W / b;
      // Output viewed as [N, b1, b2, C, h, w] (DCR) or [N, C, b1, b2, h, w] (CRD); the input
      // as [N, C, h, b1, w, b2].
      if (crd_) {
        dims = {N, C, b, b, h, w};
        st = {C * H * W, H * W, W, 1, b * W, b};
      } else {
        dims = {N, b, b, C, h, w};
        st = {C * H * W, W, 1, H * W, b * W, b};
      }
    }
    strided_copy(x.data, ctx.out(0).data, dtype_size(x.dtype), dims, st, 0, ctx.num_threads);
    return Status::ok();
  }

 private:
  bool to_space_;
  int64_t b_;
  bool crd_;
  Status bad_;
};

struct DepthToSpaceKernel : SpaceDepthKernel {
  DepthToSpaceKernel(const Node& n, int64_t opset) : SpaceDepthKernel(n, opset, true) {}
};
struct SpaceToDepthKernel : SpaceDepthKernel {
  SpaceToDepthKernel(const Node& n, int64_t opset) : SpaceDepthKernel(n, opset, false) {}
};

}  // namespace

void register_layout_ops(OpRegistry& r) {
  r.add("Transpose", factory_of<TransposeKernel>());
  r.add("Expand", factory_of<ExpandKernel>());
  r.add("Tile", factory_of<TileKernel>());
  r.add("DepthToSpace", factory_of<DepthToSpaceKernel>());
  r.add("SpaceToDepth", factory_of<SpaceToDepthKernel>());
}

}  // namespace infera
