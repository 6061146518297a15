// Probe: CUTLASS 3 (sm90, TMA warp-specialized, wgmma s8) on ResNet-50's int8 convolutions, with
// infera's requantize as an epilogue visitor tree:
//   y = sat8(rint(act(float(acc + cb[n]) * sy[n] + zs * z)))
// (cb = bias - x_zp wsum, int32; sy = scale * inv_y; zs = z_scale * inv_y: QEpi's float path,
// without its double fallback at rounding ties). 1x1 stride-1 layers run as GEMMs (x [M, C] row-major,
// w [K, C] = column-major B), the others as CUTLASS 3 implicit-GEMM convolutions (im2col TMA).
// Prints per layer and configuration the time, the rate, and a sample of outputs checked against a
// float reference (wrong: |diff| > 1; ties: |diff| == 1).
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr
//        -I$CUTLASS/include s8_cutlass_probe.cu -o s8_cutlass_probe -cudart static
// Usage: s8_cutlass_probe SHAPES_FILE BATCHES(csv) [reps]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/kernel_hardware_info.hpp"
#include "cutlass/util/packed_stride.hpp"
// The GEMM and the convolution live in two objects of this one file (-DPROBE_CONV for the second):
// CUTLASS 2's GemmUniversal (pulled in by the GEMM adapter) makes the sm90 ConvUniversal's base
// ambiguous when both are seen together.
#ifdef PROBE_CONV
#include "cutlass/conv/collective/collective_builder.hpp"
#include "cutlass/conv/convnd_problem_shape.hpp"
#include "cutlass/conv/device/conv_universal_adapter.hpp"
#include "cutlass/conv/kernel/conv_universal.hpp"
#else
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#endif

using namespace cute;
namespace fu = cutlass::epilogue::fusion;

#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr auto RS = cutlass::FloatRoundStyle::round_to_nearest;

// The requantize tree. Tile: the CTA tile (row broadcasts stage one tile's worth of a vector).
template <class Tile>
using EvtAcc = fu::Sm90EVT<fu::Sm90Compute<cutlass::plus, int32_t, int32_t, RS>, fu::Sm90AccFetch,
                           fu::Sm90RowBroadcast<0, Tile, int32_t, int32_t, Stride<_0, _1, int64_t>, 4>>;
template <class Tile>
using EvtScaled = fu::Sm90EVT<fu::Sm90Compute<cutlass::multiplies, float, float, RS>, EvtAcc<Tile>,
                              fu::Sm90RowBroadcast<0, Tile, float, float, Stride<_0, _1, int64_t>, 4>>;
template <class Tile>
using EvtRes =
    fu::Sm90EVT<fu::Sm90Compute<cutlass::homogeneous_multiply_add, float, float, RS>,
                fu::Sm90ScalarBroadcast<float, Stride<_0, _0, int64_t>>, fu::Sm90SrcFetch<int8_t>, EvtScaled<Tile>>;
template <class Tile, bool Res>
using EvtOut = fu::Sm90EVT<fu::Sm90Compute<cutlass::epilogue::thread::ReLu, int8_t, float, RS>,
                           cute::conditional_t<Res, EvtRes<Tile>, EvtScaled<Tile>>>;

// The exact form: infera's reference requantize (kernels.h qconv; s8_igemm.h requant) in double, every
// element: v = (double(acc) + double(bias)) * scale [+ double(z - z_zp) * z_scale], act, rint(v * inv_y
// + y_zp), saturated. Products and sums rounded one at a time (no FMA), as on the host.
struct RequantArgs {
  double z_scale = 0, inv_y = 1, alpha = 0, beta = 0;
  int z_zp = 0, y_zp = 0, lo = -128, hi = 127, act = 0;  // act: 0 identity, 1 relu
};
template <class T>
struct Requant {
  using Arguments = RequantArgs;
};
template <int N>
struct Requant<cutlass::Array<double, N>> {
  using Arguments = RequantArgs;
  using A = cutlass::Array<double, N>;
  CUTLASS_DEVICE static int8_t one(double acc, double bias, double scale, const double* z, const RequantArgs& a) {
    double v = __dmul_rn(__dadd_rn(acc, bias), scale);
    if (z) v = __dadd_rn(v, __dmul_rn(__dadd_rn(*z, double(-a.z_zp)), a.z_scale));
    if (a.act == 1) v = v < 0.0 ? 0.0 : v;
    const double r = rint(__dadd_rn(__dmul_rn(v, a.inv_y), double(a.y_zp)));
    if (!(r == r)) return 0;
    return static_cast<int8_t>(r < a.lo ? a.lo : r > a.hi ? a.hi : static_cast<int>(r));
  }
  CUTLASS_DEVICE cutlass::Array<int8_t, N> operator()(A const& acc, A const& bias, A const& scale,
                                                      RequantArgs const& a) const {
    cutlass::Array<int8_t, N> out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) out[i] = one(acc[i], bias[i], scale[i], nullptr, a);
    return out;
  }
  CUTLASS_DEVICE cutlass::Array<int8_t, N> operator()(A const& acc, A const& bias, A const& scale, A const& z,
                                                      RequantArgs const& a) const {
    cutlass::Array<int8_t, N> out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) out[i] = one(acc[i], bias[i], scale[i], &z[i], a);
    return out;
  }
};
template <class Tile, bool Res>
using EvtExact = cute::conditional_t<
    Res,
    fu::Sm90EVT<fu::Sm90Compute<Requant, int8_t, double, RS>, fu::Sm90AccFetch,
                fu::Sm90RowBroadcast<0, Tile, int32_t, double, Stride<_0, _1, int64_t>, 4>,
                fu::Sm90RowBroadcast<0, Tile, double, double, Stride<_0, _1, int64_t>, 2>, fu::Sm90SrcFetch<int8_t>>,
    fu::Sm90EVT<fu::Sm90Compute<Requant, int8_t, double, RS>, fu::Sm90AccFetch,
                fu::Sm90RowBroadcast<0, Tile, int32_t, double, Stride<_0, _1, int64_t>, 4>,
                fu::Sm90RowBroadcast<0, Tile, double, double, Stride<_0, _1, int64_t>, 2>>>;

template <class Evt, class Tile, bool Res>
typename Evt::Arguments exact_args(const int32_t* bias, const double* scale, const RequantArgs& ra) {
  if constexpr (Res) {
    return {{}, {bias}, {scale}, {}, ra};
  } else {
    return {{}, {bias}, {scale}, ra};
  }
}

template <class Tile, bool Res>
typename EvtOut<Tile, Res>::Arguments evt_args(const int32_t* cb, const float* sy, float zs) {
  typename EvtScaled<Tile>::Arguments scaled{{{}, {cb}, {}}, {sy}, {}};
  if constexpr (Res) {
    return {{{{zs}}, {}, scaled, {}}, {}};
  } else {
    return {scaled, {}};
  }
}

struct Problem {
  int n, h, w, c, k, r, s, stride, pad;
  int p() const { return (h + 2 * pad - r) / stride + 1; }
  int q() const { return (w + 2 * pad - s) / stride + 1; }
  int64_t m() const { return int64_t(n) * p() * q(); }
};

struct Buffers {
  const int8_t *x, *w, *z;
  int8_t* y;
  const int32_t* cb;
  const float* sy;
  float zs;
  const double* sd;  // the exact form's scale (sy = float(sd)); its inv_y = 1, z_scale = zs
};

using TileSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpiSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;

#ifndef PROBE_CONV
template <class Tile, class Cluster, bool Res, bool Exact = false>
struct GemmOp {
  using ElementC = cute::conditional_t<Res, int8_t, void>;
  using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, int32_t, float, ElementC, cutlass::layout::RowMajor, 16, int8_t,
      cutlass::layout::RowMajor, 16, EpiSchedule,
      cute::conditional_t<Exact, EvtExact<Tile, Res>, EvtOut<Tile, Res>>>::CollectiveOp;
  using Main = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, int8_t, cutlass::layout::RowMajor, 16, int8_t,
      cutlass::layout::ColumnMajor, 16, int32_t, Tile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epi::SharedStorage))>,
      TileSchedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Main, Epi>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  static const char* name() { return "gemm"; }
  static auto fusion_args(const Buffers& b) {
    if constexpr (Exact) {
      RequantArgs ra;
      ra.z_scale = b.zs, ra.act = 1;
      return exact_args<EvtExact<Tile, Res>, Tile, Res>(b.cb, b.sd, ra);
    } else {
      return evt_args<Tile, Res>(b.cb, b.sy, b.zs);
    }
  }

  static bool applies(const Problem& pr) { return pr.r == 1 && pr.s == 1 && pr.stride == 1 && pr.pad == 0; }

  Gemm op;
  typename Gemm::Arguments args;
  bool setup(const Problem& pr, const Buffers& b, void** ws) {
    const int M = int(pr.m()), N = pr.k, K = pr.c;
    auto sa = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, make_shape(M, K, 1));
    auto sb = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, make_shape(N, K, 1));
    auto sc = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, make_shape(M, N, 1));
    auto sd = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, make_shape(M, N, 1));
    cutlass::KernelHardwareInfo hw;
    hw.device_id = 0;
    hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
    args = typename Gemm::Arguments{cutlass::gemm::GemmUniversalMode::kGemm,
                                    {M, N, K, 1},
                                    {b.x, sa, b.w, sb},
                                    {fusion_args(b), Res ? b.z : nullptr, sc, b.y, sd},
                                    hw};
    if (op.can_implement(args) != cutlass::Status::kSuccess) return false;
    const size_t wsb = Gemm::get_workspace_size(args);
    if (wsb) CK(cudaMalloc(ws, wsb));
    return op.initialize(args, *ws) == cutlass::Status::kSuccess;
  }
  bool run() { return op.run() == cutlass::Status::kSuccess; }
};

#else
template <class Tile, class Cluster, bool Res, bool Exact = false>
struct ConvOp {
  using ElementC = cute::conditional_t<Res, int8_t, void>;
  using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, int32_t, float, ElementC, cutlass::layout::TensorNHWC, 16,
      int8_t, cutlass::layout::TensorNHWC, 16, cutlass::epilogue::TmaWarpSpecialized,
      cute::conditional_t<Exact, EvtExact<Tile, Res>, EvtOut<Tile, Res>>>::CollectiveOp;
  using Main = typename cutlass::conv::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kFprop, int8_t,
      cutlass::layout::TensorNHWC, 16, int8_t, cutlass::layout::TensorNHWC, 16, int32_t, Tile, Cluster,
      cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epi::SharedStorage))>,
      cutlass::conv::KernelImplicitTmaWarpSpecializedSm90>::CollectiveOp;  // the only sm90 conv schedule (not
                                                                           // persistent)
  using PS = cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kFprop, Main::NumSpatialDimensions>;
  using Kernel = cutlass::conv::kernel::ConvUniversal<PS, Main, Epi>;
  using Conv = cutlass::conv::device::ConvUniversalAdapter<Kernel>;

  static const char* name() { return "conv"; }
  static auto fusion_args(const Buffers& b) {
    if constexpr (Exact) {
      RequantArgs ra;
      ra.z_scale = b.zs, ra.act = 1;
      return exact_args<EvtExact<Tile, Res>, Tile, Res>(b.cb, b.sd, ra);
    } else {
      return evt_args<Tile, Res>(b.cb, b.sy, b.zs);
    }
  }

  static bool applies(const Problem&) { return true; }

  Conv op;
  typename Conv::Arguments args;
  bool setup(const Problem& pr, const Buffers& b, void** ws) {
    PS ps(cutlass::conv::Mode::kCrossCorrelation, {pr.n, pr.h, pr.w, pr.c}, {pr.k, pr.r, pr.s, pr.c}, {pr.pad, pr.pad},
          {pr.pad, pr.pad}, {pr.stride, pr.stride}, {1, 1}, 1);
    typename Kernel::StrideC sc{};
    typename Kernel::StrideD sd{};
    cute::for_each(cute::make_seq<cute::rank<0>(typename Kernel::StrideC{})>{},
                   [&](auto i) { cute::get<0, i>(sc) = ps.stride_C[PS::RankT - 2 - i]; });
    cute::for_each(cute::make_seq<cute::rank<0>(typename Kernel::StrideD{})>{},
                   [&](auto i) { cute::get<0, i>(sd) = ps.stride_C[PS::RankT - 2 - i]; });
    cutlass::KernelHardwareInfo hw;
    hw.device_id = 0;
    hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
    args = typename Conv::Arguments{ps, {b.x, b.w}, {fusion_args(b), Res ? b.z : nullptr, sc, b.y, sd}, hw};
    if (op.can_implement(args) != cutlass::Status::kSuccess) return false;
    const size_t wsb = Conv::get_workspace_size(args);
    if (wsb) CK(cudaMalloc(ws, wsb));
    return op.initialize(args, *ws) == cutlass::Status::kSuccess;
  }
  bool run() { return op.run() == cutlass::Status::kSuccess; }
};

#endif

struct Host {
  std::vector<int8_t> x, w, z;
  std::vector<int32_t> cb;
  std::vector<float> sy;
  std::vector<double> sd;
  float zs;
};

template <class Op>
void probe(const char* cfg, bool exact, const std::string& layer, const Problem& pr, bool res, const Host& h,
           const Buffers& b, int reps, double& sum, int count) {
  if (!Op::applies(pr)) return;
  Op op;
  void* ws = nullptr;
  if (!op.setup(pr, b, &ws)) {
    std::printf("%-18s %5d %-26s cannot implement\n", layer.c_str(), pr.n, cfg);
    return;
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaMemset(b.y, 0, pr.m() * pr.k));
  bool ok = op.run();
  CK(cudaDeviceSynchronize());
  // Check 256 sampled output pixels against the float reference.
  std::vector<int8_t> hy(pr.m() * pr.k);
  CK(cudaMemcpy(hy.data(), b.y, hy.size(), cudaMemcpyDeviceToHost));
  std::mt19937 rng(11);
  long wrong = 0, ties = 0;
  const int P = pr.p(), Q = pr.q();
  for (int t = 0; t < 256; ++t) {
    const int64_t m = rng() % pr.m();
    const int ni = int(m / (int64_t(P) * Q)), pi = int(m / Q % P), qi = int(m % Q);
    for (int n = 0; n < pr.k; ++n) {
      int acc = 0;
      for (int r = 0; r < pr.r; ++r)
        for (int s = 0; s < pr.s; ++s) {
          const int hh = pi * pr.stride - pr.pad + r, ww = qi * pr.stride - pr.pad + s;
          if (hh < 0 || hh >= pr.h || ww < 0 || ww >= pr.w) continue;
          const int8_t* xp = &h.x[((int64_t(ni) * pr.h + hh) * pr.w + ww) * pr.c];
          const int8_t* wp = &h.w[((int64_t(n) * pr.r + r) * pr.s + s) * pr.c];
          for (int c = 0; c < pr.c; ++c) acc += int(xp[c]) * int(wp[c]);
        }
      int ref;
      if (exact) {
        double v = (double(acc) + double(h.cb[n])) * h.sd[n];
        if (res) v = v + double(h.z[m * pr.k + n]) * double(h.zs);
        v = v < 0.0 ? 0.0 : v;
        ref = int(std::fmax(-128.0, std::fmin(127.0, std::nearbyint(v))));
      } else {
        float v = float(acc + h.cb[n]) * h.sy[n];
        if (res) v += h.zs * float(h.z[m * pr.k + n]);
        v = v < 0.f ? 0.f : v;
        ref = int(std::fmax(-128.f, std::fmin(127.f, std::nearbyint(v))));
      }
      const int d = std::abs(ref - int(hy[m * pr.k + n]));
      if (exact)
        wrong += d != 0;
      else
        wrong += d > 1, ties += d == 1;
    }
  }
  for (int i = 0; i < 3; ++i) ok = ok && op.run();
  CK(cudaEventRecord(e0));
  for (int i = 0; i < reps; ++i) ok = ok && op.run();
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  ms /= reps;
  const double bytes =
      double(int64_t(pr.n) * pr.h * pr.w * pr.c + int64_t(pr.k) * pr.r * pr.s * pr.c + pr.m() * pr.k * (res ? 2 : 1));
  const double tops = 2.0 * pr.m() * pr.k * pr.r * pr.s * pr.c / (ms * 1e9);
  std::printf("%-18s %5d %-26s %s %9.4f ms %8.1f GB/s %7.1f TOPS wrong %ld ties %ld%s\n", layer.c_str(), pr.n, cfg,
              res ? "res " : "nores", ms, bytes / ms / 1e6, tops, wrong, ties, ok ? "" : " RUN FAILED");
  if (ws) CK(cudaFree(ws));
  sum += ms * count;
}

#ifdef PROBE_CONV
void probe_convs(const std::string& layer, const Problem& pr, const Host& h, const Buffers& b, int reps, double* t) {
  probe<ConvOp<Shape<_128, _128, Shape<_64>>, Shape<_1, _1, _1>, false>>("conv 128x128x64", false, layer, pr, false, h,
                                                                         b, reps, t[0], 1);
  probe<ConvOp<Shape<_128, _256, Shape<_64>>, Shape<_1, _1, _1>, false>>("conv 128x256x64", false, layer, pr, false, h,
                                                                         b, reps, t[1], 1);
  probe<ConvOp<Shape<_128, _128, Shape<_128>>, Shape<_1, _1, _1>, false>>("conv 128x128x128", false, layer, pr, false,
                                                                          h, b, reps, t[2], 1);
  probe<ConvOp<Shape<_128, _128, Shape<_64>>, Shape<_1, _1, _1>, false, true>>("conv-exact 128x128x64", true, layer, pr,
                                                                               false, h, b, reps, t[4], 1);
}
#else
void probe_convs(const std::string& layer, const Problem& pr, const Host& h, const Buffers& b, int reps, double* t);

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SHAPES BATCHES [reps]\n", argv[0]);
    return 1;
  }
  struct Line {
    std::string name;
    int count, c, k, h, w, r, s, stride, pad;
  };
  std::vector<Line> lines;
  std::ifstream f(argv[1]);
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    Line l;
    is >> l.name >> l.count >> l.c >> l.k >> l.h >> l.w >> l.r >> l.s >> l.stride >> l.pad;
    if (l.count > 0 && l.c % 16 == 0) lines.push_back(l);
  }
  std::vector<int> batches;
  for (std::stringstream bs(argv[2]); bs.good();) {
    std::string t;
    std::getline(bs, t, ',');
    batches.push_back(std::atoi(t.c_str()));
  }
  const int reps = argc > 3 ? std::atoi(argv[3]) : 20;
  std::mt19937 rng(5);
  for (int nb : batches) {
    double best_sum = 0;
    for (const Line& l : lines) {
      Problem pr{nb, l.h, l.w, l.c, l.k, l.r, l.s, l.stride, l.pad};
      Host h;
      h.x.resize(int64_t(nb) * l.h * l.w * l.c);
      h.w.resize(int64_t(l.k) * l.r * l.s * l.c);
      h.z.resize(pr.m() * l.k);
      std::uniform_int_distribution<int> d8(-127, 127);
      for (auto& v : h.x) v = int8_t(d8(rng) / 2);
      for (auto& v : h.w) v = int8_t(d8(rng));
      for (auto& v : h.z) v = int8_t(d8(rng));
      h.cb.resize(l.k);
      h.sy.resize(l.k);
      for (int n = 0; n < l.k; ++n) {
        h.cb[n] = int(rng() % 20001) - 10000;
        h.sy[n] = (0.5f + (rng() % 1000) / 1000.f) / (64.f * 16.f * std::sqrt(float(l.c * l.r * l.s)));
      }
      h.zs = 0.37f;
      h.sd.resize(l.k);
      for (int n = 0; n < l.k; ++n) h.sd[n] = double(h.sy[n]) * (1.0 + 1e-9 * n);
      double* sd;
      CK(cudaMalloc(&sd, l.k * 8));
      CK(cudaMemcpy(sd, h.sd.data(), l.k * 8, cudaMemcpyHostToDevice));
      int8_t *x, *w, *z, *y;
      int32_t* cb;
      float* sy;
      CK(cudaMalloc(&x, h.x.size()));
      CK(cudaMalloc(&w, h.w.size()));
      CK(cudaMalloc(&z, h.z.size()));
      CK(cudaMalloc(&y, h.z.size()));
      CK(cudaMalloc(&cb, l.k * 4));
      CK(cudaMalloc(&sy, l.k * 4));
      CK(cudaMemcpy(x, h.x.data(), h.x.size(), cudaMemcpyHostToDevice));
      CK(cudaMemcpy(w, h.w.data(), h.w.size(), cudaMemcpyHostToDevice));
      CK(cudaMemcpy(z, h.z.data(), h.z.size(), cudaMemcpyHostToDevice));
      CK(cudaMemcpy(cb, h.cb.data(), l.k * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(sy, h.sy.data(), l.k * 4, cudaMemcpyHostToDevice));
      Buffers b{x, w, z, y, cb, sy, h.zs, sd};
      double s = 0;
      // Residual (ResNet's expand 1x1 + add + relu) and plain (relu) forms of each layer.
      for (bool res : {false, true}) {
        if (res && !(l.r == 1 && l.stride == 1 && l.k >= 4 * l.c)) continue;
        std::vector<double> t(8, 0.0);
        if (res) {
          probe<GemmOp<Shape<_128, _128, _128>, Shape<_1, _1, _1>, true>>("gemm 128x128x128", false, l.name, pr, true,
                                                                          h, b, reps, t[0], 1);
          probe<GemmOp<Shape<_128, _256, _128>, Shape<_1, _1, _1>, true>>("gemm 128x256x128", false, l.name, pr, true,
                                                                          h, b, reps, t[1], 1);
          probe<GemmOp<Shape<_256, _128, _128>, Shape<_1, _1, _1>, true>>("gemm 256x128x128", false, l.name, pr, true,
                                                                          h, b, reps, t[2], 1);
          probe<GemmOp<Shape<_128, _256, _128>, Shape<_1, _1, _1>, true, true>>("gemm-exact 128x256x128", true, l.name,
                                                                                pr, true, h, b, reps, t[6], 1);
        } else {
          probe<GemmOp<Shape<_128, _128, _128>, Shape<_1, _1, _1>, false>>("gemm 128x128x128", false, l.name, pr, false,
                                                                           h, b, reps, t[0], 1);
          probe<GemmOp<Shape<_128, _256, _128>, Shape<_1, _1, _1>, false>>("gemm 128x256x128", false, l.name, pr, false,
                                                                           h, b, reps, t[1], 1);
          probe<GemmOp<Shape<_256, _128, _128>, Shape<_1, _1, _1>, false>>("gemm 256x128x128", false, l.name, pr, false,
                                                                           h, b, reps, t[2], 1);
          probe<GemmOp<Shape<_128, _256, _128>, Shape<_1, _1, _1>, false, true>>("gemm-exact 128x256x128", true, l.name,
                                                                                 pr, false, h, b, reps, t[6], 1);
          probe_convs(l.name, pr, h, b, reps, &t[3]);
        }
        double best = 1e30;
        for (double v : t)
          if (v > 0 && v < best) best = v;
        if (best < 1e30) s = best;
      }
      best_sum += s * l.count;
      cudaFree(x), cudaFree(w), cudaFree(z), cudaFree(y), cudaFree(cb), cudaFree(sy), cudaFree(sd);
    }
    std::printf("batch %d: best CUTLASS per layer x count (the residual form where it applies) %.3f ms\n", nb,
                best_sum);
  }
  return 0;
}
#endif
