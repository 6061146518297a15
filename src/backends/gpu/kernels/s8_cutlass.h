// Internal: CUTLASS 3 candidates for com.infera.QConv on Hopper (sm_90a; issue 11 names CUTLASS as
// an NVIDIA candidate beside our portable kernels). Two objects instantiate them:
//   s8_conv_cutlass_gemm_sm90.cu  1x1 stride-1 convolutions as GEMMs (x [M, C] row-major times
//                                 w [K, C]: CUTLASS's column-major B), TMA warp-specialized
//                                 cooperative, persistent;
//   s8_conv_cutlass_conv_sm90.cu  any other shape as CUTLASS's implicit-GEMM convolution (TMA
//                                 im2col loads; sm_90 convolutions have only the non-persistent
//                                 warp-specialized schedule).
// (Two objects: CUTLASS 2's GemmUniversal, which the GEMM adapter pulls in, makes the sm_90
// ConvUniversal's base ambiguous when both are seen in one translation unit.)
//
// The epilogue is our requantize, as a CUTLASS epilogue visitor tree whose one compute node
// (Requant below) receives the int32 accumulator and per-channel rows (bias, float(scale * inv_y),
// the channel index) and the int8 residual, and does what s8_igemm.h's requant_store8 does per
// element: the reference's float arithmetic (ops/quant_conv.h's QRequant), bit-exact with the
// reference (kernel tests). Measured before QRequant was float32 (bench/results/
// 2026-12-07-gpu-int8-cutlass-h100.md): the same kernels with a plain float epilogue ran ResNet-50's
// layer1 1x1 convs at 2.0-2.6 TB/s, the double reference's exact epilogue (float arithmetic with a
// rounding-boundary test and the double path) at about a third of that.
//
// Offered (s8_cutlass_*_supports) for int8 x with zero point 0, int8 y, an int8 residual or none,
// C and K multiples of 16 (TMA: 16-byte rows), dilation 1; the run also needs every base pointer and
// pixel stride 16-byte aligned (checked, else an error). Built only when the CUTLASS headers were
// found (INFERA_HAVE_CUTLASS: scripts/setup_debian.sh fetches PyPI's nvidia-cutlass); without them the
// variants exist in kernels/list.h but are never offered.
#pragma once

#include "backends/gpu/kernels.h"

namespace infera::gpu {

// Whether this build carries the CUTLASS candidates (INFERA_HAVE_CUTLASS, CUDA only).
bool s8_cutlass_built();

// The GEMM variants, in the order the search is offered them.
inline constexpr KernelId kCutlassGemmVariants[] = {
    KernelId::s8_conv_nhwc_cutlass_gemm_128x256,   KernelId::s8_conv_nhwc_cutlass_gemm_256x128,
    KernelId::s8_conv_nhwc_cutlass_gemm_128x128,   KernelId::s8_conv_nhwc_cutlass_gemm_256x64,
    KernelId::s8_conv_nhwc_cutlass_gemm_pp_128x64, KernelId::s8_conv_nhwc_cutlass_gemm_pp_64x128};
bool s8_cutlass_gemm_is_variant(KernelId id);
bool s8_cutlass_gemm_supports(const QConvShape& s);
Status s8_cutlass_gemm_run(KernelId id, const QConvShape& s, const QConvTensors& t, gpuStream_t stream);

bool s8_cutlass_conv_is_variant(KernelId id);
bool s8_cutlass_conv_supports(const QConvShape& s);
Status s8_cutlass_conv_run(KernelId id, const QConvShape& s, const QConvTensors& t, gpuStream_t stream);

}  // namespace infera::gpu

#if defined(INFERA_GPU_CUDA) && defined(INFERA_HAVE_CUTLASS) && defined(INFERA_CUTLASS_IMPL)
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/device_kernel.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/kernel_hardware_info.hpp"

#include "backends/gpu/arch.h"
#include "backends/gpu/kernels/activation_device.h"
#include "backends/gpu/kernels/s8_igemm.h"

namespace infera::gpu::cutlass_s8 {

// The requantize node. Its inputs arrive as int32 arrays (Sm90Compute converts every child to the
// compute type, int32 here: exact for all of them): the accumulator, cb = bias (x's zero point is 0),
// sy = float(scale * inv_y) as its bits and the residual byte. It is s8_igemm.h's requant_store8's
// short path per element (float_path_act / float_path_round; the loads and conversions are the
// fragments'). Only with the host's bounds (QEpi::fast; run_requant refuses a layer without them,
// which our kernels then take): no per-element general form, no channel index row.
struct RequantArgs {
  QEpi q;  // make_qepi's constants (q.y / q.z / q.bias / q.scale unused)
};

template <class T>
struct Requant {
  using Arguments = RequantArgs;
};
template <int N>
struct Requant<cutlass::Array<int32_t, N>> {
  using Arguments = RequantArgs;
  using A = cutlass::Array<int32_t, N>;

  template <bool Z>
  CUTLASS_DEVICE static cutlass::Array<int8_t, N> run(const QEpi& q, A const& acc, A const& cb, A const& sy,
                                                      const A* z) {
    // The conversions by the magic constant (FMA-pipe adds, not the quarter-rate I2F) where the
    // value is at most 2^22: the accumulator's sum when q.small (as requant_store8), the residual's
    // difference (at most 510) always.
    float u[N];
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) {
      const int a = static_cast<int>(static_cast<unsigned>(acc[i]) + static_cast<unsigned>(cb[i]));
      const float fa = q.small ? __int_as_float(kMagicBits + a) - kMagic : static_cast<float>(a);
      u[i] = fmul_rn(fa, __int_as_float(sy[i]));
      if constexpr (Z) u[i] = fma_rn(__int_as_float(kMagicBits + (*z)[i] - q.z_zp) - kMagic, q.zs_f, u[i]);
    }
    float_path_act(q, u);
    unsigned bits[N];
    float_path_round(q, u, bits);
    cutlass::Array<int8_t, N> out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) out[i] = static_cast<int8_t>(bits[i] & 0xffu);
    return out;
  }
  CUTLASS_DEVICE cutlass::Array<int8_t, N> operator()(A const& acc, A const& cb, A const& sy,
                                                      RequantArgs const& a) const {
    return run<false>(a.q, acc, cb, sy, nullptr);
  }
  CUTLASS_DEVICE cutlass::Array<int8_t, N> operator()(A const& acc, A const& cb, A const& sy, A const& z,
                                                      RequantArgs const& a) const {
    return run<true>(a.q, acc, cb, sy, &z);
  }
};

namespace fu = cutlass::epilogue::fusion;
using RowStride = cute::Stride<cute::_0, cute::_1, int64_t>;
template <class Tile>
using IntRow = fu::Sm90RowBroadcast<0, Tile, int32_t, int32_t, RowStride, 4>;
using RequantNode = fu::Sm90Compute<Requant, int8_t, int32_t, cutlass::FloatRoundStyle::round_to_nearest>;

// The tree: Requant(acc, cb, sy[, z]).
template <class Tile, bool Res>
using Evt = cute::conditional_t<
    Res, fu::Sm90EVT<RequantNode, fu::Sm90AccFetch, IntRow<Tile>, IntRow<Tile>, fu::Sm90SrcFetch<int8_t>>,
    fu::Sm90EVT<RequantNode, fu::Sm90AccFetch, IntRow<Tile>, IntRow<Tile>>>;

template <class Tile, bool Res>
typename Evt<Tile, Res>::Arguments evt_args(const QConvShape& s, const QConvTensors& t) {
  RequantArgs ra{make_qepi(s, t)};
  // cb is the bias itself (null: the broadcast's default 0); sy is t.epi_rows.
  typename IntRow<Tile>::Arguments cb{t.bias, 0, {}}, sy{t.epi_rows, 0, {}};
  if constexpr (Res) {
    return {{}, cb, sy, {}, ra};
  } else {
    return {{}, cb, sy, ra};
  }
}

inline cutlass::KernelHardwareInfo hw_info() {
  cutlass::KernelHardwareInfo hw;
  int dev = 0, sms = 0;
  (void)cudaGetDevice(&dev);
  (void)cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  hw.device_id = dev;
  hw.sm_count = sms;
  return hw;
}

// Enqueues CUTLASS kernel Kernel (through its device adapter's static run) on stream. The dynamic
// shared memory limit is set once per device here: the adapters' initialize() sets it on every
// call, which a run captured into a GPU graph should not do. kPdl: the kernel waits for the grids
// before it (CUTLASS_ENABLE_GDC_FOR_SM90: the sm_90 GEMM kernels' producer warps wait before their
// first load; the consumers touch global memory only after those loads, or read constants), so it
// may be launched as a programmatic dependent, as our int8 kernels are (arch.h): tiles, its work
// tiles, within pdl_block_limit() (INFERA_GPU_PDL=0: never). Gated as ours are because, on an H100
// (ResNet-50 int8), PDL on (ours gated, every CUTLASS GEMM) against off for all took batch 1 from
// 0.423 to 0.382 ms but batch 256 from 8.41 to 8.62 ms; ours alone cost b256 ~0.7% (sixteenth
// session), so most of that is the GEMMs' (bench/results/2026-12-07-gpu-int8-rows-pdl-h100.md).
// The gate itself has not run yet.
template <class Adapter, class Kernel, bool kPdl>
Status launch(const typename Kernel::Arguments& args, void* ws, size_t ws_bytes, gpuStream_t stream, int64_t tiles) {
  static std::atomic<uint64_t> ready{0};  // one bit per device
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return {"qconv cutlass: no current device"};
  const uint64_t bit = uint64_t{1} << (dev & 63);
  if (!(ready.load(std::memory_order_acquire) & bit)) {
    constexpr int smem = Kernel::SharedStorageSize;
    if (smem >= (48 << 10) && cudaFuncSetAttribute(cutlass::device_kernel<Kernel>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
      (void)cudaGetLastError();
      return {"qconv cutlass: the kernel's shared memory was refused"};
    }
    ready.fetch_or(bit, std::memory_order_release);
  }
  if (Kernel::get_workspace_size(args) > ws_bytes) return {"qconv cutlass: workspace too small"};  // 0 today
  if (Kernel::initialize_workspace(args, ws, stream) != cutlass::Status::kSuccess)
    return {"qconv cutlass: workspace initialization failed"};
  typename Kernel::Params params = Kernel::to_underlying_arguments(args, ws);
  cutlass::Status r;
  if constexpr (kPdl)
    r = Adapter::run(params, stream, nullptr, tiles <= arch::pdl_block_limit());
  else
    r = Adapter::run(params, stream);
  if (r != cutlass::Status::kSuccess) return {"qconv cutlass: launch failed"};
  return {};
}

// The run both objects share: builds the kernel's arguments by make_args(the tree's arguments),
// checks them, and enqueues the kernel.
template <class Adapter, class Kernel, class Tile, bool Res, bool kPdl, class MakeArgs>
Status run_requant(const QConvShape& s, const QConvTensors& t, gpuStream_t stream, MakeArgs&& make_args) {
  const int64_t tiles = ceil_div(static_cast<int64_t>(s.n) * s.p() * s.q(), int64_t{cute::size<0>(Tile{})}) *
                        ceil_div(int64_t{s.k}, int64_t{cute::size<1>(Tile{})});
  if (!t.epi_rows || reinterpret_cast<uintptr_t>(t.epi_rows) % 16)
    return {"qconv cutlass: the epilogue row (QConvTensors::epi_rows) is missing or not 16-byte aligned"};
  if (!make_qepi(s, t).fast)
    return {
        "qconv cutlass: needs the host's bounds on the accumulator and the scales (QConvTensors::acc_bound, "
        "sy_max): the epilogue has no general form"};
  const typename Kernel::Arguments args = make_args(evt_args<Tile, Res>(s, t));
  if (!Kernel::can_implement(args)) return {"qconv cutlass: the kernel cannot take this shape"};
  return launch<Adapter, Kernel, kPdl>(args, t.ws, t.ws_bytes, stream, tiles);
}

// The shape conditions both objects share (see the header's comment).
inline bool common_supports(const QConvShape& s) {
  const int64_t yps = s.y_pixel_stride ? s.y_pixel_stride : s.k, zps = s.z_pixel_stride ? s.z_pixel_stride : s.k;
  return s.x_zero_point == 0 && !s.y_uint8 && !(s.has_residual && s.z_uint8) && s.c % 16 == 0 && s.k % 16 == 0 &&
         yps % 16 == 0 && s.y_c_offset % 16 == 0 && (!s.has_residual || zps % 16 == 0) && s.dil_h == 1 &&
         s.dil_w == 1 && act_supported(s.act);
}

}  // namespace infera::gpu::cutlass_s8
#endif
