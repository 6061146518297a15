// Grouped convs of 8 input and 8 output channels per group (RegNet's group width 8), computed in
// oneDNN's nChw16c layout without reorders: our own AVX-512 loop. oneDNN 2.6 runs them only in
// nChw8c (reorders both ways) at 12-30% of peak (issue 13). A 16-channel block holds two groups, and
// output block b reads input block b only. Each input pixel's 16 channels are rotated within each
// group's 8 lanes by r = 1..7 (one vpermps each; r = 0 is the pixel itself), and output lane l sums
// over r the packed weight W[l][(l + r) % 8] times lane l of rotation r: full-width FMAs over a
// register tile of up to 16 output pixels along a row, each rotated input pixel feeding the 3 taps
// of a 3-wide kernel that read it. Taps that fall into the padding are skipped (as oneDNN does). The
// epilogue (bias, residual Z, activation) runs on the tile in registers; padded lanes of a
// half-filled last block are stored as 0. The activation is the reference's: inline for Relu /
// LeakyRelu (NaN kept), else apply_activation on the stored tile.
// Measured 2026-12-07 (2-core AVX-512 Xeon, shared): RegNetY-400MF batch 1, its 16 grouped convs 1.59 ->
// 0.61 ms (medians of 5 alternated runs of `infera profile MODEL --batch 1 --top 200`: 143-232 GFLOP/s,
// stride 2 slowest), `infera bench MODEL --batch 1 --duration 2 --warmup 3` p50 4.84 -> 3.70 ms.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "backends/cpu/dnnl_internal.h"
#include "ops/conv.h"

namespace infera::cpu {
namespace {

#define INFERA_AVX512 __attribute__((target("avx512f")))
// GCC 12's _mm512_undefined_ps (inside vpermps and vmaxps intrinsics) is `__m512 y = y;`: a
// false maybe-uninitialized warning in every caller.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

constexpr int kMaxTile = 16;  // output pixels per register tile (16 accumulators)

struct Group8Geom {
  int64_t N = 0, CB = 0, H = 0, W = 0, OH = 0, OW = 0, KH = 0, KW = 0, SH = 1, SW = 1, PT = 0, PL = 0;
  bool half_last = false;  // C % 16 == 8: the last block holds one group; lanes 8..15 are padding
  bool has_bias = false, has_z = false;
  bool fast_kw = false;  // KW == 3, stride 1 or 2, pads within 2 taps: the unrolled tiles
  Activation act;
  int tile = kMaxTile;  // output pixels per tile along a row (the last tile of a row may be shorter)
};

// One tile: T output pixels of row oy from column ox0, for one channel block.
struct TileArgs {
  const float* x;     // the block's input plane [H][W][16]
  const float* w;     // the block's packed weights [KH][KW][r 8][lane 16]
  const float* bias;  // 16 lanes (zeros where none)
  const float* z;     // the residual at the tile's first output pixel, or null
  float* y;           // the output at the tile's first output pixel
  int64_t oy, ix0;    // ix0 = ox0 * SW - PL: the input column of tap 0 of the first pixel
  bool half;          // lanes 8..15 are padding: stored as 0
};

using TileFn = void (*)(const TileArgs&, const Group8Geom&);

// vpermps indices of rotation r: lane l reads lane (l + r) % 8 of its group.
INFERA_AVX512 inline __m512i rotation(int r) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i rot = _mm512_and_si512(_mm512_add_epi32(lane, _mm512_set1_epi32(r)), _mm512_set1_epi32(7));
  return _mm512_or_si512(rot, _mm512_and_si512(lane, _mm512_set1_epi32(8)));
}

// Bias is in acc already: + Z, the activation, padded lanes to 0, store.
template <int T>
INFERA_AVX512 inline __attribute__((always_inline)) void tile_store(__m512* acc, const TileArgs& a,
                                                                    const Group8Geom& g) {
  const __m512 zero = _mm512_setzero_ps();
  const ActKind kind = g.act.kind;
  const __m512 alpha = _mm512_set1_ps(g.act.alpha);
  const __mmask16 keep = a.half ? 0x00FF : 0xFFFF;
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    __m512 v = acc[t];
    if (a.z) v = _mm512_add_ps(v, _mm512_loadu_ps(a.z + t * 16));
    if (kind == ActKind::kRelu) {
      v = _mm512_max_ps(zero, v);  // vmaxps returns its second operand for NaN: x < 0 ? 0 : x
    } else if (kind == ActKind::kLeakyRelu) {
      v = _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, alpha);  // x < 0 ? a x : x
    }
    _mm512_storeu_ps(a.y + t * 16, _mm512_maskz_mov_ps(keep, v));
  }
  if (kind != ActKind::kIdentity && kind != ActKind::kRelu && kind != ActKind::kLeakyRelu) {
    apply_activation(g.act, a.y, T * 16);
    if (a.half)
      for (int t = 0; t < T; ++t) _mm256_storeu_ps(a.y + t * 16 + 8, _mm256_setzero_ps());
  }
}

// One rotation r of the window's input pixels (kRotate false: r = 0, the pixels as they are) into
// the tile: input pixel j feeds the up to 3 outputs that read it. Pads of at most 2 taps: only the
// window's first and last 2 pixels can lie outside the row [jlo, jhi).
template <int T, int S, bool kRotate>
INFERA_AVX512 inline __attribute__((always_inline)) void k3_rotation(__m512* acc, const float* xr, int64_t ix0,
                                                                     int64_t jlo, int64_t jhi, const float* wr, int r) {
  constexpr int K = 3, J = (T - 1) * S + K;
  const __m512i idx = rotation(r);
  const __m512 w0 = _mm512_loadu_ps(wr + r * 16), w1 = _mm512_loadu_ps(wr + 128 + r * 16),
               w2 = _mm512_loadu_ps(wr + 256 + r * 16);
#pragma GCC unroll 64
  for (int j = 0; j < J; ++j) {
    if ((j < K - 1 && j < jlo) || (j > J - K && j >= jhi)) continue;
    const __m512 x = _mm512_loadu_ps(xr + (ix0 + j) * 16);
    const __m512 e = kRotate ? _mm512_permutexvar_ps(idx, x) : x;
    if (j % S == 0 && j / S < T) acc[j / S] = _mm512_fmadd_ps(w0, e, acc[j / S]);
    if (j >= 1 && (j - 1) % S == 0 && (j - 1) / S < T) acc[(j - 1) / S] = _mm512_fmadd_ps(w1, e, acc[(j - 1) / S]);
    if (j >= 2 && (j - 2) % S == 0 && (j - 2) / S < T) acc[(j - 2) / S] = _mm512_fmadd_ps(w2, e, acc[(j - 2) / S]);
  }
}

// KW == 3, stride S: every input pixel of the tile's window is rotated once per (ky, r) and feeds
// the up to 3 outputs that read it.
template <int T, int S>
INFERA_AVX512 void tile_k3(const TileArgs& a, const Group8Geom& g) {
  __m512 acc[T];
  const __m512 b = _mm512_loadu_ps(a.bias);
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) acc[t] = b;
  const int64_t jlo = a.ix0 < 0 ? -a.ix0 : 0, jhi = g.W - a.ix0;  // the window's pixels in the row
  for (int64_t ky = 0; ky < g.KH; ++ky) {
    const int64_t iy = a.oy * g.SH - g.PT + ky;
    if (iy < 0 || iy >= g.H) continue;
    const float* xr = a.x + iy * g.W * 16;
    const float* wr = a.w + ky * 3 * 128;
    k3_rotation<T, S, false>(acc, xr, a.ix0, jlo, jhi, wr, 0);
#pragma GCC unroll 1
    for (int r = 1; r < 8; ++r) k3_rotation<T, S, true>(acc, xr, a.ix0, jlo, jhi, wr, r);
  }
  tile_store<T>(acc, a, g);
}

// Any kernel size and stride: one rotation per (tap, r, output pixel).
template <int T>
INFERA_AVX512 void tile_any(const TileArgs& a, const Group8Geom& g) {
  __m512 acc[T];
  const __m512 b = _mm512_loadu_ps(a.bias);
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) acc[t] = b;
  for (int64_t ky = 0; ky < g.KH; ++ky) {
    const int64_t iy = a.oy * g.SH - g.PT + ky;
    if (iy < 0 || iy >= g.H) continue;
    const float* xr = a.x + iy * g.W * 16;
    for (int64_t kx = 0; kx < g.KW; ++kx) {
      const float* wr = a.w + (ky * g.KW + kx) * 128;
#pragma GCC unroll 1
      for (int r = 0; r < 8; ++r) {
        const __m512i idx = rotation(r);
        const __m512 w = _mm512_loadu_ps(wr + r * 16);
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) {
          const int64_t ix = a.ix0 + t * g.SW + kx;
          if (ix < 0 || ix >= g.W) continue;
          acc[t] = _mm512_fmadd_ps(w, _mm512_permutexvar_ps(idx, _mm512_loadu_ps(xr + ix * 16)), acc[t]);
        }
      }
    }
  }
  tile_store<T>(acc, a, g);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

template <size_t... I>
constexpr std::array<TileFn, kMaxTile + 1> tiles_k3_s1(std::index_sequence<I...>) {
  return {nullptr, &tile_k3<static_cast<int>(I) + 1, 1>...};
}
template <size_t... I>
constexpr std::array<TileFn, kMaxTile + 1> tiles_k3_s2(std::index_sequence<I...>) {
  return {nullptr, &tile_k3<static_cast<int>(I) + 1, 2>...};
}
template <size_t... I>
constexpr std::array<TileFn, kMaxTile + 1> tiles_any(std::index_sequence<I...>) {
  return {nullptr, &tile_any<static_cast<int>(I) + 1>...};
}
constexpr auto kTilesK3S1 = tiles_k3_s1(std::make_index_sequence<kMaxTile>());
constexpr auto kTilesK3S2 = tiles_k3_s2(std::make_index_sequence<kMaxTile>());
constexpr auto kTilesAny = tiles_any(std::make_index_sequence<kMaxTile>());

// One output row of one channel block of one image.
void group8_row(const Group8Geom& g, const float* x, const float* w, const float* b, const float* z, float* y,
                int64_t n, int64_t cb, int64_t oy) {
  const int64_t plane = (n * g.CB + cb);
  alignas(64) float bias[16] = {};
  const bool half = g.half_last && cb == g.CB - 1;
  if (b)
    for (int l = 0; l < (half ? 8 : 16); ++l) bias[l] = b[cb * 16 + l];
  const auto& tiles = !g.fast_kw ? kTilesAny : g.SW == 1 ? kTilesK3S1 : kTilesK3S2;
  TileArgs a{x + plane * g.H * g.W * 16, w + cb * g.KH * g.KW * 128, bias, nullptr, nullptr, oy, 0, half};
  const int64_t row = (plane * g.OH + oy) * g.OW * 16;
  for (int64_t ox = 0; ox < g.OW; ox += g.tile) {
    const int64_t t = std::min<int64_t>(g.tile, g.OW - ox);
    a.ix0 = ox * g.SW - g.PL;
    a.y = y + row + ox * 16;
    a.z = z ? z + row + ox * 16 : nullptr;
    tiles[static_cast<size_t>(t)](a, g);
  }
}

bool group8_enabled() {
  static const bool on = __builtin_cpu_supports("avx512f");
  return on;
}

}  // namespace

std::unique_ptr<DnnlKernel> group8_conv_create(const StepRequest& req) {
  OwnConv c;
  if (!group8_enabled() || !own_conv_request(req, c)) return nullptr;
  const ConvOp* op = c.op;
  const Dims &x = c.x, &w = c.w, &y = c.y;
  const std::vector<int64_t>& pads = c.pads;
  const bool has_bias = c.has_bias, has_z = c.has_z;
  const int64_t G = op->attrs().group;
  if (G < 2 || x[1] != 8 * G || w[0] != 8 * G || w[1] != 8) return nullptr;
  if (req.in_format(0) != Format::kNChw16c || req.out_format(0) != Format::kNChw16c ||
      (has_z && req.in_format(3) != Format::kNChw16c))
    return nullptr;

  Group8Geom g;
  g.N = x[0], g.CB = (x[1] + 15) / 16, g.H = x[2], g.W = x[3], g.OH = y[2], g.OW = y[3], g.KH = w[2], g.KW = w[3];
  g.SH = c.sh, g.SW = c.sw;
  g.PT = pads[0], g.PL = pads[1];
  if (g.SH > 2 || g.SW > 2) return nullptr;
  g.half_last = x[1] % 16 != 0;
  g.has_bias = has_bias, g.has_z = has_z;
  g.act = op->fused() ? op->activation() : Activation{};
  // The unrolled tiles read at most 2 pixels beyond either end of the row (the window's first and
  // last 2): the left pad and the last output's overhang past the right edge.
  const int64_t overhang = (g.OW - 1) * g.SW - g.PL + g.KW - g.W;
  g.fast_kw = g.KW == 3 && g.PL <= 2 && overhang <= 2;
  const int64_t tiles = (g.OW + kMaxTile - 1) / kMaxTile;
  g.tile = static_cast<int>((g.OW + tiles - 1) / tiles);

  // Weights [M][8][KH][KW] into [block][ky][kx][r][lane]: lane l of block b is output channel m = 16 b + l
  // (group 2 b + l / 8), its rotation r the weight of the group's input channel (m + r) % 8; zero for the
  // padded group of a half-filled last block.
  auto k = std::make_unique<DnnlKernel>(has_z || !g.act.is_identity() ? "dnnl fused conv" : "dnnl conv");
  const int64_t per_block = g.KH * g.KW * 128, M = y[1];
  memory wp = k->own(memory::desc({g.CB * per_block}, memory::data_type::f32, memory::format_tag::a));
  float* wpp = static_cast<float*>(wp.get_data_handle());
  const float* wsrc = req.inputs[1]->value->data_as<float>();
  std::memset(wpp, 0, static_cast<size_t>(g.CB * per_block) * sizeof(float));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t ky = 0; ky < g.KH; ++ky)
        for (int64_t kx = 0; kx < g.KW; ++kx)
          wpp[(m / 16) * per_block + ((ky * g.KW + kx) * 8 + r) * 16 + m % 16] =
              wsrc[((m * 8 + (m + r) % 8) * g.KH + ky) * g.KW + kx];
  k->set_impl(std::string("infera group conv 8x8 avx512 (") + (g.fast_kw ? "3-tap rows" : "any taps") + ")");

  // The output's bound from the inputs' (as conv_create's unguarded path), so that the guarded
  // convs after this one skip their reads.
  const float bias_max =
      has_bias && req.inputs[2]->value ? max_abs(req.inputs[2]->value->data_as<float>(), M, 1) : RunResources::kNoBound;
  carry_conv_bound(*k, max_filter_abs_sum(*req.inputs[1]->value), has_bias, bias_max, has_z, g.act);

  k->set_after([g, wpp](ComputeContext& ctx) {
    const float* xp = ctx.in(0).ptr<const float>();
    const float* bp = g.has_bias ? ctx.in(2).ptr<const float>() : nullptr;
    const float* zp = g.has_z ? ctx.in(3).ptr<const float>() : nullptr;
    float* yp = ctx.out(0).ptr<float>();
    const int64_t rows = g.N * g.CB * g.OH;
    const int64_t macs = rows * g.OW * g.KH * g.KW * 128;
    const int threads = macs >= (int64_t(1) << 16) ? std::max(1, ctx.num_threads) : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t oy = r % g.OH, cb = (r / g.OH) % g.CB, n = r / (g.OH * g.CB);
      group8_row(g, xp, wpp, bp, zp, yp, n, cb, oy);
    }
  });
  return k;
}

}  // namespace infera::cpu
