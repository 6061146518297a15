// Gather: picks slices of `data` along an axis by (possibly negative) indices. Type-agnostic.
#include <cstring>

#include "ops/tensor_ops.h"

namespace infera {
namespace {

class GatherKernel : public OpKernel {
 public:
  GatherKernel(const Node& n, int64_t) : axis_(n.attr_int("axis", 0)) {}
  Status init() { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("expects inputs 'data' and 'indices'");
    Status s = expect_dtype(ctx, 1, "indices", {DataType::kInt32, DataType::kInt64});
    if (!s.is_ok()) return s;
    const ValueInfo& x = ctx.in(0);
    const Shape& is = ctx.in(1).shape;
    if (!x.shape.rank_known || !is.rank_known) {
      ctx.set_output(0, x.dtype, Shape());
      return Status::ok();
    }
    const int r = x.shape.rank();
    if (r == 0) return ctx.error("input 'data' must have rank >= 1, found a scalar");
    int64_t axis = axis_;
    if (!normalize_axis(axis, r))
      return ctx.error("attribute 'axis' must be in [%d, %d) for 'data' of shape %s, found %lld", -r, r,
                       x.shape.str().c_str(), (long long)axis_);
    // Indices known now (a folded shape computation): check them early.
    std::vector<int64_t> idx;
    const Dim& d = x.shape.dims[axis];
    if (d.known() && known_ints(ctx, 1, idx)) {
      for (int64_t i : idx)
        if (i < -d.value || i >= d.value)
          return ctx.error("index %lld out of range [%lld, %lld) for axis %lld of 'data' shape %s", (long long)i,
                           (long long)-d.value, (long long)d.value, (long long)axis, x.shape.str().c_str());
    }
    std::vector<Dim> out(x.shape.dims.begin(), x.shape.dims.begin() + axis);
    out.insert(out.end(), is.dims.begin(), is.dims.end());
    out.insert(out.end(), x.shape.dims.begin() + axis + 1, x.shape.dims.end());
    ctx.set_output(0, x.dtype, Shape(std::move(out)));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    std::vector<int64_t> idx;
    if (!read_ints(ctx.in(1), idx)) return ctx.error("input 'indices' must be int32 or int64");
    int64_t axis = axis_;
    if (!normalize_axis(axis, x.rank())) return ctx.error("attribute 'axis' out of range");
    const int64_t A = x.dims[axis];
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; ++k) outer *= x.dims[k];
    for (int k = axis + 1; k < x.rank(); ++k) inner *= x.dims[k];
    for (int64_t& i : idx) {
      if (i < -A || i >= A)
        return ctx.error("index %lld out of range [%lld, %lld) for axis %lld of 'data' shape %s", (long long)i,
                         (long long)-A, (long long)A, (long long)axis, ints_str(x.dims).c_str());
      if (i < 0) i += A;
    }
    const int64_t n = static_cast<int64_t>(idx.size());
    const size_t bytes = static_cast<size_t>(inner) * dtype_size(x.dtype);
    const auto* src = static_cast<const uint8_t*>(x.data);
    auto* dst = static_cast<uint8_t*>(ctx.out(0).data);
    if (bytes == 0) return Status::ok();
    const int nt = outer * n * static_cast<int64_t>(bytes) >= (1 << 18) ? ctx.num_threads : 1;
    parallel_for(outer * n, nt, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const int64_t o = k / n, j = k % n;
        std::memcpy(dst + k * bytes, src + (o * A + idx[j]) * bytes, bytes);
      }
    });
    return Status::ok();
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_gather_ops(OpRegistry& r) { r.add("Gather", factory_of<GatherKernel>()); }

}  // namespace infera
