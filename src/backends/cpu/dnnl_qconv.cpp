// com.infera.QConv (ops/quant_conv.h) through oneDNN's int8 convolution: u8/s8 source with its zero
// point, s8 weights (reordered once), s32 bias, per-output-channel output scales x_scale*w_scale/y_scale,
// the residual as a sum post-op (scale z_scale/y_scale, zero point z_zp) into the s8/u8 destination,
// the activation as an eltwise post-op (ReLU commutes with the positive 1/y_scale), and the output
// zero point. oneDNN picks the layout (nhwc or blocked, VNNI where the CPU has it); the plain NCHW
// tensors the planner gives are reordered in and out around the convolution.
#include "backends/cpu/dnnl_internal.h"
#include "ops/quant_conv.h"

namespace infera::cpu {
namespace {

memory::data_type dt_of(DataType d) {
  return d == DataType::kUInt8  ? memory::data_type::u8
         : d == DataType::kInt8 ? memory::data_type::s8
                                : memory::data_type::undef;
}

struct QConvPlan {
  Dims x, w, y;
  Dims strides, dilates, pad_l, pad_r;
  int64_t group = 1;
  bool has_bias = false, has_z = false;
  std::vector<EltOp> act;
  memory::data_type xt, yt, zt = memory::data_type::undef;
};

bool plan_qconv(const StepRequest& req, QConvPlan& p) {
  const auto* op = dynamic_cast<const QConvOp*>(req.op);
  if (!op || !req.has_in(0) || !req.has_in(1) || !req.inputs[1]->value || req.outputs.empty() || !req.outputs[0])
    return false;
  for (auto* v : req.inputs)
    if (v && !v->shape.fully_known()) return false;
  if (!req.outputs[0]->shape.fully_known()) return false;
  const Dims x = req.in_dims(0), w = req.in_dims(1), y = req.out_dims(0);
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return false;
  const ConvAttrs& a = op->attrs();
  std::vector<int64_t> pads, yd;
  if (!conv_resolve(a, x, w, pads, yd).is_ok() || yd != y) return false;
  for (int64_t v : pads)
    if (v < 0) return false;
  p.group = a.group;
  for (int i = 0; i < 2; ++i) {
    p.strides.push_back(a.strides.empty() ? 1 : a.strides[i]);
    p.dilates.push_back((a.dilations.empty() ? 1 : a.dilations[i]) - 1);
    p.pad_l.push_back(pads[i]);
    p.pad_r.push_back(pads[2 + i]);
  }
  p.x = x, p.y = y;
  if (p.group > 1) {
    if (w[0] % p.group != 0) return false;
    p.w = {p.group, w[0] / p.group, w[1], w[2], w[3]};
  } else {
    p.w = w;
  }
  p.xt = dt_of(req.inputs[0]->dtype);
  p.yt = dt_of(req.outputs[0]->dtype);
  if (p.xt == memory::data_type::undef || p.yt == memory::data_type::undef) return false;
  if (req.inputs[1]->dtype != DataType::kInt8) return false;
  p.has_bias = req.has_in(2);
  if (p.has_bias && (req.inputs[2]->dtype != DataType::kInt32 || req.in_dims(2) != Dims{y[1]})) return false;
  p.has_z = req.inputs.size() > 3 && req.has_in(3);
  if (p.has_z) {
    // The sum post-op reads the destination's type: the residual must have it.
    if (req.in_dims(3) != y || req.inputs[3]->dtype != req.outputs[0]->dtype) return false;
    p.zt = p.yt;
  }
  if (!eltwise_chain(op->params().act, p.act)) return false;
  return true;
}

// int8 activations in the planner's format: plain (NCHW) or channels-last, the layout oneDNN's int8
// kernels compute in, so a chain of QConvs runs without reorders between them.
memory::desc int8_md(const Dims& d, memory::data_type t, Format f) {
  return memory::desc(d, t, f == Format::kNhwc ? memory::format_tag::nhwc : memory::format_tag::nchw);
}

}  // namespace

Support qconv_query(const StepRequest& req) {
  QConvPlan p;
  if (!plan_qconv(req, p))
    return Support::no("an int8 conv oneDNN does not take (rank, non-constant W, pads, residual dtype, activation)");
  Support s;
  s.ok = true;
  const FormatSet both = kPlainOnly | format_bit(Format::kNhwc);
  s.input_formats.assign(req.inputs.size(), kPlainOnly);
  s.input_formats[0] = both;
  if (p.has_z) s.input_formats[3] = both;
  s.output_formats = {both};
  if (p.has_z) s.in_place.emplace_back(3, 0);
  return s;
}

std::unique_ptr<DnnlKernel> qconv_create(const StepRequest& req) {
  using namespace dnnl;
  QConvPlan p;
  if (!plan_qconv(req, p)) return nullptr;
  const QConvParams& q = dynamic_cast<const QConvOp*>(req.op)->params();
  const int64_t M = p.y[1];
  std::vector<float> scales(q.w_scales.size());
  for (size_t m = 0; m < scales.size(); ++m)
    scales[m] = static_cast<float>(double(q.x_scale) * q.w_scales[m] / q.y_scale);
  const memory::desc x_any(p.x, p.xt, memory::format_tag::any), y_any(p.y, p.yt, memory::format_tag::any);
  const memory::desc w_any(p.w, memory::data_type::s8, memory::format_tag::any);
  const memory::desc b_md =
      p.has_bias ? memory::desc({M}, memory::data_type::s32, memory::format_tag::a) : memory::desc();
  convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, x_any, w_any, b_md, y_any,
                              p.strides, p.dilates, p.pad_l, p.pad_r);
  post_ops po;
  if (p.has_z) po.append_sum(q.z_scale / q.y_scale, static_cast<int32_t>(q.z_zero_point));
  append_eltwise_ops(po, p.act);
  primitive_attr attr;
  attr.set_output_scales(scales.size() == 1 ? 0 : 1 << 1, scales);
  if (q.x_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (q.y_zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  attr.set_post_ops(po);
  convolution_forward::primitive_desc pd(d, user_scratchpad(attr), engine());

  auto k = std::make_unique<DnnlKernel>("dnnl int8 conv");
  const memory::desc x_md = int8_md(p.x, p.xt, req.in_format(0)), y_md = int8_md(p.y, p.yt, req.out_format(0));
  const bool via = pd.src_desc() != x_md || pd.dst_desc() != y_md;
  k->set_impl(pd.impl_info_str() + std::string(via ? " (via reorders)" : ""));
  const memory::format_tag wtag = p.group > 1 ? memory::format_tag::goihw : memory::format_tag::oihw;
  memory w_user(memory::desc(p.w, memory::data_type::s8, wtag), engine(),
                const_cast<void*>(req.inputs[1]->value->data()));
  std::unordered_map<int, memory> args;
  args[DNNL_ARG_WEIGHTS] = reorder_owned(*k, w_user, pd.weights_desc());
  args[DNNL_ARG_SRC] = input_as(*k, 0, x_md, pd.src_desc());
  OutputAs out = output_as(*k, 0, y_md, pd.dst_desc());
  args[DNNL_ARG_DST] = out.compute;
  if (p.has_bias) args[DNNL_ARG_BIAS] = k->bind_input(2, b_md);
  auto zero_point = [&](int arg, int64_t v) {
    memory m = k->own(memory::desc({1}, memory::data_type::s32, memory::format_tag::a));
    *static_cast<int32_t*>(m.get_data_handle()) = static_cast<int32_t>(v);
    args[DNNL_ARG_ATTR_ZERO_POINTS | arg] = m;
  };
  if (q.x_zero_point != 0) zero_point(DNNL_ARG_SRC, q.x_zero_point);
  if (q.y_zero_point != 0) zero_point(DNNL_ARG_DST, q.y_zero_point);
  // The residual: in place when the planner gave Y Z's buffer and no reorder stands between;
  // else copied into the destination the convolution sums into.
  if (p.has_z && !(out.compute.get() == out.bound.get() && req.alias_of(0) == 3)) {
    const memory::desc z_md = int8_md(p.y, p.zt, req.in_format(3));
    memory z = k->bind_input(3, z_md);
    k->add_step(
        dnnl::reorder(reorder::primitive_desc(engine(), z_md, engine(), out.compute.get_desc(), user_scratchpad())),
        {{DNNL_ARG_FROM, z}, {DNNL_ARG_TO, out.compute}});
  }
  k->add_step(convolution_forward(pd), args);
  out.finish(*k);
  return k;
}

std::unique_ptr<StepKernel> int8_convert(const ConvertRequest& req) {
  const auto ok = [](Format f) { return f == Format::kPlain || f == Format::kNhwc; };
  if (!req.from_device.is_cpu() || !req.to_device.is_cpu() || !req.value || req.value->shape.rank() != 4 ||
      !req.value->shape.fully_known() || !ok(req.from) || !ok(req.to) || req.from == req.to)
    return nullptr;
  const Dims d = req.value->shape.concrete();
  const memory::data_type t = dt_of(req.value->dtype);
  try {
    auto k = std::make_unique<DnnlKernel>("dnnl int8 reorder");
    memory src = k->bind_input(0, int8_md(d, t, req.from)), dst = k->bind_output(0, int8_md(d, t, req.to));
    dnnl::reorder::primitive_desc pd(engine(), src.get_desc(), engine(), dst.get_desc(), user_scratchpad());
    k->set_impl(pd.impl_info_str());
    k->add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
    return k;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace infera::cpu
