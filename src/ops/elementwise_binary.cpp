// Binary elementwise ops with numpy broadcasting: arithmetic (Add Sub Mul Div Pow Mod), logic
// (And Or Xor), comparison (Equal Greater Less GreaterOrEqual LessOrEqual), PRelu (slope
// broadcast to X), the variadic Max Min Sum Mean, and Where.
// Selects like `x < 0 ? a * x : x` only become vector blends when FP ops may not trap;
// this changes no value (no reassociation), it only lets the loops vectorize.
#pragma GCC optimize("no-trapping-math")
#include <cmath>

#include "ops/elementwise.h"

namespace infera {
namespace {

bool is_comparison(BinaryKind op) {
  return op == BinaryKind::kEqual || op == BinaryKind::kGreater || op == BinaryKind::kLess ||
         op == BinaryKind::kGreaterOrEqual || op == BinaryKind::kLessOrEqual;
}
bool is_logic(BinaryKind op) { return op == BinaryKind::kAnd || op == BinaryKind::kOr || op == BinaryKind::kXor; }

// float16/bfloat16 are accepted wherever floats are: computed in float32 (run_in_float32).
bool in_set(DataType dt, TypeSet s) {
  return is_narrow_float(dt) || dispatch(dt, s, [](auto) {});
}

template <class T>
inline T max_nan(T a, T b) {
  return (a >= b || a != a) ? a : b;
}  // NaN wins, as numpy
template <class T>
inline T min_nan(T a, T b) {
  return (a <= b || a != a) ? a : b;
}

// Floating-point remainder with the sign of the divisor, as numpy.mod (npy_divmod).
template <class T>
T py_mod(T x, T y) {
  T m = std::fmod(x, y);
  if (y == T(0)) return m;
  if (m != T(0)) {
    if ((y < T(0)) != (m < T(0))) m += y;
  } else {
    m = std::copysign(T(0), y);
  }
  return m;
}

// Integer base ** exponent: exact by squaring for integral exponents, wrapping on overflow.
template <class T>
T int_pow(T base, double e) {
  if (e != std::floor(e) || std::fabs(e) >= 9.2e18) return float_to_int<T>(std::pow(double(base), e));
  int64_t k = static_cast<int64_t>(e);
  if (k < 0) {  // only |base| == 1 survives truncation; 1/0 is left as 0
    if (base == T(1)) return T(1);
    if constexpr (std::is_signed_v<T>) {
      if (base == T(-1)) return (k & 1) ? T(-1) : T(1);
    }
    return T(0);
  }
  T r = T(1), b = base;
  while (k) {
    if (k & 1) r = wrap_mul(r, b);
    b = wrap_mul(b, b);
    k >>= 1;
  }
  return r;
}

// True when an integer divisor tensor holds a zero (integer division by zero traps on x86).
bool has_zero(const TensorRef& t) {
  bool z = false;
  dispatch(t.dtype, TypeSet::kNumeric, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      const T* p = t.ptr<T>();
      for (int64_t i = 0, n = t.numel(); i < n && !z; ++i) z = p[i] == T(0);
    }
  });
  return z;
}

Status broadcast_out(InferContext& ctx, size_t i, size_t j, Shape& out) {
  if (!broadcast_shapes(ctx.in(i).shape, ctx.in(j).shape, out))
    return ctx.error("inputs %zu and %zu cannot be broadcast together: shapes %s and %s", i, j,
                     ctx.in(i).shape.str().c_str(), ctx.in(j).shape.str().c_str());
  return Status::ok();
}

template <class K, class... Args>
OpFactory factory_with(Args... args) {
  return [=](const Node& n, int64_t opset) -> Result<std::unique_ptr<OpKernel>> {
    auto k = std::make_unique<K>(args..., n, opset);
    Status s = k->init(n);
    if (!s.is_ok()) return s;
    return std::unique_ptr<OpKernel>(std::move(k));
  };
}

// ---------------------------------------------------------------- BinaryKernel
class BinaryKernel : public BinaryOp {
 public:
  BinaryKernel(BinaryKind op, const Node& n, int64_t opset) : BinaryOp(op), op_(op), fmod_(n.attr_int("fmod", 0)) {}

  Status init(const Node& n) {
    if (op_ == BinaryKind::kMod && fmod_ != 0 && fmod_ != 1)
      return Status::error(node_message(n, "attribute 'fmod' must be 0 or 1, found %lld", (long long)fmod_));
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("two inputs are required");
    const DataType a = ctx.in(0).dtype, b = ctx.in(1).dtype;
    if (is_logic(op_)) {
      if (a != DataType::kBool || b != DataType::kBool)
        return ctx.error("inputs have dtypes %s and %s, expected bool", dtype_name(a), dtype_name(b));
    } else if (op_ == BinaryKind::kPow) {
      if (!in_set(a, TypeSet::kNumeric))
        return ctx.error("input 0 (X) has dtype %s, expected a numeric type", dtype_name(a));
      if (!in_set(b, TypeSet::kNumeric))
        return ctx.error("input 1 (Y) has dtype %s, expected a numeric type", dtype_name(b));
    } else {
      const TypeSet set = is_comparison(op_) ? TypeSet::kAll : TypeSet::kNumeric;
      if (!in_set(a, set)) return ctx.error("input 0 has dtype %s, expected a numeric type", dtype_name(a));
      if (b != a) return ctx.error("input 1 has dtype %s, expected %s like input 0", dtype_name(b), dtype_name(a));
    }
    Shape out;
    if (op_ == BinaryKind::kPRelu) {
      // slope broadcasts to X (unidirectional): the result has X's shape.
      const Shape& x = ctx.in(0).shape;
      const Shape& s = ctx.in(1).shape;
      Status st = broadcast_out(ctx, 0, 1, out);
      if (!st.is_ok()) return st;
      if (x.rank_known && s.rank_known) {
        bool ok = s.rank() <= x.rank();
        for (int i = 0; ok && i < s.rank(); ++i) {
          const Dim& ds = s.dims[i];
          const Dim& dx = x.dims[x.rank() - s.rank() + i];
          ok = !(ds.known() && dx.known() && ds.value != 1 && ds.value != dx.value);
        }
        if (!ok)
          return ctx.error("input 1 (slope) of shape %s does not broadcast to input 0 (X) of shape %s", s.str().c_str(),
                           x.str().c_str());
      }
      out = x;
    } else {
      Status st = broadcast_out(ctx, 0, 1, out);
      if (!st.is_ok()) return st;
    }
    ctx.set_output(0, is_comparison(op_) ? DataType::kBool : a, out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    return run_in_float32(
        ctx, [&](const std::vector<const TensorRef*>& ins, TensorRef& o) { return run(ctx, *ins[0], *ins[1], o); });
  }

 private:
  Status run(ComputeContext& ctx, const TensorRef& a, const TensorRef& b, TensorRef& o) const {
    std::vector<int64_t> dims;
    if (!broadcast_dims(a.dims, b.dims, dims) || dims != o.dims || (op_ == BinaryKind::kPRelu && dims != a.dims))
      return ctx.error("input shapes do not broadcast to the output shape");
    if ((op_ == BinaryKind::kDiv || op_ == BinaryKind::kMod) && is_integer(b.dtype) && has_zero(b))
      return ctx.error("integer division by zero: input 1 holds a zero");
    const int nt = ctx.num_threads;
    if (op_ == BinaryKind::kPow) return compute_pow(ctx, a, b, o);
    bool ok = dispatch(a.dtype, TypeSet::kAll, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pa = a.ptr<T>();
      const T* pb = b.ptr<T>();
      auto run = [&](auto f) { binary_broadcast(pa, a.dims, pb, b.dims, o.ptr<T>(), o.dims, nt, f); };
      auto cmp = [&](auto f) { binary_broadcast(pa, a.dims, pb, b.dims, o.ptr<bool>(), o.dims, nt, f); };
      switch (op_) {
        case BinaryKind::kEqual: cmp([](T x, T y) { return x == y; }); return;
        case BinaryKind::kGreater: cmp([](T x, T y) { return x > y; }); return;
        case BinaryKind::kLess: cmp([](T x, T y) { return x < y; }); return;
        case BinaryKind::kGreaterOrEqual: cmp([](T x, T y) { return x >= y; }); return;
        case BinaryKind::kLessOrEqual: cmp([](T x, T y) { return x <= y; }); return;
        default: break;
      }
      if constexpr (std::is_same_v<T, bool>) {
        switch (op_) {
          case BinaryKind::kAnd: run([](bool x, bool y) { return x && y; }); break;
          case BinaryKind::kOr: run([](bool x, bool y) { return x || y; }); break;
          case BinaryKind::kXor: run([](bool x, bool y) { return x != y; }); break;
          default: break;
        }
      } else if constexpr (std::is_floating_point_v<T>) {
        switch (op_) {
          case BinaryKind::kAdd: run([](T x, T y) { return x + y; }); break;
          case BinaryKind::kSub: run([](T x, T y) { return x - y; }); break;
          case BinaryKind::kMul: run([](T x, T y) { return x * y; }); break;
          case BinaryKind::kDiv: run([](T x, T y) { return x / y; }); break;
          case BinaryKind::kMod:
            if (fmod_)
              run([](T x, T y) { return std::fmod(x, y); });
            else
              run([](T x, T y) { return py_mod(x, y); });  // opset < 23 requires fmod=1; newer allow 0
            break;
          case BinaryKind::kPRelu: run([](T x, T s) { return x < T(0) ? x * s : x; }); break;
          default: break;
        }
      } else {
        switch (op_) {
          case BinaryKind::kAdd: run([](T x, T y) { return wrap_add(x, y); }); break;
          case BinaryKind::kSub: run([](T x, T y) { return wrap_sub(x, y); }); break;
          case BinaryKind::kMul: run([](T x, T y) { return wrap_mul(x, y); }); break;
          case BinaryKind::kPRelu: run([](T x, T s) { return x < T(0) ? wrap_mul(x, s) : x; }); break;
          case BinaryKind::kDiv:  // truncates toward zero, as C; MIN / -1 wraps instead of trapping
            run([](T x, T y) { return y == T(-1) ? wrap_sub(T(0), x) : T(x / y); });
            break;
          case BinaryKind::kMod:
            if (fmod_) {
              run([](T x, T y) { return y == T(-1) ? T(0) : T(x % y); });  // sign of the dividend
            } else {
              run([](T x, T y) {  // sign of the divisor, as Python
                if (y == T(-1)) return T(0);
                T r = T(x % y);
                if constexpr (std::is_signed_v<T>) {
                  if (r != 0 && ((r < 0) != (y < 0))) r = T(r + y);
                }
                return r;
              });
            }
            break;
          default: break;
        }
      }
    });
    if (!ok) return ctx.error("unsupported input dtype %s", dtype_name(a.dtype));
    return Status::ok();
  }

  // Output has the base's dtype; the exponent (any numeric dtype) is read as double.
  Status compute_pow(ComputeContext& ctx, const TensorRef& a, const TensorRef& b, TensorRef& o) const {
    std::vector<double> eb;
    const double* pe = nullptr;
    if (b.dtype == DataType::kFloat64) {
      pe = b.ptr<double>();
    } else {
      eb.resize(b.numel());
      bool ok = dispatch(b.dtype, TypeSet::kNumeric, [&](auto tag) {
        using E = typename decltype(tag)::type;
        const E* p = b.ptr<E>();
        for (size_t i = 0; i < eb.size(); ++i) eb[i] = static_cast<double>(p[i]);
      });
      if (!ok) return ctx.error("unsupported exponent dtype %s", dtype_name(b.dtype));
      pe = eb.data();
    }
    const int nt = ctx.num_threads;
    const bool scalar_e = b.numel() == 1;
    bool ok = dispatch(a.dtype, TypeSet::kNumeric, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pa = a.ptr<T>();
      T* po = o.ptr<T>();
      if constexpr (std::is_floating_point_v<T>) {
        if (scalar_e && (pe[0] == 2.0 || pe[0] == 0.5 || pe[0] == 1.0)) {  // x*x, sqrt(x): CNN norms
          const double e = pe[0];
          binary_broadcast(pa, a.dims, pe, b.dims, po, o.dims, nt, [e](T x, double) {
            return e == 2.0 ? x * x : e == 0.5 ? std::sqrt(x) : x;
          });
          return;
        }
        binary_broadcast(pa, a.dims, pe, b.dims, po, o.dims, nt,
                         [](T x, double y) { return T(std::pow(double(x), y)); });
      } else {
        binary_broadcast(pa, a.dims, pe, b.dims, po, o.dims, nt, [](T x, double y) { return int_pow(x, y); });
      }
    });
    if (!ok) return ctx.error("unsupported base dtype %s", dtype_name(a.dtype));
    return Status::ok();
  }

  BinaryKind op_;
  int64_t fmod_;
};

// ---------------------------------------------------------------- Max Min Sum Mean

class VariadicKernel : public BinaryOp {
 public:
  VariadicKernel(BinaryKind op, const Node&, int64_t) : BinaryOp(op), op_(op) {}
  Status init(const Node&) { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 1) return ctx.error("at least one input is required");
    const TypeSet set = (op_ == BinaryKind::kMax || op_ == BinaryKind::kMin) ? TypeSet::kNumeric : TypeSet::kFloats;
    if (!ctx.has_input(0)) return ctx.error("input 0 is required");
    const DataType dt = ctx.in(0).dtype;
    if (!in_set(dt, set))
      return ctx.error("input 0 has dtype %s, expected %s", dtype_name(dt),
                       set == TypeSet::kFloats ? "float32 or float64" : "a numeric type");
    Shape out = ctx.in(0).shape;
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return ctx.error("input %zu is missing", i);
      if (ctx.in(i).dtype != dt)
        return ctx.error("input %zu has dtype %s, expected %s like input 0", i, dtype_name(ctx.in(i).dtype),
                         dtype_name(dt));
      Shape next;
      if (!broadcast_shapes(out, ctx.in(i).shape, next))
        return ctx.error("input %zu of shape %s cannot be broadcast with shape %s", i, ctx.in(i).shape.str().c_str(),
                         out.str().c_str());
      out = std::move(next);
    }
    ctx.set_output(0, dt, out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    return run_in_float32(ctx, [&](const std::vector<const TensorRef*>& ins, TensorRef& o) {
      for (const TensorRef* t : ins)
        if (!t) return ctx.error("an input is missing");
      return run(ctx, ins, o);
    });
  }

 private:
  Status run(ComputeContext& ctx, const std::vector<const TensorRef*>& ins, TensorRef& o) const {
    const size_t k = ins.size();
    std::vector<int64_t> dims = ins[0]->dims;
    for (size_t i = 1; i < k; ++i) {
      std::vector<int64_t> next;
      if (!broadcast_dims(dims, ins[i]->dims, next)) return ctx.error("input %zu does not broadcast", i);
      dims = std::move(next);
    }
    if (dims != o.dims) return ctx.error("input shapes do not broadcast to the output shape");
    const int nt = ctx.num_threads;
    bool ok = dispatch(o.dtype, TypeSet::kNumeric, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* po = o.ptr<T>();
      auto step = [&](const T* a, const std::vector<int64_t>& ad, const TensorRef& b) {
        const T* pb = b.ptr<T>();
        switch (op_) {
          case BinaryKind::kMax:
            binary_broadcast(a, ad, pb, b.dims, po, o.dims, nt, [](T x, T y) { return max_nan(x, y); });
            break;
          case BinaryKind::kMin:
            binary_broadcast(a, ad, pb, b.dims, po, o.dims, nt, [](T x, T y) { return min_nan(x, y); });
            break;
          default:
            binary_broadcast(a, ad, pb, b.dims, po, o.dims, nt, [](T x, T y) {
              if constexpr (std::is_floating_point_v<T>)
                return T(x + y);
              else
                return wrap_add(x, y);
            });
        }
      };
      const TensorRef& first = *ins[0];
      if (k == 1) {
        std::copy_n(first.ptr<T>(), o.numel(), po);
      } else {
        step(first.ptr<T>(), first.dims, *ins[1]);
        for (size_t i = 2; i < k; ++i) step(po, o.dims, *ins[i]);  // accumulates in place
      }
      if constexpr (std::is_floating_point_v<T>) {
        if (op_ == BinaryKind::kMean && k > 1) {
          const T count = T(k);
          const int64_t n = o.numel();
          for (int64_t i = 0; i < n; ++i) po[i] /= count;
        }
      }
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(o.dtype));
    return Status::ok();
  }

  BinaryKind op_;
};

// ---------------------------------------------------------------- Where
class WhereKernel : public OpKernel {
 public:
  WhereKernel(const Node&, int64_t) {}
  Status init(const Node&) { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    for (size_t i = 0; i < 3; ++i)
      if (!ctx.has_input(i)) return ctx.error("input %zu is required", i);
    if (ctx.in(0).dtype != DataType::kBool)
      return ctx.error("input 0 (condition) has dtype %s, expected bool", dtype_name(ctx.in(0).dtype));
    const DataType dt = ctx.in(1).dtype;
    if (dtype_size(dt) == 0) return ctx.error("input 1 (X) has unsupported dtype %s", dtype_name(dt));
    if (ctx.in(2).dtype != dt)
      return ctx.error("input 2 (Y) has dtype %s, expected %s like input 1 (X)", dtype_name(ctx.in(2).dtype),
                       dtype_name(dt));
    Shape xy, out;
    Status st = broadcast_out(ctx, 1, 2, xy);
    if (!st.is_ok()) return st;
    if (!broadcast_shapes(ctx.in(0).shape, xy, out))
      return ctx.error("input 0 (condition) of shape %s cannot be broadcast with shape %s",
                       ctx.in(0).shape.str().c_str(), xy.str().c_str());
    ctx.set_output(0, dt, out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& c = ctx.in(0);
    const TensorRef& x = ctx.in(1);
    const TensorRef& y = ctx.in(2);
    TensorRef& o = ctx.out(0);
    std::vector<int64_t> xy, dims;
    if (!broadcast_dims(x.dims, y.dims, xy) || !broadcast_dims(c.dims, xy, dims) || dims != o.dims)
      return ctx.error("input shapes do not broadcast to the output shape");
    int64_t total = o.numel();
    if (total == 0) return Status::ok();
    const BroadcastPlan p = BroadcastPlan::make({&c.dims, &x.dims, &y.dims}, o.dims);
    const bool* pc = c.ptr<bool>();
    bool ok = dispatch_by_size(dtype_size(o.dtype), [&](auto tag) {  // moves data: any dtype
      using T = typename decltype(tag)::type;
      const T* px = x.ptr<T>();
      const T* py = y.ptr<T>();
      T* po = o.ptr<T>();
      const int64_t sc = p.inner_stride[0], sx = p.inner_stride[1], sy = p.inner_stride[2];
      auto row = [&](const int64_t* off, int64_t oo, int64_t b, int64_t e) {
        const bool* c0 = pc + off[0];
        const T* x0 = px + off[1];
        const T* y0 = py + off[2];
        for (int64_t i = b; i < e; ++i) po[oo + i] = c0[i * sc] ? x0[i * sx] : y0[i * sy];
      };
      if (p.rows == 1) {
        const int64_t zero[3] = {0, 0, 0};
        ew_parallel(p.inner, total, ctx.num_threads, [&](int64_t b, int64_t e) { row(zero, 0, b, e); });
      } else {
        ew_parallel(p.rows, total, ctx.num_threads, [&](int64_t r0, int64_t r1) {
          for_each_row(p, r0, r1, [&](const int64_t* off, int64_t oo) { row(off, oo, 0, p.inner); });
        });
      }
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(o.dtype));
    return Status::ok();
  }
};

}  // namespace

void register_elementwise_binary_ops(OpRegistry& r) {
  static const std::pair<const char*, BinaryKind> ops[] = {
      {"Add", BinaryKind::kAdd},
      {"Sub", BinaryKind::kSub},
      {"Mul", BinaryKind::kMul},
      {"Div", BinaryKind::kDiv},
      {"Pow", BinaryKind::kPow},
      {"Mod", BinaryKind::kMod},
      {"And", BinaryKind::kAnd},
      {"Or", BinaryKind::kOr},
      {"Xor", BinaryKind::kXor},
      {"Equal", BinaryKind::kEqual},
      {"Greater", BinaryKind::kGreater},
      {"Less", BinaryKind::kLess},
      {"GreaterOrEqual", BinaryKind::kGreaterOrEqual},
      {"LessOrEqual", BinaryKind::kLessOrEqual},
      {"PRelu", BinaryKind::kPRelu},
  };
  for (auto& [name, op] : ops) r.add(name, factory_with<BinaryKernel>(op));
  r.add("Max", factory_with<VariadicKernel>(BinaryKind::kMax));
  r.add("Min", factory_with<VariadicKernel>(BinaryKind::kMin));
  r.add("Sum", factory_with<VariadicKernel>(BinaryKind::kSum));
  r.add("Mean", factory_with<VariadicKernel>(BinaryKind::kMean));
  r.add("Where", factory_with<WhereKernel>());
}

}  // namespace infera
