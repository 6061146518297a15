// Convs of a small output (N * OH * OW <= 64: ResNet's layer4 at batch 1, the 7x7 heads of
// ShuffleNet / MNASNet / MobileNetV2) and large weights, in nChw16c: our own AVX-512 loop. There the
// weights (4 MB for a 1x1 512->2048, 9.4 MB for a 3x3 512) come from L3 / DRAM on every run, and
// oneDNN 2.6's jit kernels do not overlap that stream with their FMAs: with weights hot in cache they
// run at ~90% of peak, with the weights of a whole network in between at 60-68% (measured
// 2026-12-07, 2-core AVX-512 Xeon: 1x1 512->2048 on 7x7, 0.30 ms hot, 0.42 ms cold). Here the
// weights are packed in the order the loop reads them, in 2 MB pages, and streamed once per run:
// per unit of 32 output channels (two 16-lane blocks), every output pixel's accumulators live in
// registers (tiles of up to 14 pixels x 2 blocks), the reduction runs in chunks of 256 input
// channels (the chunk's weights stay in L1 across the pixel tiles, partial sums in a small
// buffer), and each chunk prefetches the next one into L2, spread over its tiles.
// A 3x3 (or strided 1x1) conv reads its input as columns: one image per tap, copied into the
// scratch ([tap][block][pixel][16]: what a 1x1 conv of 9 C channels reads), so the same loop runs.
// The bias starts the sums; the epilogue (residual Z, activation) runs on the finished tile: Relu /
// LeakyRelu / Clip / Sigmoid / HardSigmoid / HardSwish / SiLU in AVX-512 (act16: bit-identical to
// apply_activation, NaN kept), any other activation through apply_activation; padded lanes stored
// as 0. The output's bound is carried as for oneDNN's unguarded convs (carry_conv_bound).
// Measured 2026-12-07 (`infera profile MODEL --batch 1 --threads 2`, medians of 7 alternated runs
// with INFERA_SMALLSPATIAL_CONV=0): ResNet-50's layer4 convs 6.40 -> 4.92 ms (1.30x), wide_resnet50_2's
// 18.8 -> 14.9 ms, ShuffleNet's conv5 0.279 -> 0.175 ms.
#include <immintrin.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "backends/cpu/avx512_activation.h"
#include "backends/cpu/dnnl_internal.h"
#include "ops/conv.h"

namespace infera::cpu {
namespace {

#define INFERA_AVX512 __attribute__((target("avx512f")))
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

constexpr int kMaxTile = 14;        // output pixels per register tile (x 2 blocks = 28 accumulators)
constexpr int64_t kMaxPixels = 64;  // N * OH * OW taken
constexpr int64_t kChunk = 16;      // input-channel blocks (x 16 channels) per reduction chunk

struct SsGeom {
  int64_t N = 0, C = 0, CB = 0, H = 0, W = 0, M = 0, MB = 0, OH = 0, OW = 0, P = 0, NP = 0;
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, PT = 0, PL = 0;
  int64_t kblocks = 0;  // taps x CB: the reduction's 16-channel blocks
  int last_lanes = 16;  // input channels in block CB - 1 of each tap
  // 1x1, stride 1, no pad, one image, whole blocks: X read in place; else the columns, whose padded
  // lanes are 0 (the loop reads all 16 lanes of every block: their weights are 0, and X's padded
  // lanes are not trusted to be finite).
  bool direct = false;
  // X, Z or Y plain (NCHW) rather than nChw16c: the columns transpose X; the epilogue gathers Z and
  // scatters Y (ShuffleNet's conv5 and MNASNet's last 1x1 get plain values from the planner).
  bool x_plain = false, z_plain = false, y_plain = false;
  bool has_bias = false, has_z = false;
  Activation act;
  int tile = kMaxTile;
};

// One unit: J (1 or 2) output blocks from block mb, its packed weights at w ([kblock][16][J][16]).
struct Unit {
  int64_t mb = 0;
  int j = 2;
  int64_t w = 0;  // offset in floats
};

struct TileArgs {
  const float* x;   // the chunk's first k-block at the tile's first pixel
  int64_t xs;       // floats between k-blocks
  int64_t nkb;      // k-blocks in the chunk
  const float* w;   // the chunk's weights
  const float* pf;  // lines to prefetch (null: none), npf per k-block
  int64_t npf;
  float* part;        // partial sums [T][J][16]
  bool first, last;   // first chunk: start from the bias; last: the epilogue and Y
  const float* bias;  // J x 16
  const float* z;     // residual base (or null)
  float* y;
  int64_t q0;  // the tile's first pixel (n * P + p)
  int64_t mb;  // the unit's first output block
};

using TileFn = void (*)(const TileArgs&, const SsGeom&);

// 16 input channels into the tile: per channel, J weight vectors against the T pixels' broadcasts.
template <int T, int J>
INFERA_AVX512 inline __attribute__((always_inline)) void kblock(__m512 (&acc)[T][J], const float* xb, const float* wb) {
#pragma GCC unroll 16
  for (int l = 0; l < 16; ++l) {
    __m512 wv[J];
#pragma GCC unroll 2
    for (int j = 0; j < J; ++j) wv[j] = _mm512_load_ps(wb + (l * J + j) * 16);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      const __m512 b = _mm512_set1_ps(xb[t * 16 + l]);
#pragma GCC unroll 2
      for (int j = 0; j < J; ++j) acc[t][j] = _mm512_fmadd_ps(wv[j], b, acc[t][j]);
    }
  }
}

// The epilogue on the tile's sums (in a.part: a function of its own, so that the register
// allocation of the FMA loop does not see it): + Z, the activation, padded lanes of the last block
// to 0, store.
template <int T, int J>
INFERA_AVX512 __attribute__((noinline)) void ss_epilogue(const TileArgs& a, const SsGeom& g) {
  const __m512 zero = _mm512_setzero_ps();
  const ActKind kind = g.act.kind;
  const __m512 alpha = _mm512_set1_ps(g.act.alpha), beta = _mm512_set1_ps(g.act.beta);
  const bool vector_act = act16_has(kind);
  const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i plane = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(static_cast<int>(g.P)));  // plain: lane m at m * P
  alignas(64) float tmp[16];
  for (int j = 0; j < J; ++j) {
    const int64_t mb = a.mb + j;
    const int valid = static_cast<int>(std::min<int64_t>(16, g.M - mb * 16));
    const __mmask16 keep = static_cast<__mmask16>((1u << valid) - 1);
    for (int t = 0; t < T; ++t) {
      const int64_t q = a.q0 + t, n = q / g.P, p = q % g.P;
      const int64_t blocked = ((n * g.MB + mb) * g.P + p) * 16, plain = (n * g.M + mb * 16) * g.P + p;
      __m512 v = _mm512_load_ps(a.part + (t * J + j) * 16);
      if (a.z)
        v = _mm512_add_ps(v, g.z_plain ? _mm512_mask_i32gather_ps(zero, keep, plane, a.z + plain, 4)
                                       : _mm512_loadu_ps(a.z + blocked));
      if (kind == ActKind::kRelu) {  // Relu, Clip (ResNet, MNASNet, MobileNetV2): as before act16, no jump table
        v = _mm512_max_ps(zero, v);  // vmaxps returns its second operand for NaN: x < 0 ? 0 : x
      } else if (kind == ActKind::kClip) {
        v = _mm512_min_ps(beta, _mm512_max_ps(alpha, v));  // (x < lo ? lo : x) > hi ? hi : ..., NaN kept
      } else if (vector_act) {
        v = act16(g.act, v);
      } else {
        _mm512_store_ps(tmp, v);
        apply_activation(g.act, tmp, 16);
        v = _mm512_load_ps(tmp);
      }
      if (g.y_plain)
        _mm512_mask_i32scatter_ps(a.y + plain, keep, plane, v, 4);
      else
        _mm512_storeu_ps(a.y + blocked, _mm512_maskz_mov_ps(keep, v));  // padded lanes: 0
    }
  }
}

template <int T, int J>
INFERA_AVX512 void ss_tile(const TileArgs& a, const SsGeom& g) {
  __m512 acc[T][J];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 2
    for (int j = 0; j < J; ++j)
      acc[t][j] = a.first ? _mm512_load_ps(a.bias + j * 16) : _mm512_load_ps(a.part + (t * J + j) * 16);
  const float* x = a.x;
  const float* w = a.w;
  const float* pf = a.pf;
  const int64_t npf = a.pf ? a.npf : 0;
  for (int64_t k = 0; k < a.nkb; ++k, x += a.xs, w += 16 * J * 16, pf += npf * 16) {
    for (int64_t i = 0; i < npf; ++i) _mm_prefetch(reinterpret_cast<const char*>(pf + i * 16), _MM_HINT_T1);
    kblock<T, J>(acc, x, w);
  }
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 2
    for (int j = 0; j < J; ++j) _mm512_store_ps(a.part + (t * J + j) * 16, acc[t][j]);
  if (a.last) ss_epilogue<T, J>(a, g);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

template <int J, size_t... I>
constexpr std::array<TileFn, kMaxTile + 1> tiles(std::index_sequence<I...>) {
  return {nullptr, &ss_tile<static_cast<int>(I) + 1, J>...};
}
constexpr auto kTiles1 = tiles<1>(std::make_index_sequence<kMaxTile>());
constexpr auto kTiles2 = tiles<2>(std::make_index_sequence<kMaxTile>());

// The columns of the taps: cols[tap][cb][q][16] = X[n][cb][iy][ix][16] (0 in the padding and in the
// padded lanes of the last block), rows (tap, cb) r0..r1.
void fill_columns(const SsGeom& g, const float* x, float* cols, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t tap = r / g.CB, cb = r % g.CB, ky = tap / g.KW, kx = tap % g.KW;
    float* out = cols + r * g.NP * 16;
    const int lanes = cb == g.CB - 1 ? g.last_lanes : 16;
    if (lanes < 16) std::memset(out, 0, static_cast<size_t>(g.NP) * 16 * sizeof(float));
    if (g.x_plain) {  // X[n][cb * 16 + l][iy][ix]
      for (int64_t n = 0; n < g.N; ++n)
        for (int64_t oy = 0; oy < g.OH; ++oy) {
          const int64_t iy = oy * g.SH - g.PT + ky;
          for (int64_t ox = 0; ox < g.OW; ++ox, out += 16) {
            const int64_t ix = ox * g.SW - g.PL + kx;
            if (iy < 0 || iy >= g.H || ix < 0 || ix >= g.W) {
              std::memset(out, 0, 16 * sizeof(float));
              continue;
            }
            const float* src = x + ((n * g.C + cb * 16) * g.H + iy) * g.W + ix;
            for (int l = 0; l < 16; ++l) out[l] = l < lanes ? src[l * g.H * g.W] : 0.f;
          }
        }
      continue;
    }
    for (int64_t n = 0; n < g.N; ++n) {
      const float* plane = x + (n * g.CB + cb) * g.H * g.W * 16;
      for (int64_t oy = 0; oy < g.OH; ++oy) {
        const int64_t iy = oy * g.SH - g.PT + ky;
        for (int64_t ox = 0; ox < g.OW; ++ox, out += 16) {
          const int64_t ix = ox * g.SW - g.PL + kx;
          if (iy < 0 || iy >= g.H || ix < 0 || ix >= g.W)
            std::memset(out, 0, 16 * sizeof(float));
          else
            std::memcpy(out, plane + (iy * g.W + ix) * 16, static_cast<size_t>(lanes) * sizeof(float));
        }
      }
    }
  }
}

// One thread's units: per unit, per chunk of the reduction, per pixel tile.
void run_units(const SsGeom& g, const Unit* units, size_t nu, const float* wp, const float* xcols, const float* b,
               const float* z, float* y, const float* wend) {
  alignas(64) float part[kMaxPixels * 2 * 16];
  alignas(64) float bias[32];
  const int64_t chunks = (g.kblocks + kChunk - 1) / kChunk;
  const int64_t passes = (g.NP + g.tile - 1) / g.tile;
  // The first chunk is not prefetched by a previous one: ask for it now.
  if (nu) {
    const float* w0 = wp + units[0].w;
    const int64_t lines = std::min<int64_t>(g.kblocks, kChunk) * units[0].j * 16;
    for (int64_t i = 0; i < lines; ++i) _mm_prefetch(reinterpret_cast<const char*>(w0 + i * 16), _MM_HINT_T1);
  }
  for (size_t u = 0; u < nu; ++u) {
    const Unit& un = units[u];
    for (int j = 0; j < 32; ++j) {
      const int64_t m = un.mb * 16 + j;
      bias[j] = b && j < un.j * 16 && m < g.M ? b[m] : 0.f;
    }
    const auto& tl = un.j == 2 ? kTiles2 : kTiles1;
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t kb0 = c * kChunk, nkb = std::min(kChunk, g.kblocks - kb0);
      const float* wc = wp + un.w + kb0 * 16 * un.j * 16;
      // The next chunk (of this unit or the next) follows in memory: its lines, spread over the
      // tiles of this one (prefetched into L2 while these FMAs run).
      const float* next = wc + nkb * 16 * un.j * 16;
      const int64_t lines = std::min<int64_t>(nkb * un.j * 16, (wend - next) / 16);
      const int64_t npf = lines > 0 ? (lines + passes * nkb - 1) / (passes * nkb) : 0;
      int64_t pass = 0;
      for (int64_t q0 = 0; q0 < g.NP; q0 += g.tile, ++pass) {
        const int64_t t = std::min<int64_t>(g.tile, g.NP - q0);
        TileArgs a;
        a.x = xcols + (kb0 * g.NP + q0) * 16;
        a.xs = g.NP * 16;
        a.nkb = nkb;
        a.w = wc;
        a.pf = npf ? next + pass * npf * nkb * 16 : nullptr;  // a prefetch past the end does not fault
        a.npf = npf;
        a.part = part + q0 * un.j * 16;
        a.first = c == 0, a.last = c == chunks - 1;
        a.bias = bias;
        a.z = z, a.y = y;
        a.q0 = q0, a.mb = un.mb;
        tl[static_cast<size_t>(t)](a, g);
      }
    }
  }
}

// INFERA_SMALLSPATIAL_CONV=0: never (oneDNN's convs, for A/B runs); =all: every conv the loop can
// run, whatever its weights (the unit tests' small shapes); else the rule (smallspatial_worth).
// Read at each creation (plans are built rarely), so that a test can set it.
enum class SsMode { kOff, kRule, kAll };
SsMode smallspatial_mode() {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  const char* e = std::getenv("INFERA_SMALLSPATIAL_CONV");
  if (!avx512 || (e && std::string(e) == "0")) return SsMode::kOff;
  return e && std::string(e) == "all" ? SsMode::kAll : SsMode::kRule;
}

// Where the loop was measured to win (2026-12-07, `infera profile --batch 1 --threads 2`, medians of
// 5-12 alternated runs: bench/results/2026-12-07-cpu-smallspatial-conv-layers.md): weights of >= 3 MB (ResNet-50 /
// wide_resnet50_2 layer4: 1.2-1.4x), or >= 1.5 MB with more outputs than inputs (ShuffleNet's conv5 1.6x, MNASNet's and
// MobileNetV2's 320->1280 1.2-1.3x). Below, or square / projecting (RegNetX's 672->672 at 1.8 MB,
// MobileNetV2's 960->320 at 1.2 MB), it runs within +-10% of oneDNN's jit: left to oneDNN. Also
// (sixteenth session, same method) >= 0.75 MB expanding 4x or more with an activation the epilogue
// inlines: MNASNet's 192->1152 + Relu on 7x7 (0.86 MB) 0.091 -> 0.080 ms, MNASNet b1 1.8% (4
// alternated runs); with SiLU (EfficientNet's same shape) the epilogue's scalar activation doubled
// the layer (0.113 -> 0.233 ms). With act16 (nineteenth session) it runs even with oneDNN there:
// EfficientNet's four 192->1152 + SiLU 0.96-1.05x per layer, the model 1.00x over 11 alternated
// runs (bench/results/2026-12-07-cpu-smallspatial-silu-zen4.md): still left to oneDNN.
bool smallspatial_worth(int64_t C, int64_t M, int64_t taps, ActKind act) {
  const double bytes = 4.0 * static_cast<double>(C * M * taps);
  const bool inline_act =
      act == ActKind::kIdentity || act == ActKind::kRelu || act == ActKind::kLeakyRelu || act == ActKind::kClip;
  return bytes >= 3.0 * 1048576 || (bytes >= 1.5 * 1048576 && M > C) ||
         (bytes >= 0.75 * 1048576 && M >= 4 * C && inline_act);
}

// Host memory for the packed weights in 2 MB pages where the kernel gives them (transparent huge
// pages on madvise): the stream crosses a 4 KB page every 64 lines, and the page walks cost ~7% of a
// layer4 1x1 (measured with the loop above, weights cold). The tail below 2 MB stays in 4 KB pages.
std::shared_ptr<PackedBlob> huge_blob(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (bytes < kHuge) return PackedBlob::make(bytes);
  const size_t len = bytes + kHuge;
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return PackedBlob::make(bytes);
  char* p = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(m) + kHuge - 1) / kHuge * kHuge);
  madvise(p, bytes / kHuge * kHuge, MADV_HUGEPAGE);  // advice only: fine if refused
  std::shared_ptr<void> owner(m, [len](void* q) { munmap(q, len); });
  return PackedBlob::wrap(p, bytes, -1, std::move(owner));
}

}  // namespace

std::unique_ptr<DnnlKernel> smallspatial_conv_create(const StepRequest& req) {
  const SsMode mode = smallspatial_mode();
  OwnConv c;
  if (mode == SsMode::kOff || !own_conv_request(req, c)) return nullptr;
  const ConvOp* op = c.op;
  const Dims &x = c.x, &w = c.w, &y = c.y;
  const std::vector<int64_t>& pads = c.pads;
  const bool has_bias = c.has_bias, has_z = c.has_z;
  if (op->attrs().group != 1 || w[1] != x[1]) return nullptr;
  if (!((w[2] == 1 && w[3] == 1) || (w[2] == 3 && w[3] == 3))) return nullptr;
  auto ours = [](Format f) { return f == Format::kNChw16c || f == Format::kPlain; };
  if (!ours(req.in_format(0)) || !ours(req.out_format(0)) || (has_z && !ours(req.in_format(3)))) return nullptr;

  SsGeom g;
  g.N = x[0], g.C = x[1], g.CB = (x[1] + 15) / 16, g.H = x[2], g.W = x[3];
  g.M = y[1], g.MB = (y[1] + 15) / 16, g.OH = y[2], g.OW = y[3], g.P = y[2] * y[3], g.NP = y[0] * y[2] * y[3];
  g.KH = w[2], g.KW = w[3];
  g.SH = c.sh, g.SW = c.sw;
  g.PT = pads[0], g.PL = pads[1];
  if (g.NP > kMaxPixels || g.SH > 2 || g.SW > 2) return nullptr;
  if (mode == SsMode::kRule &&
      !smallspatial_worth(g.C, g.M, g.KH * g.KW, op->fused() ? op->activation().kind : ActKind::kIdentity))
    return nullptr;
  g.kblocks = g.KH * g.KW * g.CB;
  g.last_lanes = static_cast<int>(g.C - 16 * (g.CB - 1));
  g.x_plain = req.in_format(0) == Format::kPlain, g.y_plain = req.out_format(0) == Format::kPlain;
  g.z_plain = has_z && req.in_format(3) == Format::kPlain;
  g.direct = !g.x_plain && g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.N == 1 && pads[0] == 0 &&
             pads[1] == 0 && pads[2] == 0 && pads[3] == 0 && g.C % 16 == 0;
  g.has_bias = has_bias, g.has_z = has_z;
  g.act = op->fused() ? op->activation() : Activation{};
  const int64_t passes = (g.NP + kMaxTile - 1) / kMaxTile;
  g.tile = static_cast<int>((g.NP + passes - 1) / passes);

  // Units: the output blocks split over the threads as evenly as they go, each thread's range
  // in pairs (and one single block where odd); bounds[t]..bounds[t + 1] are thread t's units.
  const int threads = std::max(1, req.num_threads);
  std::vector<Unit> units;
  std::vector<size_t> bounds{0};
  int64_t wfloats = 0;
  for (int t = 0; t < threads; ++t) {
    const int64_t b0 = g.MB * t / threads, b1 = g.MB * (t + 1) / threads;
    for (int64_t mb = b0; mb < b1; mb += 2) {
      Unit u{mb, mb + 1 < b1 ? 2 : 1, wfloats};
      wfloats += g.kblocks * 16 * u.j * 16;
      units.push_back(u);
    }
    bounds.push_back(units.size());
  }

  // Weights [M][C][KH][KW] into per unit [tap][cb][lane l][j][16]: input channel cb * 16 + l of tap
  // (ky, kx) against output channel (mb + j) * 16 + lane; 0 for padded channels.
  auto k = std::make_unique<DnnlKernel>(has_z || !g.act.is_identity() ? "dnnl fused conv" : "dnnl conv");
  const size_t wbytes = static_cast<size_t>(wfloats) * sizeof(float);
  const std::string layout = "infera-smallspatial:units=" + std::to_string(units.size()) +
                             ":t=" + std::to_string(threads) + ":kb=" + std::to_string(g.kblocks);
  const std::string key =
      req.packed && req.node && req.node->inputs.size() > 1 && !req.node->outputs.empty()
          ? PackedWeights::key_of("dnnl:smallspatial-conv", req.node->inputs[1], req.node->outputs[0], req.node->name)
          : std::string();
  std::shared_ptr<const PackedBlob> blob = key.empty() ? nullptr : req.packed->find(key, layout, wbytes);
  if (!blob) {
    std::shared_ptr<PackedBlob> made = huge_blob(wbytes);
    if (!made) throw std::bad_alloc();
    float* wpp = static_cast<float*>(made->data());
    std::memset(wpp, 0, wbytes);
    const float* wsrc = req.inputs[1]->value->data_as<float>();
    const int64_t taps = g.KH * g.KW;
    for (const Unit& u : units)
      for (int64_t tap = 0; tap < taps; ++tap)
        for (int64_t c = 0; c < g.C; ++c)
          for (int j = 0; j < u.j; ++j)
            for (int64_t lane = 0; lane < 16; ++lane) {
              const int64_t m = (u.mb + j) * 16 + lane;
              if (m >= g.M) break;
              const int64_t kb = tap * g.CB + c / 16;
              wpp[u.w + ((kb * 16 + c % 16) * u.j + j) * 16 + lane] = wsrc[(m * g.C + c) * taps + tap];
            }
    blob = key.empty() ? std::shared_ptr<const PackedBlob>(std::move(made))
                       : req.packed->put(key, layout, std::move(made), false);
  }
  memory wmem = k->adopt(memory::desc({wfloats}, memory::data_type::f32, memory::format_tag::a), blob);
  const float* wpp = static_cast<const float*>(wmem.get_data_handle());
  size_t cols_at = SIZE_MAX;
  if (!g.direct)
    cols_at =
        k->temp_offset(k->temp(memory::desc({g.kblocks * g.NP * 16}, memory::data_type::f32, memory::format_tag::a)));
  k->set_impl(std::string("infera small-spatial conv avx512 (") + (g.direct ? "1x1 in place" : "columns") + ", " +
              std::to_string(g.KH) + "x" + std::to_string(g.KW) + ")");

  // The output's bound from the inputs' (as conv_create's unguarded path and the grouped kernel).
  const float bias_max = has_bias && req.inputs[2]->value ? max_abs(req.inputs[2]->value->data_as<float>(), g.M, 1)
                                                          : RunResources::kNoBound;
  carry_conv_bound(*k, max_filter_abs_sum(*req.inputs[1]->value), has_bias, bias_max, has_z, g.act);

  k->set_after([g, wpp, wfloats, units, bounds, threads, cols_at](ComputeContext& ctx) {
    const float* xp = ctx.in(0).ptr<const float>();
    const float* bp = g.has_bias ? ctx.in(2).ptr<const float>() : nullptr;
    const float* zp = g.has_z ? ctx.in(3).ptr<const float>() : nullptr;
    float* yp = ctx.out(0).ptr<float>();
    float* cols = g.direct ? nullptr : reinterpret_cast<float*>(static_cast<char*>(ctx.res.scratch) + cols_at);
    const int nt = std::max(1, ctx.num_threads);
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
      if (cols) {
        const int64_t rows = g.KH * g.KW * g.CB;
        fill_columns(g, xp, cols, rows * t / n, rows * (t + 1) / n);
#pragma omp barrier
      }
      // The units as planned when the team has the planned size, else an even split by index.
      size_t u0, u1;
      if (n == threads) {
        u0 = bounds[static_cast<size_t>(t)], u1 = bounds[static_cast<size_t>(t) + 1];
      } else {
        u0 = units.size() * static_cast<size_t>(t) / static_cast<size_t>(n);
        u1 = units.size() * static_cast<size_t>(t + 1) / static_cast<size_t>(n);
      }
      const float* wend = u1 < units.size() ? wpp + units[u1].w : wpp + wfloats;
      run_units(g, units.data() + u0, u1 - u0, wpp, cols ? cols : xp, bp, zp, yp, wend);
    }
  });
  return k;
}

}  // namespace infera::cpu
