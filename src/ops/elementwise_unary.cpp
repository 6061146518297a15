// Unary elementwise ops: math (Abs Ceil Floor Round Neg Reciprocal Sqrt Exp Log Erf Sign, trig),
// activations (Relu LeakyRelu Elu Selu Celu Sigmoid HardSigmoid HardSwish Softplus Softsign Tanh
// Mish Gelu ThresholdedRelu), Not, IsNaN, IsInf, and Clip (attributes before opset 11, inputs after).
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
  kTanh,
  kSigmoid,
  kRelu,
  kLeakyRelu,
  kElu,
  kSelu,
  kCelu,
  kHardSigmoid,
  kHardSwish,
  kSoftplus,
  kSoftsign,
  kMish,
  kGelu,
  kGeluTanh,
  kThresholdedRelu,
  kNot,
  kIsNaN,
  kIsInf,
};

// ---------------------------------------------------------------- scalar functions
template <class T>
inline T relu(T x) {
  return x < T(0) ? T(0) : x;
}  // keeps NaN
template <class T>
inline T leaky_relu(T x, T a) {
  return x < T(0) ? a * x : x;
}
// expf for x in about [-87.3, 88.4] (clamped to it), within 2 ulp: Cephes' range reduction and
// polynomial, written without branches or calls so that loops over it vectorize.
inline float exp_clamped(float x) {
  x = x < -87.3365f ? -87.3365f : x;
  x = x > 88.3762f ? 88.3762f : x;
  const float magic = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + magic) - magic;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.f;
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

template <class T>
inline T sigmoid(T x) {
  if constexpr (std::is_same_v<T, float>) {  // branch-free: e = exp(-|x|) never overflows
    const float e = exp_clamped(-std::fabs(x));
    const float r = 1.f / (1.f + e);
    return x >= 0.f ? r : e * r;
  } else {
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  }
}
template <class T>
inline T hard_sigmoid(T x, T a, T b) {
  return std::max(T(0), std::min(T(1), a * x + b));
}
template <class T>
inline T hard_swish(T x) {
  return x * hard_sigmoid(x, T(1) / T(6), T(0.5));
}
template <class T>
inline T elu(T x, T a) {
  return x < T(0) ? a * (std::exp(x) - T(1)) : x;
}
template <class T>
inline T selu(T x, T a, T g) {
  return x <= T(0) ? g * (a * std::exp(x) - a) : g * x;
}
template <class T>
inline T softplus(T x) {
  return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}
template <class T>
inline T clip(T x, T lo, T hi) {
  return std::min(std::max(x, lo), hi);
}

constexpr float kSeluAlpha = 1.67326319217681884765625f;
constexpr float kSeluGamma = 1.05070102214813232421875f;

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
    switch (op) {
      case UnaryOp::kLeakyRelu: alpha_ = n.attr_float("alpha", 0.01f); break;
      case UnaryOp::kElu: alpha_ = n.attr_float("alpha", 1.0f); break;
      case UnaryOp::kCelu: alpha_ = n.attr_float("alpha", 1.0f); break;
      case UnaryOp::kThresholdedRelu: alpha_ = n.attr_float("alpha", 1.0f); break;
      case UnaryOp::kSelu:
        alpha_ = n.attr_float("alpha", kSeluAlpha);
        beta_ = n.attr_float("gamma", kSeluGamma);
        break;
      case UnaryOp::kHardSigmoid:
        alpha_ = n.attr_float("alpha", 0.2f);
        beta_ = n.attr_float("beta", 0.5f);
        break;
      case UnaryOp::kIsInf:
        detect_neg_ = n.attr_int("detect_negative", 1) != 0;
        detect_pos_ = n.attr_int("detect_positive", 1) != 0;
        break;
      default: break;
    }
  }

  Status init(const Node& n) {
    if (op_ == UnaryOp::kCelu && alpha_ == 0.f)
      return Status::error(node_message(n, "attribute 'alpha' must be non-zero, found 0"));
    if (op_ == UnaryOp::kGelu) {
      std::string a = n.attr_string("approximate", "none");
      if (a == "tanh")
        op_ = UnaryOp::kGeluTanh;
      else if (a != "none")
        return Status::error(
            node_message(n, "attribute 'approximate' must be 'none' or 'tanh', found '%s'", a.c_str()));
    }
    return Status::ok();
  }

  TypeSet type_set() const {
    switch (op_) {
      case UnaryOp::kAbs:
      case UnaryOp::kSign:
      case UnaryOp::kRelu:
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
        case UnaryOp::kRelu: map(x, y, n, nt, [](T v) { return relu(v); }); break;
        case UnaryOp::kErf: map(x, y, n, nt, [](T v) { return T(std::erf(double(v))); }); break;
        default: break;
      }
    }
  }

  template <class T>
  void run_float(const T* x, void* yv, int64_t n, int nt) const {
    const T a = T(alpha_), b = T(beta_);
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
      case UnaryOp::kTanh: map(x, y, n, nt, [](T v) { return std::tanh(v); }); break;
      case UnaryOp::kSigmoid: map(x, y, n, nt, [](T v) { return sigmoid(v); }); break;
      case UnaryOp::kRelu: map(x, y, n, nt, [](T v) { return relu(v); }); break;
      case UnaryOp::kLeakyRelu: map(x, y, n, nt, [=](T v) { return leaky_relu(v, a); }); break;
      case UnaryOp::kElu: map(x, y, n, nt, [=](T v) { return elu(v, a); }); break;
      case UnaryOp::kSelu: map(x, y, n, nt, [=](T v) { return selu(v, a, b); }); break;
      case UnaryOp::kCelu:
        map(x, y, n, nt, [=](T v) { return std::max(T(0), v) + std::min(T(0), a * (std::exp(v / a) - T(1))); });
        break;
      case UnaryOp::kHardSigmoid: map(x, y, n, nt, [=](T v) { return hard_sigmoid(v, a, b); }); break;
      case UnaryOp::kHardSwish: map(x, y, n, nt, [](T v) { return hard_swish(v); }); break;
      case UnaryOp::kSoftplus: map(x, y, n, nt, [](T v) { return softplus(v); }); break;
      case UnaryOp::kSoftsign: map(x, y, n, nt, [](T v) { return v / (T(1) + std::fabs(v)); }); break;
      case UnaryOp::kMish: map(x, y, n, nt, [](T v) { return v * std::tanh(softplus(v)); }); break;
      case UnaryOp::kGelu:
        map(x, y, n, nt, [](T v) { return T(0.5) * v * (T(1) + std::erf(v * T(M_SQRT1_2))); });
        break;
      case UnaryOp::kGeluTanh:
        map(x, y, n, nt, [](T v) {
          const T k = T(0.7978845608028654);  // sqrt(2/pi)
          return T(0.5) * v * (T(1) + std::tanh(k * (v + T(0.044715) * v * v * v)));
        });
        break;
      case UnaryOp::kThresholdedRelu: map(x, y, n, nt, [=](T v) { return v > a ? v : T(0); }); break;
      default: break;
    }
  }

  UnaryOp op_;
  float alpha_ = 0.f, beta_ = 0.f;
  bool detect_neg_ = true, detect_pos_ = true;
};

// ---------------------------------------------------------------- Clip
// Opset < 11: min/max attributes (float). Opset >= 11: optional scalar inputs 1 and 2.
class ClipKernel : public OpKernel {
 public:
  ClipKernel(const Node& n, int64_t opset) : opset_(opset) {
    min_attr_ = n.attr_float("min", std::numeric_limits<float>::lowest());
    max_attr_ = n.attr_float("max", std::numeric_limits<float>::max());
  }
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

  int64_t opset_;
  float min_attr_, max_attr_;
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

// ---------------------------------------------------------------- activations for fused kernels
bool parse_activation(const std::string& op_type, Activation& out) {
  static const std::pair<const char*, Activation> table[] = {
      {"Identity", Activation::kIdentity},
      {"Relu", Activation::kRelu},
      {"LeakyRelu", Activation::kLeakyRelu},
      {"Sigmoid", Activation::kSigmoid},
      {"Tanh", Activation::kTanh},
      {"Clip", Activation::kClip},
      {"HardSigmoid", Activation::kHardSigmoid},
      {"HardSwish", Activation::kHardSwish},
      {"Elu", Activation::kElu},
      {"Selu", Activation::kSelu},
      {"Softplus", Activation::kSoftplus},
      {"Swish", Activation::kSwish},
  };
  for (auto& [name, act] : table) {
    if (op_type == name) {
      out = act;
      return true;
    }
  }
  return false;
}

void apply_activation(Activation act, float alpha, float beta, float* d, int64_t n) {
  const float a = alpha, b = beta;
  switch (act) {
    case Activation::kIdentity: break;
    case Activation::kRelu:
      for (int64_t i = 0; i < n; ++i) d[i] = relu(d[i]);
      break;
    case Activation::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) d[i] = leaky_relu(d[i], a);
      break;
    case Activation::kSigmoid:
      for (int64_t i = 0; i < n; ++i) d[i] = sigmoid(d[i]);
      break;
    case Activation::kTanh:
      for (int64_t i = 0; i < n; ++i) d[i] = std::tanh(d[i]);
      break;
    case Activation::kClip:
      for (int64_t i = 0; i < n; ++i) d[i] = clip(d[i], a, b);
      break;
    case Activation::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) d[i] = hard_sigmoid(d[i], a, b);
      break;
    case Activation::kHardSwish:
      for (int64_t i = 0; i < n; ++i) d[i] = hard_swish(d[i]);
      break;
    case Activation::kElu:
      for (int64_t i = 0; i < n; ++i) d[i] = elu(d[i], a);
      break;
    case Activation::kSelu:
      for (int64_t i = 0; i < n; ++i) d[i] = selu(d[i], a, b);
      break;
    case Activation::kSoftplus:
      for (int64_t i = 0; i < n; ++i) d[i] = softplus(d[i]);
      break;
    case Activation::kSwish:
      for (int64_t i = 0; i < n; ++i) d[i] = d[i] * sigmoid(a * d[i]);
      break;
  }
}

bool apply_activation(const std::string& op_type, float alpha, float beta, float* data, int64_t n) {
  Activation act;
  if (!parse_activation(op_type, act)) return false;
  apply_activation(act, alpha, beta, data, n);
  return true;
}

void register_elementwise_unary_ops(OpRegistry& r) {
  static const std::pair<const char*, UnaryOp> ops[] = {
      {"Abs", UnaryOp::kAbs},
      {"Ceil", UnaryOp::kCeil},
      {"Floor", UnaryOp::kFloor},
      {"Round", UnaryOp::kRound},
      {"Neg", UnaryOp::kNeg},
      {"Reciprocal", UnaryOp::kReciprocal},
      {"Sqrt", UnaryOp::kSqrt},
      {"Exp", UnaryOp::kExp},
      {"Log", UnaryOp::kLog},
      {"Erf", UnaryOp::kErf},
      {"Sign", UnaryOp::kSign},
      {"Sin", UnaryOp::kSin},
      {"Cos", UnaryOp::kCos},
      {"Tan", UnaryOp::kTan},
      {"Asin", UnaryOp::kAsin},
      {"Acos", UnaryOp::kAcos},
      {"Atan", UnaryOp::kAtan},
      {"Sinh", UnaryOp::kSinh},
      {"Cosh", UnaryOp::kCosh},
      {"Asinh", UnaryOp::kAsinh},
      {"Acosh", UnaryOp::kAcosh},
      {"Atanh", UnaryOp::kAtanh},
      {"Tanh", UnaryOp::kTanh},
      {"Sigmoid", UnaryOp::kSigmoid},
      {"Relu", UnaryOp::kRelu},
      {"LeakyRelu", UnaryOp::kLeakyRelu},
      {"Elu", UnaryOp::kElu},
      {"Selu", UnaryOp::kSelu},
      {"Celu", UnaryOp::kCelu},
      {"HardSigmoid", UnaryOp::kHardSigmoid},
      {"HardSwish", UnaryOp::kHardSwish},
      {"Softplus", UnaryOp::kSoftplus},
      {"Softsign", UnaryOp::kSoftsign},
      {"Mish", UnaryOp::kMish},
      {"Gelu", UnaryOp::kGelu},
      {"ThresholdedRelu", UnaryOp::kThresholdedRelu},
      {"Not", UnaryOp::kNot},
      {"IsNaN", UnaryOp::kIsNaN},
      {"IsInf", UnaryOp::kIsInf},
  };
  for (auto& [name, op] : ops) r.add(name, factory_with<UnaryKernel>(op));
  r.add("Gelu", factory_with<UnaryKernel>(UnaryOp::kGelu), "com.infera");  // made by fuse_gelu at any opset
  r.add("Clip", factory_with<ClipKernel>());
}

}  // namespace infera
