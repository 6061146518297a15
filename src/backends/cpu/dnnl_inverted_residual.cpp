// com.infera.InvertedResidual (ops/inverted_residual.h) on the host, nChw16c in and out: our own
// AVX-512 loops. Unfused, MobileNetV2's first blocks write their 6x-expanded values (77 MB at
// 112x112x96 x 16 images) to memory and read them back twice. Here the work is split over (image,
// band of output rows); a band walks its output rows, and for each one
//   1. expands the input rows the depthwise window newly needs (1x1 conv + bias + act) into a
//      per-thread ring of K rows [K][E/16][W][16] (K x E x W floats: <= 200 KB in L2),
//   2. runs the depthwise conv on the ring (or on X itself when the block has no expand) into one
//      row [E/16][OW][16] (L1 / L2),
//   3. projects that row (1x1 conv + bias + Z) straight into Y.
// Only the halo rows at a band's start are expanded twice. The 1x1 parts are register tiles of up
// to 14 pixels x 2 output blocks (broadcast input channel x 16-lane weight vectors, as the
// small-spatial loop); activations through act16 (bit-identical to apply_activation). Padded lanes
// (E or M not a multiple of 16) are stored as 0; X's padded lanes are never read into a sum (its
// last block's reduction stops at C).
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>

#include "backends/cpu/avx512_activation.h"
#include "backends/cpu/dnnl_internal.h"
#include "ops/inverted_residual.h"

namespace infera::cpu {
namespace {

#define INFERA_AVX512 __attribute__((target("avx512f")))
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

constexpr int kMaxTile = 14;  // pixels per 1x1 register tile (x 2 blocks = 28 accumulators)

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

struct IrGeom {
  int64_t N = 0, C = 0, CB = 0, H = 0, W = 0, E = 0, EB = 0, M = 0, MB = 0, OH = 0, OW = 0;
  int64_t K = 3, S = 1, PT = 0, PL = 0;
  int c_tail = 16;  // input channels in X's last block
  bool expand = false, has_z = false;
  Activation ea, da;
  int64_t ring = 0, dwrow = 0;  // floats per thread: the ring of expanded rows, the depthwise row
};

bool plan_ir(const StepRequest& req, IrGeom& g) {
  const auto* op = dynamic_cast<const InvertedResidualOp*>(req.op);
  if (!op || req.inputs.size() != kIrInputs || !req.has_in(kIrX) || !req.has_in(kIrWDw) || !req.has_in(kIrWProject) ||
      !req.has_out(0))
    return false;
  if (!all_float32(req)) return false;
  for (size_t i : {kIrWExpand, kIrBExpand, kIrWDw, kIrBDw, kIrWProject, kIrBProject})
    if (req.has_in(i) && !req.inputs[i]->value) return false;
  const Dims x = req.in_dims(kIrX), wd = req.in_dims(kIrWDw), wp = req.in_dims(kIrWProject), y = req.out_dims(0);
  if (x.size() != 4 || wd.size() != 4 || wp.size() != 4 || y.size() != 4) return false;
  const InvertedResidualAttrs& a = op->attrs();
  g.N = x[0], g.C = x[1], g.H = x[2], g.W = x[3];
  g.E = wd[0], g.K = wd[2], g.M = wp[0], g.OH = y[2], g.OW = y[3];
  g.S = a.strides[0], g.PT = a.pads[0], g.PL = a.pads[1];
  g.expand = req.has_in(kIrWExpand);
  if (g.expand && req.in_dims(kIrWExpand) != Dims{g.E, g.C, 1, 1}) return false;
  if (!g.expand && g.C != g.E) return false;
  if (wd[1] != 1 || wd[3] != g.K || (g.K != 3 && g.K != 5) || a.strides[1] != g.S || g.S < 1 || g.S > 2) return false;
  if (wp[1] != g.E || wp[2] != 1 || wp[3] != 1 || y[0] != g.N || y[1] != g.M) return false;
  if (g.N <= 0 || g.OH <= 0 || g.OW <= 0 || g.PT >= g.K || g.PL >= g.K) return false;
  if ((g.OH - 1) * g.S - g.PT + g.K > g.H + a.pads[2] || (g.OW - 1) * g.S - g.PL + g.K > g.W + a.pads[3]) return false;
  g.has_z = req.has_in(kIrZ);
  if (g.has_z && req.in_dims(kIrZ) != y) return false;
  g.CB = (g.C + 15) / 16, g.EB = (g.E + 15) / 16, g.MB = (g.M + 15) / 16;
  g.c_tail = static_cast<int>(g.C - 16 * (g.CB - 1));
  g.ea = a.expand, g.da = a.dw;
  if (!act16_has(g.ea.kind) || !act16_has(g.da.kind)) return false;
  g.ring = g.expand ? g.K * g.EB * g.W * 16 : 0;
  g.dwrow = g.EB * g.OW * 16;
  return true;
}

struct PwArgs {
  const float* x;     // the tile's first pixel in the first input block (pixels 16 floats apart)
  int64_t xs;         // floats between input blocks
  int64_t nkb;        // input blocks
  int tail;           // channels in the last input block
  const float* w;     // [kb][16][J][16]
  const float* bias;  // J x 16
  float* y;           // the tile's first pixel in the first output block
  int64_t ys;         // floats between output blocks
  const float* z;     // residual, laid out as y (or null)
  __mmask16 mask[2];  // lanes stored per output block (the rest: 0)
  const Activation* act;
};
using PwFn = void (*)(const PwArgs&);

template <int T, int J>
INFERA_AVX512 inline __attribute__((always_inline)) void pw_lane(__m512 (&acc)[T][J], const float* xb, const float* wb,
                                                                 int l) {
  __m512 wv[J];
#pragma GCC unroll 2
  for (int j = 0; j < J; ++j) wv[j] = _mm512_loadu_ps(wb + (l * J + j) * 16);
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    const __m512 b = _mm512_set1_ps(xb[t * 16 + l]);
#pragma GCC unroll 2
    for (int j = 0; j < J; ++j) acc[t][j] = _mm512_fmadd_ps(wv[j], b, acc[t][j]);
  }
}

// A 1x1 conv tile: T pixels x J output blocks, bias, + Z, act, masked store.
template <int T, int J>
INFERA_AVX512 void pw_tile(const PwArgs& a) {
  __m512 acc[T][J];
#pragma GCC unroll 2
  for (int j = 0; j < J; ++j) {
    const __m512 b = _mm512_loadu_ps(a.bias + j * 16);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc[t][j] = b;
  }
  const float* x = a.x;
  const float* w = a.w;
  for (int64_t k = 0; k < a.nkb; ++k, x += a.xs, w += 16 * J * 16) {
    if (k + 1 < a.nkb || a.tail == 16) {
#pragma GCC unroll 16
      for (int l = 0; l < 16; ++l) pw_lane<T, J>(acc, x, w, l);
    } else {
      for (int l = 0; l < a.tail; ++l) pw_lane<T, J>(acc, x, w, l);
    }
  }
  const Activation& act = *a.act;
#pragma GCC unroll 2
  for (int j = 0; j < J; ++j)
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      __m512 v = acc[t][j];
      if (a.z) v = _mm512_add_ps(v, _mm512_loadu_ps(a.z + j * a.ys + t * 16));
      v = act16(act, v);
      _mm512_storeu_ps(a.y + j * a.ys + t * 16, _mm512_maskz_mov_ps(a.mask[j], v));
    }
}

template <int J, size_t... I>
constexpr std::array<PwFn, kMaxTile + 1> pw_tiles(std::index_sequence<I...>) {
  return {nullptr, &pw_tile<static_cast<int>(I) + 1, J>...};
}
constexpr auto kPw1 = pw_tiles<1>(std::make_index_sequence<kMaxTile>());
constexpr auto kPw2 = pw_tiles<2>(std::make_index_sequence<kMaxTile>());

// The lanes of a block holding `valid` channels (none for a block past the end: pw_row asks for
// both blocks of a pair even when J is 1).
__mmask16 lanes_mask(int64_t valid) {
  return static_cast<__mmask16>(valid <= 0 ? 0 : valid >= 16 ? 0xFFFF : (1u << valid) - 1);
}

// A row of P pixels through a 1x1 conv: output blocks in pairs, pixels in tiles. w packed per pair
// of output blocks [ob0][kb][16][J][16] at ob0 * nkb * 256.
void pw_row(const float* x, int64_t xs, int64_t nkb, int tail, const float* w, const float* bias, int64_t nob,
            int64_t nout, float* y, int64_t ys, const float* z, int64_t P, const Activation& act) {
  const int64_t passes = (P + kMaxTile - 1) / kMaxTile, tile = (P + passes - 1) / passes;
  for (int64_t ob = 0; ob < nob; ob += 2) {
    const int J = ob + 1 < nob ? 2 : 1;
    PwArgs a;
    a.xs = xs, a.nkb = nkb, a.tail = tail;
    a.w = w + ob * nkb * 256;
    a.bias = bias + ob * 16;
    a.ys = ys;
    a.act = &act;
    for (int j = 0; j < 2; ++j) a.mask[j] = lanes_mask(nout - (ob + j) * 16);
    const auto& fns = J == 2 ? kPw2 : kPw1;
    for (int64_t p0 = 0; p0 < P; p0 += tile) {
      const int64_t t = std::min(tile, P - p0);
      a.x = x + p0 * 16;
      a.y = y + ob * ys + p0 * 16;
      a.z = z ? z + ob * ys + p0 * 16 : nullptr;
      fns[static_cast<size_t>(t)](a);
    }
  }
}

// One depthwise output pixel near the row's ends (the window checked against the row).
template <int K, int S>
INFERA_AVX512 void dw_edge(const float* const* rows, int64_t W, int64_t PL, const float* wk, const float* bias,
                           const Activation& act, __mmask16 mask, float* out, int64_t ox) {
  __m512 acc = _mm512_loadu_ps(bias);
  for (int ky = 0; ky < K; ++ky) {
    if (!rows[ky]) continue;
    for (int kx = 0; kx < K; ++kx) {
      const int64_t ix = ox * S - PL + kx;
      if (ix >= 0 && ix < W)
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(wk + (ky * K + kx) * 16), _mm512_loadu_ps(rows[ky] + ix * 16), acc);
    }
  }
  _mm512_storeu_ps(out + ox * 16, _mm512_maskz_mov_ps(mask, act16(act, acc)));
}

// One depthwise output row of one channel block: rows[ky] is input row oy * S - PT + ky ([W][16])
// or null (padding). out [OW][16], act applied, lanes outside mask stored 0.
template <int K, int S>
INFERA_AVX512 void dw_row(const float* const* rows, int64_t W, int64_t OW, int64_t PL, const float* wk,
                          const float* bias, const Activation& act, __mmask16 mask, float* out) {
  __m512 wv[K * K];
  for (int i = 0; i < K * K; ++i) wv[i] = _mm512_loadu_ps(wk + i * 16);
  const __m512 b = _mm512_loadu_ps(bias);
  // Interior outputs: the whole window inside the row.
  const int64_t lo = std::min(OW, (PL + S - 1) / S);
  const int64_t hi = std::max(lo, std::min(OW, W + PL - K >= 0 ? (W + PL - K) / S + 1 : 0));
  for (int64_t ox = 0; ox < lo; ++ox) dw_edge<K, S>(rows, W, PL, wk, bias, act, mask, out, ox);
  constexpr int T = 8;
  int64_t ox = lo;
  for (; ox + T <= hi; ox += T) {
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = b;
    for (int ky = 0; ky < K; ++ky) {
      if (!rows[ky]) continue;
      const float* r = rows[ky] + (ox * S - PL) * 16;
#pragma GCC unroll 5
      for (int kx = 0; kx < K; ++kx)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t)
          acc[t] = _mm512_fmadd_ps(wv[ky * K + kx], _mm512_loadu_ps(r + (t * S + kx) * 16), acc[t]);
    }
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(out + (ox + t) * 16, _mm512_maskz_mov_ps(mask, act16(act, acc[t])));
  }
  for (; ox < OW; ++ox) dw_edge<K, S>(rows, W, PL, wk, bias, act, mask, out, ox);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

using DwFn = void (*)(const float* const*, int64_t, int64_t, int64_t, const float*, const float*, const Activation&,
                      __mmask16, float*);

struct IrPacked {
  std::vector<float> we, be, wd, bd, wp, bp;  // be, bd: EB * 16; bp: MB * 16 (padded lanes 0)
};

// w [O][I] (1x1) into [ob pair][ib][16][J][16], 0 for padded channels.
std::vector<float> pack_pw(const float* w, int64_t O, int64_t I) {
  const int64_t OB = (O + 15) / 16, IB = (I + 15) / 16;
  std::vector<float> p(static_cast<size_t>(OB * IB * 256), 0.f);
  for (int64_t ob = 0; ob < OB; ob += 2) {
    const int64_t J = std::min<int64_t>(2, OB - ob);
    float* u = p.data() + ob * IB * 256;
    for (int64_t j = 0; j < J; ++j)
      for (int64_t lane = 0; lane < 16; ++lane) {
        const int64_t o = (ob + j) * 16 + lane;
        if (o >= O) break;
        for (int64_t i = 0; i < I; ++i) u[((i / 16 * 16 + i % 16) * J + j) * 16 + lane] = w[o * I + i];
      }
  }
  return p;
}

std::vector<float> pad_bias(const StepRequest& req, size_t slot, int64_t n) {
  std::vector<float> b(static_cast<size_t>(round_up(n, 16)), 0.f);
  if (req.has_in(slot)) std::memcpy(b.data(), req.inputs[slot]->value->data(), static_cast<size_t>(n) * sizeof(float));
  return b;
}

float bias_max(const StepRequest& req, size_t slot, int64_t n) {
  return req.has_in(slot) ? max_abs(req.inputs[slot]->value->data_as<float>(), n, 1) : 0.f;
}

}  // namespace

Support inverted_residual_query(const StepRequest& req) {
  IrGeom g;
  if (!__builtin_cpu_supports("avx512f")) return Support::no("no AVX-512");
  if (!plan_ir(req, g)) return Support::no("an InvertedResidual without constant weights of shapes the loop takes");
  Support s = Support::plain(req.inputs.size(), req.outputs.size());
  s.input_formats[kIrX] = format_bit(Format::kNChw16c);
  if (g.has_z) s.input_formats[kIrZ] = format_bit(Format::kNChw16c);
  s.output_formats[0] = format_bit(Format::kNChw16c);
  return s;
}

std::unique_ptr<DnnlKernel> inverted_residual_create(const StepRequest& req) {
  IrGeom g;
  if (!plan_ir(req, g)) return nullptr;
  if (req.in_format(kIrX) != Format::kNChw16c || req.out_format(0) != Format::kNChw16c ||
      (g.has_z && req.in_format(kIrZ) != Format::kNChw16c))
    return nullptr;
  auto p = std::make_shared<IrPacked>();
  if (g.expand) {
    p->we = pack_pw(req.inputs[kIrWExpand]->value->data_as<float>(), g.E, g.C);
    p->be = pad_bias(req, kIrBExpand, g.E);
  }
  p->bd = pad_bias(req, kIrBDw, g.E);
  p->wd.assign(static_cast<size_t>(g.EB * g.K * g.K * 16), 0.f);
  const float* wd = req.inputs[kIrWDw]->value->data_as<float>();
  for (int64_t e = 0; e < g.E; ++e)
    for (int64_t t = 0; t < g.K * g.K; ++t) p->wd[(e / 16 * g.K * g.K + t) * 16 + e % 16] = wd[e * g.K * g.K + t];
  p->wp = pack_pw(req.inputs[kIrWProject]->value->data_as<float>(), g.M, g.E);
  p->bp = pad_bias(req, kIrBProject, g.M);

  // Work items: (image, band); bands so that the items split evenly over the threads.
  const int threads = std::max(1, req.num_threads);
  const int64_t bands = std::min<int64_t>(g.OH, threads / std::gcd<int64_t>(g.N, threads));
  const int64_t per_thread = round_up(g.ring + g.dwrow, 16);
  auto k = std::make_unique<DnnlKernel>("infera inverted-residual");
  const size_t tmp = k->temp_offset(k->temp(plain_md({per_thread * threads})));
  k->set_impl("avx512 (" + std::string(g.expand ? "expand " : "") + std::to_string(g.C) + "->" + std::to_string(g.E) +
              " dw " + std::to_string(g.K) + "x" + std::to_string(g.K) + "/" + std::to_string(g.S) + " ->" +
              std::to_string(g.M) + (g.has_z ? " +Z" : "") + ", " + std::to_string(bands) + " bands)");

  // The output's bound, through the three convs (as carry_conv_bound for one).
  const double se = g.expand ? max_filter_abs_sum(*req.inputs[kIrWExpand]->value) : 1.0;
  const double sd = max_filter_abs_sum(*req.inputs[kIrWDw]->value);
  const double sp = max_filter_abs_sum(*req.inputs[kIrWProject]->value);
  const float mbe = bias_max(req, kIrBExpand, g.E), mbd = bias_max(req, kIrBDw, g.E),
              mbp = bias_max(req, kIrBProject, g.M);
  if (std::isfinite(se) && std::isfinite(sd) && std::isfinite(sp) && mbe <= FLT_MAX && mbd <= FLT_MAX &&
      mbp <= FLT_MAX) {
    k->set_before([g, se, sd, sp, mbe, mbd, mbp](ComputeContext& ctx) {
      const float mx = ctx.res.in_bound(kIrX), mz = g.has_z ? ctx.res.in_bound(kIrZ) : 0.f;
      float b = RunResources::kNoBound;
      if (mx <= FLT_MAX && mz <= FLT_MAX) {
        float a = g.expand ? activation_bound(g.ea, (mx * static_cast<float>(se) + mbe) * 1.0625f) : mx;
        if (a <= FLT_MAX) a = activation_bound(g.da, (a * static_cast<float>(sd) + mbd) * 1.0625f);
        if (a <= FLT_MAX) b = (a * static_cast<float>(sp) + mz + mbp) * 1.0625f;
        if (!(b <= FLT_MAX)) b = RunResources::kNoBound;
      }
      ctx.res.set_out_bound(0, b);
    });
  }

  DwFn dw = g.K == 3 ? (g.S == 1 ? &dw_row<3, 1> : &dw_row<3, 2>) : (g.S == 1 ? &dw_row<5, 1> : &dw_row<5, 2>);
  k->set_after([g, p, tmp, per_thread, threads, bands, dw](ComputeContext& ctx) {
    const float* xp = ctx.in(kIrX).ptr<const float>();
    const float* zp = g.has_z ? ctx.in(kIrZ).ptr<const float>() : nullptr;
    float* yp = ctx.out(0).ptr<float>();
    float* scratch = reinterpret_cast<float*>(static_cast<char*>(ctx.res.scratch) + tmp);
    const int nt = std::max(1, std::min(ctx.num_threads, threads));
    const int64_t items = g.N * bands;
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num(), n_t = omp_get_num_threads();
      float* ring = scratch + per_thread * t;
      float* dwrow = ring + g.ring;
      const float* rows[5];
      for (int64_t it = items * t / n_t; it < items * (t + 1) / n_t; ++it) {
        const int64_t n = it / bands, band = it % bands;
        const int64_t oy0 = g.OH * band / bands, oy1 = g.OH * (band + 1) / bands;
        const float* xn = xp + n * g.CB * g.H * g.W * 16;
        int64_t next = 0;  // first input row not yet expanded into the ring
        for (int64_t oy = oy0; oy < oy1; ++oy) {
          const int64_t lo = oy * g.S - g.PT;
          if (g.expand) {
            for (int64_t r = std::max({next, lo, int64_t(0)}); r < std::min(lo + g.K, g.H); ++r)
              pw_row(xn + r * g.W * 16, g.H * g.W * 16, g.CB, g.c_tail, p->we.data(), p->be.data(), g.EB, g.E,
                     ring + (r % g.K) * g.EB * g.W * 16, g.W * 16, nullptr, g.W, g.ea);
            next = std::max(next, std::min(lo + g.K, g.H));
          }
          for (int64_t eb = 0; eb < g.EB; ++eb) {
            for (int64_t ky = 0; ky < g.K; ++ky) {
              const int64_t r = lo + ky;
              rows[ky] = r < 0 || r >= g.H ? nullptr
                         : g.expand        ? ring + ((r % g.K) * g.EB + eb) * g.W * 16
                                           : xn + (eb * g.H + r) * g.W * 16;
            }
            dw(rows, g.W, g.OW, g.PL, p->wd.data() + eb * g.K * g.K * 16, p->bd.data() + eb * 16, g.da,
               lanes_mask(g.E - eb * 16), dwrow + eb * g.OW * 16);
          }
          const int64_t yo = (n * g.MB * g.OH + oy) * g.OW * 16;
          pw_row(dwrow, g.OW * 16, g.EB, 16, p->wp.data(), p->bp.data(), g.MB, g.M, yp + yo, g.OH * g.OW * 16,
                 zp ? zp + yo : nullptr, g.OW, Activation{});
        }
      }
    }
  });
  return k;
}

}  // namespace infera::cpu
