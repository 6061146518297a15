// com.infera.QConv (ops/quant_conv.h): attribute parsing, shape inference and the reference kernel
// (integer accumulation by conv_int_ref, then the fused requantization: QRequant).
#include "ops/quant_conv.h"

#include <cmath>

#include "ops/quant.h"
#include "ops/util.h"

namespace infera {
namespace {

class QConvKernel : public QConvOp {
 public:
  QConvKernel(const Node& n, int64_t) {
    init_ = conv_attrs_parse(n, attrs_);
    q_.x_scale = n.attr_float("x_scale", 0.f);
    q_.x_zero_point = n.attr_int("x_zero_point", 0);
    q_.w_scales = n.attr_floats("w_scales");
    q_.z_scale = n.attr_float("z_scale", 1.f);
    q_.z_zero_point = n.attr_int("z_zero_point", 0);
    q_.y_scale = n.attr_float("y_scale", 0.f);
    q_.y_zero_point = n.attr_int("y_zero_point", 0);
    q_.y_dtype = static_cast<DataType>(n.attr_int("y_dtype", static_cast<int64_t>(DataType::kInt8)));
    if (init_.is_ok()) init_ = activation_from_attrs(n, q_.act);
    if (!init_.is_ok()) return;
    std::vector<float> all = q_.w_scales;
    all.push_back(q_.x_scale);
    all.push_back(q_.y_scale);
    all.push_back(q_.z_scale);
    Status s = check_scales(all, "scale");
    if (!s.is_ok())
      init_ = Status::error(node_message(n, "%s", s.message().c_str()));
    else if (q_.y_dtype != DataType::kInt8 && q_.y_dtype != DataType::kUInt8)
      init_ = Status::error(node_message(n, "attribute 'y_dtype' must be int8 or uint8"));
    else if (q_.w_scales.empty())
      init_ = Status::error(node_message(n, "attribute 'w_scales' is required"));
  }
  Status init() const { return init_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(1)) return ctx.error("expects inputs (X, W, B?, Z?)");
    const ValueInfo& x = ctx.in(0);
    const ValueInfo& w = ctx.in(1);
    if (x.dtype != DataType::kInt8 && x.dtype != DataType::kUInt8)
      return ctx.error("input X must be int8 or uint8, found %s", dtype_name(x.dtype));
    if (w.dtype != DataType::kInt8) return ctx.error("weight W must be int8, found %s", dtype_name(w.dtype));
    if (ctx.has_input(2) && ctx.in(2).dtype != DataType::kInt32)
      return ctx.error("bias B must be int32, found %s", dtype_name(ctx.in(2).dtype));
    if (w.shape.rank_known && w.shape.rank() >= 1 && w.shape.dims[0].known() && q_.w_scales.size() != 1 &&
        static_cast<int64_t>(q_.w_scales.size()) != w.shape.dims[0].value)
      return ctx.error("attribute 'w_scales' has %zu values for %lld output channels", q_.w_scales.size(),
                       (long long)w.shape.dims[0].value);
    Shape y = Shape::unknown();
    if (x.shape.fully_known() && w.shape.fully_known()) {
      std::vector<int64_t> pads, yd;
      Status s = conv_resolve(attrs_, x.shape.concrete(), w.shape.concrete(), pads, yd);
      if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
      y = Shape::of(yd);
    } else if (x.shape.rank_known) {
      y = Shape::of_rank(x.shape.rank());
      y.dims[0] = x.shape.dims[0];
      if (w.shape.rank_known) y.dims[1] = w.shape.dims[0];
    }
    ctx.set_output(0, q_.y_dtype, y);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& X = ctx.in(0);
    const TensorRef& W = ctx.in(1);
    TensorRef& Y = ctx.out(0);
    std::vector<int64_t> pads, yd;
    Status s = conv_resolve(attrs_, X.dims, W.dims, pads, yd);
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
    const int64_t M = W.dims[0];
    if (q_.w_scales.size() != 1 && static_cast<int64_t>(q_.w_scales.size()) != M)
      return ctx.error("attribute 'w_scales' has %zu values for %lld output channels", q_.w_scales.size(),
                       (long long)M);
    const int32_t* bias = ctx.has_input(2) ? ctx.in(2).ptr<int32_t>() : nullptr;
    if (bias && ctx.in(2).numel() != M) return ctx.error("bias B must hold %lld values", (long long)M);
    const TensorRef* Z = ctx.has_input(3) ? &ctx.in(3) : nullptr;
    if (Z && Z->dims != yd) return ctx.error("residual Z must have the output shape");
    std::vector<int32_t> acc;
    conv_int_ref(X, q_.x_zero_point, W, {0}, pads, attrs_, yd, acc, ctx.num_threads);
    int64_t inner = 1;
    for (size_t i = 2; i < yd.size(); ++i) inner *= yd[i];
    const QRequant rq = q_.requant();
    std::vector<double> sxw;
    std::vector<float> sy;
    q_.channel_scales(rq, M, sxw, sy);
    parallel_for(static_cast<int64_t>(acc.size()), ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t m = (i / inner) % M;
        const int64_t a = static_cast<int64_t>(acc[i]) + (bias ? bias[m] : 0);
        int_store(Y.dtype, Y.data, i, rq(a, sxw[m], sy[m], Z != nullptr, Z ? int_at(Z->dtype, Z->data, i) : 0));
      }
    });
    return Status::ok();
  }

 private:
  Status init_;
};

}  // namespace

void register_quant_conv_ops(OpRegistry& r) { r.add("QConv", factory_of<QConvKernel>(), "com.infera"); }

}  // namespace infera
