// Softmax, LogSoftmax, Hardmax and TopK.
// Softmax family: before opset 13 the input is coerced to 2-D at 'axis' (default 1) and the
// op runs over the flattened trailing part; from 13 it runs along 'axis' (default -1).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/op.h"
#include "ops/softmax.h"
#include "ops/util.h"

namespace infera {
namespace {

class SoftmaxKernel : public SoftmaxOp {
 public:
  SoftmaxKernel(const Node& n, int64_t opset, SoftmaxKind kind) : SoftmaxOp(kind) {
    per_axis_ = opset >= 13;
    axis_ = n.attr_int("axis", per_axis_ ? -1 : 1);
  }
  Status init() { return Status::ok(); }

  // outer x n x inner view of the input for the given rank/dims; false when the axis is bad.
  bool split(const std::vector<int64_t>& dims, int64_t& outer, int64_t& n, int64_t& inner) const {
    const int64_t r = static_cast<int64_t>(dims.size());
    int64_t axis = axis_;
    if (per_axis_) {
      if (!normalize_axis(axis, r)) return false;
    } else {
      if (axis < -r || axis > r) return false;
      if (axis < 0) axis += r;
    }
    outer = 1;
    n = 1;
    inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= dims[i];
    if (per_axis_) {
      n = dims[axis];
      for (int64_t i = axis + 1; i < r; ++i) inner *= dims[i];
    } else {
      for (int64_t i = axis; i < r; ++i) n *= dims[i];
    }
    return true;
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input 0 (input) is missing");
    const ValueInfo& x = ctx.in(0);
    if (x.dtype != DataType::kFloat32 && x.dtype != DataType::kFloat64)
      return ctx.error("input 'input' must be float32 or float64, found %s", dtype_name(x.dtype));
    if (x.shape.rank_known) {
      const int r = x.shape.rank();
      int64_t axis = axis_;
      bool ok = per_axis_ ? normalize_axis(axis, r) : (axis >= -r && axis <= r);
      if (!ok)
        return ctx.error("attribute 'axis' must be in [%d, %d], found %lld", -r, per_axis_ ? r - 1 : r,
                         (long long)axis_);
    }
    ctx.set_output(0, x.dtype, x.shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    int64_t outer, n, inner;
    if (!split(x.dims, outer, n, inner)) return ctx.error("attribute 'axis' out of range");
    bool ok = dispatch(x.dtype, TypeSet::kFloats, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) run<T>(ctx, x.ptr<T>(), ctx.out(0).ptr<T>(), outer, n, inner);
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(x.dtype));
    return Status::ok();
  }

 private:
  template <class T>
  void run(ComputeContext& ctx, const T* x, T* y, int64_t outer, int64_t n, int64_t inner) const {
    const int64_t rows = outer * inner;
    parallel_for(rows, rows * n > (1 << 14) ? ctx.num_threads : 1, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const int64_t base = (o / inner) * n * inner + (o % inner);
        const T* p = x + base;
        T* q = y + base;
        if (n == 0) continue;
        T m = p[0];
        int64_t arg = 0;
        for (int64_t j = 1; j < n; ++j)
          if (p[j * inner] > m) {
            m = p[j * inner];
            arg = j;
          }
        if (kind_ == SoftmaxKind::kHardmax) {
          for (int64_t j = 0; j < n; ++j) q[j * inner] = T(j == arg ? 1 : 0);
          continue;
        }
        double s = 0;
        if (kind_ == SoftmaxKind::kSoftmax) {
          for (int64_t j = 0; j < n; ++j) {
            T ex = std::exp(p[j * inner] - m);
            q[j * inner] = ex;
            s += ex;
          }
          const T inv = static_cast<T>(1.0 / s);
          for (int64_t j = 0; j < n; ++j) q[j * inner] *= inv;
        } else {
          for (int64_t j = 0; j < n; ++j) s += std::exp(static_cast<double>(p[j * inner] - m));
          const T ls = static_cast<T>(std::log(s));
          for (int64_t j = 0; j < n; ++j) q[j * inner] = p[j * inner] - m - ls;
        }
      }
    });
  }
};

template <SoftmaxKind K>
OpFactory softmax_factory() {
  return [](const Node& n, int64_t opset) -> Result<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(std::make_unique<SoftmaxKernel>(n, opset, K));
  };
}

// TopK: the k largest (or smallest) along 'axis'; ties go to the lower index.
class TopKKernel : public OpKernel {
 public:
  TopKKernel(const Node& n, int64_t opset) {
    k_from_input_ = opset >= 10;
    k_attr_ = n.attr_int("k", -1);
    axis_ = n.attr_int("axis", -1);
    // 'sorted' = 0 lets any order through; the sorted order is always a valid answer.
    largest_ = opset < 11 || n.attr_int("largest", 1) != 0;
    if (!k_from_input_ && (!n.has_attr("k") || k_attr_ < 0))
      status_ =
          Status::error(node_message(n, "attribute 'k' must be present and >= 0, found %lld", (long long)k_attr_));
  }
  Status init() { return status_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input 0 (X) is missing");
    const ValueInfo& x = ctx.in(0);
    if (!dispatch(x.dtype, TypeSet::kNumeric, [](auto) {}))
      return ctx.error("input 'X' has unsupported dtype %s", dtype_name(x.dtype));
    int64_t k = k_attr_;
    bool k_known = true;
    if (k_from_input_) {
      if (!ctx.has_input(1)) return ctx.error("input 1 (K) is missing");
      if (ctx.in(1).dtype != DataType::kInt64)
        return ctx.error("input 'K' must be int64, found %s", dtype_name(ctx.in(1).dtype));
      const Tensor* v = ctx.value(1);
      std::vector<int64_t> kv;
      if (v) {
        if (!read_ints(*v, kv) || kv.size() != 1)
          return ctx.error("input 'K' must hold one value, found %zu", kv.size());
        k = kv[0];
        if (k < 0) return ctx.error("input 'K' must be >= 0, found %lld", (long long)k);
      } else {
        k_known = false;
      }
    }
    Shape out = x.shape;
    if (x.shape.rank_known) {
      int64_t axis = axis_;
      if (!normalize_axis(axis, x.shape.rank()))
        return ctx.error("attribute 'axis' must be in [%d, %d), found %lld", -x.shape.rank(), x.shape.rank(),
                         (long long)axis_);
      const Dim& d = x.shape.dims[axis];
      if (k_known && d.known() && k > d.value)
        return ctx.error("k = %lld exceeds the size %lld of axis %lld of 'X'", (long long)k, (long long)d.value,
                         (long long)axis);
      out.dims[axis] = k_known ? Dim(k) : Dim();
    }
    ctx.set_output(0, x.dtype, out);
    ctx.set_output(1, DataType::kInt64, out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    int64_t axis = axis_;
    if (!normalize_axis(axis, x.rank())) return ctx.error("attribute 'axis' out of range");
    int64_t k = k_attr_;
    if (k_from_input_) {
      std::vector<int64_t> kv;
      if (!read_ints(ctx.in(1), kv) || kv.size() != 1) return ctx.error("input 'K' must hold one int64");
      k = kv[0];
    }
    const int64_t n = x.dims[axis];
    if (k < 0 || k > n) return ctx.error("k = %lld out of range [0, %lld]", (long long)k, (long long)n);
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= x.dims[i];
    for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.dims[i];
    int64_t* yi = ctx.has_output(1) ? ctx.out(1).ptr<int64_t>() : nullptr;
    bool ok = dispatch(x.dtype, TypeSet::kNumeric, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = x.ptr<T>();
      T* yv = ctx.has_output(0) ? ctx.out(0).ptr<T>() : nullptr;
      const int64_t rows = outer * inner;
      parallel_for(rows, rows * n > (1 << 14) ? ctx.num_threads : 1, [&](int64_t b, int64_t e) {
        std::vector<int64_t> idx(n);
        for (int64_t o = b; o < e; ++o) {
          const int64_t in_base = (o / inner) * n * inner + (o % inner);
          const int64_t out_base = (o / inner) * k * inner + (o % inner);
          std::iota(idx.begin(), idx.end(), int64_t(0));
          auto before = [&](int64_t a, int64_t c) {
            T va = p[in_base + a * inner], vc = p[in_base + c * inner];
            if constexpr (std::is_floating_point_v<T>) {
              // NaN counts as the largest value so the order stays strict-weak.
              const bool na = std::isnan(va), nc = std::isnan(vc);
              if (na || nc) return na != nc ? (na == largest_) : a < c;
            }
            if (va != vc) return largest_ ? va > vc : va < vc;
            return a < c;
          };
          std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), before);
          for (int64_t j = 0; j < k; ++j) {
            if (yv) yv[out_base + j * inner] = p[in_base + idx[j] * inner];
            if (yi) yi[out_base + j * inner] = idx[j];
          }
        }
      });
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(x.dtype));
    return Status::ok();
  }

 private:
  bool k_from_input_ = true, largest_ = true;
  int64_t k_attr_ = -1, axis_ = -1;
  Status status_;
};

}  // namespace

void register_misc_ops(OpRegistry& r) {
  r.add("Softmax", softmax_factory<SoftmaxKind::kSoftmax>());
  r.add("LogSoftmax", softmax_factory<SoftmaxKind::kLogSoftmax>());
  r.add("Hardmax", softmax_factory<SoftmaxKind::kHardmax>());
  r.add("TopK", factory_of<TopKKernel>());
}

}  // namespace infera
