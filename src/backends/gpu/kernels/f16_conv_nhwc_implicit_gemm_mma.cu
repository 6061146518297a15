// fp16 convolution as implicit GEMM on the matrix units (fp32 accumulation), also the fp16 GEMM.
// Block tile BM (output pixels) x BN (output channels) x 32 (k); a multistage cp.async pipeline
// (plain double buffering on HIP) feeds XOR-swizzled shared tiles; each warp runs
// arch::WarpMma (mma.sync + ldmatrix / MFMA / dot2). The epilogue stages the fp32 tile through
// shared memory so each thread stores 8 consecutive channels: bias + residual + activation, fp16,
// with pixel stride and channel offset (Concat in place). Split-K writes fp32 partials instead
// and a second pass sums them and runs the same epilogue.
#include <atomic>

#include "backends/gpu/arch.h"
#include "backends/gpu/kernels/igemm.h"
#include "backends/gpu/kernels/igemm_tile.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

using arch::kTileK;
using arch::swz;

struct Swz32 {
  __device__ static int at(int row, int chunk) { return swz(row, chunk); }
};

template <int BM, int BN, int NT, int STAGES, int MODE, bool SPLIT>
__global__ void __launch_bounds__(NT) igemm_f16_kernel(const IgemmParams p) {
  extern __shared__ uint4 igemm_smem[];
  uint16_t* smem = reinterpret_cast<uint16_t*>(igemm_smem);
  using L = arch::WarpLayout<BM, BN, NT>;
  constexpr int kA = BM * kTileK, kB = BN * kTileK;
  const int tid = threadIdx.x, lane = tid % arch::kWarpSize, warp = tid / arch::kWarpSize;
  const int wm = warp / L::kWarpsN, wn = warp % L::kWarpsN;
  const int tile = blockIdx.x, nt = tile % p.n_tiles, mt = tile / p.n_tiles;
  const int m0 = mt * BM, n0 = nt * BN;
  const int zi = SPLIT ? blockIdx.y / p.splits : blockIdx.y;
  const int split = SPLIT ? blockIdx.y % p.splits : 0;
  const int kt0 = split * p.kt_per_split;
  const int kt1 = kt0 + p.kt_per_split < p.kt ? kt0 + p.kt_per_split : p.kt;
  const int nk = kt1 - kt0;

  ALoader<BM, NT, MODE, kTileK, Swz32> la;
  BLoader<BN, NT, MODE, kTileK, Swz32> lb;
  la.init(p, zi, m0, kt0, tid);
  lb.init(p, zi, n0, kt0, tid);

#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < nk) {
      la.load(p, smem + st * (kA + kB), tid);
      lb.load(p, smem + st * (kA + kB) + kA, tid);
    }
    arch::cp_async_commit();
  }

  arch::WarpMma<L::kWM, L::kWN> mma;
  mma.zero();
  for (int i = 0; i < nk; ++i) {
    arch::cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int li = i + STAGES - 1;
    if (li < nk) {
      uint16_t* dst = smem + (li % STAGES) * (kA + kB);
      la.load(p, dst, tid);
      lb.load(p, dst + kA, tid);
    }
    arch::cp_async_commit();
    const uint16_t* sA = smem + (i % STAGES) * (kA + kB);
    mma.step(sA, sA + kA, wm * L::kWM, wn * L::kWN, 0, lane);
    mma.step(sA, sA + kA, wm * L::kWM, wn * L::kWN, 1, lane);
  }
  arch::cp_async_wait<0>();
  __syncthreads();

  float* ctile = reinterpret_cast<float*>(igemm_smem);
  constexpr int kPitch = BN + kIgemmSmemPad;
  constexpr int kSlab = slab_rows(BM, BN, STAGES * (BM + BN) * kTileK * 2);
  constexpr int kVecsPerRow = BN / 8;
  for (int lo = 0; lo < BM; lo += kSlab) {
    if (lo) __syncthreads();
    mma.store(ctile, kPitch, wm * L::kWM, wn * L::kWN, lo, kSlab, lane);
    __syncthreads();
    for (int v = tid; v < kSlab * kVecsPerRow; v += NT) {
      const int row = v / kVecsPerRow, c8 = v - row * kVecsPerRow;
      const int m = m0 + lo + row, nn = n0 + c8 * 8;
      if (m >= p.m || nn >= p.kn) continue;
      const float4* src = reinterpret_cast<const float4*>(ctile + row * kPitch + c8 * 8);
      const float4 a = src[0], b = src[1];
      if (SPLIT) {
        float4* dst =
            reinterpret_cast<float4*>(p.ws + ((static_cast<int64_t>(split) * p.z + zi) * p.m + m) * p.kn_pad + nn);
        dst[0] = a;
        dst[1] = b;
      } else {
        float vals[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        epilogue_store8(p, zi, m, nn, vals);
      }
    }
  }
}

// Split-K second pass: sum the partials of 8 channels, then the epilogue.
__global__ void igemm_splitk_reduce_kernel(const IgemmParams p) {
  const int kv = p.kn_pad / 8;
  const int64_t total = static_cast<int64_t>(p.z) * p.m * kv;
  const int64_t slice = static_cast<int64_t>(p.z) * p.m * p.kn_pad;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c8 = static_cast<int>(i % kv);
    const int64_t zm = i / kv;
    const int m = static_cast<int>(zm % p.m), zi = static_cast<int>(zm / p.m);
    const int nn = c8 * 8;
    if (nn >= p.kn) continue;
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const float* src = p.ws + zm * p.kn_pad + nn;
    for (int sp = 0; sp < p.splits; ++sp) {
      const float4 a = reinterpret_cast<const float4*>(src + sp * slice)[0];
      const float4 b = reinterpret_cast<const float4*>(src + sp * slice)[1];
      v[0] += a.x, v[1] += a.y, v[2] += a.z, v[3] += a.w, v[4] += b.x, v[5] += b.y, v[6] += b.z, v[7] += b.w;
    }
    epilogue_store8(p, zi, m, nn, v);
  }
}

template <int BM, int BN, int NT, int MODE, bool SPLIT>
Status launch(const IgemmParams& p, gpuStream_t stream) {
  constexpr int kStages = arch::kIgemmStages;
  constexpr int kSmem = kStages * (BM + BN) * kTileK * 2;
  static_assert(kSmem <= arch::kMaxSmemBytes, "tile too large for shared memory");
  static std::atomic<uint64_t> smem_done{0};
  auto* kernel = igemm_f16_kernel<BM, BN, NT, kStages, MODE, SPLIT>;
  Status st = ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), kSmem, smem_done);
  if (!st.ok()) return st;
  const int64_t tiles = ceil_div(p.m, BM) * p.n_tiles;
  if (tiles > 0x7fffffff || static_cast<int64_t>(p.z) * p.splits > 65535) return {"igemm: grid too large"};
  kernel<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(p.z * p.splits)), NT, kSmem, stream>>>(p);
  GPU_LAUNCH_CHECK();
  return {};
}

template <int BM, int BN, int NT, bool SPLIT, bool SCALAR>
Status launch_modes(IgemmMode mode, const IgemmParams& p, gpuStream_t stream) {
  switch (mode) {
    case kIgemmVec1x1: return launch<BM, BN, NT, kIgemmVec1x1, SPLIT>(p, stream);
    case kIgemmVec: return launch<BM, BN, NT, kIgemmVec, SPLIT>(p, stream);
    case kIgemmScalar:
      if constexpr (SCALAR) return launch<BM, BN, NT, kIgemmScalar, SPLIT>(p, stream);
      break;
  }
  return {"igemm: this tile has no scalar-gather variant (C or strides not multiples of 8)"};
}

constexpr IgemmConfig kConfigs[] = {
    {KernelId::f16_conv_nhwc_implicit_gemm_mma_256x128, 256, 128, 256, false, false},
    {KernelId::f16_conv_nhwc_implicit_gemm_mma_256x64, 256, 64, 256, false, false},
    {KernelId::f16_conv_nhwc_implicit_gemm_mma_128x128, 128, 128, 256, false, false},
    {KernelId::f16_conv_nhwc_implicit_gemm_mma_128x64, 128, 64, 128, false, true},
    {KernelId::f16_conv_nhwc_implicit_gemm_mma_64x128, 64, 128, 128, false, false},
    {KernelId::f16_conv_nhwc_implicit_gemm_mma_64x64, 64, 64, 128, false, true},
    {KernelId::f16_conv_nhwc_implicit_gemm_mma_64x64_splitk, 64, 64, 128, true, true},
    {KernelId::f16_conv_nhwc_implicit_gemm_mma_64x128_splitk, 64, 128, 128, true, false},
};

}  // namespace

const IgemmConfig* igemm_config(KernelId id) {
  for (const IgemmConfig& c : kConfigs)
    if (c.id == id) return &c;
  return igemm_wgmma_config(id);
}

size_t igemm_smem_bytes(const IgemmConfig& c) {
  if (c.wgmma) return igemm_wgmma_smem_bytes(c);
  return static_cast<size_t>(arch::kIgemmStages) * (c.bm + c.bn) * kTileK * 2;
}

IgemmMode igemm_pick_mode(const IgemmParams& p) {
  const bool vec = p.c % 8 == 0 && p.x_ps % 8 == 0 && p.x_z % 8 == 0 && aligned16(p.x) && p.w_rs % 8 == 0 &&
                   p.w_z % 8 == 0 && aligned16(p.wt);
  if (!vec) return kIgemmScalar;
  const bool one = p.r == 1 && p.s == 1 && p.sh == 1 && p.sw == 1 && p.ph == 0 && p.pw == 0 && p.p == p.h && p.q == p.w;
  return one ? kIgemmVec1x1 : kIgemmVec;
}

size_t igemm_workspace_bytes(const IgemmParams& p, int splits) {
  if (splits <= 1) return 0;
  const int64_t kn_pad = ceil_div(p.kn, 8) * 8;
  return static_cast<size_t>(splits) * p.z * p.m * kn_pad * sizeof(float);
}

int igemm_pick_splits(const IgemmConfig& cfg, const IgemmParams& p, const DeviceInfo& dev) {
  const int64_t tiles = ceil_div(p.m, cfg.bm) * ceil_div(p.kn, cfg.bn) * p.z;
  const int64_t want = 2LL * dev.sm_count;  // about two waves of blocks
  if (tiles >= want) return 1;
  int64_t splits = ceil_div(want, tiles);
  const int64_t kt = ceil_div(p.kgemm, kTileK);
  const int64_t max_by_k = kt / 4;  // each split keeps at least 4 k-tiles (128 of K)
  if (splits > max_by_k) splits = max_by_k;
  if (splits > 32) splits = 32;
  if (splits < 2) return 1;
  // Even out the k-tiles per split, then drop splits that would be empty.
  const int64_t per = ceil_div(kt, splits);
  return static_cast<int>(ceil_div(kt, per));
}

Status igemm_f16_run(const IgemmConfig& cfg, IgemmParams p, void* workspace, size_t workspace_bytes,
                     gpuStream_t stream) {
  if (cfg.wgmma) return igemm_wgmma_run(cfg, p, stream);
  p.kt = static_cast<int>(ceil_div(p.kgemm, kTileK));
  p.n_tiles = static_cast<int>(ceil_div(p.kn, cfg.bn));
  p.kn_pad = static_cast<int>(ceil_div(p.kn, 8) * 8);
  p.vec_out = p.y_ps % 8 == 0 && p.y_z % 8 == 0 && aligned16(p.y);
  p.vec_res = p.res && p.res_ps % 8 == 0 && p.res_z % 8 == 0 && aligned16(p.res);
  p.vec_bias = p.bias && p.bias_z % 4 == 0 && aligned16(p.bias);
  if (!cfg.split) p.splits = 1;
  if (p.splits < 1) p.splits = 1;
  p.kt_per_split = static_cast<int>(ceil_div(p.kt, p.splits));
  if (p.splits > 1) {
    if (ceil_div(p.kt, p.kt_per_split) != p.splits) return {"igemm: split count leaves an empty split"};
    if (workspace_bytes < igemm_workspace_bytes(p, p.splits) || !workspace) return {"igemm: workspace too small"};
    if (!aligned16(workspace)) return {"igemm: workspace not 16-byte aligned"};
    p.ws = static_cast<float*>(workspace);
  }
  const IgemmMode mode = igemm_pick_mode(p);
  Status st;
  switch (cfg.id) {
    case KernelId::f16_conv_nhwc_implicit_gemm_mma_256x128:
      st = launch_modes<256, 128, 256, false, false>(mode, p, stream);
      break;
    case KernelId::f16_conv_nhwc_implicit_gemm_mma_256x64:
      st = launch_modes<256, 64, 256, false, false>(mode, p, stream);
      break;
    case KernelId::f16_conv_nhwc_implicit_gemm_mma_128x128:
      st = launch_modes<128, 128, 256, false, false>(mode, p, stream);
      break;
    case KernelId::f16_conv_nhwc_implicit_gemm_mma_128x64:
      st = launch_modes<128, 64, 128, false, true>(mode, p, stream);
      break;
    case KernelId::f16_conv_nhwc_implicit_gemm_mma_64x128:
      st = launch_modes<64, 128, 128, false, false>(mode, p, stream);
      break;
    case KernelId::f16_conv_nhwc_implicit_gemm_mma_64x64:
      st = launch_modes<64, 64, 128, false, true>(mode, p, stream);
      break;
    case KernelId::f16_conv_nhwc_implicit_gemm_mma_64x64_splitk:
      st = p.splits > 1 ? launch_modes<64, 64, 128, true, true>(mode, p, stream)
                        : launch_modes<64, 64, 128, false, true>(mode, p, stream);
      break;
    case KernelId::f16_conv_nhwc_implicit_gemm_mma_64x128_splitk:
      st = p.splits > 1 ? launch_modes<64, 128, 128, true, false>(mode, p, stream)
                        : launch_modes<64, 128, 128, false, false>(mode, p, stream);
      break;
    default: return {"igemm: not an implicit-GEMM variant"};
  }
  if (!st.ok() || p.splits <= 1) return st;
  const int64_t work = static_cast<int64_t>(p.z) * p.m * (p.kn_pad / 8);
  igemm_splitk_reduce_kernel<<<grid_for(work, 256), 256, 0, stream>>>(p);
  GPU_LAUNCH_CHECK();
  return {};
}

}  // namespace infera::gpu
