// Cast and CastLike between every supported dtype (float16/bfloat16 by bit conversion, round to
// nearest even), and Identity (a copy of any dtype).
#include <cmath>
#include <cstring>

#include "ops/elementwise.h"

namespace infera {
namespace {

struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

uint32_t bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
float float_of(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace

uint16_t float_to_half(float f) {
  const uint32_t x = bits_of(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffff;
  if (ax > 0x7f800000) return sign | 0x7e00;                      // NaN
  if (ax >= 0x477ff000) return sign | 0x7c00;                     // >= 65520 rounds to inf
  if (ax < 0x38800000) {                                          // below 2^-14: half subnormal or zero
    const float scaled = float_of(ax) * 16777216.0f;              // exact: in units of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));  // ties to even
  }
  const uint32_t mant = ax & 0x7fffff;
  uint32_t h = ((((ax >> 23) - 127 + 15) << 10) | (mant >> 13));
  const uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) return float_of(sign | bits_of(static_cast<float>(m) * 5.9604644775390625e-8f));  // m * 2^-24
  if (e == 31) return float_of(sign | 0x7f800000 | (m << 13));
  return float_of(sign | ((e - 15 + 127) << 23) | (m << 13));
}

namespace {

// double -> float rounding to odd, so that a second rounding to half is still correct.
float double_to_float_odd(double d) {
  float f = static_cast<float>(d);
  if (std::isfinite(f) && static_cast<double>(f) != d) {
    uint32_t x = bits_of(f);
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) --x;  // truncate toward zero
    f = float_of(x | 1);
  }
  return f;
}

}  // namespace

uint16_t float_to_bfloat16(float f) {
  const uint32_t x = bits_of(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}
float bfloat16_to_float(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

namespace {

template <class D, class S>
D convert(S s) {
  if constexpr (std::is_same_v<S, Half>) {
    return convert<D>(half_to_float(s.bits));
  } else if constexpr (std::is_same_v<S, BFloat16>) {
    return convert<D>(bfloat16_to_float(s.bits));
  } else if constexpr (std::is_same_v<D, Half>) {
    if constexpr (std::is_same_v<S, double>)
      return Half{float_to_half(double_to_float_odd(s))};
    else
      return Half{float_to_half(convert<float>(s))};
  } else if constexpr (std::is_same_v<D, BFloat16>) {
    if constexpr (std::is_same_v<S, double>)
      return BFloat16{float_to_bfloat16(double_to_float_odd(s))};
    else
      return BFloat16{float_to_bfloat16(convert<float>(s))};
  } else if constexpr (std::is_same_v<D, bool>) {
    return s != S(0);
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    return float_to_int<D>(static_cast<double>(s));
  } else {
    return static_cast<D>(s);
  }
}

// dispatch() plus float16 and bfloat16.
template <class F>
bool dispatch_cast(DataType dt, F&& f) {
  if (dt == DataType::kFloat16) {
    f(TypeTag<Half>{});
    return true;
  }
  if (dt == DataType::kBFloat16) {
    f(TypeTag<BFloat16>{});
    return true;
  }
  return dispatch(dt, TypeSet::kAll, f);
}

bool castable(DataType dt) {
  return dispatch_cast(dt, [](auto) {});
}

Status cast_tensor(ComputeContext& ctx, const TensorRef& x, TensorRef& y) {
  if (x.dims != y.dims) return ctx.error("output shape does not match input shape");
  const int64_t n = x.numel();
  if (x.dtype == y.dtype) {
    if (n > 0 && x.data != y.data) std::memcpy(y.data, x.data, x.nbytes());
    return Status::ok();
  }
  bool ok = false;
  dispatch_cast(x.dtype, [&](auto stag) {
    using S = typename decltype(stag)::type;
    ok = dispatch_cast(y.dtype, [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      const S* px = x.ptr<S>();
      D* py = y.ptr<D>();
      ew_parallel(n, n, ctx.num_threads, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = convert<D>(px[i]);
      });
    });
  });
  if (!ok) return ctx.error("cannot cast %s to %s", dtype_name(x.dtype), dtype_name(y.dtype));
  return Status::ok();
}

// ---------------------------------------------------------------- Cast
// The opset 19 'saturate' attribute only affects float8 targets, which are not supported.
class CastKernel : public OpKernel {
 public:
  CastKernel(const Node& n, int64_t) : has_to_(n.has_attr("to")), to_(n.attr_int("to", 0)) {}

  Status init(const Node& n) {
    if (!has_to_) return Status::error(node_message(n, "attribute 'to' is required"));
    const DataType dt = static_cast<DataType>(to_);
    if (to_ < 0 || to_ > 64 || !castable(dt))
      return Status::error(
          node_message(n, "attribute 'to' must be a supported dtype, found %lld (%s)", (long long)to_, dtype_name(dt)));
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input 0 (input) is required");
    const ValueInfo& x = ctx.in(0);
    if (!castable(x.dtype)) return ctx.error("input 0 (input) has unsupported dtype %s", dtype_name(x.dtype));
    ctx.set_output(0, static_cast<DataType>(to_), x.shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override { return cast_tensor(ctx, ctx.in(0), ctx.out(0)); }

 private:
  bool has_to_;
  int64_t to_;
};

// ---------------------------------------------------------------- CastLike (opset 15)
class CastLikeKernel : public OpKernel {
 public:
  CastLikeKernel(const Node&, int64_t) {}
  Status init(const Node&) { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("inputs 0 (input) and 1 (target_type) are required");
    const ValueInfo& x = ctx.in(0);
    const DataType to = ctx.in(1).dtype;
    if (!castable(x.dtype)) return ctx.error("input 0 (input) has unsupported dtype %s", dtype_name(x.dtype));
    if (!castable(to)) return ctx.error("input 1 (target_type) has unsupported dtype %s", dtype_name(to));
    ctx.set_output(0, to, x.shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override { return cast_tensor(ctx, ctx.in(0), ctx.out(0)); }
  bool needs_data(size_t input) const override { return input == 0; }
};

// ---------------------------------------------------------------- Identity
class IdentityKernel : public OpKernel {
 public:
  IdentityKernel(const Node&, int64_t) {}
  Status init(const Node&) { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input 0 (input) is required");
    const ValueInfo& x = ctx.in(0);
    if (dtype_size(x.dtype) == 0) return ctx.error("input 0 (input) has unsupported dtype %s", dtype_name(x.dtype));
    ctx.set_output(0, x.dtype, x.shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    if (x.dims != y.dims || x.dtype != y.dtype) return ctx.error("output does not match the input's dtype and shape");
    if (x.numel() > 0 && x.data != y.data) std::memcpy(y.data, x.data, x.nbytes());
    return Status::ok();
  }
};

template <class K>
OpFactory factory() {
  return [](const Node& n, int64_t opset) -> Result<std::unique_ptr<OpKernel>> {
    auto k = std::make_unique<K>(n, opset);
    Status s = k->init(n);
    if (!s.is_ok()) return s;
    return std::unique_ptr<OpKernel>(std::move(k));
  };
}

}  // namespace

void register_cast_ops(OpRegistry& r) {
  r.add("Cast", factory<CastKernel>());
  r.add("CastLike", factory<CastLikeKernel>());
  r.add("Identity", factory<IdentityKernel>());
}

}  // namespace infera
