// Integer convolution and matrix multiplication: ConvInteger and MatMulInteger (int32 out) and
// QLinearConv and QLinearMatMul (requantized to 8 bits). Reference kernels: zero points subtracted
// once, exact int32 accumulation, then y = saturate(round_half_even(acc * multiplier) + y_zp) with
// the multiplier computed in the scales' own precision, as the ONNX reference does.
#include <algorithm>
#include <cmath>

#include "ops/conv.h"
#include "ops/quant.h"
#include "ops/util.h"

namespace infera {
namespace {

bool int8_type(DataType dt) { return dt == DataType::kInt8 || dt == DataType::kUInt8; }

// Rounds a float to the precision of dt (the scales' type): float16 products stay float16.
float round_to(DataType dt, float v) {
  if (dt == DataType::kFloat16) return half_to_float(float_to_half(v));
  if (dt == DataType::kBFloat16) return bfloat16_to_float(float_to_bfloat16(v));
  return v;
}

// A scalar-or-per-channel parameter (zero point or scale) read at compute time.
Status read_param_ints(ComputeContext& ctx, size_t i, int64_t channels, const char* what, std::vector<int64_t>& out) {
  out.assign(1, 0);
  if (!ctx.has_input(i)) return Status::ok();
  const TensorRef& t = ctx.in(i);
  if (!read_int_values(t, out))
    return ctx.error("%s has dtype %s, expected an integer type", what, dtype_name(t.dtype));
  if (out.size() != 1 && (t.rank() != 1 || static_cast<int64_t>(out.size()) != channels))
    return ctx.error("%s %s must be a scalar or hold %lld values", what, Shape::of(t.dims).str().c_str(),
                     (long long)channels);
  return Status::ok();
}

Status read_param_floats(ComputeContext& ctx, size_t i, int64_t channels, const char* what, std::vector<float>& out) {
  const TensorRef& t = ctx.in(i);
  if (!read_float_values(t, out))
    return ctx.error("%s has dtype %s, expected float32 or float16", what, dtype_name(t.dtype));
  if (out.size() != 1 && (t.rank() != 1 || static_cast<int64_t>(out.size()) != channels))
    return ctx.error("%s %s must be a scalar or hold %lld values", what, Shape::of(t.dims).str().c_str(),
                     (long long)channels);
  Status s = check_scales(out, what);
  return s.is_ok() ? s : ctx.error("%s", s.message().c_str());
}

// Infer-time checks of a parameter whose value may be known: dtype, length (1 or channels when
// known), and scales positive / zero points in range.
Status infer_param(InferContext& ctx, size_t i, bool is_scale, DataType zp_dtype, int64_t channels, const char* what) {
  if (!ctx.has_input(i)) return Status::ok();
  const ValueInfo& v = ctx.in(i);
  if (is_scale && !float_storage(v.dtype))
    return ctx.error("%s must be float32 or float16, found %s", what, dtype_name(v.dtype));
  if (!is_scale && v.dtype != zp_dtype)
    return ctx.error("%s has dtype %s; expected %s (the dtype of its tensor)", what, dtype_name(v.dtype),
                     dtype_name(zp_dtype));
  if (v.shape.fully_known()) {
    const int64_t n = v.shape.numel();
    if (n != 1 && (v.shape.rank() != 1 || (channels >= 0 && n != channels)))
      return ctx.error("%s %s must be a scalar or hold %lld values", what, v.shape.str().c_str(), (long long)channels);
  }
  if (const Tensor* t = ctx.value(i)) {
    Status s;
    if (is_scale) {
      std::vector<float> f;
      read_float_values(*t, f);
      s = check_scales(f, what);
    } else {
      std::vector<int64_t> z;
      read_int_values(TensorRef::of(*t), z);
      s = check_zero_points(z, zp_dtype, what);
    }
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
  }
  return Status::ok();
}

// ---------------------------------------------------------------------- integer conv

Status infer_conv_int(InferContext& ctx, const ConvAttrs& a, size_t w_in, DataType out) {
  const ValueInfo& x = ctx.in(0);
  const ValueInfo& w = ctx.in(w_in);
  if (!int8_type(x.dtype)) return ctx.error("input x must be int8 or uint8, found %s", dtype_name(x.dtype));
  if (!int8_type(w.dtype)) return ctx.error("input w must be int8 or uint8, found %s", dtype_name(w.dtype));
  if (x.shape.rank_known && (x.shape.rank() < 3 || x.shape.rank() > 5))
    return ctx.error("input x %s must have rank 3, 4 or 5", x.shape.str().c_str());
  if (x.shape.fully_known() && w.shape.fully_known()) {
    std::vector<int64_t> pads, y;
    Status s = conv_resolve(a, x.shape.concrete(), w.shape.concrete(), pads, y);
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
    ctx.set_output(0, out, Shape::of(y));
    return Status::ok();
  }
  Shape y = x.shape.rank_known ? Shape::of_rank(x.shape.rank()) : Shape::unknown();
  if (y.rank_known) {
    y.dims[0] = x.shape.dims[0];
    if (w.shape.rank_known && w.shape.rank() >= 1) y.dims[1] = w.shape.dims[0];
  }
  ctx.set_output(0, out, y);
  return Status::ok();
}

int64_t out_channels(const InferContext& ctx, size_t w_in) {
  const Shape& w = ctx.in(w_in).shape;
  return w.rank_known && w.rank() >= 1 && w.dims[0].known() ? w.dims[0].value : -1;
}

class ConvIntegerKernel : public OpKernel {
 public:
  ConvIntegerKernel(const Node& n, int64_t) { init_ = conv_attrs_parse(n, attrs_); }
  Status init() const { return init_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(1)) return ctx.error("expects inputs (x, w, x_zero_point?, w_zero_point?)");
    Status s = infer_param(ctx, 2, false, ctx.in(0).dtype, 1, "x_zero_point");
    if (s.is_ok()) s = infer_param(ctx, 3, false, ctx.in(1).dtype, out_channels(ctx, 1), "w_zero_point");
    if (!s.is_ok()) return s;
    return infer_conv_int(ctx, attrs_, 1, DataType::kInt32);
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& X = ctx.in(0);
    const TensorRef& W = ctx.in(1);
    std::vector<int64_t> pads, yd;
    Status s = conv_resolve(attrs_, X.dims, W.dims, pads, yd);
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
    std::vector<int64_t> xzp, wzp;
    s = read_param_ints(ctx, 2, 1, "x_zero_point", xzp);
    if (s.is_ok()) s = read_param_ints(ctx, 3, W.dims[0], "w_zero_point", wzp);
    if (!s.is_ok()) return s;
    std::vector<int32_t> acc;
    conv_int_ref(X, xzp[0], W, wzp, pads, attrs_, yd, acc, ctx.num_threads);
    std::copy(acc.begin(), acc.end(), ctx.out(0).ptr<int32_t>());
    return Status::ok();
  }

 private:
  ConvAttrs attrs_;
  Status init_;
};

// Requantizes int32 accumulators (+ bias) of [outer, C, inner] to dtype `out` with one
// multiplier per channel (or one in all).
void requantize(const std::vector<int32_t>& acc, const int32_t* bias, int64_t C, int64_t inner,
                const std::vector<double>& mult, int64_t yzp, TensorRef& y) {
  const int64_t lo = quant_min(y.dtype), hi = quant_max(y.dtype);
  for (int64_t i = 0; i < static_cast<int64_t>(acc.size()); ++i) {
    const int64_t c = (i / inner) % C;
    const int64_t a = static_cast<int64_t>(acc[i]) + (bias ? bias[c] : 0);
    const double m = mult.size() == 1 ? mult[0] : mult[c];
    int_store(y.dtype, y.data, i, quant_round_clamp(static_cast<double>(a) * m + static_cast<double>(yzp), lo, hi));
  }
}

class QLinearConvKernel : public OpKernel {
 public:
  QLinearConvKernel(const Node& n, int64_t) { init_ = conv_attrs_parse(n, attrs_); }
  Status init() const { return init_; }

  Status infer(InferContext& ctx) const override {
    for (size_t i = 0; i < 7; ++i)
      if (!ctx.has_input(i))
        return ctx.error(
            "expects inputs (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, "
            "y_zero_point?, B?); input %zu is missing",
            i);
    const int64_t M = out_channels(ctx, 3);
    const DataType out = ctx.has_input(7) ? ctx.in(7).dtype : ctx.in(0).dtype;
    if (!int8_type(out)) return ctx.error("y_zero_point must be int8 or uint8, found %s", dtype_name(out));
    Status s = infer_param(ctx, 1, true, out, 1, "x_scale");
    if (s.is_ok()) s = infer_param(ctx, 2, false, ctx.in(0).dtype, 1, "x_zero_point");
    if (s.is_ok()) s = infer_param(ctx, 4, true, out, M, "w_scale");
    if (s.is_ok()) s = infer_param(ctx, 5, false, ctx.in(3).dtype, M, "w_zero_point");
    if (s.is_ok()) s = infer_param(ctx, 6, true, out, 1, "y_scale");
    if (s.is_ok()) s = infer_param(ctx, 7, false, out, 1, "y_zero_point");
    if (!s.is_ok()) return s;
    if (ctx.has_input(8)) {
      const ValueInfo& b = ctx.in(8);
      if (b.dtype != DataType::kInt32) return ctx.error("bias B must be int32, found %s", dtype_name(b.dtype));
      if (b.shape.fully_known() && M >= 0 && (b.shape.rank() != 1 || b.shape.numel() != M))
        return ctx.error("bias B %s must hold %lld values", b.shape.str().c_str(), (long long)M);
    }
    // infer_conv_int reads w as input 1: give it a view with w in that slot.
    std::vector<const ValueInfo*> v{&ctx.in(0), &ctx.in(3)};
    InferContext sub(ctx.node, ctx.opset, v);
    s = infer_conv_int(sub, attrs_, 1, out);
    if (!s.is_ok()) return s;
    ctx.set_output(0, out, sub.outputs()[0].shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& X = ctx.in(0);
    const TensorRef& W = ctx.in(3);
    TensorRef& Y = ctx.out(0);
    std::vector<int64_t> pads, yd;
    Status s = conv_resolve(attrs_, X.dims, W.dims, pads, yd);
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
    const int64_t M = W.dims[0];
    std::vector<int64_t> xzp, wzp, yzp;
    std::vector<float> xs, ws, ys;
    s = read_param_ints(ctx, 2, 1, "x_zero_point", xzp);
    if (s.is_ok()) s = read_param_ints(ctx, 5, M, "w_zero_point", wzp);
    if (s.is_ok()) s = read_param_ints(ctx, 7, 1, "y_zero_point", yzp);
    if (s.is_ok()) s = read_param_floats(ctx, 1, 1, "x_scale", xs);
    if (s.is_ok()) s = read_param_floats(ctx, 4, M, "w_scale", ws);
    if (s.is_ok()) s = read_param_floats(ctx, 6, 1, "y_scale", ys);
    if (!s.is_ok()) return s;
    const int32_t* bias = nullptr;
    if (ctx.has_input(8)) {
      const TensorRef& b = ctx.in(8);
      if (b.dtype != DataType::kInt32 || b.numel() != M)
        return ctx.error("bias B %s must be int32 with %lld values", Shape::of(b.dims).str().c_str(), (long long)M);
      bias = b.ptr<int32_t>();
    }
    std::vector<int32_t> acc;
    conv_int_ref(X, xzp[0], W, wzp, pads, attrs_, yd, acc, ctx.num_threads);
    const DataType st = ctx.in(1).dtype;
    std::vector<double> mult(ws.size());
    for (size_t c = 0; c < ws.size(); ++c) mult[c] = round_to(st, round_to(st, xs[0] * ws[c]) / ys[0]);
    int64_t inner = 1;
    for (size_t i = 2; i < yd.size(); ++i) inner *= yd[i];
    requantize(acc, bias, M, inner, mult, yzp[0], Y);
    return Status::ok();
  }

 private:
  ConvAttrs attrs_;
  Status init_;
};

// --------------------------------------------------------------------- integer matmul

// numpy matmul dims: batch dims broadcast; 1-D operands get a dim inserted and dropped again.
struct MatmulDims {
  std::vector<int64_t> y;
  int64_t M = 0, K = 0, N = 0, batch = 1;
  std::vector<int64_t> a_off, b_off;  // element offset of each batch's matrix
};

Status matmul_dims(const std::vector<int64_t>& a0, const std::vector<int64_t>& b0, MatmulDims& d) {
  if (a0.empty() || b0.empty()) return Status::error("inputs must have rank >= 1");
  std::vector<int64_t> a = a0, b = b0;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  d.M = a[a.size() - 2];
  d.K = a.back();
  d.N = b.back();
  if (b[b.size() - 2] != d.K)
    return Status::error("inner dims differ: A " + Shape::of(a0).str() + ", B " + Shape::of(b0).str());
  std::vector<int64_t> ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2), yb;
  if (!broadcast_dims(ab, bb, yb))
    return Status::error("batch dims of A " + Shape::of(a0).str() + " and B " + Shape::of(b0).str() +
                         " do not broadcast");
  std::vector<int64_t> as = broadcast_strides(ab, yb), bs = broadcast_strides(bb, yb);
  for (int64_t v : yb) d.batch *= v;
  d.a_off.resize(d.batch);
  d.b_off.resize(d.batch);
  for (int64_t t = 0; t < d.batch; ++t) {
    int64_t rem = t, ao = 0, bo = 0;
    for (int64_t i = static_cast<int64_t>(yb.size()) - 1; i >= 0; --i) {
      const int64_t idx = rem % yb[i];
      rem /= yb[i];
      ao += idx * as[i];
      bo += idx * bs[i];
    }
    d.a_off[t] = ao * d.M * d.K;
    d.b_off[t] = bo * d.K * d.N;
  }
  d.y = yb;
  if (a0.size() != 1) d.y.push_back(d.M);
  if (b0.size() != 1) d.y.push_back(d.N);
  return Status::ok();
}

// acc[t, i, j] = sum_k (A - azp[i])(B - bzp[j]); azp per row (MatMulInteger) or one value.
void matmul_int_ref(const TensorRef& A, const std::vector<int64_t>& azp, const TensorRef& B,
                    const std::vector<int64_t>& bzp, const MatmulDims& d, std::vector<int32_t>& acc, int nt) {
  acc.assign(static_cast<size_t>(d.batch * d.M * d.N), 0);
  parallel_for(d.batch * d.M, nt, [&](int64_t b, int64_t e) {
    for (int64_t ti = b; ti < e; ++ti) {
      const int64_t t = ti / d.M, i = ti % d.M;
      const int64_t az = azp.size() == 1 ? azp[0] : azp[i];
      for (int64_t j = 0; j < d.N; ++j) {
        const int64_t bz = bzp.size() == 1 ? bzp[0] : bzp[j];
        int64_t s = 0;
        for (int64_t k = 0; k < d.K; ++k)
          s += (int_at(A.dtype, A.data, d.a_off[t] + i * d.K + k) - az) *
               (int_at(B.dtype, B.data, d.b_off[t] + k * d.N + j) - bz);
        acc[ti * d.N + j] = static_cast<int32_t>(s);
      }
    }
  });
}

Status infer_matmul_int(InferContext& ctx, size_t b_in, DataType out) {
  const ValueInfo& a = ctx.in(0);
  const ValueInfo& b = ctx.in(b_in);
  if (!int8_type(a.dtype)) return ctx.error("input A must be int8 or uint8, found %s", dtype_name(a.dtype));
  if (!int8_type(b.dtype)) return ctx.error("input B must be int8 or uint8, found %s", dtype_name(b.dtype));
  if (a.shape.fully_known() && b.shape.fully_known()) {
    MatmulDims d;
    Status s = matmul_dims(a.shape.concrete(), b.shape.concrete(), d);
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
    ctx.set_output(0, out, Shape::of(d.y));
    return Status::ok();
  }
  Shape y = Shape::unknown();
  if (a.shape.rank_known && b.shape.rank_known && a.shape.rank() >= 2 && b.shape.rank() >= 2)
    y = Shape::of_rank(std::max(a.shape.rank(), b.shape.rank()));
  ctx.set_output(0, out, y);
  return Status::ok();
}

int64_t columns(const InferContext& ctx, size_t b_in) {
  const Shape& b = ctx.in(b_in).shape;
  return b.rank_known && b.rank() >= 2 && b.dims.back().known() ? b.dims.back().value : -1;
}

class MatMulIntegerKernel : public OpKernel {
 public:
  MatMulIntegerKernel(const Node&, int64_t) {}
  Status init() const { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(1)) return ctx.error("expects inputs (A, B, a_zero_point?, b_zero_point?)");
    const Shape& as = ctx.in(0).shape;
    const int64_t rows =
        as.rank_known && as.rank() >= 2 && as.dims[as.rank() - 2].known() ? as.dims[as.rank() - 2].value : -1;
    Status s = infer_param(ctx, 2, false, ctx.in(0).dtype, rows, "a_zero_point");
    if (s.is_ok()) s = infer_param(ctx, 3, false, ctx.in(1).dtype, columns(ctx, 1), "b_zero_point");
    if (!s.is_ok()) return s;
    return infer_matmul_int(ctx, 1, DataType::kInt32);
  }

  Status compute(ComputeContext& ctx) const override {
    MatmulDims d;
    Status s = matmul_dims(ctx.in(0).dims, ctx.in(1).dims, d);
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
    std::vector<int64_t> azp, bzp;
    s = read_param_ints(ctx, 2, d.M, "a_zero_point", azp);
    if (s.is_ok()) s = read_param_ints(ctx, 3, d.N, "b_zero_point", bzp);
    if (!s.is_ok()) return s;
    std::vector<int32_t> acc;
    matmul_int_ref(ctx.in(0), azp, ctx.in(1), bzp, d, acc, ctx.num_threads);
    std::copy(acc.begin(), acc.end(), ctx.out(0).ptr<int32_t>());
    return Status::ok();
  }
};

class QLinearMatMulKernel : public OpKernel {
 public:
  QLinearMatMulKernel(const Node&, int64_t) {}
  Status init() const { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    for (size_t i = 0; i < 8; ++i)
      if (!ctx.has_input(i))
        return ctx.error(
            "expects inputs (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, "
            "y_zero_point); input %zu is missing",
            i);
    const DataType out = ctx.in(7).dtype;
    if (!int8_type(out)) return ctx.error("y_zero_point must be int8 or uint8, found %s", dtype_name(out));
    const int64_t N = columns(ctx, 3);
    Status s = infer_param(ctx, 1, true, out, 1, "a_scale");
    if (s.is_ok()) s = infer_param(ctx, 2, false, ctx.in(0).dtype, 1, "a_zero_point");
    if (s.is_ok()) s = infer_param(ctx, 4, true, out, N, "b_scale");
    if (s.is_ok()) s = infer_param(ctx, 5, false, ctx.in(3).dtype, N, "b_zero_point");
    if (s.is_ok()) s = infer_param(ctx, 6, true, out, 1, "y_scale");
    if (s.is_ok()) s = infer_param(ctx, 7, false, out, 1, "y_zero_point");
    if (!s.is_ok()) return s;
    std::vector<const ValueInfo*> v{&ctx.in(0), &ctx.in(3)};
    InferContext sub(ctx.node, ctx.opset, v);
    s = infer_matmul_int(sub, 1, out);
    if (!s.is_ok()) return s;
    ctx.set_output(0, out, sub.outputs()[0].shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    MatmulDims d;
    Status s = matmul_dims(ctx.in(0).dims, ctx.in(3).dims, d);
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
    std::vector<int64_t> azp, bzp, yzp;
    std::vector<float> as, bs, ys;
    s = read_param_ints(ctx, 2, 1, "a_zero_point", azp);
    if (s.is_ok()) s = read_param_ints(ctx, 5, d.N, "b_zero_point", bzp);
    if (s.is_ok()) s = read_param_ints(ctx, 7, 1, "y_zero_point", yzp);
    if (s.is_ok()) s = read_param_floats(ctx, 1, 1, "a_scale", as);
    if (s.is_ok()) s = read_param_floats(ctx, 4, d.N, "b_scale", bs);
    if (s.is_ok()) s = read_param_floats(ctx, 6, 1, "y_scale", ys);
    if (!s.is_ok()) return s;
    std::vector<int32_t> acc;
    matmul_int_ref(ctx.in(0), azp, ctx.in(3), bzp, d, acc, ctx.num_threads);
    const DataType st = ctx.in(1).dtype;
    std::vector<double> mult(bs.size());
    for (size_t c = 0; c < bs.size(); ++c) mult[c] = round_to(st, round_to(st, as[0] * bs[c]) / ys[0]);
    requantize(acc, nullptr, static_cast<int64_t>(mult.size()), 1, mult, yzp[0], ctx.out(0));
    return Status::ok();
  }
};

}  // namespace

// Y[n, m, o...] = sum (X - xzp)(W - wzp[m]) over the window, exact in int64, stored as int32.
void conv_int_ref(const TensorRef& X, int64_t xzp, const TensorRef& W, const std::vector<int64_t>& wzp,
                  const std::vector<int64_t>& pads, const ConvAttrs& a, const std::vector<int64_t>& yd,
                  std::vector<int32_t>& acc, int nt) {
  const int sp = X.rank() - 2;
  int64_t xs[3] = {1, 1, 1}, ks[3] = {1, 1, 1}, os[3] = {1, 1, 1}, st[3] = {1, 1, 1}, dl[3] = {1, 1, 1},
          pb[3] = {0, 0, 0};
  for (int i = 0; i < sp; ++i) {
    xs[i] = X.dims[2 + i];
    ks[i] = W.dims[2 + i];
    os[i] = yd[2 + i];
    if (!a.strides.empty()) st[i] = a.strides[i];
    if (!a.dilations.empty()) dl[i] = a.dilations[i];
    pb[i] = pads[i];
  }
  const int64_t N = X.dims[0], C = X.dims[1], M = W.dims[0], G = a.group, Cg = C / G, Mg = M / G;
  const int64_t xplane = xs[0] * xs[1] * xs[2], kplane = ks[0] * ks[1] * ks[2], oplane = os[0] * os[1] * os[2];
  acc.assign(static_cast<size_t>(N * M * oplane), 0);
  parallel_for(N * M, nt, [&](int64_t b, int64_t e) {
    for (int64_t nm = b; nm < e; ++nm) {
      const int64_t n = nm / M, m = nm % M, g = m / Mg;
      const int64_t wz = wzp.size() == 1 ? wzp[0] : wzp[m];
      int32_t* y = acc.data() + nm * oplane;
      for (int64_t o0 = 0; o0 < os[0]; ++o0)
        for (int64_t o1 = 0; o1 < os[1]; ++o1)
          for (int64_t o2 = 0; o2 < os[2]; ++o2) {
            int64_t s = 0;
            for (int64_t c = 0; c < Cg; ++c) {
              const int64_t xc = (n * C + g * Cg + c) * xplane, wc = (m * Cg + c) * kplane;
              for (int64_t k0 = 0; k0 < ks[0]; ++k0) {
                const int64_t i0 = o0 * st[0] - pb[0] + k0 * dl[0];
                if (i0 < 0 || i0 >= xs[0]) continue;
                for (int64_t k1 = 0; k1 < ks[1]; ++k1) {
                  const int64_t i1 = o1 * st[1] - pb[1] + k1 * dl[1];
                  if (i1 < 0 || i1 >= xs[1]) continue;
                  for (int64_t k2 = 0; k2 < ks[2]; ++k2) {
                    const int64_t i2 = o2 * st[2] - pb[2] + k2 * dl[2];
                    if (i2 < 0 || i2 >= xs[2]) continue;
                    const int64_t xv = int_at(X.dtype, X.data, xc + (i0 * xs[1] + i1) * xs[2] + i2) - xzp;
                    const int64_t wv = int_at(W.dtype, W.data, wc + (k0 * ks[1] + k1) * ks[2] + k2) - wz;
                    s += xv * wv;
                  }
                }
              }
            }
            y[(o0 * os[1] + o1) * os[2] + o2] = static_cast<int32_t>(s);
          }
    }
  });
}

void register_quant_linear_ops(OpRegistry& r) {
  r.add("ConvInteger", factory_of<ConvIntegerKernel>());
  r.add("MatMulInteger", factory_of<MatMulIntegerKernel>());
  r.add("QLinearConv", factory_of<QLinearConvKernel>());
  r.add("QLinearMatMul", factory_of<QLinearMatMulKernel>());
}

}  // namespace infera
