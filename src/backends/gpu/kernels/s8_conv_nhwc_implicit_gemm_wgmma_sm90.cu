// int8 convolution (com.infera.QConv) as implicit GEMM on Hopper's warpgroup MMA (wgmma s8, int32
// accumulation). The fp16 wgmma kernel's pipeline byte for byte: the int8 tensors go to the same
// loaders as "halves" (s8_igemm.h), so a k-tile row of 64 halves in the 128-byte swizzle is 128
// int8 of K and one m64n128k32 s8 instruction reads the 32 bytes that an m64n128k16 f16 one reads.
// The epilogue stages the int32 tile through shared memory and requantizes as the mma.sync kernel
// does (bit-exact with the reference). Built for sm_90a only (files *_sm90.cu); in every other pass
// the kernel is an empty shell that the dispatch never offers (DeviceInfo::wgmma).
#include <atomic>

#include "backends/gpu/arch.h"
#include "backends/gpu/kernels/igemm.h"
#include "backends/gpu/kernels/igemm_tile.h"
#include "backends/gpu/kernels/launch_util.h"
#include "backends/gpu/kernels/s8_igemm.h"

namespace infera::gpu {
namespace {

constexpr int kBK = arch::kWgmmaTileK;  // in halves: 128 int8

struct Swz128 {
  __device__ static int at(int row, int chunk) { return arch::swz128(row, chunk); }
};

constexpr size_t smem_bytes(int wg, int nb, int stages) {
  return static_cast<size_t>(stages) * (64 * wg + 128 * nb) * kBK * 2 + 1024;  // + slack for 1024-byte atoms
}

// STAGES k-tiles in flight; MINB blocks per multiprocessor (the 2-stage variants: while one block
// requantizes its tile, another loads: the layers of one to four k-tiles, ResNet's 1x1s, are
// epilogue- and latency-bound, not MMA-bound).
template <int WG, int NB, int STAGES, int MINB, int MODE>
__global__ void __launch_bounds__(WG * 128, MINB) igemm_s8_wgmma_kernel(const IgemmParams p, const QEpi q) {
  constexpr int kStages = STAGES;
  // With 3+ stages one wgmma group stays in flight while the next k-tile's are issued, and loads run
  // kStages - 2 k-tiles ahead (the stage they fill was read by group i - 2, which every warpgroup
  // has waited for before this iteration's barrier); with 2 stages, one k-tile ahead and no overlap.
  constexpr int kAhead = STAGES >= 3 ? STAGES - 2 : STAGES - 1;
  constexpr int kInFlight = STAGES >= 3 ? 1 : 0;
  constexpr int BM = 64 * WG, BN = 128 * NB, NT = WG * 128;
  constexpr int kA = BM * kBK, kB = BN * kBK;  // halves per stage
  extern __shared__ uint4 s8_wgmma_smem_raw[];
  const unsigned raw = arch::smem_addr(s8_wgmma_smem_raw);
  uint16_t* smem =
      reinterpret_cast<uint16_t*>(reinterpret_cast<char*>(s8_wgmma_smem_raw) + ((1024u - (raw & 1023u)) & 1023u));
  const unsigned sbase = arch::smem_addr(smem);
  const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const int tile = blockIdx.x, nt = tile % p.n_tiles, mt = tile / p.n_tiles;
  const int m0 = mt * BM, n0 = nt * BN;
  const int nk = p.kt;
  arch::pdl_wait();
  arch::pdl_trigger();

  ALoader<BM, NT, MODE, kBK, Swz128> la;
  BLoader<BN, NT, MODE, kBK, Swz128> lb;
  la.init(p, 0, m0, 0, tid);
  lb.init(p, 0, n0, 0, tid);
#pragma unroll
  for (int st = 0; st < kAhead; ++st) {
    if (st < nk) {
      la.load(p, smem + st * (kA + kB), tid);
      lb.load(p, smem + st * (kA + kB) + kA, tid);
    }
    arch::cp_async_commit();
  }

  int d[NB][64];
#pragma unroll
  for (int j = 0; j < NB; ++j)
#pragma unroll
    for (int e = 0; e < 64; ++e) d[j][e] = 0;

  for (int i = 0; i < nk; ++i) {
    arch::cp_async_wait<kAhead - 1>();
    arch::fence_proxy_async();  // this thread's cp.async data, visible to the tensor cores
    __syncthreads();
    const unsigned sa = sbase + static_cast<unsigned>((i % kStages) * (kA + kB) * 2);
    const unsigned a_addr = sa + static_cast<unsigned>(wg * 64 * kBK * 2), b_addr = sa + kA * 2;
    arch::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kBK / 16; ++ks) {  // 32 bytes (32 int8 of K) per instruction
      const uint64_t da = arch::wgmma_desc(a_addr + ks * 32);
#pragma unroll
      for (int j = 0; j < NB; ++j)
        arch::wgmma_m64n128k32_s8(d[j], da, arch::wgmma_desc(b_addr + j * 128 * kBK * 2 + ks * 32));
    }
    arch::wgmma_commit();
    if constexpr (kInFlight == 1) arch::wgmma_wait<1>();
    // While the tensor cores work: fetch k-tile i + kAhead into the stage of k-tile i + kAhead -
    // kStages, whose wgmmas every warpgroup has waited for (before this iteration's barrier).
    const int li = i + kAhead;
    if (li < nk) {
      uint16_t* dst = smem + (li % kStages) * (kA + kB);
      la.load(p, dst, tid);
      lb.load(p, dst + kA, tid);
    }
    arch::cp_async_commit();
    if constexpr (kInFlight == 0) arch::wgmma_wait<0>();
  }
  arch::wgmma_wait<0>();
  arch::cp_async_wait<0>();
  __syncthreads();

  // Epilogue: the int32 tile through shared memory in slabs, then 8 channels per thread requantized.
  int* ctile = reinterpret_cast<int*>(smem);
  constexpr int kPitch = BN + kIgemmSmemPad;
  constexpr int kSlab = slab_rows(BM, BN, kStages * (BM + BN) * kBK * 2);
  constexpr int kVecsPerRow = BN / 8;
  static_assert(NT % kVecsPerRow == 0, "an epilogue thread must keep its 8 channels");
  const QChan8 ch = load_chan8(q, p.kn, n0 + (tid % kVecsPerRow) * 8);
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
          *reinterpret_cast<int2*>(ctile + row * kPitch + j * 128 + b * 8 + (lane & 3) * 2) =
              make_int2(d[j][b * 4 + h * 2], d[j][b * 4 + h * 2 + 1]);
    }
    __syncthreads();
    for (int v = tid; v < kSlab * kVecsPerRow; v += NT) {
      const int row = v / kVecsPerRow, c8 = v - row * kVecsPerRow;
      const int m = m0 + lo + row, nn = n0 + c8 * 8;
      if (m >= p.m || nn >= p.kn) continue;
      const int4* src = reinterpret_cast<const int4*>(ctile + row * kPitch + c8 * 8);
      const int4 a = src[0], b = src[1];
      const int acc[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
      requant_store8(q, ch, p.kn, m, nn, acc);
    }
  }
}

template <int WG, int NB, int STAGES = 4, int MINB = 1>
Status launch(const IgemmParams& p, const QEpi& q, IgemmMode mode, gpuStream_t stream) {
  constexpr int kSmem = static_cast<int>(smem_bytes(WG, NB, STAGES));
  static std::atomic<uint64_t> done_1x1{0}, done_vec{0};
  auto* k1 = igemm_s8_wgmma_kernel<WG, NB, STAGES, MINB, kIgemmVec1x1>;
  auto* kv = igemm_s8_wgmma_kernel<WG, NB, STAGES, MINB, kIgemmVec>;
  const bool one = mode == kIgemmVec1x1;
  Status st = ensure_dynamic_smem(reinterpret_cast<const void*>(one ? k1 : kv), kSmem, one ? done_1x1 : done_vec);
  if (!st.ok()) return st;
  const int64_t tiles = ceil_div(p.m, 64 * WG) * p.n_tiles;
  if (tiles > 0x7fffffff) return {"qconv wgmma: grid too large"};
  const dim3 grid(static_cast<unsigned>(tiles), 1);
  GPU_TRY(arch::launch_dependent(one ? k1 : kv, grid, dim3(WG * 128), kSmem, stream, p, q));
  return {};
}

struct Variant {
  KernelId id;
  int wg, nb, stages;
};
constexpr Variant kVariants[] = {
    {KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x128, 2, 1, 4},
    {KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x256, 2, 2, 4},
    {KernelId::s8_conv_nhwc_implicit_gemm_wgmma_256x128, 4, 1, 4},
    {KernelId::s8_conv_nhwc_implicit_gemm_wgmma_64x128, 1, 1, 4},
    {KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x128_s2, 2, 1, 2},
    {KernelId::s8_conv_nhwc_implicit_gemm_wgmma_64x128_s2, 1, 1, 2},
};

}  // namespace

bool s8_wgmma_is_variant(KernelId id) {
  for (const Variant& v : kVariants)
    if (v.id == id) return true;
  return false;
}

size_t s8_wgmma_smem_bytes(KernelId id) {
  for (const Variant& v : kVariants)
    if (v.id == id) return smem_bytes(v.wg, v.nb, v.stages);
  return 0;
}

Status s8_wgmma_run(KernelId id, IgemmParams p, const QEpi& q, gpuStream_t stream) {
  p.kt = static_cast<int>(ceil_div(p.kgemm, kBK));
  const IgemmMode mode = igemm_pick_mode(p);
  if (mode == kIgemmScalar) return {"qconv wgmma: needs C % 16 == 0 and 16-byte aligned rows"};
  for (const Variant& v : kVariants) {
    if (v.id != id) continue;
    p.n_tiles = static_cast<int>(ceil_div(p.kn, 128 * v.nb));
    switch (id) {
      case KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x128: return launch<2, 1>(p, q, mode, stream);
      case KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x256: return launch<2, 2>(p, q, mode, stream);
      case KernelId::s8_conv_nhwc_implicit_gemm_wgmma_256x128: return launch<4, 1>(p, q, mode, stream);
      case KernelId::s8_conv_nhwc_implicit_gemm_wgmma_64x128: return launch<1, 1>(p, q, mode, stream);
      case KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x128_s2: return launch<2, 1, 2, 2>(p, q, mode, stream);
      case KernelId::s8_conv_nhwc_implicit_gemm_wgmma_64x128_s2: return launch<1, 1, 2, 4>(p, q, mode, stream);
      default: break;
    }
  }
  return {"qconv wgmma: not a wgmma variant"};
}

}  // namespace infera::gpu
