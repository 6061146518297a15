// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp and ArgMax/ArgMin.
// Axes come from the 'axes' attribute before opset 13 (ReduceSum) / 18 (the others) and from
// the optional second input after; empty axes reduce everything unless noop_with_empty_axes.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/op.h"
#include "ops/util.h"

namespace infera {
namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// Accumulator: double for floats; wrapping 64-bit integers for integer types.
template <class T>
using AccOf =
    std::conditional_t<std::is_floating_point_v<T>, double, std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

// Input dims split into kept and reduced groups (adjacent groups merged, size-1 dims dropped).
struct ReduceLayout {
  std::vector<int64_t> kept_sizes, kept_strides, red_sizes, red_strides;
  int64_t out_n = 1, red_n = 1;

  void build(const std::vector<int64_t>& dims, const std::vector<bool>& reduced) {
    std::vector<int64_t> st = strides_of(dims);
    int last = -1;  // 0 = kept, 1 = reduced
    for (size_t i = 0; i < dims.size(); ++i) {
      int r = reduced[i] ? 1 : 0;
      if (r)
        red_n *= dims[i];
      else
        out_n *= dims[i];
      if (dims[i] == 1) continue;
      auto& sz = r ? red_sizes : kept_sizes;
      auto& sd = r ? red_strides : kept_strides;
      if (r == last && !sz.empty()) {
        sz.back() *= dims[i];
        sd.back() = st[i];
      } else {
        sz.push_back(dims[i]);
        sd.push_back(st[i]);
      }
      last = r;
    }
  }

  int64_t base_of(int64_t o) const {
    int64_t off = 0;
    for (int i = static_cast<int>(kept_sizes.size()) - 1; i >= 0; --i) {
      off += (o % kept_sizes[i]) * kept_strides[i];
      o /= kept_sizes[i];
    }
    return off;
  }

  // Calls f(x) for every reduced element of the output at input offset `base`, in order.
  template <class T, class F>
  void visit(const T* x, int64_t base, F&& f) const {
    if (red_sizes.empty()) {
      f(x[base]);
      return;
    }
    const int nr = static_cast<int>(red_sizes.size());
    const int64_t inner = red_sizes[nr - 1], inner_stride = red_strides[nr - 1];
    if (nr == 1) {
      const T* p = x + base;
      if (inner_stride == 1) {
        for (int64_t j = 0; j < inner; ++j) f(p[j]);
      } else {
        for (int64_t j = 0; j < inner; ++j) f(p[j * inner_stride]);
      }
      return;
    }
    std::vector<int64_t> idx(nr, 0);
    int64_t outer_n = red_n / std::max<int64_t>(inner, 1);
    for (int64_t c = 0; c < outer_n; ++c) {
      int64_t off = base;
      for (int i = 0; i < nr - 1; ++i) off += idx[i] * red_strides[i];
      const T* p = x + off;
      if (inner_stride == 1) {
        for (int64_t j = 0; j < inner; ++j) f(p[j]);
      } else {
        for (int64_t j = 0; j < inner; ++j) f(p[j * inner_stride]);
      }
      for (int i = nr - 2; i >= 0; --i) {
        if (++idx[i] < red_sizes[i]) break;
        idx[i] = 0;
      }
    }
  }
};

// Resolves raw axes against the rank; empty -> all (or none when noop). False on bad axes.
bool resolve_axes(std::vector<int64_t> axes, int64_t rank, bool noop_empty, std::vector<bool>& mask, std::string& why) {
  mask.assign(rank, false);
  if (axes.empty()) {
    if (!noop_empty) mask.assign(rank, true);
    return true;
  }
  for (int64_t a : axes) {
    int64_t n = a;
    if (!normalize_axis(n, rank)) {
      why = "axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank);
      return false;
    }
    if (mask[n]) {
      why = "axis " + std::to_string(a) + " repeated";
      return false;
    }
    mask[n] = true;
  }
  return true;
}

class ReduceKernel : public OpKernel {
 public:
  ReduceKernel(const Node& n, int64_t opset, ReduceKind kind) : kind_(kind) {
    keepdims_ = n.attr_int("keepdims", 1) != 0;
    noop_empty_ = n.attr_int("noop_with_empty_axes", 0) != 0;
    const int64_t input_from = kind == ReduceKind::kSum ? 13 : 18;
    axes_from_input_ = opset >= input_from;
    if (!axes_from_input_) {
      axes_ = n.attr_ints("axes");
      noop_empty_ = false;
    } else if (n.has_attr("axes")) {
      status_ = Status::error(
          node_message(n, "attribute 'axes' is not allowed at opset %lld (axes are an input from opset %lld)",
                       (long long)opset, (long long)input_from));
    }
    if (n.attr_int("keepdims", 1) != 0 && n.attr_int("keepdims", 1) != 1)
      status_ = Status::error(
          node_message(n, "attribute 'keepdims' must be 0 or 1, found %lld", (long long)n.attr_int("keepdims", 1)));
  }
  Status init() { return status_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input 0 (data) is missing");
    const ValueInfo& x = ctx.in(0);
    const bool minmax = kind_ == ReduceKind::kMax || kind_ == ReduceKind::kMin;
    const bool ok_type = dispatch(x.dtype, minmax ? TypeSet::kAll : TypeSet::kNumeric, [](auto) {});
    if (!ok_type) return ctx.error("input 'data' has unsupported dtype %s", dtype_name(x.dtype));
    std::vector<int64_t> axes = axes_;
    if (axes_from_input_ && ctx.has_input(1)) {
      const ValueInfo& a = ctx.in(1);
      if (a.dtype != DataType::kInt64 && a.dtype != DataType::kInt32)
        return ctx.error("input 'axes' must be int64, found %s", dtype_name(a.dtype));
      if (a.shape.rank_known && a.shape.rank() > 1)
        return ctx.error("input 'axes' must be 1-D, found rank %d", a.shape.rank());
      const Tensor* v = ctx.value(1);
      if (!v) {
        // Axes unknown until run time: with keepdims the rank is kept.
        ctx.set_output(0, x.dtype, keepdims_ && x.shape.rank_known ? Shape::of_rank(x.shape.rank()) : Shape::unknown());
        return Status::ok();
      }
      if (!read_ints(*v, axes)) return ctx.error("input 'axes' could not be read");
    }
    if (!x.shape.rank_known) {
      ctx.set_output(0, x.dtype, Shape::unknown());
      return Status::ok();
    }
    std::vector<bool> mask;
    std::string why;
    if (!resolve_axes(axes, x.shape.rank(), noop_empty_, mask, why)) return ctx.error("%s", why.c_str());
    std::vector<Dim> out;
    for (int i = 0; i < x.shape.rank(); ++i) {
      if (!mask[i])
        out.push_back(x.shape.dims[i]);
      else if (keepdims_)
        out.push_back(Dim(1));
    }
    ctx.set_output(0, x.dtype, Shape(std::move(out)));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    std::vector<int64_t> axes = axes_;
    if (axes_from_input_ && ctx.has_input(1) && !read_ints(ctx.in(1), axes))
      return ctx.error("input 'axes' must be int64, found %s", dtype_name(ctx.in(1).dtype));
    std::vector<bool> mask;
    std::string why;
    if (!resolve_axes(axes, x.rank(), noop_empty_, mask, why)) return ctx.error("%s", why.c_str());
    ReduceLayout L;
    L.build(x.dims, mask);
    if (L.out_n != y.numel())
      return ctx.error("output has %lld elements, expected %lld", (long long)y.numel(), (long long)L.out_n);
    bool ok = dispatch(x.dtype, TypeSet::kAll, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>)
        run_bool(ctx, L, x.ptr<bool>(), y.ptr<bool>());
      else
        run<T>(ctx, L, x.ptr<T>(), y.ptr<T>());
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(x.dtype));
    return Status::ok();
  }

 private:
  template <class T>
  static T cast_out(double v) {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(v);
    } else {
      if (std::isnan(v)) return T(0);
      if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
      if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
      return static_cast<T>(v);
    }
  }

  template <class T>
  T reduce_one(const ReduceLayout& L, const T* x, int64_t base) const {
    using Acc = AccOf<T>;
    const int64_t n = L.red_n;
    switch (kind_) {
      case ReduceKind::kMax:
      case ReduceKind::kMin: {
        const bool is_max = kind_ == ReduceKind::kMax;
        T m;
        if constexpr (std::is_floating_point_v<T>)
          m = is_max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
        else
          m = is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
        if (n == 0) return m;
        bool nan = false;
        L.visit(x, base, [&](T v) {
          if constexpr (std::is_floating_point_v<T>) nan = nan || std::isnan(v);
          if (is_max ? v > m : v < m) m = v;
        });
        if constexpr (std::is_floating_point_v<T>)
          if (nan) return std::numeric_limits<T>::quiet_NaN();
        return m;
      }
      case ReduceKind::kProd: {
        Acc p = 1;
        L.visit(x, base, [&](T v) { p *= static_cast<Acc>(v); });
        return static_cast<T>(p);
      }
      case ReduceKind::kLogSumExp: {
        if (n == 0) return cast_out<T>(-std::numeric_limits<double>::infinity());
        double m = -std::numeric_limits<double>::infinity();
        L.visit(x, base, [&](T v) { m = std::max(m, static_cast<double>(v)); });
        if (std::isinf(m)) return cast_out<T>(m);
        double s = 0;
        L.visit(x, base, [&](T v) { s += std::exp(static_cast<double>(v) - m); });
        return cast_out<T>(m + std::log(s));
      }
      default: break;
    }
    Acc s = 0;
    if (kind_ == ReduceKind::kL1) {
      L.visit(x, base, [&](T v) {
        if constexpr (std::is_signed_v<T>)
          s += static_cast<Acc>(v < 0 ? -v : v);
        else
          s += static_cast<Acc>(v);
      });
    } else if (kind_ == ReduceKind::kL2 || kind_ == ReduceKind::kSumSquare) {
      L.visit(x, base, [&](T v) { s += static_cast<Acc>(v) * static_cast<Acc>(v); });
    } else {
      L.visit(x, base, [&](T v) { s += static_cast<Acc>(v); });
    }
    switch (kind_) {
      case ReduceKind::kMean:
        if constexpr (std::is_floating_point_v<T>)
          return static_cast<T>(s / static_cast<double>(n));
        else
          return n == 0 ? T(0) : static_cast<T>(s / static_cast<Acc>(n));
      case ReduceKind::kL2: return cast_out<T>(std::sqrt(static_cast<double>(s)));
      case ReduceKind::kLogSum: return cast_out<T>(std::log(static_cast<double>(s)));
      default: return static_cast<T>(s);
    }
  }

  template <class T>
  void run(ComputeContext& ctx, const ReduceLayout& L, const T* x, T* y) const {
    const int nt = L.red_n * L.out_n > (1 << 15) ? ctx.num_threads : 1;
    parallel_for(L.out_n, nt, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) y[o] = reduce_one<T>(L, x, L.base_of(o));
    });
  }

  void run_bool(ComputeContext& ctx, const ReduceLayout& L, const bool* x, bool* y) const {
    const bool is_max = kind_ == ReduceKind::kMax;  // max = any, min = all
    for (int64_t o = 0; o < L.out_n; ++o) {
      bool r = !is_max;
      L.visit(x, L.base_of(o), [&](bool v) { r = is_max ? (r || v) : (r && v); });
      y[o] = r;
    }
  }

  ReduceKind kind_;
  bool keepdims_ = true, noop_empty_ = false, axes_from_input_ = false;
  std::vector<int64_t> axes_;
  Status status_;
};

template <ReduceKind K>
OpFactory reduce_factory() {
  return [](const Node& n, int64_t opset) -> Result<std::unique_ptr<OpKernel>> {
    auto k = std::make_unique<ReduceKernel>(n, opset, K);
    Status s = k->init();
    if (!s.is_ok()) return s;
    return std::unique_ptr<OpKernel>(std::move(k));
  };
}

// ArgMax / ArgMin: int64 index of the first (or last) extreme along one axis.
class ArgKernel : public OpKernel {
 public:
  ArgKernel(const Node& n, int64_t opset, bool is_max) : is_max_(is_max) {
    axis_ = n.attr_int("axis", 0);
    keepdims_ = n.attr_int("keepdims", 1) != 0;
    last_ = opset >= 12 && n.attr_int("select_last_index", 0) != 0;
  }
  Status init() { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input 0 (data) is missing");
    const ValueInfo& x = ctx.in(0);
    if (!dispatch(x.dtype, TypeSet::kNumeric, [](auto) {}))
      return ctx.error("input 'data' has unsupported dtype %s", dtype_name(x.dtype));
    if (!x.shape.rank_known) {
      ctx.set_output(0, DataType::kInt64, Shape::unknown());
      return Status::ok();
    }
    int64_t axis = axis_;
    if (!normalize_axis(axis, x.shape.rank()))
      return ctx.error("attribute 'axis' must be in [%d, %d), found %lld", -x.shape.rank(), x.shape.rank(),
                       (long long)axis_);
    if (x.shape.dims[axis].known() && x.shape.dims[axis].value == 0)
      return ctx.error("cannot take the arg-extreme of an empty axis %lld of 'data' %s", (long long)axis,
                       x.shape.str().c_str());
    std::vector<Dim> out;
    for (int i = 0; i < x.shape.rank(); ++i) {
      if (i != axis)
        out.push_back(x.shape.dims[i]);
      else if (keepdims_)
        out.push_back(Dim(1));
    }
    ctx.set_output(0, DataType::kInt64, Shape(std::move(out)));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    int64_t axis = axis_;
    if (!normalize_axis(axis, x.rank())) return ctx.error("attribute 'axis' out of range");
    int64_t outer = 1, inner = 1, n = x.dims[axis];
    for (int64_t i = 0; i < axis; ++i) outer *= x.dims[i];
    for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.dims[i];
    if (n == 0 && outer * inner > 0) return ctx.error("axis %lld of 'data' is empty", (long long)axis);
    int64_t* y = ctx.out(0).ptr<int64_t>();
    bool ok = dispatch(x.dtype, TypeSet::kNumeric, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = x.ptr<T>();
      parallel_for(outer * inner, outer * inner * n > (1 << 15) ? ctx.num_threads : 1, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const T* q = p + (o / inner) * n * inner + (o % inner);
          int64_t best = 0;
          T bv = q[0];
          for (int64_t j = 1; j < n; ++j) {
            T v = q[j * inner];
            bool better = is_max_ ? (last_ ? v >= bv : v > bv) : (last_ ? v <= bv : v < bv);
            if (better) {
              bv = v;
              best = j;
            }
          }
          y[o] = best;
        }
      });
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(x.dtype));
    return Status::ok();
  }

 private:
  bool is_max_;
  int64_t axis_ = 0;
  bool keepdims_ = true, last_ = false;
};

template <bool IsMax>
OpFactory arg_factory() {
  return [](const Node& n, int64_t opset) -> Result<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(std::make_unique<ArgKernel>(n, opset, IsMax));
  };
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  r.add("ReduceSum", reduce_factory<ReduceKind::kSum>());
  r.add("ReduceMean", reduce_factory<ReduceKind::kMean>());
  r.add("ReduceMax", reduce_factory<ReduceKind::kMax>());
  r.add("ReduceMin", reduce_factory<ReduceKind::kMin>());
  r.add("ReduceProd", reduce_factory<ReduceKind::kProd>());
  r.add("ReduceL1", reduce_factory<ReduceKind::kL1>());
  r.add("ReduceL2", reduce_factory<ReduceKind::kL2>());
  r.add("ReduceSumSquare", reduce_factory<ReduceKind::kSumSquare>());
  r.add("ReduceLogSum", reduce_factory<ReduceKind::kLogSum>());
  r.add("ReduceLogSumExp", reduce_factory<ReduceKind::kLogSumExp>());
  r.add("ArgMax", arg_factory<true>());
  r.add("ArgMin", arg_factory<false>());
}

}  // namespace infera
