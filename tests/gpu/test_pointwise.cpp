// The fused pointwise kernel and what is built on it (Cast, BatchNorm-as-affine, Concat copy):
// every activation of the table (with NaN propagation), broadcast kinds, chains, dtype mixes,
// output slices; reference in double.
#include "test_util.h"

namespace infera::gpu::test {
namespace {

// Names for the log only (the table's activation_name lives in a source file this standalone test does not link).
const char* act_label(ActKind k) {
  static const char* names[] = {"Identity",    "Relu",      "LeakyRelu", "Sigmoid", "Tanh",     "Clip",
                                "HardSigmoid", "HardSwish", "Elu",       "Selu",    "Celu",     "Softplus",
                                "Softsign",    "Swish",     "Mish",      "Gelu",    "GeluTanh", "ThresholdedRelu"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(ActKind::kCount), "activation names");
  return names[static_cast<int>(k)];
}

KernelId pw_id(DType t) { return t == DType::kF16 ? KernelId::f16_pointwise_nhwc : KernelId::f32_pointwise_nhwc; }

struct HostOperand {
  std::vector<float> v;
  DType t;
  int64_t offset, sn, shw, sc;
  double at(int n, int hw, int c) const { return v[offset + n * sn + hw * shw + c * sc]; }
};

double ref_binary(PwOp op, double a, double b) {
  switch (op) {
    case PwOp::kAdd: return a + b;
    case PwOp::kSub: return a - b;
    case PwOp::kMul: return a * b;
    case PwOp::kDiv: return a / b;
    case PwOp::kMax: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case PwOp::kMin: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    default: return a;
  }
}

// Runs d (inputs described by ops, uploaded here) and checks against the double reference.
void run_chain(Ctx& ctx, KernelId id, const std::string& what, PointwiseDesc d, const std::vector<HostOperand>& ops,
               int y_off, int y_extra, bool via_batchnorm = false, bool via_concat = false) {
  const int64_t ps = d.c + y_off + y_extra, pixels = static_cast<int64_t>(d.n) * d.hw;
  std::vector<DevBuf> bufs;
  for (size_t i = 0; i < ops.size(); ++i) {
    bufs.push_back(upload(ops[i].t, ops[i].v));
    d.in[i] = {bufs.back().ptr, ops[i].t, ops[i].offset, ops[i].sn, ops[i].shw, ops[i].sc};
  }
  d.num_inputs = static_cast<int>(ops.size());
  std::vector<double> ref(pixels * d.c);
  std::vector<size_t> idx(ref.size());
  for (int n = 0; n < d.n; ++n)
    for (int hw = 0; hw < d.hw; ++hw)
      for (int c = 0; c < d.c; ++c) {
        double v = ops[0].at(n, hw, c);
        for (int s = 0; s < d.num_steps; ++s) {
          const PwStep& st = d.steps[s];
          if (st.op == PwOp::kAct) {
            v = activation_ref<double>(st.act, v);
          } else {
            const double o = ops[st.operand].at(n, hw, c);
            v = st.operand_first ? ref_binary(st.op, o, v) : ref_binary(st.op, v, o);
          }
        }
        const int64_t p = static_cast<int64_t>(n) * d.hw + hw;
        ref[p * d.c + c] = v;
        idx[p * d.c + c] = static_cast<size_t>(p * ps + y_off + c);
      }
  DevBuf dy = poisoned_buffer(d.out_dtype, pixels * ps, ctx.stream);
  d.out = {dy.ptr, ps, y_off};
  Status st;
  if (via_batchnorm)
    st = batchnorm_affine(d.out_dtype, d.n, d.hw, d.c, {d.in[0].data, d.in[0].stride_hw, d.in[0].offset},
                          static_cast<const float*>(d.in[1].data), static_cast<const float*>(d.in[2].data), d.out,
                          d.num_steps > 2 ? d.steps[2].act : Activation{}, ctx.stream);
  else if (via_concat)
    st = concat_copy(d.out_dtype, d.n, d.hw, d.c, {d.in[0].data, d.in[0].stride_hw, d.in[0].offset}, d.out, ctx.stream);
  else
    st = pointwise(d, ctx.stream);
  check_gpu(gpuStreamSynchronize(ctx.stream), "pointwise sync");
  const std::vector<float> out = download(d.out_dtype, dy, pixels * ps);
  const std::vector<bool> poison = poisoned(d.out_dtype, dy, pixels * ps);
  std::vector<bool> logical(out.size(), false);
  for (size_t i : idx) logical[i] = true;
  bool outside = false;
  for (size_t i = 0; i < out.size(); ++i) outside = outside || (!logical[i] && !poison[i]);
  ctx.results.record(id, what, st.ok() ? compare(out, ref, idx) : Compare{INFINITY}, d.out_dtype, outside, st.error);
}

HostOperand full(Rng& r, DType t, int n, int hw, int c, float lo = -1, float hi = 1, int off = 0, int extra = 0) {
  const int64_t ps = c + off + extra;
  return {r.values(t, static_cast<size_t>(n) * hw * ps, lo, hi), t, off, hw * ps, ps, 1};
}
HostOperand per_channel(Rng& r, DType t, int c, float lo = -1, float hi = 1) {
  return {r.values(t, c, lo, hi), t, 0, 0, 0, 1};
}
HostOperand per_image_channel(Rng& r, DType t, int n, int c) {
  return {r.values(t, static_cast<size_t>(n) * c), t, 0, c, 0, 1};
}
HostOperand scalar(Rng& r, DType t, float lo, float hi) { return {r.values(t, 1, lo, hi), t, 0, 0, 0, 0}; }
HostOperand per_pixel(Rng& r, DType t, int n, int hw) {
  return {r.values(t, static_cast<size_t>(n) * hw), t, 0, hw, 1, 0};
}

PointwiseDesc desc(int n, int hw, int c, DType out) {
  PointwiseDesc d;
  d.n = n, d.hw = hw, d.c = c, d.out_dtype = out;
  return d;
}

}  // namespace

void run_pointwise_suite(Ctx& ctx) {
  Rng& r = ctx.rng;
  for (DType t : {DType::kF16, DType::kF32}) {
    const KernelId id = pw_id(t);
    // Every activation of the table, with NaNs planted: vector path (C = 16) and scalar (C = 7).
    for (int k = 0; k < static_cast<int>(ActKind::kCount); ++k) {
      const ActKind kind = static_cast<ActKind>(k);
      Activation a{kind, 0, 0};
      switch (kind) {
        case ActKind::kLeakyRelu: a.alpha = 0.1f; break;
        case ActKind::kClip: a.alpha = -0.5f, a.beta = 2.f; break;
        case ActKind::kHardSigmoid: a.alpha = 0.2f, a.beta = 0.5f; break;
        case ActKind::kElu:
        case ActKind::kCelu: a.alpha = 1.3f; break;
        case ActKind::kSelu: a.alpha = 1.67326319f, a.beta = 1.05070102f; break;
        case ActKind::kSwish: a.alpha = 1.f; break;
        case ActKind::kThresholdedRelu: a.alpha = 0.3f; break;
        default: break;
      }
      for (int c : {16, 7}) {
        HostOperand x = full(r, t, 2, 5, c, -4.f, 4.f);
        x.v[3] = NAN, x.v[x.v.size() - 1] = NAN;
        PointwiseDesc d = desc(2, 5, c, t);
        d.steps[0] = {PwOp::kAct, 0, false, a};
        d.num_steps = 1;
        run_chain(ctx, id, std::string("act ") + act_label(kind) + " c" + std::to_string(c), d, {x}, 0, 0);
      }
    }
    {  // SE block: x * sigmoid(s[n, c])
      PointwiseDesc d = desc(3, 49, 64, t);
      d.steps[0] = {PwOp::kAct, 0, false, {ActKind::kSigmoid, 0, 0}};
      d.steps[1] = {PwOp::kMul, 1, false, {}};
      d.num_steps = 2;
      run_chain(ctx, id, "SE: sigmoid(s[n,c]) * x", d, {per_image_channel(r, t, 3, 64), full(r, t, 3, 49, 64)}, 0, 0);
    }
    {  // residual add + ReLU into a channel slice
      PointwiseDesc d = desc(2, 30, 24, t);
      d.steps[0] = {PwOp::kAdd, 1, false, {}};
      d.steps[1] = {PwOp::kAct, 0, false, {ActKind::kRelu, 0, 0}};
      d.num_steps = 2;
      run_chain(ctx, id, "add+relu y@8", d, {full(r, t, 2, 30, 24), full(r, t, 2, 30, 24, -1, 1, 8, 8)}, 8, 16);
      run_chain(ctx, id, "add+relu y@3 (scalar path)", d, {full(r, t, 2, 30, 24), full(r, t, 2, 30, 24)}, 3, 2);
    }
    {  // scalar and per-channel operands, operand-first sub/div, max/min, per-pixel
      PointwiseDesc d = desc(2, 10, 32, t);
      d.steps[0] = {PwOp::kSub, 1, false, {}};
      d.steps[1] = {PwOp::kDiv, 2, true, {}};
      d.steps[2] = {PwOp::kMax, 1, false, {}};
      d.steps[3] = {PwOp::kMin, 3, true, {}};
      d.steps[4] = {PwOp::kMul, 3, false, {}};
      d.steps[5] = {PwOp::kAct, 0, false, {ActKind::kTanh, 0, 0}};
      d.num_steps = 6;
      run_chain(
          ctx, id, "sub scalar, div per-channel first, max, min per-pixel", d,
          {full(r, t, 2, 10, 32), scalar(r, t, -0.5f, 0.5f), per_channel(r, t, 32, 0.5f, 2.f), per_pixel(r, t, 2, 10)},
          0, 0);
    }
    {  // mixed dtypes: fp16 x, fp32 per-channel scale, output t
      PointwiseDesc d = desc(1, 12, 40, t);
      d.steps[0] = {PwOp::kMul, 1, false, {}};
      d.steps[1] = {PwOp::kAdd, 2, false, {}};
      d.num_steps = 2;
      run_chain(ctx, id, "fp16 x * fp32 scale + fp16 shift", d,
                {full(r, DType::kF16, 1, 12, 40), per_channel(r, DType::kF32, 40), per_channel(r, DType::kF16, 40)}, 0,
                0);
    }
    {  // Cast (both directions, vector and scalar lengths) through cast()
      for (int64_t count : {1000, 1001}) {
        const DType from = t == DType::kF16 ? DType::kF32 : DType::kF16;
        std::vector<float> v = r.values(from, count, -100.f, 100.f);
        DevBuf dx = upload(from, v), dy = poisoned_buffer(t, count, ctx.stream);
        const Status st = cast(from, t, count, dx.ptr, dy.ptr, ctx.stream);
        check_gpu(gpuStreamSynchronize(ctx.stream), "cast sync");
        const std::vector<float> out = download(t, dy, count);
        std::vector<double> ref(count);
        std::vector<size_t> idx(count);
        for (int64_t i = 0; i < count; ++i) ref[i] = round_to(t, v[i]), idx[i] = static_cast<size_t>(i);
        ctx.results.record(KernelId::cast_f16_f32,
                           std::string(t == DType::kF16 ? "f32->f16 " : "f16->f32 ") + std::to_string(count),
                           st.ok() ? compare(out, ref, idx) : Compare{INFINITY}, t, false, st.error);
      }
    }
    {  // BatchNorm as affine, and the Concat copy, each into a slice
      const KernelId bn = t == DType::kF16 ? KernelId::f16_batchnorm_affine_nhwc : KernelId::f32_batchnorm_affine_nhwc;
      PointwiseDesc d = desc(7, 9, 48, t);
      d.steps[0] = {PwOp::kMul, 1, false, {}};
      d.steps[1] = {PwOp::kAdd, 2, false, {}};
      d.num_steps = 2;
      run_chain(ctx, bn, "x*scale+shift y@16", d,
                {full(r, t, 7, 9, 48), per_channel(r, DType::kF32, 48), per_channel(r, DType::kF32, 48)}, 16, 0, true);
      PointwiseDesc d2 = desc(7, 9, 13, t);
      d2.steps[0] = d.steps[0], d2.steps[1] = d.steps[1], d2.num_steps = 2;
      run_chain(ctx, bn, "odd C", d2,
                {full(r, t, 7, 9, 13), per_channel(r, DType::kF32, 13), per_channel(r, DType::kF32, 13)}, 0, 0, true);
      d2.steps[2] = {PwOp::kAct, 0, false, activation_default(ActKind::kRelu)}, d2.num_steps = 3;
      run_chain(ctx, bn, "odd C + Relu (FusedBatchNorm)", d2,
                {full(r, t, 7, 9, 13), per_channel(r, DType::kF32, 13), per_channel(r, DType::kF32, 13)}, 0, 0, true);
      const KernelId cc = t == DType::kF16 ? KernelId::f16_concat_nhwc_copy : KernelId::f32_concat_nhwc_copy;
      PointwiseDesc d3 = desc(2, 15, 24, t);
      run_chain(ctx, cc, "concat copy y@8/64", d3, {full(r, t, 2, 15, 24)}, 8, 32, false, true);
      run_chain(ctx, cc, "concat copy from slice y@5/40", d3, {full(r, t, 2, 15, 24, -1, 1, 8, 0)}, 5, 11, false, true);
    }
  }
}

}  // namespace infera::gpu::test
