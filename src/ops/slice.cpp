// Slice: starts/ends/axes/steps (attributes before opset 10, inputs from 10), negative
// indices and steps, clamping of out-of-range bounds (INT_MAX ends). A strided copy.
#include <algorithm>

#include "ops/tensor_ops.h"

namespace infera {

AxisSlice clamp_slice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  AxisSlice s;
  s.step = step;
  if (dim == 0) return s;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    s.count = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    const int64_t neg = step == INT64_MIN ? INT64_MAX : -step;
    s.count = start > end ? (start - end - 1) / neg + 1 : 0;
  }
  s.start = start;
  if (s.count <= 1) s.step = 1;  // keeps huge steps out of stride products
  return s;
}

namespace {

class SliceKernel : public OpKernel {
 public:
  SliceKernel(const Node& n, int64_t opset) : opset_(opset) {
    if (opset < 10) {
      if (!n.has_attr("starts") || !n.has_attr("ends"))
        bad_ = Status::error(node_message(n, "attributes 'starts' and 'ends' are required"));
      starts_ = n.attr_ints("starts");
      ends_ = n.attr_ints("ends");
      has_axes_ = n.has_attr("axes");
      axes_ = n.attr_ints("axes");
    } else if (n.has_attr("starts") || n.has_attr("ends")) {
      bad_ = Status::error(node_message(n, "'starts' and 'ends' are inputs from opset 10 on; found attributes"));
    }
  }
  Status init() { return bad_; }

  // The parameters, normalized: axes in [0, rank), steps filled. Returns 1 when known,
  // 0 when some input value is unknown (axes_known tells whether the axes are), or an error.
  template <class Ctx>
  Status params(const Ctx& ctx, int64_t rank, const std::vector<const std::vector<int64_t>*>& vals,
                std::vector<int64_t>& starts, std::vector<int64_t>& ends, std::vector<int64_t>& axes,
                std::vector<int64_t>& steps) const {
    starts = *vals[0];
    ends = *vals[1];
    if (starts.size() != ends.size())
      return ctx.error("'starts' %s and 'ends' %s differ in length", ints_str(starts).c_str(), ints_str(ends).c_str());
    if (vals[2]) {
      axes = *vals[2];
      if (axes.size() != starts.size())
        return ctx.error("'axes' %s and 'starts' %s differ in length", ints_str(axes).c_str(),
                         ints_str(starts).c_str());
    } else {
      axes.resize(starts.size());
      for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
    }
    if (vals[3]) {
      steps = *vals[3];
      if (steps.size() != starts.size())
        return ctx.error("'steps' %s and 'starts' %s differ in length", ints_str(steps).c_str(),
                         ints_str(starts).c_str());
    } else {
      steps.assign(starts.size(), 1);
    }
    std::vector<char> seen(rank, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i];
      if (!normalize_axis(a, rank))
        return ctx.error("'axes' %s out of range for input rank %lld", ints_str(axes).c_str(), (long long)rank);
      if (seen[a]) return ctx.error("'axes' %s repeats an axis", ints_str(axes).c_str());
      seen[a] = 1;
      axes[i] = a;
      if (steps[i] == 0) return ctx.error("'steps' %s has a zero step", ints_str(steps).c_str());
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    const ValueInfo& x = ctx.in(0);
    std::vector<int64_t> v[4];
    bool known[4] = {true, true, true, true}, present[4] = {true, true, has_axes_, false};
    if (opset_ < 10) {
      v[0] = starts_;
      v[1] = ends_;
      v[2] = axes_;
    } else {
      const char* names[] = {"starts", "ends", "axes", "steps"};
      for (size_t i = 0; i < 4; ++i) {
        present[i] = ctx.has_input(i + 1);
        if (!present[i]) {
          if (i < 2) return ctx.error("input '%s' is required", names[i]);
          continue;
        }
        Status s = expect_dtype(ctx, i + 1, names[i], {DataType::kInt32, DataType::kInt64});
        if (!s.is_ok()) return s;
        known[i] = known_ints(ctx, i + 1, v[i]);
      }
    }
    if (!x.shape.rank_known) {
      ctx.set_output(0, x.dtype, Shape());
      return Status::ok();
    }
    const int64_t r = x.shape.rank();
    std::vector<Dim> out = x.shape.dims;
    if (!known[0] || !known[1] || !known[2] || !known[3]) {
      // Only the untouched axes are known: those not named in known 'axes'.
      std::vector<int64_t> axes = v[2];
      bool axes_known = present[2] ? known[2] : false;
      if (!present[2]) {
        const Shape& ss = ctx.in(1).shape;  // default axes: the first len(starts) axes
        if (ss.rank_known && ss.rank() == 1 && ss.dims[0].known()) {
          axes_known = true;
          for (int64_t i = 0; i < ss.dims[0].value; ++i) axes.push_back(i);
        }
      }
      for (int64_t i = 0; i < r; ++i) {
        bool touched = !axes_known;
        for (int64_t a : axes) touched = touched || a == i || a + r == i;
        if (touched) out[i] = Dim();
      }
      ctx.set_output(0, x.dtype, Shape(std::move(out)));
      return Status::ok();
    }
    std::vector<int64_t> starts, ends, axes, steps;
    Status s = params(ctx, r, {&v[0], &v[1], present[2] ? &v[2] : nullptr, present[3] ? &v[3] : nullptr}, starts, ends,
                      axes, steps);
    if (!s.is_ok()) return s;
    for (size_t i = 0; i < axes.size(); ++i) {
      const Dim& d = x.shape.dims[axes[i]];
      if (d.known()) {
        out[axes[i]] = Dim(clamp_slice(d.value, starts[i], ends[i], steps[i]).count);
      } else if (steps[i] == 1 && (starts[i] == 0 || starts[i] <= INT64_MIN / 2) && ends[i] >= INT32_MAX) {
        out[axes[i]] = d;  // the whole axis
      } else {
        out[axes[i]] = Dim();
      }
    }
    ctx.set_output(0, x.dtype, Shape(std::move(out)));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    std::vector<int64_t> v[4];
    bool present[4] = {true, true, has_axes_, false};
    if (opset_ < 10) {
      v[0] = starts_;
      v[1] = ends_;
      v[2] = axes_;
    } else {
      for (size_t i = 0; i < 4; ++i) {
        present[i] = ctx.has_input(i + 1);
        if (present[i] && !read_ints(ctx.in(i + 1), v[i])) return ctx.error("input %zu must be int32 or int64", i + 1);
      }
    }
    std::vector<int64_t> starts, ends, axes, steps;
    Status s = params(ctx, x.rank(), {&v[0], &v[1], present[2] ? &v[2] : nullptr, present[3] ? &v[3] : nullptr}, starts,
                      ends, axes, steps);
    if (!s.is_ok()) return s;
    std::vector<int64_t> st = strides_of(x.dims), dims = x.dims, ist = st;
    int64_t offset = 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      AxisSlice a = clamp_slice(x.dims[axes[i]], starts[i], ends[i], steps[i]);
      dims[axes[i]] = a.count;
      ist[axes[i]] = st[axes[i]] * a.step;
      if (a.count > 0) offset += a.start * st[axes[i]];
    }
    if (dims != y.dims)
      return ctx.error("output shape %s differs from the slice's %s", ints_str(y.dims).c_str(), ints_str(dims).c_str());
    strided_copy(x.data, y.data, dtype_size(x.dtype), dims, ist, offset, ctx.num_threads);
    return Status::ok();
  }

 private:
  int64_t opset_;
  std::vector<int64_t> starts_, ends_, axes_;
  bool has_axes_ = false;
  Status bad_;
};

}  // namespace

void register_slice_ops(OpRegistry& r) { r.add("Slice", factory_of<SliceKernel>()); }

}  // namespace infera
