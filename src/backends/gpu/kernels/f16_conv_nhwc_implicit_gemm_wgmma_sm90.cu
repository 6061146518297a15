// fp16 convolution as implicit GEMM on Hopper's warpgroup MMA (wgmma, fp32 accumulation). The
// same im2col loaders and epilogue as the mma.sync kernel, with k-tiles of 64 stored in the
// 128-byte swizzle the tensor cores read through descriptors; WG warpgroups each own 64 output
// pixels x NB*128 channels. Built for sm_90a only (tests/gpu/build_cuda.sh: files *_sm90.cu);
// in every other pass the kernel is an empty shell that the dispatch never offers.
#include <atomic>

#include "backends/gpu/arch.h"
#include "backends/gpu/kernels/igemm.h"
#include "backends/gpu/kernels/igemm_tile.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {

// 1 in the sm_90a pass: read by the host to learn whether the loaded code has the wgmma path.
__device__ int g_igemm_wgmma_built = arch::kWgmmaDevice ? 1 : 0;

namespace {

constexpr int kBK = arch::kWgmmaTileK;
constexpr int kStages = 4;

struct Swz128 {
  __device__ static int at(int row, int chunk) { return arch::swz128(row, chunk); }
};

template <int WG, int NB>
constexpr int smem_bytes() {
  return kStages * (64 * WG + 128 * NB) * kBK * 2 + 1024;  // + alignment slack for 1024-byte atoms
}

template <int WG, int NB, int MODE>
__global__ void __launch_bounds__(WG * 128, 1) igemm_wgmma_kernel(const IgemmParams p) {
  constexpr int BM = 64 * WG, BN = 128 * NB, NT = WG * 128;
  constexpr int kA = BM * kBK, kB = BN * kBK;  // halves per stage
  extern __shared__ uint4 wgmma_smem_raw[];
  const unsigned raw = arch::smem_addr(wgmma_smem_raw);
  uint16_t* smem =
      reinterpret_cast<uint16_t*>(reinterpret_cast<char*>(wgmma_smem_raw) + ((1024u - (raw & 1023u)) & 1023u));
  const unsigned sbase = arch::smem_addr(smem);
  const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const int tile = blockIdx.x, nt = tile % p.n_tiles, mt = tile / p.n_tiles;
  const int m0 = mt * BM, n0 = nt * BN, zi = blockIdx.y;
  const int nk = p.kt;

  ALoader<BM, NT, MODE, kBK, Swz128> la;
  BLoader<BN, NT, MODE, kBK, Swz128> lb;
  la.init(p, zi, m0, 0, tid);
  lb.init(p, zi, n0, 0, tid);
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < nk) {
      la.load(p, smem + st * (kA + kB), tid);
      lb.load(p, smem + st * (kA + kB) + kA, tid);
    }
    arch::cp_async_commit();
  }

  float d[NB][64];
#pragma unroll
  for (int j = 0; j < NB; ++j)
#pragma unroll
    for (int e = 0; e < 64; ++e) d[j][e] = 0.f;

  for (int i = 0; i < nk; ++i) {
    arch::cp_async_wait<kStages - 2>();
    arch::fence_proxy_async();  // this thread's cp.async data, visible to the tensor cores
    __syncthreads();
    const unsigned sa = sbase + static_cast<unsigned>((i % kStages) * (kA + kB) * 2);
    const unsigned a_addr = sa + static_cast<unsigned>(wg * 64 * kBK * 2), b_addr = sa + kA * 2;
    arch::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kBK / 16; ++ks) {
      const uint64_t da = arch::wgmma_desc(a_addr + ks * 32);
#pragma unroll
      for (int j = 0; j < NB; ++j)
        arch::wgmma_m64n128k16(d[j], da, arch::wgmma_desc(b_addr + j * 128 * kBK * 2 + ks * 32));
    }
    arch::wgmma_commit();
    // While the tensor cores work: fetch k-tile i + kStages - 1 into the stage of k-tile i - 1,
    // whose wgmmas every warpgroup has waited for (end of the last iteration, then the barrier).
    const int li = i + kStages - 1;
    if (li < nk) {
      uint16_t* dst = smem + (li % kStages) * (kA + kB);
      la.load(p, dst, tid);
      lb.load(p, dst + kA, tid);
    }
    arch::cp_async_commit();
    arch::wgmma_wait<0>();
  }
  arch::cp_async_wait<0>();
  __syncthreads();

  // Epilogue through shared memory, as in the mma.sync kernel.
  float* ctile = reinterpret_cast<float*>(smem);
  constexpr int kPitch = BN + kIgemmSmemPad;
  constexpr int kSlab = slab_rows(BM, BN, kStages * (BM + BN) * kBK * 2);
  constexpr int kVecsPerRow = BN / 8;
  for (int lo = 0; lo < BM; lo += kSlab) {
    if (lo) __syncthreads();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = wg * 64 + warp * 16 + (lane >> 2) + h * 8 - lo;
      if (row < 0 || row >= kSlab) continue;
#pragma unroll
      for (int j = 0; j < NB; ++j)
#pragma unroll
        for (int b = 0; b < 16; ++b)
          *reinterpret_cast<float2*>(ctile + row * kPitch + j * 128 + b * 8 + (lane & 3) * 2) =
              make_float2(d[j][b * 4 + h * 2], d[j][b * 4 + h * 2 + 1]);
    }
    __syncthreads();
    for (int v = tid; v < kSlab * kVecsPerRow; v += NT) {
      const int row = v / kVecsPerRow, c8 = v - row * kVecsPerRow;
      const int m = m0 + lo + row, nn = n0 + c8 * 8;
      if (m >= p.m || nn >= p.kn) continue;
      const float4* src = reinterpret_cast<const float4*>(ctile + row * kPitch + c8 * 8);
      const float4 a = src[0], b = src[1];
      float vals[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
      epilogue_store8(p, zi, m, nn, vals);
    }
  }
}

template <int WG, int NB>
Status launch(const IgemmParams& p, IgemmMode mode, gpuStream_t stream) {
  constexpr int kSmem = smem_bytes<WG, NB>();
  static std::atomic<uint64_t> done_1x1{0}, done_vec{0};
  auto* k1 = igemm_wgmma_kernel<WG, NB, kIgemmVec1x1>;
  auto* kv = igemm_wgmma_kernel<WG, NB, kIgemmVec>;
  const bool one = mode == kIgemmVec1x1;
  Status st = ensure_dynamic_smem(reinterpret_cast<const void*>(one ? k1 : kv), kSmem, one ? done_1x1 : done_vec);
  if (!st.ok()) return st;
  const int64_t tiles = ceil_div(p.m, 64 * WG) * p.n_tiles;
  if (tiles > 0x7fffffff || p.z > 65535) return {"igemm wgmma: grid too large"};
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(p.z));
  if (one)
    k1<<<grid, WG * 128, kSmem, stream>>>(p);
  else
    kv<<<grid, WG * 128, kSmem, stream>>>(p);
  GPU_LAUNCH_CHECK();
  return {};
}

constexpr IgemmConfig kWgmmaConfigs[] = {
    {KernelId::f16_conv_nhwc_implicit_gemm_wgmma_128x128, 128, 128, 256, false, false, true},
    {KernelId::f16_conv_nhwc_implicit_gemm_wgmma_128x256, 128, 256, 256, false, false, true},
    {KernelId::f16_conv_nhwc_implicit_gemm_wgmma_256x128, 256, 128, 512, false, false, true},
    {KernelId::f16_conv_nhwc_implicit_gemm_wgmma_64x128, 64, 128, 128, false, false, true},
};

}  // namespace

const IgemmConfig* igemm_wgmma_config(KernelId id) {
  for (const IgemmConfig& c : kWgmmaConfigs)
    if (c.id == id) return &c;
  return nullptr;
}

bool igemm_wgmma_built() {
  int v = 0;
  if (gpuMemcpyFromSymbol(&v, g_igemm_wgmma_built, sizeof v) != gpuSuccess) {
    (void)gpuGetLastError();  // no loadable code for this device: not an error, just no wgmma
    return false;
  }
  return v == 1;
}

Status igemm_wgmma_run(const IgemmConfig& cfg, IgemmParams p, gpuStream_t stream) {
  p.kt = static_cast<int>(ceil_div(p.kgemm, kBK));
  p.n_tiles = static_cast<int>(ceil_div(p.kn, cfg.bn));
  p.kn_pad = static_cast<int>(ceil_div(p.kn, 8) * 8);
  p.vec_out = p.y_ps % 8 == 0 && p.y_z % 8 == 0 && aligned16(p.y);
  p.vec_res = p.res && p.res_ps % 8 == 0 && p.res_z % 8 == 0 && aligned16(p.res);
  p.vec_bias = p.bias && p.bias_z % 4 == 0 && aligned16(p.bias);
  p.splits = 1;
  const IgemmMode mode = igemm_pick_mode(p);
  if (mode == kIgemmScalar) return {"igemm wgmma: needs C % 8 == 0 and 16-byte aligned rows"};
  switch (cfg.id) {
    case KernelId::f16_conv_nhwc_implicit_gemm_wgmma_128x128: return launch<2, 1>(p, mode, stream);
    case KernelId::f16_conv_nhwc_implicit_gemm_wgmma_128x256: return launch<2, 2>(p, mode, stream);
    case KernelId::f16_conv_nhwc_implicit_gemm_wgmma_256x128: return launch<4, 1>(p, mode, stream);
    case KernelId::f16_conv_nhwc_implicit_gemm_wgmma_64x128: return launch<1, 1>(p, mode, stream);
    default: return {"igemm wgmma: not a wgmma variant"};
  }
}

size_t igemm_wgmma_smem_bytes(const IgemmConfig& c) {
  return static_cast<size_t>(kStages) * (c.bm + c.bn) * kBK * 2 + 1024;
}

}  // namespace infera::gpu
