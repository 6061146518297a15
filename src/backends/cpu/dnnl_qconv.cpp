// com.infera.QConv (ops/quant_conv.h) through oneDNN's int8 convolution: u8/s8 source with its zero
// point, s8 weights (reordered once), s32 bias, per-output-channel output scales x_scale*w_scale/y_scale,
// the residual as a sum post-op (scale z_scale/y_scale, zero point z_zp) into the s8/u8 destination,
// the activation as an eltwise post-op (ReLU commutes with the positive 1/y_scale), and the output
// zero point. oneDNN picks the layout (nhwc or blocked, VNNI where the CPU has it); the plain NCHW
// tensors the planner gives are reordered in and out around the convolution. Without VNNI (where
// oneDNN's int8 convs are not exact) an exact fp32 path stands in (qconv_create_f32).
#include <algorithm>
#include <cstdlib>

#include "backends/cpu/dnnl_internal.h"
#include "ops/activation.h"
#include "ops/quant.h"
#include "ops/quant_conv.h"

namespace infera::cpu {
namespace {

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
  p.xt = int8_type(req.inputs[0]->dtype);
  p.yt = int8_type(req.outputs[0]->dtype);
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

// The fp32 path's exactness: every partial sum of (x - x_zp) * w is an integer of magnitude at most
// max|x - x_zp| * sum|w[m]| (over the part of output channel m's filter that one convolution
// sums); below 2^24 each is a float, whatever the order of summation, fused or not. A filter past
// that is split over its input channels into the fewest equal chunks that each stay below (ResNet's
// 3x3 convs of 512 channels need 2), each its own fp32 convolution; their sums add in int32.
// Returns the chunk boundaries, or none when no split would do (a grouped conv past the bound).
std::vector<int64_t> f32_chunks(const StepRequest& req, const QConvParams& q, int64_t group) {
  const Tensor& w = *req.inputs[1]->value;  // OIHW int8, constant
  const int64_t M = w.dims()[0], C = w.dims()[1], RS = w.dims()[2] * w.dims()[3];
  const bool u8 = req.inputs[0]->dtype == DataType::kUInt8;
  const int64_t lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
  const int64_t amax = std::max(std::abs(lo - q.x_zero_point), std::abs(hi - q.x_zero_point));
  const int8_t* wd = w.data_as<int8_t>();
  for (int64_t g = 1; g <= (group == 1 ? C : 1); ++g) {
    std::vector<int64_t> bounds;
    for (int64_t j = 0; j <= g; ++j) bounds.push_back(C * j / g);
    bool ok = true;
    for (int64_t m = 0; m < M && ok; ++m)
      for (int64_t j = 0; j < g && ok; ++j) {
        int64_t sum = 0;
        for (int64_t k = bounds[j] * RS; k < bounds[j + 1] * RS; ++k) sum += std::abs(int64_t{wd[m * C * RS + k]});
        ok = amax * sum < (int64_t{1} << 24);
      }
    if (ok) return bounds;
  }
  return {};
}

// QConv without VNNI: per input-channel chunk, (x - x_zp) to fp32 (reorder + linear) and oneDNN's
// fp32 direct convolution with the int8 weights as floats (no bias); then the reference's own
// requantization (quant_conv.cpp, in double, element for element) from the exact integer sums
// into the int8 output, residual and activation included: bit-exact with the reference.
std::unique_ptr<DnnlKernel> qconv_create_f32(const StepRequest& req, const QConvPlan& p, const QConvParams& q,
                                             const std::vector<int64_t>& chunks) {
  using namespace dnnl;
  const memory::data_type f32 = memory::data_type::f32;
  const Format fx = req.in_format(0), fy = req.out_format(0);
  const Format fz = p.has_z ? req.in_format(3) : fy;
  auto k = std::make_unique<DnnlKernel>("dnnl int8 conv as fp32 (exact; no VNNI)");
  const memory::desc x_md = nchw_or_nhwc_md(p.x, p.xt, fx), yf_md = nchw_or_nhwc_md(p.y, f32, fy);
  const Tensor& wt = *req.inputs[1]->value;
  const int64_t C = wt.dims()[1], RS = wt.dims()[2] * wt.dims()[3], M = wt.dims()[0];
  std::vector<size_t> acc_offs;
  std::string impl;
  for (size_t j = 0; j + 1 < chunks.size(); ++j) {
    const int64_t c0 = chunks[j], cn = chunks[j + 1] - c0;
    // A grouped conv is one chunk (f32_chunks): the whole x and the goihw weights.
    const Dims xd{p.x[0], p.group == 1 ? cn : p.x[1], p.x[2], p.x[3]};
    Dims wd = p.w;
    if (p.group == 1) wd[1] = cn;
    const memory::desc xs_md = chunks.size() > 2 ? x_md.submemory_desc(xd, {0, c0, 0, 0}) : x_md;
    const memory::desc xf_md = nchw_or_nhwc_md(xd, f32, fx);
    const memory::desc any_x(xd, f32, memory::format_tag::any), any_y(p.y, f32, memory::format_tag::any),
        any_w(wd, f32, memory::format_tag::any);
    convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, any_x, any_w, any_y,
                                p.strides, p.dilates, p.pad_l, p.pad_r);
    convolution_forward::primitive_desc pd(d, user_scratchpad(), engine());
    impl = pd.impl_info_str();
    // x -> fp32, minus its zero point (padding is then 0 = no term, as the reference skips padded taps).
    memory x = k->bind_input(0, xs_md), xf = k->temp(xf_md);
    k->add_step(reorder(reorder::primitive_desc(engine(), xs_md, engine(), xf_md, user_scratchpad())),
                {{DNNL_ARG_FROM, x}, {DNNL_ARG_TO, xf}});
    if (q.x_zero_point != 0) {
      eltwise_forward::desc ed(prop_kind::forward_inference, algorithm::eltwise_linear, xf_md, 1.f,
                               -static_cast<float>(q.x_zero_point));
      eltwise_forward::primitive_desc epd(ed, user_scratchpad(), engine());
      k->add_step(eltwise_forward(epd), {{DNNL_ARG_SRC, xf}, {DNNL_ARG_DST, xf}});
    }
    memory src = xf;
    if (pd.src_desc() != xf_md) {
      src = k->temp(pd.src_desc());
      k->add_step(reorder(reorder::primitive_desc(engine(), xf_md, engine(), pd.src_desc(), user_scratchpad())),
                  {{DNNL_ARG_FROM, xf}, {DNNL_ARG_TO, src}});
    }
    // This chunk's weights [M][cn][R][S] as floats (exact: small integers).
    const int64_t cw = p.group == 1 ? cn : C;
    std::vector<float> wf(static_cast<size_t>(M * cw * RS));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < cw * RS; ++i) wf[m * cw * RS + i] = wt.data_as<int8_t>()[m * C * RS + c0 * RS + i];
    const memory::format_tag wtag = p.group > 1 ? memory::format_tag::goihw : memory::format_tag::oihw;
    memory w_user(memory::desc(wd, f32, wtag), engine(), wf.data());
    const memory w = packed_weights(*k, req, "qconv-f32:c0=" + std::to_string(c0) + ":cn=" + std::to_string(cn), w_user,
                                    pd.weights_desc());
    memory acc = k->temp(pd.dst_desc());
    k->add_step(convolution_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, acc}});
    memory accy = acc;  // the sums in Y's layout
    if (pd.dst_desc() != yf_md) {
      accy = k->temp(yf_md);
      k->add_step(reorder(reorder::primitive_desc(engine(), pd.dst_desc(), engine(), yf_md, user_scratchpad())),
                  {{DNNL_ARG_FROM, acc}, {DNNL_ARG_TO, accy}});
    }
    acc_offs.push_back(k->temp_offset(accy));
  }
  const size_t nchunk = acc_offs.size();
  k->set_impl(impl + (nchunk > 1 ? " x" + std::to_string(nchunk) + " channel chunks" : ""));
  std::vector<int32_t> bias;
  if (p.has_bias) {
    const Tensor& b = *req.inputs[2]->value;
    bias.assign(b.data_as<int32_t>(), b.data_as<int32_t>() + b.numel());
  }
  const Dims yd = p.y;
  const bool y_nhwc = fy == Format::kNhwc, z_nhwc = fz == Format::kNhwc;
  const DataType yt = req.outputs[0]->dtype, zt = p.has_z ? req.inputs[3]->dtype : yt;
  const QRequant rq = q.requant();
  std::vector<double> sxw;
  std::vector<float> sy;
  q.channel_scales(rq, p.y[1], sxw, sy);
  k->set_after([rq, sxw, sy, bias, yd, y_nhwc, z_nhwc, yt, zt, acc_offs, has_z = p.has_z](ComputeContext& ctx) {
    const char* scratch = static_cast<const char*>(ctx.res.scratch);
    const int64_t N = yd[0], M = yd[1], HW = yd[2] * yd[3], total = N * M * HW;
    const void* z = has_z ? ctx.in(3).data : nullptr;
    void* y = ctx.out(0).data;
#pragma omp parallel for num_threads(std::max(1, ctx.num_threads)) schedule(static)
    for (int64_t i = 0; i < total; ++i) {
      // i in Y's layout: NHWC (n, hw, m) or NCHW (n, m, hw).
      const int64_t m = y_nhwc ? i % M : (i / HW) % M;
      int32_t s = 0;
      for (size_t j = 0; j < acc_offs.size(); ++j)
        s += static_cast<int32_t>(reinterpret_cast<const float*>(scratch + acc_offs[j])[i]);
      int64_t zv = 0;
      if (z) {
        int64_t zi = i;
        if (z_nhwc != y_nhwc) {
          const int64_t n = i / (HW * M);
          const int64_t hw = y_nhwc ? (i / M) % HW : i % HW;
          zi = z_nhwc ? (n * HW + hw) * M + m : (n * M + m) * HW + hw;
        }
        zv = int_at(zt, z, zi);
      }
      const int64_t a = static_cast<int64_t>(s) + (bias.empty() ? 0 : bias[m]);
      int_store(yt, y, i, rq(a, sxw[m], sy[m], z != nullptr, zv));
    }
  });
  return k;
}

}  // namespace

// int8 activations in the planner's format: plain (NCHW) or channels-last, the layout oneDNN's int8
// kernels compute in, so a chain of QConvs runs without reorders between them.
memory::desc nchw_or_nhwc_md(const Dims& d, memory::data_type t, Format f) {
  return memory::desc(d, t, f == Format::kNhwc ? memory::format_tag::nhwc : memory::format_tag::nchw);
}

memory::data_type int8_type(DataType d) {
  return d == DataType::kUInt8  ? memory::data_type::u8
         : d == DataType::kInt8 ? memory::data_type::s8
                                : memory::data_type::undef;
}

// Whether oneDNN's int8 convolution gives the exact integer sums here: with VNNI (vpdpbusd) it
// does; without (AVX2, AVX-512 before Cascade Lake) it halves the weights so that vpmaddubsw's
// int16 pairs cannot saturate, and one in two odd weights then loses its last bit.
bool int8_conv_exact() {
  using i = dnnl::cpu_isa;
  const i isa = dnnl::get_effective_cpu_isa();
  return isa == i::avx2_vnni || isa == i::avx512_core_vnni || isa == i::avx512_core_bf16 || isa == i::avx512_core_amx;
}

Support qconv_query(const StepRequest& req) {
  QConvPlan p;
  if (!plan_qconv(req, p))
    return Support::no("an int8 conv oneDNN does not take (rank, non-constant W, pads, residual dtype, activation)");
  if (!int8_conv_exact() && f32_chunks(req, dynamic_cast<const QConvOp*>(req.op)->params(), p.group).empty())
    return Support::no(
        "without VNNI the int8 conv runs as exact fp32 ones, but this grouped filter's sums may pass 2^24");
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
  if (!int8_conv_exact()) {
    const std::vector<int64_t> chunks = f32_chunks(req, q, p.group);
    return chunks.empty() ? nullptr : qconv_create_f32(req, p, q, chunks);
  }
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
  const memory::desc x_md = nchw_or_nhwc_md(p.x, p.xt, req.in_format(0)),
                     y_md = nchw_or_nhwc_md(p.y, p.yt, req.out_format(0));
  const bool via = pd.src_desc() != x_md || pd.dst_desc() != y_md;
  k->set_impl(pd.impl_info_str() + std::string(via ? " (via reorders)" : ""));
  const memory::format_tag wtag = p.group > 1 ? memory::format_tag::goihw : memory::format_tag::oihw;
  memory w_user(memory::desc(p.w, memory::data_type::s8, wtag), engine(),
                const_cast<void*>(req.inputs[1]->value->data()));
  std::unordered_map<int, memory> args;
  args[DNNL_ARG_WEIGHTS] = packed_weights(*k, req, "qconv", w_user, pd.weights_desc());
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
    const memory::desc z_md = nchw_or_nhwc_md(p.y, p.zt, req.in_format(3));
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
  const memory::data_type t = int8_type(req.value->dtype);
  try {
    auto k = std::make_unique<DnnlKernel>("dnnl int8 reorder");
    memory src = k->bind_input(0, nchw_or_nhwc_md(d, t, req.from)),
           dst = k->bind_output(0, nchw_or_nhwc_md(d, t, req.to));
    dnnl::reorder::primitive_desc pd(engine(), src.get_desc(), engine(), dst.get_desc(), user_scratchpad());
    k->set_impl(pd.impl_info_str());
    k->add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
    return k;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace infera::cpu
