// Tiled transposes for strided copies whose innermost output dim (b, contiguous in y) is not the
// input's contiguous dim (a): a block reads a tile of a x b with consecutive threads along a and
// writes it back through shared memory with consecutive threads along b, so both sides are
// coalesced (NCHW <-> NHWC permutes, the channel shuffle, MatMul operand transposes). Every other
// dim is a batch dim of the grid. The 64x64 fp16 variant moves two elements per access.
#include "backends/gpu/kernels/copy_plan.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

struct TileParams {
  const void* x;
  void* y;
  int64_t xo, yo;
  int64_t da, db;      // tile dims: a (x stride 1), b (y stride 1)
  int64_t xs_b, ys_a;  // their other strides
  int64_t tiles_a, tiles_b;
  int nb;  // batch dims
  int64_t bd[kCopyPlanRank], bxs[kCopyPlanRank], bys[kCopyPlanRank];
};

// Block -> (tile along b, tile along a, batch index) -> base offsets of the tile's batch.
__device__ inline void tile_origin(const TileParams& p, int64_t* ta, int64_t* tb, int64_t* xb, int64_t* yb) {
  int64_t id = blockIdx.x;
  *tb = id % p.tiles_b;
  id /= p.tiles_b;
  *ta = id % p.tiles_a;
  id /= p.tiles_a;
  int64_t xo = p.xo, yo = p.yo;
  for (int k = p.nb - 1; k >= 0 && id > 0; --k) {
    const int64_t i = id % p.bd[k];
    id /= p.bd[k];
    xo += i * p.bxs[k];
    yo += i * p.bys[k];
  }
  *xb = xo, *yb = yo;
}

// 32x32 tile, 256 threads (32 along the tile's fast dim x 8), 4 elements per thread each way.
// The block is 1-D and lanes are derived from threadIdx, so wave64 runs it unchanged.
template <class E>
__global__ void __launch_bounds__(256) transpose32_kernel(const TileParams p) {
  __shared__ uint32_t tile[32][33];
  int64_t ta, tb, xb, yb;
  tile_origin(p, &ta, &tb, &xb, &yb);
  const E* x = static_cast<const E*>(p.x) + xb;
  E* y = static_cast<E*>(p.y) + yb;
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int64_t a0 = ta * 32, b0 = tb * 32;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int64_t a = a0 + tx, b = b0 + ty + 8 * j;
    if (a < p.da && b < p.db) tile[ty + 8 * j][tx] = x[a + b * p.xs_b];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int64_t a = a0 + ty + 8 * j, b = b0 + tx;
    if (a < p.da && b < p.db) y[b + a * p.ys_a] = static_cast<E>(tile[tx][ty + 8 * j]);
  }
}

// 64x64 fp16 tile, 256 threads, each access a 4-byte pair (sizes and strides even). Row length 65
// halves: the column reads of the write phase (lane t: rows 2t and 2t + 1) hit 32 distinct banks.
__global__ void __launch_bounds__(256) transpose64_pairs_kernel(const TileParams p) {
  __shared__ uint16_t tile[64][65];
  int64_t ta, tb, xb, yb;
  tile_origin(p, &ta, &tb, &xb, &yb);
  const uint16_t* x = static_cast<const uint16_t*>(p.x) + xb;
  uint16_t* y = static_cast<uint16_t*>(p.y) + yb;
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int64_t a0 = ta * 64, b0 = tb * 64;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int bb = ty + 8 * j;
    const int64_t a = a0 + 2 * tx, b = b0 + bb;
    if (a < p.da && b < p.db) {
      const uint32_t w = *reinterpret_cast<const uint32_t*>(x + a + b * p.xs_b);
      tile[bb][2 * tx] = static_cast<uint16_t>(w & 0xffffu);
      tile[bb][2 * tx + 1] = static_cast<uint16_t>(w >> 16);
    }
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int aa = ty + 8 * j;
    const int64_t a = a0 + aa, b = b0 + 2 * tx;
    if (a < p.da && b < p.db)
      *reinterpret_cast<uint32_t*>(y + b + a * p.ys_a) =
          uint32_t(tile[2 * tx][aa]) | (uint32_t(tile[2 * tx + 1][aa]) << 16);
  }
}

TileParams tile_params(const CopyPlan& p, int tile) {
  TileParams t{};
  const int a = p.tile_a, b = p.rank - 1;
  t.x = p.x, t.y = p.y, t.xo = p.xo, t.yo = p.yo;
  t.da = p.dims[a], t.db = p.dims[b];
  t.xs_b = p.xs[b], t.ys_a = p.ys[a];
  t.tiles_a = ceil_div(t.da, tile), t.tiles_b = ceil_div(t.db, tile);
  for (int k = 0; k < b; ++k) {
    if (k == a) continue;
    t.bd[t.nb] = p.dims[k], t.bxs[t.nb] = p.xs[k], t.bys[t.nb] = p.ys[k];
    ++t.nb;
  }
  return t;
}

int64_t tile_blocks(const TileParams& t) {
  int64_t n = t.tiles_a * t.tiles_b;
  for (int k = 0; k < t.nb; ++k) n *= t.bd[k];
  return n;
}

}  // namespace

bool transpose_pairs_ok(const CopyPlan& p) {
  if (p.eb != 2 || p.tile_a < 0) return false;
  const int a = p.tile_a, b = p.rank - 1;
  bool ok = p.dims[a] % 2 == 0 && p.dims[b] % 2 == 0 && p.xo % 2 == 0 && p.yo % 2 == 0 && p.xs[b] % 2 == 0 &&
            p.ys[a] % 2 == 0 && reinterpret_cast<uintptr_t>(p.x) % 4 == 0 && reinterpret_cast<uintptr_t>(p.y) % 4 == 0;
  for (int k = 0; k < b && ok; ++k)
    if (k != a) ok = p.xs[k] % 2 == 0 && p.ys[k] % 2 == 0;
  return ok;
}

Status transpose_tiled(const CopyPlan& p, KernelId id, gpuStream_t stream) {
  if (p.tile_a < 0) return {"transpose_tiled: not a transpose of the contiguous dims"};
  const bool pairs = id == KernelId::f16_transpose_tiled_64x64;
  if (pairs && !transpose_pairs_ok(p)) return {"transpose_tiled: the 64x64 variant needs even sizes and strides"};
  if ((id == KernelId::f16_transpose_tiled_32x32 && p.eb != 2) ||
      (id == KernelId::f32_transpose_tiled_32x32 && p.eb != 4))
    return {"transpose_tiled: variant of another element size"};
  const TileParams t = tile_params(p, pairs ? 64 : 32);
  const int64_t blocks = tile_blocks(t);
  if (blocks > (int64_t{1} << 24)) return {"transpose_tiled: more than 2^24 tiles"};  // HIP: grid threads < 2^32
  const unsigned grid = static_cast<unsigned>(blocks);
  if (pairs)
    transpose64_pairs_kernel<<<grid, 256, 0, stream>>>(t);
  else if (p.eb == 2)
    transpose32_kernel<uint16_t><<<grid, 256, 0, stream>>>(t);
  else
    transpose32_kernel<uint32_t><<<grid, 256, 0, stream>>>(t);
  GPU_LAUNCH_CHECK();
  return {};
}

}  // namespace infera::gpu
