// MaxPool / AveragePool / GlobalAveragePool / GlobalMaxPool through oneDNN pooling_v2
// (dilations); shapes and pads from pool_resolve (ops/pool.h). ceil_mode becomes extra right
// padding so that the output matches the reference's infer(); cases whose semantics differ
// (count_include_pad over that extra padding, windows wholly outside the input, the Indices
// output) are declined. Mixed layouts compute in one layout with a reorder. Max pools keep NaN
// (nan_fixup). int8 / uint8 max pools (what quantize_qdq leaves of DQ -> MaxPool -> Q) run in
// NHWC, a layout of the int8 convs.
#include <cmath>
#include <limits>

#include "backends/cpu/dnnl_internal.h"
#include "ops/pool.h"

namespace infera::cpu {
namespace {

struct PoolPlan {
  Dims x, y;  // 4-D (1-D pools get H = 1)
  Dims kernel, strides, dilates, pad_l, pad_r;
  dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  bool byte = false;  // int8 / uint8 max pool (NHWC): DQ -> MaxPool -> Q folded
  dnnl::memory::data_type bt = dnnl::memory::data_type::undef;
};

bool plan_pool(const StepRequest& req, PoolPlan& p) {
  const auto* pool = dynamic_cast<const PoolOp*>(req.op);
  const auto* gpool = dynamic_cast<const GlobalPoolOp*>(req.op);
  if ((!pool && !gpool) || !req.has_in(0) || req.has_out(1)) return false;
  const Dims x = req.in_dims(0), y = req.out_dims(0);
  const int rank = static_cast<int>(x.size());
  if ((rank != 3 && rank != 4) || y.size() != x.size() || y[0] != x[0] || y[1] != x[1]) return false;
  const int k = rank - 2;
  const bool global = gpool != nullptr;
  const bool is_max = global ? gpool->is_max() : pool->is_max();
  // Values fully known; float32, or int8 / uint8 for a 2-D windowed max pool.
  for (const ValueInfo* v : {req.inputs[0], req.outputs[0]})
    if (!v || !v->shape.fully_known()) return false;
  const DataType dt = req.inputs[0]->dtype;
  p.bt = int8_type(dt);
  p.byte = p.bt != dnnl::memory::data_type::undef;
  if ((dt != DataType::kFloat32 && !(p.byte && is_max && !global && rank == 4)) || req.outputs[0]->dtype != dt)
    return false;
  std::vector<int64_t> kernel, strides, dil, pads;
  bool count_include_pad = false;
  if (global) {
    kernel.assign(x.begin() + 2, x.end());
    strides.assign(k, 1);
    dil.assign(k, 1);
    pads.assign(2 * k, 0);
  } else {
    const PoolAttrs& a = pool->attrs();
    std::vector<int64_t> yd;
    if (!pool_resolve(a, x, pads, yd).is_ok() || yd != y) return false;
    kernel = a.kernel_shape;
    strides = a.strides.empty() ? std::vector<int64_t>(k, 1) : a.strides;
    dil = a.dilations.empty() ? std::vector<int64_t>(k, 1) : a.dilations;
    count_include_pad = !is_max && a.count_include_pad;
  }
  if (static_cast<int>(kernel.size()) != k || static_cast<int>(strides.size()) != k ||
      static_cast<int>(dil.size()) != k || static_cast<int>(pads.size()) != 2 * k)
    return false;
  p.alg = is_max ? dnnl::algorithm::pooling_max
                 : (count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                      : dnnl::algorithm::pooling_avg_exclude_padding);
  if (k == 1) {
    p.kernel.push_back(1), p.strides.push_back(1), p.dilates.push_back(0);
    p.pad_l.push_back(0), p.pad_r.push_back(0);
  }
  for (int i = 0; i < k; ++i) {
    const int64_t in = x[2 + i], out = y[2 + i], kk = kernel[i], s = strides[i], d = dil[i];
    if (kk <= 0 || s <= 0 || d <= 0 || out <= 0 || in <= 0) return false;
    const int64_t ek = (kk - 1) * d + 1;
    const int64_t pb = pads[i], pe = pads[i + k];
    if (pb < 0 || pe < 0 || pb >= ek) return false;
    const int64_t pr = std::max(pe, (out - 1) * s + ek - in - pb);
    if ((in + pb + pr - ek) / s + 1 != out) return false;  // not the reference's shape
    if ((out - 1) * s - pb >= in) return false;            // last window wholly in padding
    if (count_include_pad && pr > pe) return false;        // divisor would count ceil padding
    p.kernel.push_back(kk), p.strides.push_back(s), p.dilates.push_back(d - 1);
    p.pad_l.push_back(pb), p.pad_r.push_back(pr);
  }
  p.x = k == 1 ? Dims{x[0], x[1], 1, x[2]} : x;
  p.y = k == 1 ? Dims{y[0], y[1], 1, y[2]} : y;
  return true;
}

// pooling_max skips NaN (max instructions that return the other operand), where the reference
// and ONNX Runtime give NaN for a window holding one (issue 7). After the primitive, the input is
// scanned for NaN (one read of it, vectorized: the common all-finite case costs that only); when
// there is one, every output whose window holds a NaN is set to NaN. Reads the input and writes
// the output in their bound formats (plain, or nChw8c/16c: channel c at block c / b, lane c % b).
// An input with a bound in this run (RunResources: every element finite, |x| <= B) holds no NaN:
// no scan (DenseNet's / ResNet's stem pool after the guarded conv + Relu: the scan re-read its
// 51 MB input at batch 16, ~2 of the pool's 4.6 ms). The bound rules (plan/bounds.h) carry the
// bound to the output.
std::function<void(ComputeContext&)> nan_fixup(const PoolPlan& p, Format ls, Format ld) {
  const int64_t bi = std::max(1, format_channel_block(ls)), bo = std::max(1, format_channel_block(ld));
  return [p, bi, bo](ComputeContext& ctx) {
    if (ctx.res.in_bound(0) != RunResources::kNoBound) return;
    const float* x = ctx.in(0).ptr<const float>();
    float* y = ctx.out(0).ptr<float>();
    const int64_t N = p.x[0], C = p.x[1], H = p.x[2], W = p.x[3], OH = p.y[2], OW = p.y[3];
    const int64_t cbi = (C + bi - 1) / bi, cbo = (C + bo - 1) / bo;
    const int64_t total = N * cbi * bi * H * W;  // padded lanes are zero: scanned too
    int any = 0;
    const int64_t chunks = (total + 4095) / 4096;
#pragma omp parallel for num_threads(std::max(1, ctx.num_threads)) reduction(| : any) if (chunks > 16)
    for (int64_t j = 0; j < chunks; ++j) {
      const int64_t i1 = std::min(total, (j + 1) * 4096);
      int chunk = 0;
      for (int64_t i = j * 4096; i < i1; ++i) chunk |= x[i] != x[i];  // no early exit: vectorizes
      any |= chunk;
    }
    if (!any) return;
    auto xi = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
      return ((n * cbi + c / bi) * H * W + h * W + w) * bi + c % bi;
    };
    auto yi = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
      return ((n * cbo + c / bo) * OH * OW + h * OW + w) * bo + c % bo;
    };
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            bool nan = false;
            for (int64_t kh = 0; kh < p.kernel[0] && !nan; ++kh) {
              const int64_t h = oh * p.strides[0] - p.pad_l[0] + kh * (p.dilates[0] + 1);
              if (h < 0 || h >= H) continue;
              for (int64_t kw = 0; kw < p.kernel[1] && !nan; ++kw) {
                const int64_t w = ow * p.strides[1] - p.pad_l[1] + kw * (p.dilates[1] + 1);
                if (w >= 0 && w < W) nan = std::isnan(x[xi(n, c, h, w)]);
              }
            }
            if (nan) y[yi(n, c, oh, ow)] = std::numeric_limits<float>::quiet_NaN();
          }
  };
}

}  // namespace

Support pool_query(const StepRequest& req) {
  PoolPlan p;
  if (!plan_pool(req, p))
    return Support::no("a pool oneDNN does not take (Indices output, ceil-mode padding counted, rank)");
  Support s;
  s.ok = true;
  if (p.byte) {  // NHWC, the int8 convs' layout: oneDNN's int8 pooling is NHWC only (NCHW is its reference)
    s.input_formats = {format_bit(Format::kNhwc)};
    s.output_formats = {format_bit(Format::kNhwc)};
    return s;
  }
  s.input_formats = blocked_slots(req.inputs, {0});
  s.output_formats = blocked_slots(req.outputs, {0});
  return s;
}

std::unique_ptr<DnnlKernel> pool_create(const StepRequest& req) {
  using namespace dnnl;
  PoolPlan p;
  if (!plan_pool(req, p)) return nullptr;
  const bool four = req.inputs[0]->shape.rank() == 4;
  const Format ls = four ? req.in_format(0) : Format::kPlain, ld = four ? req.out_format(0) : Format::kPlain;
  auto md = [&](const Dims& d, Format f) { return p.byte ? nchw_or_nhwc_md(d, p.bt, f) : md_of(d, f); };
  auto make_pd = [&](Format sl, Format dl) {
    pooling_v2_forward::desc d(prop_kind::forward_inference, p.alg, md(p.x, sl), md(p.y, dl), p.strides, p.kernel,
                               p.dilates, p.pad_l, p.pad_r);
    return pooling_v2_forward::primitive_desc(d, user_scratchpad(), engine());
  };
  auto [cs, cd] = four && !p.byte
                      ? pick_formats(ls, ld, [&](Format a, Format b) { return make_pd(a, b).impl_info_str(); })
                      : std::pair<Format, Format>{ls, ld};
  const pooling_v2_forward::primitive_desc pd = make_pd(cs, cd);
  auto k = std::make_unique<DnnlKernel>("dnnl pool");
  k->set_impl(pd.impl_info_str() + std::string(cs != ls || cd != ld ? " (via reorders)" : ""));
  memory src = input_as(*k, 0, md(p.x, ls), pd.src_desc());
  OutputAs out = output_as(*k, 0, md(p.y, ld), pd.dst_desc());
  k->add_step(pooling_v2_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, out.compute}});
  out.finish(*k);
  if (p.alg == algorithm::pooling_max && !p.byte) k->set_after(nan_fixup(p, ls, ld));
  return k;
}

}  // namespace infera::cpu
