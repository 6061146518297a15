// CUTLASS 3 implicit-GEMM convolution candidates for int8 convolutions (s8_cutlass.h says what and why).
#define INFERA_CUTLASS_IMPL
#include "backends/gpu/kernels/s8_cutlass.h"

#if defined(INFERA_GPU_CUDA) && defined(INFERA_HAVE_CUTLASS)
#include "cutlass/conv/collective/collective_builder.hpp"
#include "cutlass/conv/convnd_problem_shape.hpp"
#include "cutlass/conv/device/conv_universal_adapter.hpp"
#include "cutlass/conv/kernel/conv_universal.hpp"
#endif

namespace infera::gpu {

#if defined(INFERA_GPU_CUDA) && defined(INFERA_HAVE_CUTLASS)
namespace {
using namespace cute;
using namespace cutlass_s8;

// x NHWC (pixel stride C: dense), w [K][R][S][C], y / z NHWC dense. The tile's K mode is wrapped
// in a Shape (CUTLASS's convolution tile convention).
template <class Tile, bool Res>
struct ConvOp {
  using ElementC = cute::conditional_t<Res, int8_t, void>;
  using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Shape<_1, _1, _1>,
      cutlass::epilogue::collective::EpilogueTileAuto, int32_t, int32_t, ElementC, cutlass::layout::TensorNHWC, 16,
      int8_t, cutlass::layout::TensorNHWC, 16, cutlass::epilogue::TmaWarpSpecialized, Evt<Tile, Res>>::CollectiveOp;
  using Main = typename cutlass::conv::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kFprop, int8_t,
      cutlass::layout::TensorNHWC, 16, int8_t, cutlass::layout::TensorNHWC, 16, int32_t, Tile, Shape<_1, _1, _1>,
      cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epi::SharedStorage))>,
      cutlass::conv::KernelImplicitTmaWarpSpecializedSm90>::CollectiveOp;
  using PS = cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kFprop, Main::NumSpatialDimensions>;
  using Kernel = cutlass::conv::kernel::ConvUniversal<PS, Main, Epi>;
  using Conv = cutlass::conv::device::ConvUniversalAdapter<Kernel>;

  static Status run(const QConvShape& s, const QConvTensors& t, gpuStream_t stream) {
    const auto* x = static_cast<const int8_t*>(t.x.data);
    auto* y = static_cast<int8_t*>(t.y.data) + t.y.c_offset;
    const auto* z = Res ? static_cast<const int8_t*>(t.z.data) + t.z.c_offset : nullptr;
    const bool dense = (!s.x_pixel_stride || s.x_pixel_stride == s.c) && !s.x_c_offset &&
                       (!t.y.pixel_stride || t.y.pixel_stride == s.k) && !t.y.c_offset &&
                       (!Res || ((!t.z.pixel_stride || t.z.pixel_stride == s.k) && !t.z.c_offset));
    if (!dense) return {"qconv cutlass: the convolution variants take dense NHWC tensors only"};
    if (!aligned16(x) || !aligned16(t.w) || !aligned16(y) || (Res && !aligned16(z)))
      return {"qconv cutlass: x, w, y and the residual need 16-byte aligned rows"};
    PS ps(cutlass::conv::Mode::kCrossCorrelation, {s.n, s.h, s.w, s.c}, {s.k, s.r, s.s, s.c}, {s.pad_t, s.pad_l},
          {s.pad_b, s.pad_r}, {s.stride_h, s.stride_w}, {s.dil_h, s.dil_w}, 1);
    typename Kernel::StrideC sc{};
    typename Kernel::StrideD sd{};
    cute::for_each(cute::make_seq<cute::rank<0>(typename Kernel::StrideC{})>{},
                   [&](auto i) { cute::get<0, i>(sc) = ps.stride_C[PS::RankT - 2 - i]; });
    cute::for_each(cute::make_seq<cute::rank<0>(typename Kernel::StrideD{})>{},
                   [&](auto i) { cute::get<0, i>(sd) = ps.stride_C[PS::RankT - 2 - i]; });
    return run_requant<Conv, Kernel, Tile, Res, false>(s, t, stream, [&](const auto& evt) {
      return typename Conv::Arguments{ps, {x, t.w}, {evt, z, sc, y, sd}, hw_info()};
    });
  }
};

template <class Tile>
Status run_tile(const QConvShape& s, const QConvTensors& t, gpuStream_t stream) {
  return s.has_residual ? ConvOp<Tile, true>::run(s, t, stream) : ConvOp<Tile, false>::run(s, t, stream);
}
}  // namespace

bool s8_cutlass_conv_supports(const QConvShape& s) {
  // TMA im2col boxes: the filter and padding extents stay small (CUTLASS checks the rest).
  const bool dense = (!s.x_pixel_stride || s.x_pixel_stride == s.c) && !s.x_c_offset &&
                     (!s.y_pixel_stride || s.y_pixel_stride == s.k) && !s.y_c_offset &&
                     (!s.has_residual || !s.z_pixel_stride || s.z_pixel_stride == s.k);
  return cutlass_s8::common_supports(s) && dense && s.r <= 8 && s.s <= 8 && s.pad_t < s.r && s.pad_l < s.s &&
         s.pad_b < s.r && s.pad_r < s.s && static_cast<int64_t>(s.n) * s.p() * s.q() < (int64_t{1} << 31);
}

Status s8_cutlass_conv_run(KernelId id, const QConvShape& s, const QConvTensors& t, gpuStream_t stream) {
  if (!s8_cutlass_conv_supports(s)) return {"qconv cutlass: not a shape of the convolution variants"};
  switch (id) {
    case KernelId::s8_conv_nhwc_cutlass_conv_128x128: return run_tile<Shape<_128, _128, Shape<_64>>>(s, t, stream);
    case KernelId::s8_conv_nhwc_cutlass_conv_128x128_k128:
      return run_tile<Shape<_128, _128, Shape<_128>>>(s, t, stream);
    default: return {"qconv cutlass: not a convolution variant"};
  }
}
#else
bool s8_cutlass_conv_supports(const QConvShape&) { return false; }
Status s8_cutlass_conv_run(KernelId, const QConvShape&, const QConvTensors&, gpuStream_t) {
  return {"qconv cutlass: this build has no CUTLASS kernels"};
}
#endif

bool s8_cutlass_conv_is_variant(KernelId id) {
  return id == KernelId::s8_conv_nhwc_cutlass_conv_128x128 || id == KernelId::s8_conv_nhwc_cutlass_conv_128x128_k128;
}

}  // namespace infera::gpu
