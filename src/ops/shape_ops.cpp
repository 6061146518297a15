// Ops that change only the shape, never the bytes: Reshape, Flatten, Squeeze, Unsqueeze;
// and the ops that read only a shape: Shape, Size.
#include <algorithm>
#include <cstring>

#include "infera/limits.h"
#include "ops/tensor_ops.h"

namespace infera {
namespace {

// Outputs of these ops may grow the rank (a chain of Unsqueeze, a Reshape to a long shape):
// refused past the limit before a Shape of that rank is made (a declared shape input of
// [10^12] would otherwise allocate 10^12 dims).
Status check_rank(const InferContext& ctx, int64_t rank) {
  if (rank > limits::kMaxRank)
    return ctx.error("output rank %lld is more than the limit of %d", (long long)rank, limits::kMaxRank);
  return Status::ok();
}

Status copy_input(ComputeContext& ctx) {
  const TensorRef& x = ctx.in(0);
  TensorRef& y = ctx.out(0);
  if (x.nbytes() != y.nbytes())
    return ctx.error("output of %zu bytes for an input of %zu bytes", y.nbytes(), x.nbytes());
  if (x.nbytes() && x.data != y.data) std::memcpy(y.data, x.data, x.nbytes());
  return Status::ok();
}

// ---------------------------------------------------------------- Reshape
class ReshapeKernel : public OpKernel {
 public:
  ReshapeKernel(const Node& n, int64_t opset) : allowzero_(opset >= 14 ? n.attr_int("allowzero", 0) : 0) {}
  Status init() { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("expects inputs 'data' and 'shape'");
    Status s = expect_dtype(ctx, 1, "shape", {DataType::kInt64});
    if (!s.is_ok()) return s;
    const ValueInfo& x = ctx.in(0);
    const Shape& ss = ctx.in(1).shape;
    if (ss.rank_known && ss.rank() != 1) return ctx.error("input 'shape' must be 1-D, found rank %d", ss.rank());
    std::vector<int64_t> target;
    if (!known_ints(ctx, 1, target)) {
      const bool rank_known = ss.rank_known && ss.dims[0].known();
      if (rank_known && !(s = check_rank(ctx, ss.dims[0].value)).is_ok()) return s;
      ctx.set_output(0, x.dtype, rank_known ? Shape::of_rank(ss.dims[0].value) : Shape());
      return Status::ok();
    }
    if (!(s = check_rank(ctx, static_cast<int64_t>(target.size()))).is_ok()) return s;
    std::vector<Dim> out(target.size());
    int infer_at = -1;
    for (size_t i = 0; i < target.size(); ++i) {
      int64_t t = target[i];
      if (t == -1) {
        if (infer_at >= 0) return ctx.error("input 'shape' %s has more than one -1", ints_str(target).c_str());
        infer_at = static_cast<int>(i);
      } else if (t == 0 && !allowzero_) {
        if (!x.shape.rank_known) {
          out[i] = Dim();
        } else if (static_cast<int>(i) >= x.shape.rank()) {
          return ctx.error("input 'shape' %s copies dim %zu (0) of an input of rank %d", ints_str(target).c_str(), i,
                           x.shape.rank());
        } else {
          out[i] = x.shape.dims[i];
        }
      } else if (t < 0) {
        return ctx.error("input 'shape' %s has invalid value %lld", ints_str(target).c_str(), (long long)t);
      } else {
        out[i] = Dim(t);
      }
    }
    if (allowzero_ && infer_at >= 0 && std::count(target.begin(), target.end(), 0) > 0)
      return ctx.error("input 'shape' %s has both 0 and -1 with allowzero=1", ints_str(target).c_str());
    if (x.shape.rank_known) {
      // Cancel the symbolic dims present on both sides, multiply the known ones.
      std::vector<std::string> in_syms;
      bool in_unknown = false;
      int64_t in_known = 1;
      for (const Dim& d : x.shape.dims) {
        if (d.known()) {
          if (__builtin_mul_overflow(in_known, d.value, &in_known))
            return ctx.error("input 'data' %s has more than 2^63 elements", x.shape.str().c_str());
        } else if (d.symbol.empty()) {
          in_unknown = true;
        } else {
          in_syms.push_back(d.symbol);
        }
      }
      int64_t out_known = 1;
      bool out_unknown = false;
      std::vector<std::string> out_syms;
      for (size_t i = 0; i < out.size(); ++i) {
        if (static_cast<int>(i) == infer_at) continue;
        if (out[i].known()) {
          if (__builtin_mul_overflow(out_known, out[i].value, &out_known))
            return ctx.error("input 'shape' %s asks for more than 2^63 elements", ints_str(target).c_str());
        } else if (out[i].symbol.empty()) {
          out_unknown = true;
        } else {
          out_syms.push_back(out[i].symbol);
        }
      }
      for (auto it = out_syms.begin(); it != out_syms.end();) {
        auto f = std::find(in_syms.begin(), in_syms.end(), *it);
        if (f != in_syms.end()) {
          in_syms.erase(f);
          it = out_syms.erase(it);
        } else {
          ++it;
        }
      }
      const bool exact = !in_unknown && !out_unknown && in_syms.empty() && out_syms.empty();
      if (infer_at >= 0) {
        if (exact || (!in_unknown && !out_unknown && out_syms.empty() && in_known == 0)) {
          if (out_known == 0)
            return ctx.error("cannot infer the -1 in input 'shape' %s: the other dims have product 0",
                             ints_str(target).c_str());
          if (in_known % out_known != 0)
            return ctx.error("cannot reshape input of shape %s to %s: %lld elements are not divisible by %lld",
                             x.shape.str().c_str(), ints_str(target).c_str(), (long long)in_known,
                             (long long)out_known);
          if (exact || in_known == 0) out[infer_at] = Dim(in_known / out_known);
        } else if (!in_unknown && !out_unknown && out_syms.empty() && in_syms.size() == 1 && in_known == out_known) {
          out[infer_at] = Dim::sym(in_syms[0]);
        }
      } else if (exact && in_known != out_known) {
        return ctx.error("cannot reshape input of shape %s (%lld elements) to %s (%lld elements)",
                         x.shape.str().c_str(), (long long)in_known, ints_str(target).c_str(), (long long)out_known);
      }
    }
    ctx.set_output(0, x.dtype, Shape(std::move(out)));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override { return copy_input(ctx); }

 private:
  int64_t allowzero_;
};

// ---------------------------------------------------------------- Flatten
class FlattenKernel : public OpKernel {
 public:
  FlattenKernel(const Node& n, int64_t opset) : axis_(n.attr_int("axis", 1)) {}
  Status init() { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    const ValueInfo& x = ctx.in(0);
    if (!x.shape.rank_known) {
      ctx.set_output(0, x.dtype, Shape::of_rank(2));
      return Status::ok();
    }
    int64_t axis = axis_, r = x.shape.rank();
    if (axis < -r || axis > r)
      return ctx.error("attribute 'axis' must be in [%lld, %lld] for input of rank %lld, found %lld", (long long)-r,
                       (long long)r, (long long)r, (long long)axis_);
    if (axis < 0) axis += r;
    ctx.set_output(0, x.dtype,
                   Shape({dim_product(x.shape.dims, 0, axis), dim_product(x.shape.dims, axis, x.shape.dims.size())}));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override { return copy_input(ctx); }

 private:
  int64_t axis_;
};

// Axes from the attribute (opset < from_opset) or from input 1.
struct AxesSource {
  bool from_input = false;
  bool given = false;
  std::vector<int64_t> attr;

  AxesSource(const Node& n, int64_t opset, int64_t from_opset) : from_input(opset >= from_opset) {
    if (!from_input && n.has_attr("axes")) {
      given = true;
      attr = n.attr_ints("axes");
    }
  }
  // Opset 13 moved 'axes' from an attribute to an input: an attribute there is a mistake.
  Status check(const Node& n) const {
    if (from_input && n.has_attr("axes"))
      return Status::error(node_message(n, "attribute 'axes' is an input from opset 13 on; found the attribute"));
    return Status::ok();
  }
  // 1: known (axes filled), 0: absent (no axes), -1: given but unknown; count = its length if known, else -1.
  int get(const InferContext& ctx, std::vector<int64_t>& axes, int64_t& count) const {
    count = -1;
    if (!from_input) {
      axes = attr;
      count = static_cast<int64_t>(attr.size());
      return given ? 1 : 0;
    }
    if (!ctx.has_input(1)) return 0;
    if (known_ints(ctx, 1, axes)) {
      count = static_cast<int64_t>(axes.size());
      return 1;
    }
    const Shape& s = ctx.in(1).shape;
    if (s.rank_known && s.rank() == 1 && s.dims[0].known()) count = s.dims[0].value;
    return -1;
  }
};

Status normalize_axes(const InferContext& ctx, std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> orig = axes;
  for (int64_t& a : axes)
    if (!normalize_axis(a, rank))
      return ctx.error("axes %s out of range for rank %lld", ints_str(orig).c_str(), (long long)rank);
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return ctx.error("axes %s has a repeated axis", ints_str(orig).c_str());
  return Status::ok();
}

// ---------------------------------------------------------------- Squeeze
class SqueezeKernel : public OpKernel {
 public:
  SqueezeKernel(const Node& n, int64_t opset) : axes_(n, opset, 13), bad_(axes_.check(n)) {}
  Status init() { return bad_; }

  Status infer(InferContext& ctx) const override {
    Status st;
    const ValueInfo& x = ctx.in(0);
    std::vector<int64_t> axes;
    int64_t count;
    int have = axes_.get(ctx, axes, count);
    if (have == 1 && axes.empty()) have = 0;  // an empty axes list squeezes every 1
    if (!x.shape.rank_known) {
      ctx.set_output(0, x.dtype, Shape());
      return Status::ok();
    }
    const int64_t r = x.shape.rank();
    if (have == -1) {
      ctx.set_output(0, x.dtype, count >= 0 && count <= r ? Shape::of_rank(r - count) : Shape());
      return Status::ok();
    }
    std::vector<Dim> out;
    if (have == 0) {
      for (const Dim& d : x.shape.dims) {
        if (!d.known()) {
          ctx.set_output(0, x.dtype, Shape());
          return Status::ok();
        }
        if (d.value != 1) out.push_back(d);
      }
    } else {
      st = normalize_axes(ctx, axes, r);
      if (!st.is_ok()) return st;
      for (int64_t i = 0; i < r; ++i) {
        const Dim& d = x.shape.dims[i];
        if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
          out.push_back(d);
        } else if (d.known() && d.value != 1) {
          return ctx.error("cannot squeeze axis %lld of input shape %s: dim is %lld, not 1", (long long)i,
                           x.shape.str().c_str(), (long long)d.value);
        }
      }
    }
    ctx.set_output(0, x.dtype, Shape(std::move(out)));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override { return copy_input(ctx); }

 private:
  AxesSource axes_;
  Status bad_;
};

// ---------------------------------------------------------------- Unsqueeze
class UnsqueezeKernel : public OpKernel {
 public:
  UnsqueezeKernel(const Node& n, int64_t opset) : axes_(n, opset, 13), bad_(axes_.check(n)) {
    if (bad_.is_ok() && !axes_.from_input && !axes_.given)
      bad_ = Status::error(node_message(n, "attribute 'axes' is required"));
  }
  Status init() { return bad_; }

  Status infer(InferContext& ctx) const override {
    Status st;
    const ValueInfo& x = ctx.in(0);
    std::vector<int64_t> axes;
    int64_t count;
    int have = axes_.get(ctx, axes, count);
    if (have == 0) return ctx.error("input 'axes' is required");
    if (!x.shape.rank_known) {
      ctx.set_output(0, x.dtype, Shape());
      return Status::ok();
    }
    if (have == -1) {
      if (count >= 0 && !(st = check_rank(ctx, x.shape.rank() + count)).is_ok()) return st;
      ctx.set_output(0, x.dtype, count >= 0 ? Shape::of_rank(x.shape.rank() + count) : Shape());
      return Status::ok();
    }
    const int64_t r = x.shape.rank() + static_cast<int64_t>(axes.size());
    if (!(st = check_rank(ctx, r)).is_ok()) return st;
    st = normalize_axes(ctx, axes, r);
    if (!st.is_ok()) return st;
    std::vector<Dim> out;
    size_t j = 0;
    for (int64_t i = 0; i < r; ++i) {
      if (std::find(axes.begin(), axes.end(), i) != axes.end())
        out.push_back(Dim(1));
      else
        out.push_back(x.shape.dims[j++]);
    }
    ctx.set_output(0, x.dtype, Shape(std::move(out)));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override { return copy_input(ctx); }

 private:
  AxesSource axes_;
  Status bad_;
};

// ---------------------------------------------------------------- Shape
class ShapeKernel : public OpKernel {
 public:
  ShapeKernel(const Node& n, int64_t opset)
      : start_(opset >= 15 ? n.attr_int("start", 0) : 0),
        end_(opset >= 15 && n.has_attr("end") ? n.attr_int("end", 0) : INT64_MAX) {}
  Status init() { return Status::ok(); }

  void range(int64_t r, int64_t& b, int64_t& e) const {
    b = start_ < 0 ? start_ + r : start_;
    e = end_ < 0 ? end_ + r : end_;
    b = std::clamp<int64_t>(b, 0, r);
    e = std::clamp<int64_t>(e, 0, r);
    if (e < b) e = b;
  }
  Status infer(InferContext& ctx) const override {
    const Shape& s = ctx.in(0).shape;
    if (!s.rank_known) {
      ctx.set_output(0, DataType::kInt64, Shape::of_rank(1));
      return Status::ok();
    }
    int64_t b, e;
    range(s.rank(), b, e);
    ctx.set_output(0, DataType::kInt64, Shape::of({e - b}));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    int64_t b, e;
    range(x.rank(), b, e);
    TensorRef& y = ctx.out(0);
    if (y.numel() != e - b)
      return ctx.error("output has %lld elements, expected %lld", (long long)y.numel(), (long long)(e - b));
    for (int64_t i = b; i < e; ++i) y.ptr<int64_t>()[i - b] = x.dims[i];
    return Status::ok();
  }
  bool needs_data(size_t) const override { return false; }

 private:
  int64_t start_, end_;
};

// ---------------------------------------------------------------- Size
class SizeKernel : public OpKernel {
 public:
  SizeKernel(const Node&, int64_t) {}
  Status init() { return Status::ok(); }
  Status infer(InferContext& ctx) const override {
    ctx.set_output(0, DataType::kInt64, Shape::of({}));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    ctx.out(0).ptr<int64_t>()[0] = ctx.in(0).numel();
    return Status::ok();
  }
  bool needs_data(size_t) const override { return false; }
};

}  // namespace

void register_shape_ops(OpRegistry& r) {
  r.add("Reshape", factory_of<ReshapeKernel>());
  r.add("Flatten", factory_of<FlattenKernel>());
  r.add("Squeeze", factory_of<SqueezeKernel>());
  r.add("Unsqueeze", factory_of<UnsqueezeKernel>());
  r.add("Shape", factory_of<ShapeKernel>());
  r.add("Size", factory_of<SizeKernel>());
}

}  // namespace infera
