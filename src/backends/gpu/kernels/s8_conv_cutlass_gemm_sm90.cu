// CUTLASS 3 GEMM candidates for int8 1x1 stride-1 convolutions (s8_cutlass.h says what and why).
// Their kernels wait for the grids before them (griddepcontrol): launched as programmatic dependents.
#define CUTLASS_ENABLE_GDC_FOR_SM90
#define INFERA_CUTLASS_IMPL
#include "backends/gpu/kernels/s8_cutlass.h"

#if defined(INFERA_GPU_CUDA) && defined(INFERA_HAVE_CUTLASS)
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"
#endif

namespace infera::gpu {

#if defined(INFERA_GPU_CUDA) && defined(INFERA_HAVE_CUTLASS)
namespace {
using namespace cute;
using namespace cutlass_s8;

// The schedules: cooperative (both consumer warpgroups on one tile, persistent) and ping-pong (each
// warpgroup its own tile, one's epilogue over the other's mainloop: for the memory-bound layers
// whose epilogue is a large share of the tile's time). No ping-pong 128x128: a warpgroup's 128x128
// accumulators and this epilogue spill at its 168 registers (ptxas: 136-224 bytes of stack; it
// lost every layer of ResNet-50 at b256 by 1.2-3x, bench/results/2026-12-07-gpu-int8-exact-epilogue-h100).
struct Coop {
  using Epi = cutlass::epilogue::TmaWarpSpecializedCooperative;
  using Main = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
};
struct PingPong {
  using Epi = cutlass::epilogue::TmaWarpSpecialized;
  using Main = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
};

// x [M, C] row-major (pixel stride lda), w [K, C] (CUTLASS's column-major B), y / z [M, K] row-major.
template <class Tile, class Sched, bool Res>
struct GemmOp {
  using ElementC = cute::conditional_t<Res, int8_t, void>;
  using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Shape<_1, _1, _1>,
      cutlass::epilogue::collective::EpilogueTileAuto, int32_t, int32_t, ElementC, cutlass::layout::RowMajor, 16,
      int8_t, cutlass::layout::RowMajor, 16, typename Sched::Epi, Evt<Tile, Res>>::CollectiveOp;
  using Main = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, int8_t, cutlass::layout::RowMajor, 16, int8_t,
      cutlass::layout::ColumnMajor, 16, int32_t, Tile, Shape<_1, _1, _1>,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epi::SharedStorage))>,
      typename Sched::Main>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Main, Epi>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  static Status run(const QConvShape& s, const QConvTensors& t, gpuStream_t stream) {
    const int m = s.n * s.h * s.w, n = s.k, k = s.c;
    const int64_t xps = s.x_pixel_stride ? s.x_pixel_stride : s.c;  // x's layout is the shape's (half_view)
    const int64_t yps = t.y.pixel_stride ? t.y.pixel_stride : s.k;
    const int64_t zps = t.z.pixel_stride ? t.z.pixel_stride : s.k;
    const auto* x = static_cast<const int8_t*>(t.x.data) + s.x_c_offset;
    auto* y = static_cast<int8_t*>(t.y.data) + t.y.c_offset;
    const auto* z = Res ? static_cast<const int8_t*>(t.z.data) + t.z.c_offset : nullptr;
    if (!aligned16(x) || !aligned16(t.w) || !aligned16(y) || (Res && !aligned16(z)) || xps % 16 || yps % 16 ||
        (Res && zps % 16))
      return {"qconv cutlass: x, w, y and the residual need 16-byte aligned rows"};
    auto sa = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, make_shape(m, k, 1));
    auto sb = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, make_shape(n, k, 1));
    auto sc = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, make_shape(m, n, 1));
    auto sd = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, make_shape(m, n, 1));
    get<0>(sa) = xps;
    get<0>(sc) = zps;
    get<0>(sd) = yps;
    return run_requant<Gemm, Kernel, Tile, Res, true>(s, t, stream, [&](const auto& evt) {
      return typename Gemm::Arguments{
          cutlass::gemm::GemmUniversalMode::kGemm, {m, n, k, 1}, {x, sa, t.w, sb}, {evt, z, sc, y, sd}, hw_info()};
    });
  }
};

template <class Tile, class Sched = Coop>
Status run_tile(const QConvShape& s, const QConvTensors& t, gpuStream_t stream) {
  return s.has_residual ? GemmOp<Tile, Sched, true>::run(s, t, stream) : GemmOp<Tile, Sched, false>::run(s, t, stream);
}

}  // namespace

bool s8_cutlass_built() { return true; }

bool s8_cutlass_gemm_supports(const QConvShape& s) {
  const int64_t xps = s.x_pixel_stride ? s.x_pixel_stride : s.c;
  return cutlass_s8::common_supports(s) && xps % 16 == 0 && s.x_c_offset % 16 == 0 && s.r == 1 && s.s == 1 &&
         s.stride_h == 1 && s.stride_w == 1 && s.pad_t == 0 && s.pad_l == 0 && s.pad_b == 0 && s.pad_r == 0 &&
         static_cast<int64_t>(s.n) * s.h * s.w < (int64_t{1} << 31);
}

Status s8_cutlass_gemm_run(KernelId id, const QConvShape& s, const QConvTensors& t, gpuStream_t stream) {
  if (!s8_cutlass_gemm_supports(s)) return {"qconv cutlass: not a shape of the GEMM variants"};
  switch (id) {
    case KernelId::s8_conv_nhwc_cutlass_gemm_128x128: return run_tile<Shape<_128, _128, _128>>(s, t, stream);
    case KernelId::s8_conv_nhwc_cutlass_gemm_128x256: return run_tile<Shape<_128, _256, _128>>(s, t, stream);
    case KernelId::s8_conv_nhwc_cutlass_gemm_256x128: return run_tile<Shape<_256, _128, _128>>(s, t, stream);
    case KernelId::s8_conv_nhwc_cutlass_gemm_256x64: return run_tile<Shape<_256, _64, _128>>(s, t, stream);
    case KernelId::s8_conv_nhwc_cutlass_gemm_pp_128x64: return run_tile<Shape<_128, _64, _128>, PingPong>(s, t, stream);
    case KernelId::s8_conv_nhwc_cutlass_gemm_pp_64x128: return run_tile<Shape<_64, _128, _128>, PingPong>(s, t, stream);
    default: return {"qconv cutlass: not a GEMM variant"};
  }
}
#else
bool s8_cutlass_built() { return false; }
bool s8_cutlass_gemm_supports(const QConvShape&) { return false; }
Status s8_cutlass_gemm_run(KernelId, const QConvShape&, const QConvTensors&, gpuStream_t) {
  return {"qconv cutlass: this build has no CUTLASS kernels"};
}
#endif

bool s8_cutlass_gemm_is_variant(KernelId id) {
  for (const KernelId v : kCutlassGemmVariants)
    if (id == v) return true;
  return false;
}

}  // namespace infera::gpu
