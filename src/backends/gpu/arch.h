// Per-architecture constants and the warp-level matrix-multiply wrappers: the only place besides
// vendor.h with a vendor or architecture #if. Kernels are written once against these names:
//   kWarpSize          32 on NVIDIA and gfx1030 (wave32), 64 on gfx908/gfx90a (CDNA wave64)
//   cp_async16 & co.   cp.async (sm_80+) or a plain 16-byte load + shared store (HIP)
//   WarpMma<WM, WN>    one warp's WM x WN fp32 accumulator tile, fed from fp16 shared-memory
//                      tiles: mma.sync m16n8k16 + ldmatrix (sm_80/sm_90), MFMA 32x32x8 f16
//                      (gfx908/gfx90a), packed-fp16 dot2 (gfx1030, no matrix cores), plain FMAs
//                      elsewhere (and in the host pass, where it is never run).
#pragma once

#include <cstdint>

#include "backends/gpu/vendor.h"

// Which device path this compilation pass takes. Host passes take the generic branch.
#if defined(INFERA_GPU_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define INFERA_GPU_MMA_SM80 1
#elif defined(INFERA_GPU_HIP) && (defined(__gfx908__) || defined(__gfx90a__))
#define INFERA_GPU_MMA_MFMA 1
#elif defined(INFERA_GPU_HIP) && defined(__gfx1030__)
#define INFERA_GPU_MMA_DOT2 1
#endif

namespace infera::gpu::arch {

// ---- host-visible per-vendor constants (the host cannot know the wavefront size of the device
// it will launch on, so block sizes are in threads and warp layouts are derived in device code).
#if defined(INFERA_GPU_HIP)
inline constexpr int kIgemmStages = 2;           // no async copy: plain double buffering
inline constexpr int kMaxSmemBytes = 64 * 1024;  // LDS per workgroup (gfx908/gfx90a/gfx1030)
#else
inline constexpr int kIgemmStages = 4;            // cp.async pipeline depth
inline constexpr int kMaxSmemBytes = 227 * 1024;  // sm_90 opt-in limit; sm_80 checked at run time
#endif

// How the activation function is emitted into epilogues: inlined on NVIDIA; a call on AMD, where
// the inlined switch over every kind made fully unrolled register-tile epilogues too large to unroll.
#if defined(INFERA_GPU_HIP)
#define INFERA_GPU_ACT_FN __device__ __noinline__
#else
#define INFERA_GPU_ACT_FN __device__ __forceinline__
#endif

// ---- device-side constants
#if defined(__AMDGCN_WAVEFRONT_SIZE)
inline constexpr int kWarpSize = __AMDGCN_WAVEFRONT_SIZE;
#else
inline constexpr int kWarpSize = 32;
#endif

__device__ inline float warp_shfl_xor(float v, int mask) {
#if defined(INFERA_GPU_HIP)
  return __shfl_xor(v, mask);
#else
  return __shfl_xor_sync(0xffffffffu, v, mask);
#endif
}

__device__ inline float h2f(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
__device__ inline uint16_t f2h(float v) { return __half_as_ushort(__float2half_rn(v)); }

// Shared-memory address of a generic pointer into shared memory (the form descriptors and
// ldmatrix take). On HIP only the low bits matter to the code that uses it (never run there).
__device__ inline unsigned smem_addr(const void* p) {
#if defined(INFERA_GPU_CUDA)
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
#else
  return static_cast<unsigned>(reinterpret_cast<uintptr_t>(p));
#endif
}

// ---- programmatic dependent launch (sm_90). A kernel started by launch_dependent() may be
// scheduled while the kernel before it in the stream still runs (its launch and prologue overlap
// that kernel's tail: ~1-2 us a kernel at batch 1). Such a kernel calls pdl_wait() before it reads
// anything earlier work wrote or writes anything earlier work reads (constants such as weights may
// be loaded before), and pdl_trigger() to let its own dependents be scheduled (once every block of
// it has started: a dependent never takes a slot a block of this kernel still waits for). Both are
// no-ops elsewhere and in ordinary launches.
__device__ inline void pdl_wait() {
#if defined(INFERA_GPU_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ inline void pdl_trigger() {
#if defined(INFERA_GPU_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif
}

// The largest grid (in blocks) launch_dependent() launches as a programmatic dependent:
// kPdlBlocksPerSm blocks per multiprocessor on devices of compute capability 9.0 and up (CUDA), 0
// (never) elsewhere; INFERA_GPU_PDL=N sets the blocks per multiprocessor (0: off; read once: the
// A/B switch). Larger grids are throughput-bound: the overlap saves nothing there. Measured on an
// H100 (ResNet-50 int8): batch 1 0.414 -> 0.371 ms at 1, 2 or 4 blocks / SM, but batch 32 1.389 ->
// 1.405 ms at each of them (not explained; a per-plan switch is the next step).
inline constexpr int kPdlBlocksPerSm = 2;
int64_t pdl_block_limit();

// Launches kernel<<<grid, block, smem, stream>>>(args...), as a programmatic dependent of the work
// before it in the stream when the grid is within pdl_block_limit(). The kernel must call
// pdl_wait() as described above.
template <class... P, class... A>
gpuError_t launch_dependent(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, gpuStream_t stream, A&&... args) {
#if defined(INFERA_GPU_CUDA)
  if (int64_t{grid.x} * grid.y * grid.z <= pdl_block_limit()) {
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = stream;
    cfg.attrs = attr, cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, static_cast<P>(args)...);
  }
#endif
  kernel<<<grid, block, smem, stream>>>(static_cast<P>(args)...);
  return gpuGetLastError();
}

// ---- asynchronous global -> shared copies of 16 bytes; pred false writes zeros.
__device__ inline void cp_async16(void* smem, const void* gmem, bool pred) {
#if defined(INFERA_GPU_MMA_SM80)
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(pred ? 16 : 0));
#else
  *static_cast<uint4*>(smem) = pred ? *static_cast<const uint4*>(gmem) : make_uint4(0, 0, 0, 0);
#endif
}
__device__ inline void cp_async_commit() {
#if defined(INFERA_GPU_MMA_SM80)
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
__device__ inline void cp_async_wait() {
#if defined(INFERA_GPU_MMA_SM80)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// ---- shared-memory tile layout of the fp16 GEMM kernels: rows of kTileK halves (4 chunks of 16
// bytes), K contiguous; the chunk index is XORed with (row / 2) % 4 so that 8 consecutive rows at
// one chunk (an ldmatrix phase, or 8 lanes of a cp.async) land in 8 different 16-byte bank groups.
inline constexpr int kTileK = 32;
__host__ __device__ constexpr int swz(int row, int chunk) { return row * kTileK + ((chunk ^ ((row >> 1) & 3)) << 3); }

// How NT threads split a BM x BN block tile into warps (device side: depends on kWarpSize).
template <int BM, int BN, int NT>
struct WarpLayout {
  static constexpr int kWarps = NT / kWarpSize;
  static constexpr int kWarpsM = kWarps >= 8   ? (BM > BN ? 4 : 2)
                                 : kWarps == 4 ? 2
                                 : kWarps == 2 ? (BM >= BN ? 2 : 1)
                                               : 1;
  static constexpr int kWarpsN = kWarps / kWarpsM;
  static constexpr int kWM = BM / kWarpsM;
  static constexpr int kWN = BN / kWarpsN;
  static_assert(kWarpsM * kWarpsN == kWarps, "warp layout");
};

#if defined(INFERA_GPU_MMA_SM80)
// mma.sync m16n8k16 (f16 x f16 -> f32): A fragments by ldmatrix.x4 of 16 rows x 16 k, B fragments
// by ldmatrix.x4 of 16 output columns x 16 k (B is stored [n][k], the "col" operand).
template <int WM, int WN>
struct WarpMma {
  static_assert(WM % 16 == 0 && WN % 16 == 0, "sm80 warp tile");
  static constexpr int kMT = WM / 16, kNT = WN / 8;
  float acc[kMT][kNT][4];

  __device__ void zero() {
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
  }

  // One k16 slice (ks = 0 or 1 of the kTileK = 32 tile). a_row0/b_row0: the warp's first row in
  // the block's A and B tiles.
  __device__ void step(const uint16_t* sA, const uint16_t* sB, int a_row0, int b_row0, int ks, int lane) {
    const unsigned a_base = static_cast<unsigned>(__cvta_generic_to_shared(sA));
    const unsigned b_base = static_cast<unsigned>(__cvta_generic_to_shared(sB));
    unsigned a[kMT][4], b[kNT / 2][4];
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
      const int row = a_row0 + i * 16 + (lane & 15);
      const unsigned addr = a_base + 2u * swz(row, ks * 2 + (lane >> 4));
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(a[i][0]), "=r"(a[i][1]), "=r"(a[i][2]), "=r"(a[i][3])
                   : "r"(addr));
    }
#pragma unroll
    for (int j = 0; j < kNT / 2; ++j) {
      const int row = b_row0 + j * 16 + (lane & 7) + ((lane >> 4) << 3);
      const unsigned addr = b_base + 2u * swz(row, ks * 2 + ((lane >> 3) & 1));
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(b[j][0]), "=r"(b[j][1]), "=r"(b[j][2]), "=r"(b[j][3])
                   : "r"(addr));
    }
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        float* c = acc[i][j];
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j >> 1][(j & 1) * 2]),
              "r"(b[j >> 1][(j & 1) * 2 + 1]));
      }
  }

  // Writes the accumulators whose row (in the warp tile, offset by row0) falls in [lo, lo + rows)
  // to tile[(row - lo) * pitch + col0 + col] (fp32). Pairs of columns go out as one 8-byte store.
  __device__ void store(float* tile, int pitch, int row0, int col0, int lo, int rows, int lane) const {
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + i * 16 + (lane >> 2) + h * 8 - lo;
        if (row < 0 || row >= rows) continue;
#pragma unroll
        for (int j = 0; j < kNT; ++j) {
          const int col = col0 + j * 8 + (lane & 3) * 2;
          *reinterpret_cast<float2*>(tile + row * pitch + col) = make_float2(acc[i][j][h * 2], acc[i][j][h * 2 + 1]);
        }
      }
  }
};

#elif defined(INFERA_GPU_MMA_MFMA)
// v_mfma_f32_32x32x8f16 on a wave64: lane l holds A[l % 32][(l / 32) * 4 + 0..3] and the same of
// B^T (B is stored [n][k]); accumulator v of lane l is C[(v / 4) * 8 + (l / 32) * 4 + v % 4][l % 32].
typedef _Float16 half4_t __attribute__((ext_vector_type(4)));
typedef float float16_t __attribute__((ext_vector_type(16)));

template <int WM, int WN>
struct WarpMma {
  static_assert(WM % 32 == 0 && WN % 32 == 0, "mfma warp tile");
  static constexpr int kMT = WM / 32, kNT = WN / 32;
  float16_t acc[kMT][kNT];

  __device__ void zero() {
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int v = 0; v < 16; ++v) acc[i][j][v] = 0.f;
  }

  __device__ void step(const uint16_t* sA, const uint16_t* sB, int a_row0, int b_row0, int ks, int lane) {
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      const int chunk = ks * 2 + kk, within = (lane >> 5) * 4;
      half4_t a[kMT], b[kNT];
#pragma unroll
      for (int i = 0; i < kMT; ++i)
        a[i] = *reinterpret_cast<const half4_t*>(sA + swz(a_row0 + i * 32 + (lane & 31), chunk) + within);
#pragma unroll
      for (int j = 0; j < kNT; ++j)
        b[j] = *reinterpret_cast<const half4_t*>(sB + swz(b_row0 + j * 32 + (lane & 31), chunk) + within);
#pragma unroll
      for (int i = 0; i < kMT; ++i)
#pragma unroll
        for (int j = 0; j < kNT; ++j) acc[i][j] = __builtin_amdgcn_mfma_f32_32x32x8f16(a[i], b[j], acc[i][j], 0, 0, 0);
    }
  }

  __device__ void store(float* tile, int pitch, int row0, int col0, int lo, int rows, int lane) const {
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int v = 0; v < 16; ++v) {
          const int row = row0 + i * 32 + (v >> 2) * 8 + (lane >> 5) * 4 + (v & 3) - lo;
          if (row >= 0 && row < rows) tile[row * pitch + col0 + j * 32 + (lane & 31)] = acc[i][j][v];
        }
  }
};

#else
// No matrix unit: the warp's lanes form a kLR x 8 grid, each lane owning rows lr + kLR*i and
// columns lc + 8*j of the warp tile; a 16-byte chunk of k is consumed per (row, column) pair by
// packed-fp16 dot2 on gfx1030 and by plain FMAs elsewhere.
template <int WM, int WN>
struct WarpMma {
  static constexpr int kLC = 8, kLR = kWarpSize / kLC;
  static_assert(WM % kLR == 0 && WN % kLC == 0, "simt warp tile");
  static constexpr int kRows = WM / kLR, kCols = WN / kLC;
  float acc[kRows][kCols];

  __device__ void zero() {
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kCols; ++j) acc[i][j] = 0.f;
  }

  __device__ static float dot8(const uint4& a, const uint4& b, float c) {
    const unsigned av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
    for (int t = 0; t < 4; ++t) {
#if defined(INFERA_GPU_MMA_DOT2)
      typedef _Float16 half2_t __attribute__((ext_vector_type(2)));
      c = __builtin_amdgcn_fdot2(__builtin_bit_cast(half2_t, av[t]), __builtin_bit_cast(half2_t, bv[t]), c, false);
#else
      c += h2f(static_cast<uint16_t>(av[t] & 0xffffu)) * h2f(static_cast<uint16_t>(bv[t] & 0xffffu));
      c += h2f(static_cast<uint16_t>(av[t] >> 16)) * h2f(static_cast<uint16_t>(bv[t] >> 16));
#endif
    }
    return c;
  }

  __device__ void step(const uint16_t* sA, const uint16_t* sB, int a_row0, int b_row0, int ks, int lane) {
    const int lr = lane / kLC, lc = lane % kLC;
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      const int chunk = ks * 2 + kk;
      uint4 b[kCols];
#pragma unroll
      for (int j = 0; j < kCols; ++j) b[j] = *reinterpret_cast<const uint4*>(sB + swz(b_row0 + lc + kLC * j, chunk));
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        const uint4 a = *reinterpret_cast<const uint4*>(sA + swz(a_row0 + lr + kLR * i, chunk));
#pragma unroll
        for (int j = 0; j < kCols; ++j) acc[i][j] = dot8(a, b[j], acc[i][j]);
      }
    }
  }

  __device__ void store(float* tile, int pitch, int row0, int col0, int lo, int rows, int lane) const {
    const int lr = lane / kLC, lc = lane % kLC;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int row = row0 + lr + kLR * i - lo;
      if (row < 0 || row >= rows) continue;
#pragma unroll
      for (int j = 0; j < kCols; ++j) tile[row * pitch + col0 + lc + kLC * j] = acc[i][j];
    }
  }
};
#endif

// ---- int8 warp MMA (s8 x s8 -> s32) over the same shared tiles: a row of kTileK "halves" holds
// 64 int8 of k, so each step(ks) (ks = 0, 1) consumes 32 int8 of k. On sm_80+ the register
// fragments of mma.m16n8k32.s8 are those of m16n8k16.f16 with 4 int8 per 32-bit register, so the
// ldmatrix addressing is the fp16 one. MFMA i32_32x32x8i8 on gfx908/gfx90a (two per 16-byte chunk),
// sdot4 on gfx1030, plain integer multiply-adds elsewhere (and in the host pass, never run).
#if defined(INFERA_GPU_MMA_SM80)
template <int WM, int WN>
struct WarpMmaS8 {
  static_assert(WM % 16 == 0 && WN % 16 == 0, "sm80 warp tile");
  static constexpr int kMT = WM / 16, kNT = WN / 8;
  int acc[kMT][kNT][4];

  __device__ void zero() {
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0;
  }

  __device__ void step(const uint16_t* sA, const uint16_t* sB, int a_row0, int b_row0, int ks, int lane) {
    const unsigned a_base = static_cast<unsigned>(__cvta_generic_to_shared(sA));
    const unsigned b_base = static_cast<unsigned>(__cvta_generic_to_shared(sB));
    unsigned a[kMT][4], b[kNT / 2][4];
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
      const int row = a_row0 + i * 16 + (lane & 15);
      const unsigned addr = a_base + 2u * swz(row, ks * 2 + (lane >> 4));
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(a[i][0]), "=r"(a[i][1]), "=r"(a[i][2]), "=r"(a[i][3])
                   : "r"(addr));
    }
#pragma unroll
    for (int j = 0; j < kNT / 2; ++j) {
      const int row = b_row0 + j * 16 + (lane & 7) + ((lane >> 4) << 3);
      const unsigned addr = b_base + 2u * swz(row, ks * 2 + ((lane >> 3) & 1));
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(b[j][0]), "=r"(b[j][1]), "=r"(b[j][2]), "=r"(b[j][3])
                   : "r"(addr));
    }
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        int* c = acc[i][j];
        asm volatile(
            "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
            : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j >> 1][(j & 1) * 2]),
              "r"(b[j >> 1][(j & 1) * 2 + 1]));
      }
  }

  __device__ void store(int* tile, int pitch, int row0, int col0, int lo, int rows, int lane) const {
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + i * 16 + (lane >> 2) + h * 8 - lo;
        if (row < 0 || row >= rows) continue;
#pragma unroll
        for (int j = 0; j < kNT; ++j) {
          const int col = col0 + j * 8 + (lane & 3) * 2;
          *reinterpret_cast<int2*>(tile + row * pitch + col) = make_int2(acc[i][j][h * 2], acc[i][j][h * 2 + 1]);
        }
      }
  }
};

#elif defined(INFERA_GPU_MMA_MFMA)
// v_mfma_i32_32x32x8i8 on a wave64: lane l holds A[l % 32][(l / 32) * 4 + 0..3] (4 int8 in one
// register) of an 8-deep k slice, and the same of B^T; the accumulator layout is the f16 one.
typedef int int16_t_vec __attribute__((ext_vector_type(16)));

template <int WM, int WN>
struct WarpMmaS8 {
  static_assert(WM % 32 == 0 && WN % 32 == 0, "mfma warp tile");
  static constexpr int kMT = WM / 32, kNT = WN / 32;
  int16_t_vec acc[kMT][kNT];

  __device__ void zero() {
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int v = 0; v < 16; ++v) acc[i][j][v] = 0;
  }

  __device__ void step(const uint16_t* sA, const uint16_t* sB, int a_row0, int b_row0, int ks, int lane) {
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {  // four k8 slices of the 32 int8 of this step
      const int chunk = ks * 2 + (kk >> 1), within = (kk & 1) * 4 + (lane >> 5) * 2;  // in halves
      int a[kMT], b[kNT];
#pragma unroll
      for (int i = 0; i < kMT; ++i)
        a[i] = *reinterpret_cast<const int*>(sA + swz(a_row0 + i * 32 + (lane & 31), chunk) + within);
#pragma unroll
      for (int j = 0; j < kNT; ++j)
        b[j] = *reinterpret_cast<const int*>(sB + swz(b_row0 + j * 32 + (lane & 31), chunk) + within);
#pragma unroll
      for (int i = 0; i < kMT; ++i)
#pragma unroll
        for (int j = 0; j < kNT; ++j) acc[i][j] = __builtin_amdgcn_mfma_i32_32x32x8i8(a[i], b[j], acc[i][j], 0, 0, 0);
    }
  }

  __device__ void store(int* tile, int pitch, int row0, int col0, int lo, int rows, int lane) const {
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int v = 0; v < 16; ++v) {
          const int row = row0 + i * 32 + (v >> 2) * 8 + (lane >> 5) * 4 + (v & 3) - lo;
          if (row >= 0 && row < rows) tile[row * pitch + col0 + j * 32 + (lane & 31)] = acc[i][j][v];
        }
  }
};

#else
// No integer matrix unit: the SIMT layout of WarpMma above; a 16-byte chunk (16 int8 of k) per
// (row, column) pair by four sdot4 on gfx1030, plain multiply-adds elsewhere.
template <int WM, int WN>
struct WarpMmaS8 {
  static constexpr int kLC = 8, kLR = kWarpSize / kLC;
  static_assert(WM % kLR == 0 && WN % kLC == 0, "simt warp tile");
  static constexpr int kRows = WM / kLR, kCols = WN / kLC;
  int acc[kRows][kCols];

  __device__ void zero() {
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kCols; ++j) acc[i][j] = 0;
  }

  __device__ static int dot16(const uint4& a, const uint4& b, int c) {
    const int av[4] = {int(a.x), int(a.y), int(a.z), int(a.w)}, bv[4] = {int(b.x), int(b.y), int(b.z), int(b.w)};
#pragma unroll
    for (int t = 0; t < 4; ++t) {
#if defined(INFERA_GPU_MMA_DOT2)
      c = __builtin_amdgcn_sdot4(av[t], bv[t], c, false);
#else
#pragma unroll
      for (int e = 0; e < 4; ++e)
        c += int(static_cast<int8_t>(av[t] >> (8 * e))) * int(static_cast<int8_t>(bv[t] >> (8 * e)));
#endif
    }
    return c;
  }

  __device__ void step(const uint16_t* sA, const uint16_t* sB, int a_row0, int b_row0, int ks, int lane) {
    const int lr = lane / kLC, lc = lane % kLC;
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      const int chunk = ks * 2 + kk;
      uint4 b[kCols];
#pragma unroll
      for (int j = 0; j < kCols; ++j) b[j] = *reinterpret_cast<const uint4*>(sB + swz(b_row0 + lc + kLC * j, chunk));
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        const uint4 a = *reinterpret_cast<const uint4*>(sA + swz(a_row0 + lr + kLR * i, chunk));
#pragma unroll
        for (int j = 0; j < kCols; ++j) acc[i][j] = dot16(a, b[j], acc[i][j]);
      }
    }
  }

  __device__ void store(int* tile, int pitch, int row0, int col0, int lo, int rows, int lane) const {
    const int lr = lane / kLC, lc = lane % kLC;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int row = row0 + lr + kLR * i - lo;
      if (row < 0 || row >= rows) continue;
#pragma unroll
      for (int j = 0; j < kCols; ++j) tile[row * pitch + col0 + lc + kLC * j] = acc[i][j];
    }
  }
};
#endif

// ---- Hopper warpgroup MMA (wgmma, sm_90a only: the _sm90 kernel files are built for
// compute_90a). A warpgroup (4 consecutive warps, 128 threads) multiplies a 64 x 16 A slice by a
// 16 x 128 B slice, both read by the tensor cores straight from shared memory through matrix
// descriptors; tiles are K-major rows of 64 halves (128 bytes) in the 128-byte swizzle
// (16-byte chunk c of row r stored at chunk c ^ (r % 8)), 1024-byte aligned.
#if defined(INFERA_GPU_CUDA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define INFERA_GPU_WGMMA 1
#endif
inline constexpr int kWgmmaTileK = 64;
__host__ __device__ constexpr int swz128(int row, int chunk) { return row * kWgmmaTileK + ((chunk ^ (row & 7)) << 3); }

#if defined(INFERA_GPU_WGMMA)
inline constexpr bool kWgmmaDevice = true;
// Descriptor of a K-major, 128B-swizzled tile at shared address addr: start >> 4, leading byte
// offset 16 (unused by this layout), stride byte offset 1024 (one 8-row swizzle atom), swizzle mode 1.
__device__ inline uint64_t wgmma_desc(unsigned addr) {
  return (uint64_t{(addr & 0x3ffffu) >> 4}) | (uint64_t{16 >> 4} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}
__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Shared memory written by the generic proxy (cp.async, st.shared) before the tensor cores read it.
__device__ inline void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// d (64 fp32 per thread) += A(64x16, desc a) * B(16x128, desc b); both K-major.
// Thread t of the warpgroup (warp w = t / 32, lane l) holds, for n-block j (8 columns):
// d[4j + e] = C[16w + l/4 + 8(e/2)][8j + 2(l%4) + e%2].
__device__ inline void wgmma_m64n128k16(float* d, uint64_t a, uint64_t b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
      "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, "
      "0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b), "r"(1));
}
// The int8 variant: d (64 int32 per thread, the same fragment layout) += A(64x32 s8) * B(32x128
// s8), both K-major: a row of 128 bytes holds 128 int8 of K, so the descriptors and the 32-byte
// step per instruction are those of the fp16 one.
__device__ inline void wgmma_m64n128k32_s8(int* d, uint64_t a, uint64_t b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
      "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p;\n"
      "}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]),
        "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]),
        "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]),
        "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]),
        "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]),
        "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
        "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]),
        "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
      : "l"(a), "l"(b), "r"(1));
}
#else
// Other passes (sm_80, sm_90 without "a", HIP, host): no-ops, never run — the host offers the
// wgmma variants only when the device's code was built with them (igemm_wgmma_built()).
inline constexpr bool kWgmmaDevice = false;
__device__ inline uint64_t wgmma_desc(unsigned) { return 0; }
__device__ inline void wgmma_fence() {}
__device__ inline void wgmma_commit() {}
template <int N>
__device__ inline void wgmma_wait() {}
__device__ inline void fence_proxy_async() {}
__device__ inline void wgmma_m64n128k16(float*, uint64_t, uint64_t) {}
__device__ inline void wgmma_m64n128k32_s8(int*, uint64_t, uint64_t) {}
#endif

}  // namespace infera::gpu::arch
