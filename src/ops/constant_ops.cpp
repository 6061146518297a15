// Ops that make tensors from attributes or scalars: Constant, ConstantOfShape, Range; and
// Dropout, which is the identity at inference.
#include <cmath>
#include <cstring>

#include "infera/limits.h"
#include "ops/elementwise.h"
#include "ops/tensor_ops.h"

namespace infera {
namespace {

template <class T>
std::shared_ptr<const Tensor> tensor_of(DataType dt, std::vector<int64_t> dims, const std::vector<T>& v) {
  auto t = Tensor::make(dt, std::move(dims));
  if (!t.is_ok()) return nullptr;
  Tensor x = t.take();
  for (size_t i = 0; i < v.size(); ++i) x.data_as<T>()[i] = v[i];
  return std::make_shared<const Tensor>(std::move(x));
}

// ---------------------------------------------------------------- Constant
class ConstantKernel : public OpKernel {
 public:
  ConstantKernel(const Node& n, int64_t opset) {
    int count = 0;
    for (const char* k : {"value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
                          "value_strings", "sparse_value"})
      count += n.has_attr(k) ? 1 : 0;
    if (count != 1) {
      bad_ = Status::error(node_message(n,
                                        "exactly one of the attributes 'value', 'value_float(s)', "
                                        "'value_int(s)' is required, found %d value attributes",
                                        count));
    } else if (n.has_attr("sparse_value")) {
      bad_ = Status::error(node_message(n, "attribute 'sparse_value' (a sparse tensor) is not supported"));
    } else if (n.has_attr("value_string") || n.has_attr("value_strings")) {
      bad_ = Status::error(node_message(n, "string constants ('value_string(s)') are not supported"));
    } else if (n.has_attr("value")) {
      value_ = n.attrs.at("value").t;
      if (!value_)
        bad_ = Status::error(node_message(n, "attribute 'value' must be a tensor"));
      else if (!dtype_supported(value_->dtype()))
        bad_ =
            Status::error(node_message(n, "attribute 'value' has unsupported dtype %s", dtype_name(value_->dtype())));
    } else if (n.has_attr("value_float")) {
      value_ = tensor_of<float>(DataType::kFloat32, {}, {n.attr_float("value_float", 0)});
    } else if (n.has_attr("value_floats")) {
      auto v = n.attr_floats("value_floats");
      value_ = tensor_of<float>(DataType::kFloat32, {static_cast<int64_t>(v.size())}, v);
    } else if (n.has_attr("value_int")) {
      value_ = tensor_of<int64_t>(DataType::kInt64, {}, {n.attr_int("value_int", 0)});
    } else {
      auto v = n.attr_ints("value_ints");
      value_ = tensor_of<int64_t>(DataType::kInt64, {static_cast<int64_t>(v.size())}, v);
    }
    if (bad_.is_ok() && !value_) bad_ = Status::error(node_message(n, "could not allocate the constant"));
  }
  Status init() { return bad_; }

  Status infer(InferContext& ctx) const override {
    ctx.set_output(0, value_->dtype(), Shape::of(value_->dims()));
    if (!ctx.outputs().empty()) ctx.outputs()[0].value = value_;
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    TensorRef& y = ctx.out(0);
    if (y.nbytes() != value_->nbytes()) return ctx.error("output size does not match the constant");
    if (y.nbytes()) std::memcpy(y.data, value_->data(), y.nbytes());
    return Status::ok();
  }

 private:
  std::shared_ptr<const Tensor> value_;
  Status bad_;
};

// ---------------------------------------------------------------- ConstantOfShape
class ConstantOfShapeKernel : public OpKernel {
 public:
  ConstantOfShapeKernel(const Node& n, int64_t) {
    if (n.has_attr("value")) {
      value_ = n.attrs.at("value").t;
      if (!value_ || value_->numel() != 1)
        bad_ = Status::error(node_message(n, "attribute 'value' must be a one-element tensor, found %lld elements",
                                          value_ ? (long long)value_->numel() : 0LL));
      else if (!dtype_supported(value_->dtype()))
        bad_ =
            Status::error(node_message(n, "attribute 'value' has unsupported dtype %s", dtype_name(value_->dtype())));
    } else {
      value_ = tensor_of<float>(DataType::kFloat32, {1}, {0.f});
    }
  }
  Status init() { return bad_; }

  Status infer(InferContext& ctx) const override {
    Status s = expect_dtype(ctx, 0, "input", {DataType::kInt64});
    if (!s.is_ok()) return s;
    const Shape& ss = ctx.in(0).shape;
    if (ss.rank_known && ss.rank() != 1) return ctx.error("input 'input' must be 1-D, found rank %d", ss.rank());
    std::vector<int64_t> dims;
    if (!known_ints(ctx, 0, dims)) {
      if (ss.rank_known && ss.dims[0].value > limits::kMaxRank)  // before making a Shape of that rank
        return ctx.error("output rank %lld is more than the limit of %d", (long long)ss.dims[0].value,
                         limits::kMaxRank);
      ctx.set_output(0, value_->dtype(),
                     ss.rank_known && ss.dims[0].known() ? Shape::of_rank(ss.dims[0].value) : Shape());
      return Status::ok();
    }
    int64_t n;
    if (!checked_numel(dims, n)) return ctx.error("input 'input' %s is not a valid shape", ints_str(dims).c_str());
    s = check_output_size(ctx, Shape::of(dims));
    if (!s.is_ok()) return s;
    ctx.set_output(0, value_->dtype(), Shape::of(dims));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    TensorRef& y = ctx.out(0);
    const size_t es = dtype_size(y.dtype);
    auto* p = static_cast<uint8_t*>(y.data);
    for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(p + i * es, value_->data(), es);
    return Status::ok();
  }

 private:
  std::shared_ptr<const Tensor> value_;
  Status bad_;
};

// ---------------------------------------------------------------- Range
class RangeKernel : public OpKernel {
 public:
  RangeKernel(const Node&, int64_t) {}
  Status init() { return Status::ok(); }

  // Number of elements, or -1 (with *err set) when the scalars are invalid.
  // float16/bfloat16 scalars as float (stash_type=1, the default: the loop runs in float).
  static float half_scalar(const TensorRef& t) {
    uint16_t h = t.ptr<uint16_t>()[0];
    return t.dtype == DataType::kFloat16 ? half_to_float(h) : bfloat16_to_float(h);
  }
  static bool is_half(DataType dt) { return dt == DataType::kFloat16 || dt == DataType::kBFloat16; }

  static int64_t count_of(const TensorRef& start, const TensorRef& limit, const TensorRef& delta, std::string* err) {
    int64_t n = -1;
    if (is_half(start.dtype)) {
      float s = half_scalar(start), l = half_scalar(limit), d = half_scalar(delta);
      if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) {
        *err = "start, limit and delta must be finite and delta non-zero";
        return -1;
      }
      double c = std::ceil((double(l) - double(s)) / double(d));
      if (c > double(int64_t(1) << 40)) {
        *err = "too many elements (over 2^40)";
        return -1;
      }
      return c <= 0 ? 0 : static_cast<int64_t>(c);
    }
    dispatch(start.dtype, TypeSet::kSignedNumeric, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T s = start.ptr<T>()[0], l = limit.ptr<T>()[0], d = delta.ptr<T>()[0];
      if constexpr (std::is_floating_point_v<T>) {
        if (d == 0 || !std::isfinite(double(s)) || !std::isfinite(double(l)) || !std::isfinite(double(d))) {
          *err = "start, limit and delta must be finite and delta non-zero";
          return;
        }
        double c = std::ceil((double(l) - double(s)) / double(d));
        n = c <= 0 ? 0 : (c > double(int64_t(1) << 40) ? -2 : static_cast<int64_t>(c));
      } else {
        if (d == 0) {
          *err = "delta must be non-zero";
          return;
        }
        __int128 diff = (__int128)l - (__int128)s, dd = d;
        __int128 c = diff / dd;  // truncates toward zero: the ceil unless the quotient is positive
        if (c * dd != diff && ((diff < 0) == (dd < 0))) ++c;
        n = c <= 0 ? 0 : (c > (__int128(1) << 40) ? -2 : static_cast<int64_t>(c));
      }
    });
    if (n == -2) {
      *err = "too many elements (over 2^40)";
      n = -1;
    }
    return n;
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 3 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
      return ctx.error("expects inputs 'start', 'limit' and 'delta'");
    const DataType dt = ctx.in(0).dtype;
    Status s = expect_dtype(ctx, 0, "start",
                            {DataType::kFloat32, DataType::kFloat64, DataType::kInt16, DataType::kInt32,
                             DataType::kInt64, DataType::kFloat16, DataType::kBFloat16});
    if (!s.is_ok()) return s;
    const char* names[] = {"start", "limit", "delta"};
    for (size_t i = 0; i < 3; ++i) {
      if (ctx.in(i).dtype != dt && ctx.in(i).dtype != DataType::kUndefined && dt != DataType::kUndefined)
        return ctx.error("input '%s' has dtype %s, expected %s like 'start'", names[i], dtype_name(ctx.in(i).dtype),
                         dtype_name(dt));
      const Shape& sh = ctx.in(i).shape;
      if (sh.fully_known() && sh.numel() != 1)
        return ctx.error("input '%s' must be a scalar, found shape %s", names[i], sh.str().c_str());
    }
    if (!ctx.value(0) || !ctx.value(1) || !ctx.value(2)) {
      ctx.set_output(0, dt, Shape::of_rank(1));
      return Status::ok();
    }
    TensorRef a = TensorRef::of(*ctx.value(0)), b = TensorRef::of(*ctx.value(1)), c = TensorRef::of(*ctx.value(2));
    std::string err;
    int64_t n = count_of(a, b, c, &err);
    if (n < 0) return ctx.error("%s", err.c_str());
    ctx.set_output(0, dt, Shape::of({n}));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    std::string err;
    int64_t n = count_of(ctx.in(0), ctx.in(1), ctx.in(2), &err);
    if (n < 0) return ctx.error("%s", err.c_str());
    TensorRef& y = ctx.out(0);
    if (y.numel() != n) return ctx.error("output has %lld elements, expected %lld", (long long)y.numel(), (long long)n);
    if (is_half(y.dtype)) {
      const float s = half_scalar(ctx.in(0)), d = half_scalar(ctx.in(2));
      uint16_t* o = y.ptr<uint16_t>();
      for (int64_t i = 0; i < n; ++i) {
        float v = s + static_cast<float>(i) * d;
        o[i] = y.dtype == DataType::kFloat16 ? float_to_half(v) : float_to_bfloat16(v);
      }
      return Status::ok();
    }
    dispatch(y.dtype, TypeSet::kSignedNumeric, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T s = ctx.in(0).ptr<T>()[0], d = ctx.in(2).ptr<T>()[0];
      T* o = y.ptr<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(s + static_cast<T>(i) * d);
    });
    return Status::ok();
  }
};

// ---------------------------------------------------------------- Dropout
// Inference: the identity, with an all-true mask. Training mode with a non-zero ratio would
// need random numbers that no other runtime reproduces, so it is refused.
class DropoutKernel : public OpKernel {
 public:
  DropoutKernel(const Node& n, int64_t opset) : opset_(opset), ratio_(n.attr_float("ratio", 0.5f)) {}
  Status init() {
    if (opset_ < 12 && !(ratio_ >= 0 && ratio_ < 1)) return Status::error("attribute 'ratio' must be in [0, 1)");
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    const ValueInfo& x = ctx.in(0);
    if (x.dtype != DataType::kUndefined && !is_float(x.dtype))
      return ctx.error("input 'data' must be a float tensor, found %s", dtype_name(x.dtype));
    ctx.set_output(0, x.dtype, x.shape);
    if (ctx.has_output(1)) ctx.set_output(1, opset_ < 10 ? x.dtype : DataType::kBool, x.shape);
    if (opset_ >= 12 && ctx.has_input(2) && ctx.in(2).dtype != DataType::kBool)
      return ctx.error("input 'training_mode' must be bool, found %s", dtype_name(ctx.in(2).dtype));
    if (opset_ >= 12 && ctx.value(2) && ctx.value(2)->numel() > 0) {
      Status s = check_training(ctx.value(2)->data_as<bool>()[0], ctx.value(1) ? ctx.value(1) : nullptr, ctx);
      if (!s.is_ok()) return s;
    }
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    if (opset_ >= 12 && ctx.has_input(2) && ctx.in(2).numel() > 0 && ctx.in(2).ptr<bool>()[0]) {
      double ratio = 0.5;
      if (ctx.has_input(1) && !read_scalar(ctx.in(1), ratio)) return ctx.error("input 'ratio' is not a number");
      if (ratio != 0) return refuse(ctx, ratio);
    }
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    if (x.nbytes() && x.data != y.data) std::memcpy(y.data, x.data, x.nbytes());
    if (ctx.has_output(1)) {
      TensorRef& m = ctx.out(1);
      if (m.dtype == DataType::kBool) {
        std::memset(m.data, 1, m.nbytes());
      } else if (!dispatch(m.dtype, TypeSet::kFloats, [&](auto tag) {
                   using T = typename decltype(tag)::type;
                   for (int64_t i = 0; i < m.numel(); ++i) m.ptr<T>()[i] = T(1);
                 })) {
        return ctx.error("mask of dtype %s is not supported", dtype_name(m.dtype));
      }
    }
    return Status::ok();
  }

 private:
  template <class C>
  static Status refuse(const C& ctx, double ratio) {
    return ctx.error(
        "training_mode=true with ratio %g would drop random elements; only inference "
        "(training_mode=false or ratio=0) is supported",
        ratio);
  }
  Status check_training(bool training, const Tensor* ratio_t, const InferContext& ctx) const {
    if (!training) return Status::ok();
    if (!ratio_t && ctx.has_input(1)) return Status::ok();  // ratio unknown yet: checked when run
    double ratio = 0.5;
    if (ratio_t) {
      TensorRef r = TensorRef::of(*ratio_t);
      if (!read_scalar(r, ratio)) return ctx.error("input 'ratio' is not a number");
    }
    return ratio != 0 ? refuse(ctx, ratio) : Status::ok();
  }

  int64_t opset_;
  float ratio_;
};

}  // namespace

void register_constant_ops(OpRegistry& r) {
  r.add("Constant", factory_of<ConstantKernel>());
  r.add("ConstantOfShape", factory_of<ConstantOfShapeKernel>());
  r.add("Range", factory_of<RangeKernel>());
  r.add("Dropout", factory_of<DropoutKernel>());
}

}  // namespace infera
