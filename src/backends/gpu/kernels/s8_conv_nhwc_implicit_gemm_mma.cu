// int8 convolution (com.infera.QConv) as implicit GEMM on the integer matrix units, int32
// accumulation. The fp16 kernel's structure, loaders and shared layout unchanged: the int8 tensors
// are handed to the loaders as tensors of "halves" (2 int8 each), so a 16-byte chunk is 16 int8 of
// k and a kTileK row 64 (C must be even; the vector gathers need C % 16 == 0). arch::WarpMmaS8
// multiplies (mma.sync m16n8k32 s8 / MFMA i32_32x32x8i8 / sdot4). The epilogue stages the int32
// tile through shared memory and requantizes 8 consecutive channels per thread (s8_igemm.h: float
// where provably equal to the reference's double, double at rounding boundaries), bit-exact. The
// split-K variant (grids too small to fill the device: batch 1) writes each split's int32 partials
// to the workspace and a second pass sums them (exact) and requantizes. The persistent variant
// (reductions of at most 4 k-tiles: the 1x1 layers of K <= 256, memory-bound at every batch) keeps
// its N tile's weights in shared memory and loads the next M tile and its residual while it
// multiplies and requantizes the current one.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backends/gpu/arch.h"
#include "backends/gpu/kernels/igemm.h"
#include "backends/gpu/kernels/igemm_tile.h"
#include "backends/gpu/kernels/launch_util.h"
#include "backends/gpu/kernels/s8_cutlass.h"
#include "backends/gpu/kernels/s8_igemm.h"

namespace infera::gpu {
namespace {

using arch::kTileK;
using arch::swz;

struct Swz32 {
  __device__ static int at(int row, int chunk) { return swz(row, chunk); }
};

template <int BM, int BN, int NT, int STAGES, int MODE, bool SPLIT>
__global__ void __launch_bounds__(NT) igemm_s8_kernel(const IgemmParams p, const QEpi q) {
  extern __shared__ uint4 igemm_smem[];
  uint16_t* smem = reinterpret_cast<uint16_t*>(igemm_smem);
  using L = arch::WarpLayout<BM, BN, NT>;
  constexpr int kA = BM * kTileK, kB = BN * kTileK;
  const int tid = threadIdx.x, lane = tid % arch::kWarpSize, warp = tid / arch::kWarpSize;
  const int wm = warp / L::kWarpsN, wn = warp % L::kWarpsN;
  const int tile = blockIdx.x, nt = tile % p.n_tiles, mt = tile / p.n_tiles;
  const int m0 = mt * BM, n0 = nt * BN;
  const int split = SPLIT ? blockIdx.y : 0;
  const int kt0 = SPLIT ? split * p.kt_per_split : 0;
  const int nk = SPLIT ? (kt0 + p.kt_per_split < p.kt ? kt0 + p.kt_per_split : p.kt) - kt0 : p.kt;
  arch::pdl_wait();
  arch::pdl_trigger();

  ALoader<BM, NT, MODE, kTileK, Swz32> la;
  BLoader<BN, NT, MODE, kTileK, Swz32> lb;
  la.init(p, 0, m0, kt0, tid);
  lb.init(p, 0, n0, kt0, tid);

#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < nk) {
      la.load(p, smem + st * (kA + kB), tid);
      lb.load(p, smem + st * (kA + kB) + kA, tid);
    }
    arch::cp_async_commit();
  }

  arch::WarpMmaS8<L::kWM, L::kWN> mma;
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

  int* ctile = reinterpret_cast<int*>(igemm_smem);
  constexpr int kPitch = BN + kIgemmSmemPad;
  constexpr int kSlab = slab_rows(BM, BN, STAGES * (BM + BN) * kTileK * 2);
  constexpr int kVecsPerRow = BN / 8;
  static_assert(NT % kVecsPerRow == 0, "an epilogue thread must keep its 8 channels");
  const QChan8 ch = SPLIT ? QChan8{} : load_chan8(q, p.kn, n0 + (tid % kVecsPerRow) * 8);
  for (int lo = 0; lo < BM; lo += kSlab) {
    if (lo) __syncthreads();
    mma.store(ctile, kPitch, wm * L::kWM, wn * L::kWN, lo, kSlab, lane);
    __syncthreads();
    for (int v = tid; v < kSlab * kVecsPerRow; v += NT) {
      const int row = v / kVecsPerRow, c8 = v - row * kVecsPerRow;
      const int m = m0 + lo + row, nn = n0 + c8 * 8;
      if (m >= p.m || nn >= p.kn) continue;
      const int4* src = reinterpret_cast<const int4*>(ctile + row * kPitch + c8 * 8);
      const int4 a = src[0], b = src[1];
      if (SPLIT) {
        int4* dst = reinterpret_cast<int4*>(reinterpret_cast<int*>(p.ws) +
                                            (static_cast<int64_t>(split) * p.m + m) * p.kn_pad + nn);
        dst[0] = a;
        dst[1] = b;
      } else {
        const int acc[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        requant_store8(q, ch, p.kn, m, nn, acc);
      }
    }
  }
}

// Split-K second pass: the int32 partials of 8 channels summed, then the requantize epilogue.
__global__ void igemm_s8_splitk_reduce_kernel(const IgemmParams p, const QEpi q) {
  const int kv = p.kn_pad / 8;
  const int64_t total = static_cast<int64_t>(p.m) * kv, slice = static_cast<int64_t>(p.m) * p.kn_pad;
  const int* ws = reinterpret_cast<const int*>(p.ws);
  arch::pdl_wait();
  arch::pdl_trigger();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int nn = static_cast<int>(i % kv) * 8, m = static_cast<int>(i / kv);
    if (nn >= p.kn) continue;
    int acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const int* src = ws + static_cast<int64_t>(m) * p.kn_pad + nn;
    for (int sp = 0; sp < p.splits; ++sp) {
      const int4 a = reinterpret_cast<const int4*>(src + sp * slice)[0];
      const int4 b = reinterpret_cast<const int4*>(src + sp * slice)[1];
      acc[0] += a.x, acc[1] += a.y, acc[2] += a.z, acc[3] += a.w, acc[4] += b.x, acc[5] += b.y, acc[6] += b.z,
          acc[7] += b.w;
    }
    requant_store8(q, load_chan8(q, p.kn, nn), p.kn, m, nn, acc);
  }
}

// ---- The persistent small-K kernel. Block b owns N tile b % n_tiles and walks the M tiles
// gridDim.x / n_tiles apart. Shared memory: the N tile's weights, all kt k-tiles (loaded once); two
// buffers of an M tile's activations (kt k-tiles) and of its residual (BM x BN bytes, when zsmem);
// the int32 staging slab of the epilogue. Tile t + 1's loads are issued before tile t's multiply,
// so they are in flight during its multiply and requantize instead of after them.
inline constexpr int kPersistMaxKt = 4;  // k-tiles of 64 int8: K <= 256
__host__ __device__ constexpr int persist_slab_rows(int bm, int bn) {
  int rows = bm;
  while (rows > 16 && rows * (bn + kIgemmSmemPad) * 4 > 18 * 1024) rows /= 2;
  return rows;
}
constexpr int persist_smem_bytes(int bm, int bn, int kt, bool zsmem) {
  return kt * bn * kTileK * 2 + 2 * kt * bm * kTileK * 2 + (zsmem ? 2 * bm * bn : 0) +
         persist_slab_rows(bm, bn) * (bn + kIgemmSmemPad) * 4;
}

template <int BM, int BN, int NT, int MODE>
__global__ void __launch_bounds__(NT, 65536 / (NT * 128))
    igemm_s8_persist_kernel(const IgemmParams p, const QEpi q, const int zsmem) {
  static_assert(MODE != kIgemmScalar, "the persistent kernel takes vector gathers");
  extern __shared__ uint4 igemm_smem[];
  using L = arch::WarpLayout<BM, BN, NT>;
  constexpr int kA = BM * kTileK, kB = BN * kTileK;  // halves of one k-tile
  constexpr int kZ = BM * BN;                        // bytes of one residual tile
  constexpr int kPitch = BN + kIgemmSmemPad;
  constexpr int kSlab = persist_slab_rows(BM, BN);
  constexpr int kVecsPerRow = BN / 8, kZChunks = BN / 16;
  static_assert(NT % kVecsPerRow == 0, "an epilogue thread must keep its 8 channels");
  const int kt = p.kt;
  uint16_t* sB = reinterpret_cast<uint16_t*>(igemm_smem);
  uint16_t* sA = sB + kt * kB;
  int8_t* sZ = reinterpret_cast<int8_t*>(sA + 2 * kt * kA);
  int* ctile = reinterpret_cast<int*>(sZ + (zsmem ? 2 * kZ : 0));

  const int tid = threadIdx.x, lane = tid % arch::kWarpSize, warp = tid / arch::kWarpSize;
  const int wm = warp / L::kWarpsN, wn = warp % L::kWarpsN;
  const int n0 = static_cast<int>(blockIdx.x % p.n_tiles) * BN;
  const int mstep = static_cast<int>(gridDim.x / p.n_tiles);
  const int m_tiles = static_cast<int>(ceil_div(p.m, BM));
  int mt = static_cast<int>(blockIdx.x / p.n_tiles);

  BLoader<BN, NT, MODE, kTileK, Swz32> lb;
  lb.init(p, 0, n0, 0, tid);
  for (int k = 0; k < kt; ++k) lb.load(p, sB + k * kB, tid);  // weights: constants, before the wait
  arch::pdl_wait();
  arch::pdl_trigger();
  auto load_tile = [&](int t, int buf) {
    ALoader<BM, NT, MODE, kTileK, Swz32> la;
    la.init(p, 0, t * BM, 0, tid);
    for (int k = 0; k < kt; ++k) la.load(p, sA + (buf * kt + k) * kA, tid);
    if (zsmem)
      for (int v = tid; v < BM * kZChunks; v += NT) {
        const int row = v / kZChunks, c16 = v - row * kZChunks;
        const int m = t * BM + row, nn = n0 + c16 * 16;
        const bool ok = m < p.m && nn < p.kn;
        arch::cp_async16(sZ + buf * kZ + row * BN + c16 * 16, ok ? q.z + m * q.z_ps + nn : q.z, ok);
      }
  };
  if (mt < m_tiles) load_tile(mt, 0);
  arch::cp_async_commit();

  const QChan8 ch = load_chan8(q, p.kn, n0 + (tid % kVecsPerRow) * 8);
  for (int buf = 0; mt < m_tiles; mt += mstep, buf ^= 1) {
    if (mt + mstep < m_tiles) load_tile(mt + mstep, buf ^ 1);
    arch::cp_async_commit();
    arch::cp_async_wait<1>();  // everything but the prefetch just issued
    __syncthreads();
    arch::WarpMmaS8<L::kWM, L::kWN> mma;
    mma.zero();
    const uint16_t* a = sA + buf * kt * kA;
    for (int k = 0; k < kt; ++k) {
      mma.step(a + k * kA, sB + k * kB, wm * L::kWM, wn * L::kWN, 0, lane);
      mma.step(a + k * kA, sB + k * kB, wm * L::kWM, wn * L::kWN, 1, lane);
    }
    const int m0 = mt * BM;
    for (int lo = 0; lo < BM; lo += kSlab) {
      mma.store(ctile, kPitch, wm * L::kWM, wn * L::kWN, lo, kSlab, lane);
      __syncthreads();
      for (int v = tid; v < kSlab * kVecsPerRow; v += NT) {
        const int row = v / kVecsPerRow, c8 = v - row * kVecsPerRow;
        const int m = m0 + lo + row, nn = n0 + c8 * 8;
        if (m >= p.m || nn >= p.kn) continue;
        const int4* src = reinterpret_cast<const int4*>(ctile + row * kPitch + c8 * 8);
        const int4 x = src[0], y = src[1];
        const int acc[8] = {x.x, x.y, x.z, x.w, y.x, y.y, y.z, y.w};
        requant_store8(q, ch, p.kn, m, nn, acc, zsmem ? sZ + buf * kZ + (lo + row) * BN + c8 * 8 : nullptr);
      }
      // The staging slab is rewritten next; this tile's activations and residual by the next loads.
      __syncthreads();
    }
  }
  arch::cp_async_wait<0>();
}

// One launch of the persistent kernel: as many blocks as the device holds at once (a multiple of
// the N tiles, at most one per M tile and N tile).
template <int BM, int BN, int NT, int MODE>
Status launch_persist(const IgemmParams& p, const QEpi& q, gpuStream_t stream) {
  auto* kernel = igemm_s8_persist_kernel<BM, BN, NT, MODE>;
  const int zsmem = q.z && aligned16(q.z) && q.z_ps % 16 == 0;
  const int smem = persist_smem_bytes(BM, BN, p.kt, zsmem);
  if (smem > arch::kMaxSmemBytes) return {"qconv: tile too large for shared memory"};
  int dev = 0, sms = 0, per_sm = 0;
  GPU_TRY(gpuGetDevice(&dev));
  // The dynamic shared-memory limit (it depends on kt) raised per device to the largest size seen.
  static std::mutex mu;
  static int raised[64] = {};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (dev < 0 || dev >= 64) return {"qconv: device index out of range"};
    if (smem > 48 * 1024 && smem > raised[dev]) {
      GPU_TRY(gpuFuncSetMaxDynamicSmem(reinterpret_cast<const void*>(kernel), smem));
      raised[dev] = smem;
    }
  }
  GPU_TRY(gpuDeviceSmCount(&sms, dev));
  GPU_TRY(gpuOccupancyMaxBlocks(&per_sm, reinterpret_cast<const void*>(kernel), NT, static_cast<size_t>(smem)));
  if (per_sm < 1) return {"qconv: the persistent tile does not fit a multiprocessor"};
  const int64_t m_tiles = ceil_div(p.m, BM);
  const int64_t per_n = std::max<int64_t>(1, std::min<int64_t>(m_tiles, int64_t{sms} * per_sm / p.n_tiles));
  const int64_t blocks = per_n * p.n_tiles;
  if (blocks > 0x7fffffff) return {"qconv: grid too large"};
  GPU_TRY(arch::launch_dependent(kernel, dim3(static_cast<unsigned>(blocks)), dim3(NT), smem, stream, p, q, zsmem));
  return {};
}

template <int BM, int BN, int NT>
Status launch_persist_modes(IgemmMode mode, const IgemmParams& p, const QEpi& q, gpuStream_t stream) {
  if (p.kt > kPersistMaxKt) return {"qconv: the persistent variant takes K <= 256 (R*S*C)"};
  switch (mode) {
    case kIgemmVec1x1: return launch_persist<BM, BN, NT, kIgemmVec1x1>(p, q, stream);
    case kIgemmVec: return launch_persist<BM, BN, NT, kIgemmVec>(p, q, stream);
    default: break;
  }
  return {"qconv: the persistent variant needs vector gathers (C a multiple of 16)"};
}

template <int BM, int BN, int NT, int MODE, bool SPLIT>
Status launch(const IgemmParams& p, const QEpi& q, gpuStream_t stream) {
  constexpr int kStages = arch::kIgemmStages;
  constexpr int kSmem = kStages * (BM + BN) * kTileK * 2;
  static_assert(kSmem <= arch::kMaxSmemBytes, "tile too large for shared memory");
  static std::atomic<uint64_t> smem_done{0};
  auto* kernel = igemm_s8_kernel<BM, BN, NT, kStages, MODE, SPLIT>;
  Status st = ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), kSmem, smem_done);
  if (!st.ok()) return st;
  const int64_t tiles = ceil_div(p.m, BM) * p.n_tiles;
  if (tiles > 0x7fffffff || p.splits > 65535) return {"qconv: grid too large"};
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(SPLIT ? p.splits : 1));
  GPU_TRY(arch::launch_dependent(kernel, grid, dim3(NT), kSmem, stream, p, q));
  if (SPLIT) {
    const int64_t vecs = static_cast<int64_t>(p.m) * (p.kn_pad / 8);
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(vecs, 256), 4096));
    GPU_TRY(arch::launch_dependent(igemm_s8_splitk_reduce_kernel, dim3(blocks), dim3(256), 0, stream, p, q));
  }
  return {};
}

template <int BM, int BN, int NT, bool SCALAR, bool SPLIT = false>
Status launch_modes(IgemmMode mode, const IgemmParams& p, const QEpi& q, gpuStream_t stream) {
  switch (mode) {
    case kIgemmVec1x1: return launch<BM, BN, NT, kIgemmVec1x1, SPLIT>(p, q, stream);
    case kIgemmVec: return launch<BM, BN, NT, kIgemmVec, SPLIT>(p, q, stream);
    case kIgemmScalar:
      if constexpr (SCALAR) return launch<BM, BN, NT, kIgemmScalar, SPLIT>(p, q, stream);
      break;
  }
  return {"qconv: this tile has no scalar-gather variant (C or strides not multiples of 16)"};
}

struct S8Config {
  KernelId id;
  int bm, bn;
  bool scalar, split = false, persist = false;
};
constexpr S8Config kConfigs[] = {
    {KernelId::s8_conv_nhwc_implicit_gemm_mma_256x128, 256, 128, false},
    {KernelId::s8_conv_nhwc_implicit_gemm_mma_128x128, 128, 128, false},
    {KernelId::s8_conv_nhwc_implicit_gemm_mma_128x64, 128, 64, true},
    {KernelId::s8_conv_nhwc_implicit_gemm_mma_64x64, 64, 64, true},
    {KernelId::s8_conv_nhwc_implicit_gemm_mma_64x64_splitk, 64, 64, true, true},
    {KernelId::s8_conv_nhwc_implicit_gemm_mma_64x64_persist, 64, 64, false, false, true},
    {KernelId::s8_conv_nhwc_implicit_gemm_mma_64x128_persist, 64, 128, false, false, true},
    {KernelId::s8_conv_nhwc_implicit_gemm_mma_128x128_persist, 128, 128, false, false, true},
};

// The split count of the split-K variant for this shape (as the fp16 kernels pick theirs: about two
// waves of blocks, >= 4 k-tiles per split), 1 where the grid fills the device already.
int s8_splits(const S8Config& c, const QConvShape& s, const DeviceInfo& dev) {
  const IgemmConfig ic{c.id, c.bm, c.bn, 128, true, c.scalar};
  IgemmParams p;  // what the pick reads: the GEMM's sizes (int8 pairs as halves, as half_view)
  p.m = s.n * s.p() * s.q(), p.kn = s.k, p.kgemm = s.r * s.s * s.c / 2, p.z = 1;
  return igemm_pick_splits(ic, p, dev);
}

size_t s8_split_workspace(const QConvShape& s, int splits) {
  return static_cast<size_t>(splits) * s.n * s.p() * s.q() * ceil_div(s.k, 8) * 8 * sizeof(int32_t);
}

}  // namespace

int64_t qconv_acc_bound(const int8_t* w, int k, int64_t per_k, const int32_t* bias, int x_zero_point) {
  const int64_t xmax = std::max<int64_t>(128 + x_zero_point, 127 - x_zero_point);  // max |x - x_zp|, int8 x
  int64_t bound = 0;
  for (int o = 0; o < k; ++o) {
    int64_t sum = 0;
    for (int64_t i = 0; i < per_k; ++i) sum += std::abs(static_cast<int>(w[o * per_k + i]));
    bound = std::max(bound, xmax * sum + (bias ? std::abs(static_cast<int64_t>(bias[o])) : 0));
  }
  return bound;
}

float qconv_sy_max(const double* scale, int k, double inv_y) {
  float m = 0.f;
  for (int i = 0; i < k; ++i) {
    const float sy = static_cast<float>(scale[i] * inv_y);  // as load_chan8 (s8_igemm.h)
    if (!std::isfinite(sy)) return INFINITY;
    m = std::max(m, std::fabs(sy));
  }
  return m;
}

std::vector<int32_t> qconv_epilogue_rows(const double* scale, int k, double inv_y) {
  std::vector<int32_t> rows(static_cast<size_t>(k));
  for (int i = 0; i < k; ++i) {
    const float sy = static_cast<float>(scale[i] * inv_y);  // as load_chan8 (s8_igemm.h)
    std::memcpy(&rows[i], &sy, sizeof sy);
  }
  return rows;
}

Status qconv_check(const QConvShape& s) {
  if (s.n < 1 || s.h < 1 || s.w < 1 || s.c < 1 || s.k < 1 || s.r < 1 || s.s < 1) return {"qconv: empty shape"};
  if (s.stride_h < 1 || s.stride_w < 1 || s.dil_h < 1 || s.dil_w < 1)
    return {"qconv: stride and dilation must be >= 1"};
  if (s.pad_t < 0 || s.pad_l < 0 || s.pad_b < 0 || s.pad_r < 0) return {"qconv: negative padding"};
  if (s.p() < 1 || s.q() < 1) return {"qconv: output would be empty"};
  if (s.c % 2) return {"qconv: the int8 kernels need an even channel count (pad the channels or run it elsewhere)"};
  const int64_t xps = s.x_pixel_stride ? s.x_pixel_stride : s.c;
  if (xps % 2 || s.x_c_offset % 2 || xps < s.c + s.x_c_offset)
    return {"qconv: input pixel stride / channel offset must be even"};
  if (static_cast<int64_t>(s.r) * s.s * s.c > (int64_t{1} << 30)) return {"qconv: reduction too large"};
  if (s.x_zero_point && (s.pad_t || s.pad_l || s.pad_b || s.pad_r))
    return {"qconv: a nonzero input zero point with padding is not supported (the loaders pad with 0)"};
  if (s.x_zero_point < -128 || s.x_zero_point > 127) return {"qconv: int8 input zero point out of range"};
  if (!act_supported(s.act)) return {"qconv: activation must be none, Relu, LeakyRelu or Clip"};
  return {};
}

std::vector<Candidate> qconv_candidates(const QConvShape& s, const DeviceInfo& dev) {
  std::vector<Candidate> out;
  if (!qconv_check(s).ok()) return out;
  const int64_t xps = s.x_pixel_stride ? s.x_pixel_stride : s.c;
  const bool vec = s.c % 16 == 0 && xps % 16 == 0 && s.x_c_offset % 16 == 0;
  const int64_t m = static_cast<int64_t>(s.n) * s.p() * s.q();
  // Big tiles first when they still give each multiprocessor a block, else the small ones.
  const bool big = ceil_div(m, 128) * ceil_div(s.k, 128) >= dev.sm_count;
  const KernelId order_big[] = {
      KernelId::s8_conv_nhwc_implicit_gemm_mma_128x128, KernelId::s8_conv_nhwc_implicit_gemm_mma_256x128,
      KernelId::s8_conv_nhwc_implicit_gemm_mma_128x64, KernelId::s8_conv_nhwc_implicit_gemm_mma_64x64};
  const KernelId order_small[] = {
      KernelId::s8_conv_nhwc_implicit_gemm_mma_64x64, KernelId::s8_conv_nhwc_implicit_gemm_mma_128x64,
      KernelId::s8_conv_nhwc_implicit_gemm_mma_128x128, KernelId::s8_conv_nhwc_implicit_gemm_mma_256x128};
  // Hopper: the warpgroup variants first (vector gathers only), the big tiles when they fill the device.
  if (dev.wgmma && vec) {
    const bool huge = ceil_div(m, 128) * ceil_div(s.k, 256) >= dev.sm_count;
    const KernelId wg_big[] = {
        KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x256,    KernelId::s8_conv_nhwc_implicit_gemm_wgmma_256x128,
        KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x128_s2, KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x128,
        KernelId::s8_conv_nhwc_implicit_gemm_wgmma_64x128_s2,  KernelId::s8_conv_nhwc_implicit_gemm_wgmma_64x128};
    const KernelId wg_small[] = {
        KernelId::s8_conv_nhwc_implicit_gemm_wgmma_64x128_s2,  KernelId::s8_conv_nhwc_implicit_gemm_wgmma_64x128,
        KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x128_s2, KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x128,
        KernelId::s8_conv_nhwc_implicit_gemm_wgmma_128x256,    KernelId::s8_conv_nhwc_implicit_gemm_wgmma_256x128};
    for (const KernelId id : huge ? wg_big : wg_small) {
      const size_t smem = s8_wgmma_smem_bytes(id);
      if (dev.smem_optin > 0 && smem > static_cast<size_t>(dev.smem_optin)) continue;
      out.push_back({id, kernel_info(id).name, 0, 1});
    }
  }
  for (const KernelId id : big ? order_big : order_small)
    for (const S8Config& c : kConfigs) {
      if (c.id != id) continue;
      if (!vec && !c.scalar) continue;
      const size_t smem = static_cast<size_t>(arch::kIgemmStages) * (c.bm + c.bn) * kTileK * 2;
      if (dev.smem_optin > 0 && smem > static_cast<size_t>(dev.smem_optin)) continue;
      out.push_back({c.id, kernel_info(c.id).name, 0, 1});
    }
  // The persistent kernel where the whole reduction fits its shared memory (K <= 256 int8).
  const int64_t kt = ceil_div(static_cast<int64_t>(s.r) * s.s * s.c, 2 * kTileK);
  if (vec && kt <= kPersistMaxKt)
    for (const S8Config& c : kConfigs) {
      if (!c.persist) continue;
      const int smem = persist_smem_bytes(c.bm, c.bn, static_cast<int>(kt), s.has_residual);
      if (smem > arch::kMaxSmemBytes || (dev.smem_optin > 0 && smem > dev.smem_optin)) continue;
      out.push_back({c.id, kernel_info(c.id).name, 0, 1});
    }
  // CUTLASS 3 (Hopper, when built in): the GEMM for 1x1 stride-1 layers, the implicit-GEMM
  // convolution for the rest; their tile schedulers size the grids themselves.
  if (dev.wgmma && s8_cutlass_built()) {
    if (s8_cutlass_gemm_supports(s))
      for (const KernelId id : kCutlassGemmVariants) out.push_back({id, kernel_info(id).name, 0, 1});
    if (s8_cutlass_conv_supports(s))
      for (const KernelId id :
           {KernelId::s8_conv_nhwc_cutlass_conv_128x128_k128, KernelId::s8_conv_nhwc_cutlass_conv_128x128})
        out.push_back({id, kernel_info(id).name, 0, 1});
  }
  // Split-K where the grid leaves most multiprocessors idle (the deep layers at batch 1).
  for (const S8Config& c : kConfigs)
    if (c.split && (vec || c.scalar)) {
      const int splits = s8_splits(c, s, dev);
      if (splits > 1) out.push_back({c.id, kernel_info(c.id).name, s8_split_workspace(s, splits), splits});
    }
  return out;
}

Status qconv_forward(const QConvShape& s, const Candidate& c, const QConvTensors& t, gpuStream_t stream) {
  Status st = qconv_check(s);
  if (!st.ok()) return st;
  if (!t.x.data || !t.w || !t.y.data || !t.scale) return {"qconv: missing x, w, y or scale"};
  if (s.x_zero_point && !t.wsum) return {"qconv: a nonzero input zero point needs the filter sums"};
  if (s.has_residual != (t.z.data != nullptr)) return {"qconv: residual pointer does not match the shape"};
  if (reinterpret_cast<uintptr_t>(t.x.data) % 2 || reinterpret_cast<uintptr_t>(t.w) % 2)
    return {"qconv: x and w must be 2-byte aligned"};
  if (s8_cutlass_gemm_is_variant(c.id)) return s8_cutlass_gemm_run(c.id, s, t, stream);
  if (s8_cutlass_conv_is_variant(c.id)) return s8_cutlass_conv_run(c.id, s, t, stream);
  IgemmParams p = half_view(s, t);
  p.n_tiles = 0;
  const QEpi q = make_qepi(s, t);
  if (s8_wgmma_is_variant(c.id)) return s8_wgmma_run(c.id, p, q, stream);
  const IgemmMode mode = igemm_pick_mode(p);
  for (const S8Config& cfg : kConfigs) {
    if (cfg.id != c.id) continue;
    p.n_tiles = static_cast<int>(ceil_div(p.kn, cfg.bn));
    if (cfg.persist) {
      switch (cfg.id) {
        case KernelId::s8_conv_nhwc_implicit_gemm_mma_64x64_persist:
          return launch_persist_modes<64, 64, 128>(mode, p, q, stream);
        case KernelId::s8_conv_nhwc_implicit_gemm_mma_64x128_persist:
          return launch_persist_modes<64, 128, 128>(mode, p, q, stream);
        default: return launch_persist_modes<128, 128, 256>(mode, p, q, stream);
      }
    }
    if (cfg.split) {
      p.splits = c.splits;
      p.kt_per_split = static_cast<int>(ceil_div(p.kt, std::max(1, p.splits)));
      p.kn_pad = static_cast<int>(ceil_div(p.kn, 8) * 8);
      if (p.splits < 2 || ceil_div(p.kt, p.kt_per_split) != p.splits)
        return {"qconv: the split-K variant needs a split count that leaves no split empty"};
      if (!t.ws || t.ws_bytes < s8_split_workspace(s, p.splits)) return {"qconv: split-K workspace too small"};
      if (reinterpret_cast<uintptr_t>(t.ws) % 16) return {"qconv: split-K workspace not 16-byte aligned"};
      p.ws = static_cast<float*>(t.ws);  // holds int32 partials
      return launch_modes<64, 64, 128, true, true>(mode, p, q, stream);
    }
    switch (cfg.id) {
      case KernelId::s8_conv_nhwc_implicit_gemm_mma_256x128:
        return launch_modes<256, 128, 256, false>(mode, p, q, stream);
      case KernelId::s8_conv_nhwc_implicit_gemm_mma_128x128:
        return launch_modes<128, 128, 256, false>(mode, p, q, stream);
      case KernelId::s8_conv_nhwc_implicit_gemm_mma_128x64: return launch_modes<128, 64, 128, true>(mode, p, q, stream);
      case KernelId::s8_conv_nhwc_implicit_gemm_mma_64x64: return launch_modes<64, 64, 128, true>(mode, p, q, stream);
      default: break;
    }
  }
  return {"qconv: not an int8 implicit-GEMM variant"};
}

}  // namespace infera::gpu
