// GEMM entry points. B stored [N][K] (trans_b) with A row-major is exactly a 1x1 convolution of
// an M-pixel image, so the fp16 matrix-unit variants reuse the implicit-GEMM kernel; every other
// combination runs the strided SIMT kernel.
#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/gemm_simt.h"
#include "backends/gpu/kernels/igemm.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

struct Lds {
  int64_t lda, ldb, ldc, ldr;
};
Lds leading(const GemmShape& s, int64_t ldr) {
  Lds l;
  l.lda = s.lda ? s.lda : (s.trans_a ? s.m : s.k);
  l.ldb = s.ldb ? s.ldb : (s.trans_b ? s.k : s.n);
  l.ldc = s.ldc ? s.ldc : s.n;
  l.ldr = ldr ? ldr : l.ldc;
  return l;
}

KernelId conv_twin(KernelId id) {
  switch (id) {
    case KernelId::f16_gemm_mma_128x128: return KernelId::f16_conv_nhwc_implicit_gemm_mma_128x128;
    case KernelId::f16_gemm_mma_64x64: return KernelId::f16_conv_nhwc_implicit_gemm_mma_64x64;
    case KernelId::f16_gemm_mma_64x64_splitk: return KernelId::f16_conv_nhwc_implicit_gemm_mma_64x64_splitk;
    default: return KernelId::kCount;
  }
}

IgemmParams gemm_view(const GemmShape& s, const GemmTensors& t) {
  const Lds l = leading(s, t.ldr);
  IgemmParams p;
  p.x = static_cast<const uint16_t*>(t.a);
  p.wt = static_cast<const uint16_t*>(t.b);
  p.bias = t.bias;
  p.res = static_cast<const uint16_t*>(t.residual);
  p.y = static_cast<uint16_t*>(t.c);
  p.n = 1, p.h = 1, p.w = s.m, p.c = s.k, p.p = 1, p.q = s.m;
  p.m = s.m, p.kn = s.n, p.kgemm = s.k;
  p.x_ps = l.lda, p.w_rs = l.ldb, p.y_ps = l.ldc, p.res_ps = l.ldr;
  p.z = s.batch;
  p.x_z = s.stride_a, p.w_z = s.stride_b, p.y_z = s.stride_c, p.bias_z = 0, p.res_z = t.stride_r;
  p.act = act_params(t.act);
  return p;
}

Candidate make(KernelId id, size_t ws = 0, int splits = 1) { return {id, kernel_info(id).name, ws, splits}; }

}  // namespace

Status gemm_check(const GemmShape& s) {
  if (s.batch < 1 || s.m < 1 || s.n < 1 || s.k < 1) return {"gemm: batch, M, N and K must be positive"};
  if (s.batch > 65535) return {"gemm: more than 65535 batch entries"};
  if (s.m > 0x3fffffff || s.n > 0x3fffffff || s.k > 0x3fffffff) return {"gemm: dimension too large"};
  const Lds l = leading(s, 0);
  if (l.lda < (s.trans_a ? s.m : s.k) || l.ldb < (s.trans_b ? s.k : s.n) || l.ldc < s.n)
    return {"gemm: leading dimension smaller than the row length"};
  return {};
}

std::vector<Candidate> gemm_candidates(const GemmShape& s, const DeviceInfo& dev) {
  std::vector<Candidate> out;
  if (!gemm_check(s).ok()) return out;
  if (s.dtype == DType::kF32) {
    out.push_back(make(KernelId::f32_gemm_simt));
    return out;
  }
  if (!s.trans_a && s.trans_b) {
    static const uint4 dummy[1] = {};
    GemmTensors t;
    t.a = dummy;
    t.b = dummy;
    IgemmParams p = gemm_view(s, t);
    const bool scalar = igemm_pick_mode(p) == kIgemmScalar;
    const bool big = ceil_div(s.m, 128) * ceil_div(s.n, 128) * s.batch >= dev.sm_count;
    const KernelId order_big[] = {KernelId::f16_gemm_mma_128x128, KernelId::f16_gemm_mma_64x64,
                                  KernelId::f16_gemm_mma_64x64_splitk};
    const KernelId order_small[] = {KernelId::f16_gemm_mma_64x64_splitk, KernelId::f16_gemm_mma_64x64,
                                    KernelId::f16_gemm_mma_128x128};
    for (KernelId id : big ? order_big : order_small) {
      const IgemmConfig* cfg = igemm_config(conv_twin(id));
      if (!cfg || (scalar && !cfg->scalar)) continue;
      if (static_cast<int>(igemm_smem_bytes(*cfg)) > dev.smem_optin) continue;
      if (cfg->split) {
        const int splits = igemm_pick_splits(*cfg, p, dev);
        if (splits > 1) out.push_back(make(id, igemm_workspace_bytes(p, splits), splits));
      } else {
        out.push_back(make(id));
      }
    }
  }
  out.push_back(make(KernelId::f16_gemm_simt));
  return out;
}

Status gemm(const GemmShape& s, const Candidate& c, const GemmTensors& t, void* workspace, size_t workspace_bytes,
            gpuStream_t stream) {
  Status st = gemm_check(s);
  if (!st.ok()) return st;
  if (!t.a || !t.b || !t.c) return {"gemm: null A, B or C"};
  if (kernel_info(c.id).family != KernelFamily::kGemm || kernel_info(c.id).dtype != s.dtype)
    return {"gemm: candidate is not a GEMM of this dtype"};
  if (c.id == KernelId::f16_gemm_simt || c.id == KernelId::f32_gemm_simt) {
    const Lds l = leading(s, t.ldr);
    GemmSimtParams p;
    p.a = t.a, p.b = t.b, p.c = t.c, p.bias = t.bias, p.residual = t.residual;
    p.batch = s.batch, p.m = s.m, p.n = s.n, p.k = s.k;
    p.sam = s.trans_a ? 1 : l.lda;
    p.sak = s.trans_a ? l.lda : 1;
    p.sbk = s.trans_b ? 1 : l.ldb;
    p.sbn = s.trans_b ? l.ldb : 1;
    p.ldc = l.ldc, p.ldr = l.ldr;
    p.stride_a = s.stride_a, p.stride_b = s.stride_b, p.stride_c = s.stride_c, p.stride_r = t.stride_r;
    p.act = act_params(t.act);
    return gemm_simt_run(s.dtype == DType::kF16, p, stream);
  }
  if (s.trans_a || !s.trans_b) return {"gemm: the matrix-unit variants need A row-major and B as [N][K]"};
  const IgemmConfig* cfg = igemm_config(conv_twin(c.id));
  if (!cfg) return {"gemm: unknown candidate"};
  IgemmParams p = gemm_view(s, t);
  p.splits = cfg->split ? c.splits : 1;
  return igemm_f16_run(*cfg, p, workspace, workspace_bytes, stream);
}

}  // namespace infera::gpu
