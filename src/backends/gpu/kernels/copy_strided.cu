// The general strided copy (gather / scatter over up to 7 planned dims) and the dispatch between
// it and the tiled transposes. One thread moves V elements of the innermost dim, up to 16 bytes
// in one access when both sides allow it (the innermost dim contiguous in y, and contiguous or
// broadcast in x). Index arithmetic is 32-bit with multiply-shift division whenever every index
// fits, so the per-element cost stays far below the memory time even for scalar gathers.
#include <type_traits>

#include "backends/gpu/kernels/copy_plan.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

// n / d for 0 <= n < 2^31 and 1 <= d < 2^31 as a multiply-high and a shift (the round-up method).
struct FastDiv {
  uint32_t d = 1, m = 1, s = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t div) : d(div) {
    while (s < 32 && (uint32_t{1} << s) < div) ++s;
    m = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << s) - div)) / div + 1);
  }
  __device__ uint32_t div(uint32_t n) const { return (__umulhi(n, m) + n) >> s; }
};

template <class I>
struct GatherParams {
  const void* x;
  void* y;
  I xo, yo, count_v;  // count_v: number of V-element vectors
  int rank;
  int bcast;                                                    // innermost dim broadcast in x (stride 0)
  I dims[kCopyPlanRank], xs[kCopyPlanRank], ys[kCopyPlanRank];  // innermost dim in vectors
  FastDiv div[kCopyPlanRank];                                   // 32-bit indices only
};

template <int BYTES>
struct Word;
template <>
struct Word<4> {
  using type = uint32_t;
};
template <>
struct Word<8> {
  using type = uint2;
};
template <>
struct Word<16> {
  using type = uint4;
};

template <class E, int V, class I>
__global__ void __launch_bounds__(256) gather_kernel(const GatherParams<I> p) {
  const E* x = static_cast<const E*>(p.x);
  E* y = static_cast<E*>(p.y);
  const I step = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
  for (I v = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); v < p.count_v;
       v += step) {
    I rest = v, xi = p.xo, yi = p.yo;
    for (int k = p.rank - 1; k >= 0; --k) {
      I q;
      if constexpr (sizeof(I) == 4)
        q = static_cast<I>(p.div[k].div(static_cast<uint32_t>(rest)));
      else
        q = rest / p.dims[k];
      const I ik = rest - q * p.dims[k];
      xi += ik * p.xs[k];
      yi += ik * p.ys[k];
      rest = q;
      if (rest == 0) break;  // the outer indices are all 0
    }
    if constexpr (V == 1) {
      y[yi] = x[xi];
    } else {
      using W = typename Word<sizeof(E) * V>::type;
      if (p.bcast) {
        alignas(16) E t[V];
        const E e = x[xi];
#pragma unroll
        for (int j = 0; j < V; ++j) t[j] = e;
        *reinterpret_cast<W*>(y + yi) = *reinterpret_cast<const W*>(t);
      } else {
        *reinterpret_cast<W*>(y + yi) = *reinterpret_cast<const W*>(x + xi);
      }
    }
  }
}

// Largest V (elements per thread, V * eb <= 16) that every stride, offset and pointer allows.
int vector_width(const CopyPlan& p) {
  const int last = p.rank - 1;
  if (p.ys[last] != 1 || (p.xs[last] != 0 && p.xs[last] != 1)) return 1;
  const bool bcast = p.xs[last] == 0;
  for (int v = 16 / p.eb; v > 1; v /= 2) {
    bool ok = p.dims[last] % v == 0 && p.yo % v == 0 &&
              reinterpret_cast<uintptr_t>(p.y) % static_cast<uintptr_t>(v * p.eb) == 0;
    if (!bcast) ok = ok && p.xo % v == 0 && reinterpret_cast<uintptr_t>(p.x) % static_cast<uintptr_t>(v * p.eb) == 0;
    for (int k = 0; k < last && ok; ++k) ok = p.ys[k] % v == 0 && (bcast || p.xs[k] % v == 0);
    if (ok) return v;
  }
  return 1;
}

template <class E, int V, class I>
void launch_gather(const CopyPlan& p, gpuStream_t stream) {
  GatherParams<I> g{};
  g.x = p.x, g.y = p.y;
  g.xo = static_cast<I>(p.xo), g.yo = static_cast<I>(p.yo);
  g.count_v = static_cast<I>(p.count / V);
  g.rank = p.rank;
  g.bcast = p.xs[p.rank - 1] == 0;
  for (int k = 0; k < p.rank; ++k) {
    const bool inner = k == p.rank - 1;
    g.dims[k] = static_cast<I>(inner ? p.dims[k] / V : p.dims[k]);
    g.xs[k] = static_cast<I>(inner ? p.xs[k] * V : p.xs[k]);
    g.ys[k] = static_cast<I>(inner ? p.ys[k] * V : p.ys[k]);
    if constexpr (sizeof(I) == 4) g.div[k] = FastDiv(static_cast<uint32_t>(g.dims[k]));
  }
  gather_kernel<E, V, I><<<grid_for(p.count / V, 256), 256, 0, stream>>>(g);
}

template <class E, class I>
void launch_gather_v(const CopyPlan& p, int v, gpuStream_t stream) {
  if constexpr (sizeof(E) == 2) {
    if (v == 8) return launch_gather<E, 8, I>(p, stream);
  }
  if (v >= 4) return launch_gather<E, 4, I>(p, stream);
  if (v == 2) return launch_gather<E, 2, I>(p, stream);
  launch_gather<E, 1, I>(p, stream);
}

Status run_gather(const CopyPlan& p, gpuStream_t stream) {
  const int v = vector_width(p);
  // 32-bit indices when every index and the grid-stride loop's last step stay below 2^30.
  const int64_t kNarrow = int64_t{1} << 30;
  const bool narrow = p.count < kNarrow && p.x_hi < kNarrow && p.y_hi < kNarrow;
  if (p.eb == 2)
    narrow ? launch_gather_v<uint16_t, int32_t>(p, v, stream) : launch_gather_v<uint16_t, int64_t>(p, v, stream);
  else
    narrow ? launch_gather_v<uint32_t, int32_t>(p, v, stream) : launch_gather_v<uint32_t, int64_t>(p, v, stream);
  GPU_LAUNCH_CHECK();
  return {};
}

KernelId gather_id(const CopyPlan& p) { return p.eb == 2 ? KernelId::f16_copy_strided : KernelId::f32_copy_strided; }
KernelId tiled32_id(const CopyPlan& p) {
  return p.eb == 2 ? KernelId::f16_transpose_tiled_32x32 : KernelId::f32_transpose_tiled_32x32;
}

// Candidates in heuristic order, into out (at most 3); returns how many.
int plan_candidates(const CopyPlan& p, KernelId* out) {
  int n = 0;
  if (p.tile_a < 0) {
    out[n++] = gather_id(p);
    return n;
  }
  // Tiles pay off once both tile dims fill most of a tile; below that the gather is as good.
  const bool big = p.dims[p.tile_a] >= 16 && p.dims[p.rank - 1] >= 16;
  if (!big) out[n++] = gather_id(p);
  if (transpose_pairs_ok(p)) out[n++] = KernelId::f16_transpose_tiled_64x64;
  out[n++] = tiled32_id(p);
  if (big) out[n++] = gather_id(p);
  return n;
}

Status run_plan(const CopyPlan& p, KernelId id, gpuStream_t stream) {
  if (id == gather_id(p)) return run_gather(p, stream);
  KernelId c[3];
  const int n = plan_candidates(p, c);
  for (int i = 0; i < n; ++i)
    if (c[i] == id) return transpose_tiled(p, id, stream);
  return {"strided_copy: the candidate cannot run this copy"};
}

}  // namespace

std::vector<Candidate> copy_candidates(const StridedCopy& d) {
  CopyPlan p;
  if (!copy_plan(d, &p).ok() || p.count == 0) return {};
  KernelId c[3];
  const int n = plan_candidates(p, c);
  std::vector<Candidate> out;
  for (int i = 0; i < n; ++i) out.push_back({c[i], kernel_info(c[i]).name, 0, 1});
  return out;
}

Status strided_copy(const StridedCopy& d, gpuStream_t stream) {
  CopyPlan p;
  if (Status st = copy_plan(d, &p); !st.ok()) return st;
  if (p.count == 0) return {};
  KernelId c[3];
  plan_candidates(p, c);
  return run_plan(p, c[0], stream);
}

Status strided_copy(const StridedCopy& d, const Candidate& c, gpuStream_t stream) {
  CopyPlan p;
  if (Status st = copy_plan(d, &p); !st.ok()) return st;
  if (p.count == 0) return {};
  return run_plan(p, c.id, stream);
}

}  // namespace infera::gpu
