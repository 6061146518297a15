// Unary elementwise ops: math (Abs Ceil Floor Round Neg Reciprocal Sqrt Exp Log Erf Sign, trig),
// the activations of the activation table (Relu LeakyRelu Elu Selu Celu Sigmoid HardSigmoid
// HardSwish Softplus Softsign Tanh Mish Gelu ThresholdedRelu), Not, IsNaN, IsInf, and Clip
// (attributes before opset 11, inputs after).
// Selects like `x < 0 ? a * x : x` only become vector blends when FP ops may not trap;
// this changes no value (no reassociation), it only lets the loops vectorize.
#pragma GCC optimize("no-trapping-math")
#include <bit>
#include <cmath>
#include <limits>

#include "ops/elementwise.h"

namespace infera {
namespace {

enum class UnaryOp {
  kAbs,
  kCeil,
  kFloor,
  kRound,
  kNeg,
  kReciprocal,
  kSqrt,
  kExp,
  kLog,
  kErf,
  kSign,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kNot,
  kIsNaN,
  kIsInf,
};

// ---------------------------------------------------------------- helpers
template <class T>
inline T clip(T x, T lo, T hi) {  // NaN stays NaN (comparisons with NaN are false)
  T v = x < lo ? lo : x;
  return v > hi ? hi : v;
}

// y[i] = f(x[i]) over n elements, split across threads for large n.
template <class TI, class TO, class F>
void map(const TI* x, TO* y, int64_t n, int nt, F f) {
  ew_parallel(n, n, nt, [&](int64_t b, int64_t e) {
    const F fn = f;  // a local copy: stores to y cannot alias its captures, so the loop vectorizes
    const TI* xs = x;
    TO* ys = y;
    for (int64_t i = b; i < e; ++i) ys[i] = fn(xs[i]);
  });
}

const char* set_name(TypeSet s) {
  switch (s) {
    case TypeSet::kFloats: return "float32 or float64";
    case TypeSet::kSignedNumeric: return "a signed numeric type";
    case TypeSet::kNumeric: return "a numeric type";
    default: return "a numeric or bool type";
  }
}

// float16/bfloat16 are accepted wherever floats are: computed in float32 (run_in_float32).
bool in_set(DataType dt, TypeSet s) {
  return is_narrow_float(dt) || dispatch(dt, s, [](auto) {});
}

// ---------------------------------------------------------------- UnaryKernel
class UnaryKernel : public OpKernel {
 public:
  UnaryKernel(UnaryOp op, const Node& n, int64_t opset) : op_(op) {
    if (op == UnaryOp::kIsInf) {
      detect_neg_ = n.attr_int("detect_negative", 1) != 0;
      detect_pos_ = n.attr_int("detect_positive", 1) != 0;
    }
  }
  Status init(const Node&) { return Status::ok(); }

  TypeSet type_set() const {
    switch (op_) {
      case UnaryOp::kAbs:
      case UnaryOp::kSign:
      case UnaryOp::kErf: return TypeSet::kNumeric;
      case UnaryOp::kNeg: return TypeSet::kSignedNumeric;
      case UnaryOp::kNot: return TypeSet::kAll;  // checked as bool below
      default: return TypeSet::kFloats;
    }
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input 0 (X) is required");
    const ValueInfo& x = ctx.in(0);
    if (op_ == UnaryOp::kNot) {
      if (x.dtype != DataType::kBool) return ctx.error("input 0 (X) has dtype %s, expected bool", dtype_name(x.dtype));
    } else if (!in_set(x.dtype, type_set())) {
      return ctx.error("input 0 (X) has dtype %s, expected %s", dtype_name(x.dtype), set_name(type_set()));
    }
    const bool to_bool = op_ == UnaryOp::kIsNaN || op_ == UnaryOp::kIsInf;
    ctx.set_output(0, to_bool ? DataType::kBool : x.dtype, x.shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    return run_in_float32(ctx, [&](const std::vector<const TensorRef*>& ins, TensorRef& y) {
      const TensorRef& x = *ins[0];
      if (y.dims != x.dims) return ctx.error("output shape does not match input shape");
      const int64_t n = x.numel();
      const int nt = ctx.num_threads;
      bool ok = dispatch(x.dtype, TypeSet::kAll, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run<T>(x.ptr<T>(), y.data, n, nt);
      });
      if (!ok) return ctx.error("unsupported input dtype %s", dtype_name(x.dtype));
      return Status::ok();
    });
  }

 private:
  template <class T>
  void run(const T* x, void* yv, int64_t n, int nt) const {
    if constexpr (std::is_same_v<T, bool>) {
      map(x, static_cast<bool*>(yv), n, nt, [](bool v) { return !v; });
    } else if constexpr (std::is_floating_point_v<T>) {
      run_float<T>(x, yv, n, nt);
    } else {
      T* y = static_cast<T*>(yv);
      using U = std::make_unsigned_t<T>;
      switch (op_) {
        case UnaryOp::kAbs:
          if constexpr (std::is_signed_v<T>)
            map(x, y, n, nt, [](T v) { return v < 0 ? T(U(0) - U(v)) : v; });
          else
            map(x, y, n, nt, [](T v) { return v; });
          break;
        case UnaryOp::kNeg: map(x, y, n, nt, [](T v) { return T(U(0) - U(v)); }); break;
        case UnaryOp::kSign: map(x, y, n, nt, [](T v) { return T((v > T(0)) - (v < T(0))); }); break;
        case UnaryOp::kErf: map(x, y, n, nt, [](T v) { return T(std::erf(double(v))); }); break;
        default: break;
      }
    }
  }

  template <class T>
  void run_float(const T* x, void* yv, int64_t n, int nt) const {
    if (op_ == UnaryOp::kIsNaN) {
      map(x, static_cast<bool*>(yv), n, nt, [](T v) { return std::isnan(v); });
      return;
    }
    if (op_ == UnaryOp::kIsInf) {
      const bool neg = detect_neg_, pos = detect_pos_;
      map(x, static_cast<bool*>(yv), n, nt, [=](T v) { return std::isinf(v) && (v > 0 ? pos : neg); });
      return;
    }
    T* y = static_cast<T*>(yv);
    switch (op_) {
      case UnaryOp::kAbs: map(x, y, n, nt, [](T v) { return std::fabs(v); }); break;
      case UnaryOp::kCeil: map(x, y, n, nt, [](T v) { return std::ceil(v); }); break;
      case UnaryOp::kFloor: map(x, y, n, nt, [](T v) { return std::floor(v); }); break;
      case UnaryOp::kRound: map(x, y, n, nt, [](T v) { return std::nearbyint(v); }); break;  // half to even
      case UnaryOp::kNeg: map(x, y, n, nt, [](T v) { return -v; }); break;
      case UnaryOp::kReciprocal: map(x, y, n, nt, [](T v) { return T(1) / v; }); break;
      case UnaryOp::kSqrt: map(x, y, n, nt, [](T v) { return std::sqrt(v); }); break;
      case UnaryOp::kExp: map(x, y, n, nt, [](T v) { return std::exp(v); }); break;
      case UnaryOp::kLog: map(x, y, n, nt, [](T v) { return std::log(v); }); break;
      case UnaryOp::kErf: map(x, y, n, nt, [](T v) { return std::erf(v); }); break;
      case UnaryOp::kSign: map(x, y, n, nt, [](T v) { return T((v > T(0)) - (v < T(0))); }); break;
      case UnaryOp::kSin: map(x, y, n, nt, [](T v) { return std::sin(v); }); break;
      case UnaryOp::kCos: map(x, y, n, nt, [](T v) { return std::cos(v); }); break;
      case UnaryOp::kTan: map(x, y, n, nt, [](T v) { return std::tan(v); }); break;
      case UnaryOp::kAsin: map(x, y, n, nt, [](T v) { return std::asin(v); }); break;
      case UnaryOp::kAcos: map(x, y, n, nt, [](T v) { return std::acos(v); }); break;
      case UnaryOp::kAtan: map(x, y, n, nt, [](T v) { return std::atan(v); }); break;
      case UnaryOp::kSinh: map(x, y, n, nt, [](T v) { return std::sinh(v); }); break;
      case UnaryOp::kCosh: map(x, y, n, nt, [](T v) { return std::cosh(v); }); break;
      case UnaryOp::kAsinh: map(x, y, n, nt, [](T v) { return std::asinh(v); }); break;
      case UnaryOp::kAcosh: map(x, y, n, nt, [](T v) { return std::acosh(v); }); break;
      case UnaryOp::kAtanh: map(x, y, n, nt, [](T v) { return std::atanh(v); }); break;
      default: break;
    }
  }

  UnaryOp op_;
  bool detect_neg_ = true, detect_pos_ = true;
};

// ---------------------------------------------------------------- activations
// Every kind of the activation table but Clip: parameters and defaults from the table, the
// arithmetic from apply_activation (float) / activation_ref (double). Relu also takes integers.
class ActivationKernel : public ActivationOp {
 public:
  ActivationKernel(ActKind kind, const Node& n, int64_t) : ActivationOp(activation_default(kind)) {
    const ActivationDef& d = activation_def(kind);
    if (d.alpha_attr) act_.alpha = n.attr_float(d.alpha_attr, d.alpha_default);
    if (d.beta_attr) act_.beta = n.attr_float(d.beta_attr, d.beta_default);
  }

  Status init(const Node& n) {
    if (act_.kind == ActKind::kCelu && act_.alpha == 0.f)
      return Status::error(node_message(n, "attribute 'alpha' must be non-zero, found 0"));
    if (act_.kind == ActKind::kGelu) {
      std::string a = n.attr_string("approximate", "none");
      if (a == "tanh")
        act_.kind = ActKind::kGeluTanh;
      else if (a != "none")
        return Status::error(
            node_message(n, "attribute 'approximate' must be 'none' or 'tanh', found '%s'", a.c_str()));
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input 0 (X) is required");
    const ValueInfo& x = ctx.in(0);
    const TypeSet set = act_.kind == ActKind::kRelu ? TypeSet::kNumeric : TypeSet::kFloats;
    if (!in_set(x.dtype, set))
      return ctx.error("input 0 (X) has dtype %s, expected %s", dtype_name(x.dtype), set_name(set));
    ctx.set_output(0, x.dtype, x.shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    return run_in_float32(ctx, [&](const std::vector<const TensorRef*>& ins, TensorRef& y) {
      const TensorRef& x = *ins[0];
      if (y.dims != x.dims) return ctx.error("output shape does not match input shape");
      const int64_t n = x.numel();
      bool ok = dispatch(x.dtype, TypeSet::kNumeric, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* xp = x.ptr<T>();
        T* yp = y.ptr<T>();
        if constexpr (std::is_floating_point_v<T>) {
          const Activation a = act_;
          ew_parallel(n, n, ctx.num_threads, [&](int64_t b, int64_t e) {
            if (yp != xp) std::copy(xp + b, xp + e, yp + b);
            apply_activation(a, yp + b, e - b);
          });
        } else {
          map(xp, yp, n, ctx.num_threads, [](T v) { return v < T(0) ? T(0) : v; });  // integer Relu
        }
      });
      if (!ok) return ctx.error("unsupported input dtype %s", dtype_name(x.dtype));
      return Status::ok();
    });
  }
};

// ---------------------------------------------------------------- Clip
// Opset < 11: min/max attributes (float). Opset >= 11: optional scalar inputs 1 and 2.
class ClipKernel : public ClipOp {
 public:
  ClipKernel(const Node& n, int64_t opset)
      : ClipOp(opset, n.attr_float("min", std::numeric_limits<float>::lowest()),
               n.attr_float("max", std::numeric_limits<float>::max())) {}
  Status init(const Node&) { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input 0 (input) is required");
    const ValueInfo& x = ctx.in(0);
    const TypeSet set = opset_ < 11 ? TypeSet::kFloats : TypeSet::kNumeric;
    if (!in_set(x.dtype, set))
      return ctx.error("input 0 (input) has dtype %s, expected %s", dtype_name(x.dtype), set_name(set));
    if (opset_ >= 11) {
      static const char* names[] = {"input", "min", "max"};
      for (size_t i = 1; i < 3; ++i) {
        if (!ctx.has_input(i)) continue;
        const ValueInfo& b = ctx.in(i);
        if (b.dtype != x.dtype)
          return ctx.error("input %zu (%s) has dtype %s, expected %s like input 0", i, names[i], dtype_name(b.dtype),
                           dtype_name(x.dtype));
        if (b.shape.rank_known && b.shape.numel() > 1)
          return ctx.error("input %zu (%s) must be a scalar, found shape %s", i, names[i], b.shape.str().c_str());
      }
    }
    ctx.set_output(0, x.dtype, x.shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    return run_in_float32(ctx,
                          [&](const std::vector<const TensorRef*>& ins, TensorRef& y) { return run(ctx, ins, y); });
  }

 private:
  Status run(ComputeContext& ctx, const std::vector<const TensorRef*>& ins, TensorRef& y) const {
    const TensorRef& x = *ins[0];
    if (y.dims != x.dims) return ctx.error("output shape does not match input shape");
    const int64_t n = x.numel();
    Status st = Status::ok();
    bool ok = dispatch(x.dtype, TypeSet::kNumeric, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      if (opset_ < 11) {
        if constexpr (std::is_floating_point_v<T>) {
          lo = T(min_attr_);
          hi = T(max_attr_);
        }
      } else {
        for (size_t i = 1; i < 3; ++i) {
          if (i >= ins.size() || !ins[i]) continue;
          const TensorRef& b = *ins[i];
          if (b.dtype != x.dtype || b.numel() != 1) {
            st = ctx.error("input %zu must be a scalar of dtype %s", i, dtype_name(x.dtype));
            return;
          }
          (i == 1 ? lo : hi) = b.ptr<T>()[0];
        }
      }
      map(x.ptr<T>(), y.ptr<T>(), n, ctx.num_threads, [=](T v) { return clip(v, lo, hi); });
    });
    if (!ok) return ctx.error("unsupported input dtype %s", dtype_name(x.dtype));
    return st;
  }
};

template <class K, class... Args>
OpFactory factory_with(Args... args) {
  return [=](const Node& n, int64_t opset) -> Result<std::unique_ptr<OpKernel>> {
    auto k = std::make_unique<K>(args..., n, opset);
    Status s = k->init(n);
    if (!s.is_ok()) return s;
    return std::unique_ptr<OpKernel>(std::move(k));
  };
}

}  // namespace

void register_elementwise_unary_ops(OpRegistry& r) {
  static const std::pair<const char*, UnaryOp> ops[] = {
      {"Abs", UnaryOp::kAbs},     {"Ceil", UnaryOp::kCeil},   {"Floor", UnaryOp::kFloor},
      {"Round", UnaryOp::kRound}, {"Neg", UnaryOp::kNeg},     {"Reciprocal", UnaryOp::kReciprocal},
      {"Sqrt", UnaryOp::kSqrt},   {"Exp", UnaryOp::kExp},     {"Log", UnaryOp::kLog},
      {"Erf", UnaryOp::kErf},     {"Sign", UnaryOp::kSign},   {"Sin", UnaryOp::kSin},
      {"Cos", UnaryOp::kCos},     {"Tan", UnaryOp::kTan},     {"Asin", UnaryOp::kAsin},
      {"Acos", UnaryOp::kAcos},   {"Atan", UnaryOp::kAtan},   {"Sinh", UnaryOp::kSinh},
      {"Cosh", UnaryOp::kCosh},   {"Asinh", UnaryOp::kAsinh}, {"Acosh", UnaryOp::kAcosh},
      {"Atanh", UnaryOp::kAtanh}, {"Not", UnaryOp::kNot},     {"IsNaN", UnaryOp::kIsNaN},
      {"IsInf", UnaryOp::kIsInf},
  };
  for (auto& [name, op] : ops) r.add(name, factory_with<UnaryKernel>(op));
  for (ActKind k : {ActKind::kRelu, ActKind::kLeakyRelu, ActKind::kSigmoid, ActKind::kTanh, ActKind::kHardSigmoid,
                    ActKind::kHardSwish, ActKind::kElu, ActKind::kSelu, ActKind::kCelu, ActKind::kSoftplus,
                    ActKind::kSoftsign, ActKind::kMish, ActKind::kGelu, ActKind::kThresholdedRelu})
    r.add(activation_name(k), factory_with<ActivationKernel>(k));
  r.add("Gelu", factory_with<ActivationKernel>(ActKind::kGelu), "com.infera");  // made by fuse_gelu at any opset
  r.add("Clip", factory_with<ClipKernel>());
}

}  // namespace infera
