// QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked; int8/uint8/int16/uint16, int32
// for DequantizeLinear) and DynamicQuantizeLinear, with the helpers of quant.h.
#include "ops/quant.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/util.h"

namespace infera {

// ------------------------------------------------------------------------------ helpers

bool quant_type(DataType dt) {
  switch (dt) {
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt16:
    case DataType::kUInt16: return true;
    default: return false;
  }
}

int64_t quant_min(DataType dt) {
  switch (dt) {
    case DataType::kInt8: return -128;
    case DataType::kInt16: return -32768;
    case DataType::kInt32: return std::numeric_limits<int32_t>::min();
    default: return 0;
  }
}

int64_t quant_max(DataType dt) {
  switch (dt) {
    case DataType::kInt8: return 127;
    case DataType::kUInt8: return 255;
    case DataType::kInt16: return 32767;
    case DataType::kUInt16: return 65535;
    case DataType::kInt32: return std::numeric_limits<int32_t>::max();
    default: return 0;
  }
}

static std::string dims_str(const std::vector<int64_t>& d) { return Shape::of(d).str(); }

Status quant_layout_resolve(const std::vector<int64_t>& x, const std::vector<int64_t>& p, int64_t axis, int64_t block,
                            bool allow_axis, const char* what, QuantLayout& out) {
  out = QuantLayout{};
  int64_t n = 1;
  for (int64_t d : p) n *= d;
  if (block <= 0 && n == 1 && p.size() <= 1) return Status::ok();
  const int64_t r = static_cast<int64_t>(x.size());
  if (!allow_axis)
    return Status::error(std::string(what) + " " + dims_str(p) +
                         " must be a scalar: per-axis quantization needs opset 13 or later");
  if (!normalize_axis(axis, r))
    return Status::error("attribute 'axis' = " + std::to_string(axis) + " is out of range for input x " + dims_str(x));
  out.per_tensor = false;
  out.len = x[axis];
  for (int64_t i = axis + 1; i < r; ++i) out.inner *= x[i];
  if (block <= 0) {
    if (p.size() != 1 || p[0] != x[axis])
      return Status::error(std::string(what) + " " + dims_str(p) + " must be a scalar or hold " +
                           std::to_string(x[axis]) + " values (input x " + dims_str(x) + " along axis " +
                           std::to_string(axis) + ")");
    return Status::ok();
  }
  out.block = block;
  out.nblocks = (x[axis] + block - 1) / block;
  bool ok = static_cast<int64_t>(p.size()) == r;
  for (int64_t i = 0; ok && i < r; ++i) ok = p[i] == (i == axis ? out.nblocks : x[i]);
  if (!ok) {
    std::vector<int64_t> want = x;
    want[axis] = out.nblocks;
    return Status::error(std::string(what) + " " + dims_str(p) + " must have dims " + dims_str(want) +
                         " for block_size " + std::to_string(block) + " along axis " + std::to_string(axis) +
                         " of input x " + dims_str(x));
  }
  return Status::ok();
}

bool float_storage(DataType dt) {
  return dt == DataType::kFloat32 || dt == DataType::kFloat16 || dt == DataType::kBFloat16;
}

float float_at(DataType dt, const void* p, int64_t i) {
  switch (dt) {
    case DataType::kFloat32: return static_cast<const float*>(p)[i];
    case DataType::kFloat16: return half_to_float(static_cast<const uint16_t*>(p)[i]);
    case DataType::kBFloat16: return bfloat16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DataType::kInt32: return static_cast<float>(static_cast<const int32_t*>(p)[i]);
    default: return 0.f;
  }
}

void float_store(DataType dt, void* p, int64_t i, float v) {
  switch (dt) {
    case DataType::kFloat32: static_cast<float*>(p)[i] = v; break;
    case DataType::kFloat16: static_cast<uint16_t*>(p)[i] = float_to_half(v); break;
    case DataType::kBFloat16: static_cast<uint16_t*>(p)[i] = float_to_bfloat16(v); break;
    default: break;
  }
}

int64_t int_at(DataType dt, const void* p, int64_t i) {
  int64_t v = 0;
  dispatch(dt, TypeSet::kNumeric, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) v = static_cast<int64_t>(static_cast<const T*>(p)[i]);
  });
  return v;
}

void int_store(DataType dt, void* p, int64_t i, int64_t v) {
  dispatch(dt, TypeSet::kNumeric, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) static_cast<T*>(p)[i] = static_cast<T>(v);
  });
}

bool read_float_values(const TensorRef& t, std::vector<float>& out) {
  if (!float_storage(t.dtype)) return false;
  out.resize(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = float_at(t.dtype, t.data, i);
  return true;
}

bool read_float_values(const Tensor& t, std::vector<float>& out) { return read_float_values(TensorRef::of(t), out); }

bool read_int_values(const TensorRef& t, std::vector<int64_t>& out) {
  if (!is_integer(t.dtype)) return false;
  out.resize(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = int_at(t.dtype, t.data, i);
  return true;
}

Status check_scales(const std::vector<float>& s, const char* what) {
  for (size_t i = 0; i < s.size(); ++i)
    if (!(s[i] > 0.f) || !std::isfinite(s[i])) {
      char buf[160];
      snprintf(buf, sizeof buf, "%s[%zu] = %g: scales must be positive and finite", what, i, s[i]);
      return Status::error(buf);
    }
  return Status::ok();
}

Status check_zero_points(const std::vector<int64_t>& zp, DataType dt, const char* what) {
  // An int32 zero point (biases) must be 0: no int8 kernel adds an offset to a 32-bit accumulator.
  const int64_t lo = dt == DataType::kInt32 ? 0 : quant_min(dt), hi = dt == DataType::kInt32 ? 0 : quant_max(dt);
  for (size_t i = 0; i < zp.size(); ++i)
    if (zp[i] < lo || zp[i] > hi) {
      char buf[160];
      snprintf(buf, sizeof buf, "%s[%zu] = %lld is out of range [%lld, %lld] for %s", what, i, (long long)zp[i],
               (long long)lo, (long long)hi, dtype_name(dt));
      return Status::error(buf);
    }
  return Status::ok();
}

namespace {

// Checks of (x, scale, zero point) shared by QuantizeLinear and DequantizeLinear at infer time:
// scale dtype, zero point shape = scale shape, and the layout and values when they are known.
Status infer_qparams(InferContext& ctx, int64_t axis, int64_t block, DataType zp_dtype) {
  const ValueInfo& x = ctx.in(0);
  const ValueInfo& s = ctx.in(1);
  const char* sname = ctx.node.op_type == "QuantizeLinear" ? "y_scale" : "x_scale";
  const char* zname = ctx.node.op_type == "QuantizeLinear" ? "y_zero_point" : "x_zero_point";
  if (!float_storage(s.dtype))
    return ctx.error("%s must be float32, float16 or bfloat16, found %s", sname, dtype_name(s.dtype));
  const bool allow_axis = ctx.opset >= 13;
  if (s.shape.fully_known() && ctx.has_input(2) && ctx.in(2).shape.fully_known() &&
      ctx.in(2).shape.concrete() != s.shape.concrete())
    return ctx.error("%s %s must have the shape of %s %s", zname, ctx.in(2).shape.str().c_str(), sname,
                     s.shape.str().c_str());
  if (x.shape.fully_known() && s.shape.fully_known()) {
    QuantLayout l;
    Status st = quant_layout_resolve(x.shape.concrete(), s.shape.concrete(), axis, block, allow_axis, sname, l);
    if (!st.is_ok()) return ctx.error("%s", st.message().c_str());
  } else if (!allow_axis && s.shape.rank_known && s.shape.rank() > 1) {
    return ctx.error("%s %s must be a scalar before opset 13", sname, s.shape.str().c_str());
  }
  if (const Tensor* sv = ctx.value(1)) {
    std::vector<float> v;
    read_float_values(*sv, v);
    Status st = check_scales(v, sname);
    if (!st.is_ok()) return ctx.error("%s", st.message().c_str());
  }
  if (const Tensor* zv = ctx.value(2)) {
    std::vector<int64_t> v;
    read_int_values(TensorRef::of(*zv), v);
    Status st = check_zero_points(v, zp_dtype, zname);
    if (!st.is_ok()) return ctx.error("%s", st.message().c_str());
  }
  return Status::ok();
}

// Resolved parameters of one compute call.
struct QParams {
  QuantLayout layout;
  std::vector<float> scale;
  std::vector<int64_t> zp;  // empty: 0
};

Status compute_qparams(ComputeContext& ctx, int64_t axis, int64_t block, bool allow_axis, DataType zp_dtype,
                       QParams& q) {
  const TensorRef& x = ctx.in(0);
  const TensorRef& s = ctx.in(1);
  const bool quantize = ctx.node.op_type == "QuantizeLinear";
  const char* sname = quantize ? "y_scale" : "x_scale";
  const char* zname = quantize ? "y_zero_point" : "x_zero_point";
  Status st = quant_layout_resolve(x.dims, s.dims, axis, block, allow_axis, sname, q.layout);
  if (!st.is_ok()) return ctx.error("%s", st.message().c_str());
  if (!read_float_values(s, q.scale)) return ctx.error("%s has unsupported dtype %s", sname, dtype_name(s.dtype));
  st = check_scales(q.scale, sname);
  if (!st.is_ok()) return ctx.error("%s", st.message().c_str());
  if (ctx.has_input(2)) {
    const TensorRef& z = ctx.in(2);
    if (z.dims != s.dims)
      return ctx.error("%s %s must have the shape of %s %s", zname, Shape::of(z.dims).str().c_str(), sname,
                       Shape::of(s.dims).str().c_str());
    read_int_values(z, q.zp);
    st = check_zero_points(q.zp, zp_dtype, zname);
    if (!st.is_ok()) return ctx.error("%s", st.message().c_str());
  }
  return Status::ok();
}

Status read_axis_block(const Node& n, int64_t opset, int64_t& axis, int64_t& block) {
  axis = n.attr_int("axis", 1);
  block = opset >= 21 ? n.attr_int("block_size", 0) : 0;
  if (block < 0) return Status::error(node_message(n, "attribute 'block_size' = %lld must be >= 0", (long long)block));
  return Status::ok();
}

// ------------------------------------------------------------------------ QuantizeLinear

class QuantizeLinearKernel : public OpKernel {
 public:
  QuantizeLinearKernel(const Node& n, int64_t opset) : opset_(opset) {
    init_ = read_axis_block(n, opset, axis_, block_);
    if (init_.is_ok() && opset >= 21 && n.has_attr("output_dtype")) {
      out_attr_ = static_cast<DataType>(n.attr_int("output_dtype", 0));
      if (!quant_type(out_attr_))
        init_ = Status::error(node_message(n,
                                           "attribute 'output_dtype' = %d: infera quantizes to int8, uint8, "
                                           "int16 or uint16 only",
                                           static_cast<int>(out_attr_)));
    }
  }
  Status init() const { return init_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(1)) return ctx.error("expects inputs (x, y_scale, y_zero_point?)");
    const ValueInfo& x = ctx.in(0);
    if (!float_storage(x.dtype) && x.dtype != DataType::kInt32)
      return ctx.error("input x must be float32, float16, bfloat16 or int32, found %s", dtype_name(x.dtype));
    DataType out = out_attr_ != DataType::kUndefined ? out_attr_ : DataType::kUInt8;
    if (ctx.has_input(2)) {
      DataType z = ctx.in(2).dtype;
      if (!quant_type(z))
        return ctx.error("y_zero_point has dtype %s: infera quantizes to int8, uint8, int16 or uint16 only",
                         dtype_name(z));
      if (out_attr_ != DataType::kUndefined && out_attr_ != z)
        return ctx.error("attribute 'output_dtype' (%s) differs from y_zero_point's dtype %s", dtype_name(out_attr_),
                         dtype_name(z));
      out = z;
    }
    Status s = infer_qparams(ctx, axis_, block_, out);
    if (!s.is_ok()) return s;
    ctx.set_output(0, out, x.shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    QParams q;
    Status s = compute_qparams(ctx, axis_, block_, opset_ >= 13, y.dtype, q);
    if (!s.is_ok()) return s;
    const int64_t lo = quant_min(y.dtype), hi = quant_max(y.dtype);
    const int64_t n = x.numel();
    if (x.dtype == DataType::kFloat32 && q.layout.per_tensor &&
        (y.dtype == DataType::kInt8 || y.dtype == DataType::kUInt8)) {
      // The hot case of int8 models (activations around float ops): typed, same arithmetic.
      const float sc = q.scale[0];
      const float zp = static_cast<float>(q.zp.empty() ? 0 : q.zp[0]);
      const float* xp = x.ptr<float>();
      parallel_for(n, n > 65536 ? ctx.num_threads : 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          float v = std::nearbyint(xp[i] / sc) + zp;
          v = v < float(lo) ? float(lo) : v > float(hi) ? float(hi) : v;  // NaN stays NaN: stored as 0 below
          const int64_t r = v == v ? static_cast<int64_t>(v) : 0;
          if (y.dtype == DataType::kInt8)
            y.ptr<int8_t>()[i] = static_cast<int8_t>(r);
          else
            y.ptr<uint8_t>()[i] = static_cast<uint8_t>(r);
        }
      });
      return Status::ok();
    }
    parallel_for(n, n > 65536 ? ctx.num_threads : 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t k = q.layout.index(i);
        // x / scale in float32, as the ONNX reference divides (the rounding of a half case depends on it).
        const float v = float_at(x.dtype, x.data, i) / q.scale[k];
        const int64_t zp = q.zp.empty() ? 0 : q.zp[k];
        double r = std::nearbyint(static_cast<double>(v));
        int_store(y.dtype, y.data, i, quant_round_clamp(r + static_cast<double>(zp), lo, hi));
      }
    });
    return Status::ok();
  }

 private:
  int64_t opset_;
  int64_t axis_ = 1, block_ = 0;
  DataType out_attr_ = DataType::kUndefined;
  Status init_;
};

// ---------------------------------------------------------------------- DequantizeLinear

class DequantizeLinearKernel : public OpKernel {
 public:
  DequantizeLinearKernel(const Node& n, int64_t opset) : opset_(opset) {
    init_ = read_axis_block(n, opset, axis_, block_);
    if (init_.is_ok() && opset >= 23 && n.has_attr("output_dtype")) {
      out_attr_ = static_cast<DataType>(n.attr_int("output_dtype", 0));
      if (!float_storage(out_attr_))
        init_ = Status::error(node_message(n, "attribute 'output_dtype' = %d must be float32, float16 or bfloat16",
                                           static_cast<int>(out_attr_)));
    }
  }
  Status init() const { return init_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(1)) return ctx.error("expects inputs (x, x_scale, x_zero_point?)");
    const ValueInfo& x = ctx.in(0);
    if (!quant_type(x.dtype) && x.dtype != DataType::kInt32)
      return ctx.error("input x must be int8, uint8, int16, uint16 or int32, found %s", dtype_name(x.dtype));
    if (ctx.has_input(2) && ctx.in(2).dtype != x.dtype)
      return ctx.error("x_zero_point has dtype %s, input x %s: they must match", dtype_name(ctx.in(2).dtype),
                       dtype_name(x.dtype));
    Status s = infer_qparams(ctx, axis_, block_, x.dtype);
    if (!s.is_ok()) return s;
    ctx.set_output(0, out_attr_ != DataType::kUndefined ? out_attr_ : ctx.in(1).dtype, x.shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    QParams q;
    Status s = compute_qparams(ctx, axis_, block_, opset_ >= 13, x.dtype, q);
    if (!s.is_ok()) return s;
    const int64_t n = x.numel();
    if (y.dtype == DataType::kFloat32 && q.layout.per_tensor &&
        (x.dtype == DataType::kInt8 || x.dtype == DataType::kUInt8)) {
      const float sc = q.scale[0];
      const int32_t zp = static_cast<int32_t>(q.zp.empty() ? 0 : q.zp[0]);
      float* yp = y.ptr<float>();
      parallel_for(n, n > 65536 ? ctx.num_threads : 1, [&](int64_t b, int64_t e) {
        if (x.dtype == DataType::kInt8)
          for (int64_t i = b; i < e; ++i) yp[i] = static_cast<float>(int32_t(x.ptr<int8_t>()[i]) - zp) * sc;
        else
          for (int64_t i = b; i < e; ++i) yp[i] = static_cast<float>(int32_t(x.ptr<uint8_t>()[i]) - zp) * sc;
      });
      return Status::ok();
    }
    parallel_for(n, n > 65536 ? ctx.num_threads : 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t k = q.layout.index(i);
        const int64_t zp = q.zp.empty() ? 0 : q.zp[k];
        float_store(y.dtype, y.data, i, static_cast<float>(int_at(x.dtype, x.data, i) - zp) * q.scale[k]);
      }
    });
    return Status::ok();
  }

 private:
  int64_t opset_;
  int64_t axis_ = 1, block_ = 0;
  DataType out_attr_ = DataType::kUndefined;
  Status init_;
};

// ----------------------------------------------------------------- DynamicQuantizeLinear

class DynamicQuantizeLinearKernel : public OpKernel {
 public:
  DynamicQuantizeLinearKernel(const Node&, int64_t) {}
  Status init() const { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (ctx.in(0).dtype != DataType::kFloat32)
      return ctx.error("input x must be float32, found %s", dtype_name(ctx.in(0).dtype));
    ctx.set_output(0, DataType::kUInt8, ctx.in(0).shape);
    ctx.set_output(1, DataType::kFloat32, Shape::of({}));
    ctx.set_output(2, DataType::kUInt8, Shape::of({}));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    const float* p = x.ptr<float>();
    const int64_t n = x.numel();
    float lo = 0.f, hi = 0.f;
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(p[i])) return ctx.error("input x holds NaN at index %lld: no range to quantize", (long long)i);
      lo = std::min(lo, p[i]);
      hi = std::max(hi, p[i]);
    }
    if (!std::isfinite(lo) || !std::isfinite(hi)) return ctx.error("input x holds an infinity: no range to quantize");
    // An all-zero input gets scale 1 (as the ONNX reference and ORT), never a division by zero.
    const float scale = hi == lo ? 1.f : (hi - lo) / 255.f;
    const float zpf = std::clamp(0.f - lo / scale, 0.f, 255.f);
    const int64_t zp = static_cast<int64_t>(std::nearbyint(zpf));
    uint8_t* y = ctx.out(0).ptr<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      const float v = p[i] / scale;
      y[i] = static_cast<uint8_t>(quant_round_clamp(std::nearbyint(static_cast<double>(v)) + zp, 0, 255));
    }
    if (ctx.has_output(1)) ctx.out(1).ptr<float>()[0] = scale;
    if (ctx.has_output(2)) ctx.out(2).ptr<uint8_t>()[0] = static_cast<uint8_t>(zp);
    return Status::ok();
  }
};

}  // namespace

void register_quant_linear_ops(OpRegistry& r);  // quant_linear.cpp
void register_quant_conv_ops(OpRegistry& r);    // quant_conv.cpp

void register_quant_ops(OpRegistry& r) {
  r.add("QuantizeLinear", factory_of<QuantizeLinearKernel>());
  r.add("DequantizeLinear", factory_of<DequantizeLinearKernel>());
  r.add("DynamicQuantizeLinear", factory_of<DynamicQuantizeLinearKernel>());
  register_quant_linear_ops(r);
  register_quant_conv_ops(r);
}

}  // namespace infera
