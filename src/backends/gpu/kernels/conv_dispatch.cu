// Convolution entry points: validation, the candidate list (which variants can run a shape, in
// heuristic order, with their workspace) and the launch of a chosen candidate.
#include <algorithm>

#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/igemm.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

// The GEMM view of a convolution (z = groups). Pointers may be placeholders at candidate time.
template <class T>
IgemmParamsT<T> conv_view(const ConvShape& s, const ConvTensors& t) {
  IgemmParamsT<T> p;
  const int g = s.groups, cg = s.c / g, kg = s.k / g;
  p.x = static_cast<const T*>(t.x.data) + t.x.c_offset;
  p.wt = static_cast<const T*>(t.w);
  p.bias = t.ep.bias;
  p.res = t.ep.residual.data ? static_cast<const T*>(t.ep.residual.data) + t.ep.residual.c_offset : nullptr;
  p.y = t.y.data ? static_cast<T*>(t.y.data) + t.y.c_offset : nullptr;
  p.n = s.n, p.h = s.h, p.w = s.w, p.c = cg;
  p.p = s.p(), p.q = s.q(), p.r = s.r, p.s = s.s;
  p.sh = s.stride_h, p.sw = s.stride_w, p.ph = s.pad_t, p.pw = s.pad_l, p.dh = s.dil_h, p.dw = s.dil_w;
  p.m = s.n * p.p * p.q;
  p.kn = kg;
  p.kgemm = s.r * s.s * cg;
  p.x_ps = t.x.pixel_stride ? t.x.pixel_stride : s.c;
  p.w_rs = p.kgemm;
  p.y_ps = t.y.pixel_stride ? t.y.pixel_stride : s.k;
  p.res_ps = t.ep.residual.pixel_stride ? t.ep.residual.pixel_stride : s.k;
  p.z = g;
  p.x_z = cg, p.w_z = static_cast<int64_t>(kg) * p.w_rs, p.y_z = kg, p.bias_z = kg, p.res_z = kg;
  p.act = act_params(t.ep.act);
  return p;
}

// Placeholder tensors with the shape's input layout and 16-byte aligned bases.
ConvTensors placeholder(const ConvShape& s) {
  static const uint4 dummy[1] = {};
  ConvTensors t;
  t.x.data = dummy;
  t.x.pixel_stride = s.x_pixel_stride;
  t.x.c_offset = s.x_c_offset;
  t.w = dummy;
  return t;
}

Candidate make(KernelId id, size_t ws = 0, int splits = 1) { return {id, kernel_info(id).name, ws, splits}; }

}  // namespace

Status conv_check(const ConvShape& s) {
  if (s.n < 1 || s.h < 1 || s.w < 1 || s.c < 1 || s.k < 1) return {"conv: N, H, W, C and K must be positive"};
  if (s.r < 1 || s.s < 1 || s.stride_h < 1 || s.stride_w < 1 || s.dil_h < 1 || s.dil_w < 1)
    return {"conv: kernel size, strides and dilations must be positive"};
  if (s.pad_t < 0 || s.pad_l < 0 || s.pad_b < 0 || s.pad_r < 0) return {"conv: pads must not be negative"};
  if (s.groups < 1 || s.c % s.groups != 0 || s.k % s.groups != 0)
    return {"conv: groups must divide both input and output channels"};
  if (s.h + s.pad_t + s.pad_b < s.dil_h * (s.r - 1) + 1 || s.w + s.pad_l + s.pad_r < s.dil_w * (s.s - 1) + 1)
    return {"conv: the dilated kernel is larger than the padded input"};
  if (static_cast<int64_t>(s.n) * s.p() * s.q() > 0x7fffffff / 2) return {"conv: too many output pixels"};
  if (static_cast<int64_t>(s.r) * s.s * s.c > 0x7fffffff / 2) return {"conv: kernel too large"};
  if (s.x_pixel_stride != 0 && s.x_pixel_stride < s.x_c_offset + s.c)
    return {"conv: input pixel stride smaller than its channel offset + C"};
  return {};
}

std::vector<Candidate> conv_candidates(const ConvShape& s, const DeviceInfo& dev) {
  std::vector<Candidate> out;
  if (!conv_check(s).ok()) return out;
  const int cg = s.c / s.groups, kg = s.k / s.groups;
  const bool depthwise = s.groups > 1 && cg == 1 && kg == 1;
  if (s.dtype == DType::kF32) {
    if (depthwise) out.push_back(make(KernelId::f32_conv_nhwc_depthwise_direct));
    if (s.groups > 1 && cg < 8) out.push_back(make(KernelId::f32_conv_nhwc_grouped_direct));
    const IgemmParamsF32 p = conv_view<float>(s, placeholder(s));
    const bool big = ceil_div(p.m, 128) * ceil_div(kg, 128) * s.groups >= dev.sm_count;
    if (big) {
      out.push_back(make(KernelId::f32_conv_nhwc_implicit_gemm_simt_128x128));
      out.push_back(make(KernelId::f32_conv_nhwc_implicit_gemm_simt_64x64));
    } else {
      out.push_back(make(KernelId::f32_conv_nhwc_implicit_gemm_simt_64x64));
      out.push_back(make(KernelId::f32_conv_nhwc_implicit_gemm_simt_128x128));
    }
    if (s.groups > 1 && cg >= 8) out.push_back(make(KernelId::f32_conv_nhwc_grouped_direct));
    return out;
  }
  if (depthwise) out.push_back(make(KernelId::f16_conv_nhwc_depthwise_direct));
  if (s.groups > 1 && cg < 8) out.push_back(make(KernelId::f16_conv_nhwc_grouped_direct));
  const IgemmParams p = conv_view<uint16_t>(s, placeholder(s));
  const bool scalar = igemm_pick_mode(p) == kIgemmScalar;
  std::vector<Candidate> tiles;
  using K = KernelId;
  const KernelId order_big[] = {
      K::f16_conv_nhwc_implicit_gemm_wgmma_128x256,    K::f16_conv_nhwc_implicit_gemm_wgmma_128x128,
      K::f16_conv_nhwc_implicit_gemm_wgmma_256x128,    K::f16_conv_nhwc_implicit_gemm_wgmma_64x128,
      K::f16_conv_nhwc_implicit_gemm_mma_128x128,      K::f16_conv_nhwc_implicit_gemm_mma_256x128,
      K::f16_conv_nhwc_implicit_gemm_mma_256x64,       K::f16_conv_nhwc_implicit_gemm_mma_128x64,
      K::f16_conv_nhwc_implicit_gemm_mma_64x128,       K::f16_conv_nhwc_implicit_gemm_mma_64x64,
      K::f16_conv_nhwc_implicit_gemm_mma_64x64_splitk, K::f16_conv_nhwc_implicit_gemm_mma_64x128_splitk};
  const KernelId order_small[] = {
      K::f16_conv_nhwc_implicit_gemm_mma_64x64_splitk, K::f16_conv_nhwc_implicit_gemm_mma_64x128_splitk,
      K::f16_conv_nhwc_implicit_gemm_mma_64x64,        K::f16_conv_nhwc_implicit_gemm_wgmma_64x128,
      K::f16_conv_nhwc_implicit_gemm_mma_64x128,       K::f16_conv_nhwc_implicit_gemm_mma_128x64,
      K::f16_conv_nhwc_implicit_gemm_wgmma_128x128,    K::f16_conv_nhwc_implicit_gemm_mma_128x128,
      K::f16_conv_nhwc_implicit_gemm_wgmma_128x256,    K::f16_conv_nhwc_implicit_gemm_wgmma_256x128,
      K::f16_conv_nhwc_implicit_gemm_mma_256x64,       K::f16_conv_nhwc_implicit_gemm_mma_256x128};
  static_assert(sizeof(order_big) == sizeof(order_small), "both orders list every implicit-GEMM variant");
  const bool big = ceil_div(p.m, 128) * ceil_div(kg, 128) * s.groups >= dev.sm_count;
  for (KernelId id : big ? order_big : order_small) {
    const IgemmConfig* cfg = igemm_config(id);
    if (!cfg || (scalar && !cfg->scalar)) continue;
    if (cfg->wgmma && !dev.wgmma) continue;
    if (static_cast<int>(igemm_smem_bytes(*cfg)) > dev.smem_optin) continue;
    if (cfg->split) {
      const int splits = igemm_pick_splits(*cfg, p, dev);
      if (splits <= 1) continue;  // would be the plain variant again
      out.push_back(make(id, igemm_workspace_bytes(p, splits), splits));
    } else {
      out.push_back(make(id));
    }
  }
  if (s.groups > 1 && cg >= 8) out.push_back(make(KernelId::f16_conv_nhwc_grouped_direct));
  return out;
}

Status conv_forward(const ConvShape& s, const Candidate& c, const ConvTensors& t, void* workspace,
                    size_t workspace_bytes, gpuStream_t stream) {
  Status st = conv_check(s);
  if (!st.ok()) return st;
  if (!t.x.data || !t.w || !t.y.data) return {"conv: null input, weight or output"};
  if ((t.x.pixel_stride ? t.x.pixel_stride : s.c) < t.x.c_offset + s.c || t.x.c_offset < 0)
    return {"conv: input pixel stride smaller than its channel offset + C"};
  if ((t.y.pixel_stride ? t.y.pixel_stride : s.k) < t.y.c_offset + s.k || t.y.c_offset < 0)
    return {"conv: output pixel stride smaller than its channel offset + K"};
  if (t.ep.residual.data &&
      ((t.ep.residual.pixel_stride ? t.ep.residual.pixel_stride : s.k) < t.ep.residual.c_offset + s.k ||
       t.ep.residual.c_offset < 0))
    return {"conv: residual pixel stride smaller than its channel offset + K"};
  if (kernel_info(c.id).family != KernelFamily::kConv || kernel_info(c.id).dtype != s.dtype)
    return {"conv: candidate is not a convolution of this dtype"};
  const int cg = s.c / s.groups, kg = s.k / s.groups;
  if (s.dtype == DType::kF32) {
    IgemmParamsF32 p = conv_view<float>(s, t);
    if (c.id == KernelId::f32_conv_nhwc_depthwise_direct) {
      if (cg != 1 || kg != 1) return {"conv: depthwise variant needs one channel per group"};
      return depthwise_f32_run(p, stream);
    }
    if (c.id == KernelId::f32_conv_nhwc_grouped_direct) return grouped_direct_f32_run(p, stream);
    return simt_f32_run(c.id, p, stream);
  }
  IgemmParams p = conv_view<uint16_t>(s, t);
  if (c.id == KernelId::f16_conv_nhwc_depthwise_direct) {
    if (cg != 1 || kg != 1) return {"conv: depthwise variant needs one channel per group"};
    return depthwise_f16_run(p, stream);
  }
  if (c.id == KernelId::f16_conv_nhwc_grouped_direct) return grouped_direct_f16_run(p, stream);
  const IgemmConfig* cfg = igemm_config(c.id);
  if (!cfg) return {"conv: unknown candidate"};
  p.splits = cfg->split ? c.splits : 1;
  return igemm_f16_run(*cfg, p, workspace, workspace_bytes, stream);
}

}  // namespace infera::gpu
