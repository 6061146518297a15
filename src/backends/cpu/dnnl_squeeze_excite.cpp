// com.infera.SqueezeExcite (ops/squeeze_excite.h) on the host: our own loop, one step for what was a
// GlobalAveragePool and two tiny 1x1 convs (three steps: a pool primitive and two conv primitives
// of a few microseconds each on a 1x1 image). X plain or blocked (nChw16c / nChw8c), S plain or
// blocked. One parallel region: the spatial means (float, 4 interleaved accumulators) split by
// channel block, then W1's rows split over the threads (dot products), then W2's columns (axpys):
// a late gate's weights (2 x 1152 x 48 floats) come from memory every run, and each thread streams
// its share once for all images. S's bound (RunResources) is its max |s|, so the Mul after it and
// the conv after that keep theirs.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/dnnl_internal.h"
#include "ops/squeeze_excite.h"

namespace infera::cpu {
namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

struct SePlan {
  int64_t n = 0, c = 0, hw = 0, r = 0, cp = 0, rp = 0;  // cp, rp: c and r padded to 16
  Activation act, gate;
  std::vector<float> w1, b1, w2t, b2;  // W1 as [R][Cp], B1 [Rp], W2 as [R][Cp] (transposed), B2 [Cp]
};

bool plan_se(const StepRequest& req, SePlan& p, bool pack) {
  const auto* op = dynamic_cast<const SqueezeExciteOp*>(req.op);
  if (!op || req.inputs.size() != 5 || !req.has_in(0) || !req.has_in(1) || !req.has_in(3) || !req.has_out(0))
    return false;
  for (size_t i : {1, 2, 3, 4})
    if (req.has_in(i) && !req.inputs[i]->value) return false;  // weights and biases constant
  const Dims x = req.in_dims(0), w1 = req.in_dims(1), w2 = req.in_dims(3);
  if (x.size() != 4 || w1.size() != 4 || w2.size() != 4) return false;
  p.n = x[0], p.c = x[1], p.hw = x[2] * x[3], p.r = w1[0];
  if (p.n <= 0 || p.c <= 0 || p.hw <= 0 || p.r <= 0 || w1[1] != p.c || w2[0] != p.c || w2[1] != p.r) return false;
  if (req.out_dims(0) != Dims{p.n, p.c, 1, 1}) return false;
  p.cp = round_up(p.c, 16), p.rp = round_up(p.r, 16);
  p.act = op->activation(), p.gate = op->gate();
  if (!pack) return true;
  const float* pw1 = req.inputs[1]->value->data_as<float>();
  const float* pw2 = req.inputs[3]->value->data_as<float>();
  p.w1.assign(static_cast<size_t>(p.r * p.cp), 0.f);
  p.w2t.assign(static_cast<size_t>(p.r * p.cp), 0.f);
  p.b1.assign(static_cast<size_t>(p.rp), 0.f);
  p.b2.assign(static_cast<size_t>(p.cp), 0.f);
  for (int64_t j = 0; j < p.r; ++j)
    for (int64_t k = 0; k < p.c; ++k) {
      p.w1[j * p.cp + k] = pw1[j * p.c + k];
      p.w2t[j * p.cp + k] = pw2[k * p.r + j];
    }
  if (req.has_in(2)) std::memcpy(p.b1.data(), req.inputs[2]->value->data(), static_cast<size_t>(p.r) * sizeof(float));
  if (req.has_in(4)) std::memcpy(p.b2.data(), req.inputs[4]->value->data(), static_cast<size_t>(p.c) * sizeof(float));
  return true;
}

// mean over hw pixels of L (8 or 16) interleaved channels (a blocked layout's channel block); inlined
// into one clone-dispatched function per L
template <int L>
inline __attribute__((always_inline)) void mean_block(const float* x, int64_t hw, float* out) {
  float a[4][L] = {};
  int64_t i = 0;
  for (; i + 4 <= hw; i += 4)
    for (int u = 0; u < 4; ++u)
      for (int l = 0; l < L; ++l) a[u][l] += x[(i + u) * L + l];
  for (; i < hw; ++i)
    for (int l = 0; l < L; ++l) a[0][l] += x[i * L + l];
  const float inv = 1.f / static_cast<float>(hw);
  for (int l = 0; l < L; ++l) out[l] = ((a[0][l] + a[1][l]) + (a[2][l] + a[3][l])) * inv;
}
INFERA_CLONES void mean_block16(const float* x, int64_t hw, float* out) { mean_block<16>(x, hw, out); }
INFERA_CLONES void mean_block8(const float* x, int64_t hw, float* out) { mean_block<8>(x, hw, out); }

// mean of one contiguous plane (plain layout)
INFERA_CLONES float mean_plane(const float* x, int64_t hw) {
  float a[16] = {};
  int64_t i = 0;
  for (; i + 16 <= hw; i += 16)
    for (int l = 0; l < 16; ++l) a[l] += x[i + l];
  for (int l = 0; i < hw; ++i, ++l) a[l] += x[i];
  float s = 0.f;
  for (int l = 0; l < 16; ++l) s += a[l];
  return s / static_cast<float>(hw);
}

// sum_i a[i] b[i] over n, a multiple of 16 (16 lanes, then the lanes).
INFERA_CLONES float dot16(const float* a, const float* b, int64_t n) {
  float acc[16] = {};
  for (int64_t i = 0; i < n; i += 16)
    for (int l = 0; l < 16; ++l) acc[l] += a[i + l] * b[i + l];
  float s = 0.f;
  for (int l = 0; l < 16; ++l) s += acc[l];
  return s;
}

// y[0, n) = b + sum_j v[j] * w[j][0, n) (rows of w ld apart), n a multiple of 16.
INFERA_CLONES void axpys(const float* __restrict w, int64_t ld, const float* __restrict v, int64_t k,
                         const float* __restrict b, float* __restrict y, int64_t n) {
  std::memcpy(y, b, static_cast<size_t>(n) * sizeof(float));
  for (int64_t j = 0; j < k; ++j) {
    const float s = v[j];
    const float* row = w + j * ld;
    for (int64_t i = 0; i < n; ++i) y[i] += s * row[i];
  }
}

}  // namespace

Support squeeze_excite_query(const StepRequest& req) {
  SePlan p;
  if (!plan_se(req, p, false)) return Support::no("a SqueezeExcite without constant weights of matching shapes");
  Support s = Support::plain(req.inputs.size(), req.outputs.size());
  s.input_formats[0] = blocked_slots(req.inputs, {0})[0];
  s.output_formats[0] = blocked_slots(req.outputs, {0})[0];
  return s;
}

std::unique_ptr<DnnlKernel> squeeze_excite_create(const StepRequest& req) {
  auto p = std::make_shared<SePlan>();
  if (!plan_se(req, *p, true)) return nullptr;
  const Format fx = req.in_format(0), fs = req.out_format(0);
  const int bx = fx == Format::kNChw16c ? 16 : fx == Format::kNChw8c ? 8 : fx == Format::kPlain ? 1 : 0;
  const int bs = fs == Format::kNChw16c ? 16 : fs == Format::kNChw8c ? 8 : fs == Format::kPlain ? 1 : 0;
  if (bx == 0 || bs == 0) return nullptr;
  auto k = std::make_unique<DnnlKernel>("infera squeeze-excite");
  // Per run: the means [N][Cp] and hidden values [N][Rp], then the gate values [N][Cp].
  const size_t tmp = k->temp_offset(k->temp(plain_md({p->n * (2 * p->cp + p->rp)})));
  k->set_impl("loop (" +
              std::string(bx == 1   ? "plain"
                          : bx == 8 ? "nChw8c"
                                    : "nChw16c") +
              " X, C " + std::to_string(p->c) + ", R " + std::to_string(p->r) + ", " + activation_name(p->act.kind) +
              ", " + activation_name(p->gate.kind) + ")");
  // Threads where X or the weights are large: the weights of a late gate (2 x 1152 x 48 floats)
  // come from memory each run, at ~20 GB/s a thread.
  const bool par = p->n * p->c * p->hw >= (int64_t(1) << 15) || p->n * p->r * p->c >= (int64_t(1) << 14);
  k->set_after([p, tmp, bx, bs, par](ComputeContext& ctx) {
    const SePlan& q = *p;
    const float* x = ctx.in(0).ptr<const float>();
    float* m = reinterpret_cast<float*>(static_cast<char*>(ctx.res.scratch) + tmp);
    float* h = m + q.n * q.cp;
    float* s = h + q.n * q.rp;
    float* out = ctx.out(0).ptr<float>();
    // The means: one item per channel block (blocked X) or channel (plain X) of each image.
    const int64_t per = bx == 1 ? q.c : (q.c + bx - 1) / bx, items = q.n * per, chunks = q.cp / 16;
    const int threads = par ? std::max(1, ctx.num_threads) : 1;
    float bound = 0.f;
#pragma omp parallel num_threads(threads) reduction(max : bound)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      for (int64_t it = items * t / nt; it < items * (t + 1) / nt; ++it) {
        const int64_t img = it / per, blk = it % per;
        float* mi = m + img * q.cp;
        if (bx == 1) {
          mi[blk] = mean_plane(x + it * q.hw, q.hw);
        } else {
          (bx == 16 ? mean_block16 : mean_block8)(x + it * q.hw * bx, q.hw, mi + blk * bx);
          if (blk == per - 1) std::fill(mi + q.c, mi + q.cp, 0.f);  // padded lanes hold anything (0 * NaN)
        }
      }
      if (bx == 1 && t == 0)
        for (int64_t img = 0; img < q.n; ++img) std::fill(m + img * q.cp + q.c, m + (img + 1) * q.cp, 0.f);
#pragma omp barrier
      // Hidden values: rows of W1 split over the threads, each row read once for every image.
      const int64_t j0 = q.r * t / nt, j1 = q.r * (t + 1) / nt;
      for (int64_t img = 0; img < q.n && j1 > j0; ++img) {
        float* hi = h + img * q.rp;
        for (int64_t j = j0; j < j1; ++j) hi[j] = q.b1[j] + dot16(q.w1.data() + j * q.cp, m + img * q.cp, q.cp);
        apply_activation(q.act, hi + j0, j1 - j0);
      }
#pragma omp barrier
      // Gate values: 16-channel chunks of W2's columns split over the threads.
      const int64_t c0 = chunks * t / nt * 16, c1 = std::min(q.c, chunks * (t + 1) / nt * 16);
      for (int64_t img = 0; img < q.n && c1 > c0; ++img) {
        float* si = s + img * q.cp + c0;
        axpys(q.w2t.data() + c0, q.cp, h + img * q.rp, q.r, q.b2.data() + c0, si, round_up(c1 - c0, 16));
        apply_activation(q.gate, si, c1 - c0);
        bound = std::max(bound, max_abs(si, c1 - c0, 1));
        const int64_t row = bs == 1 ? q.c : round_up(q.c, bs);
        std::memcpy(out + img * row + c0, si, static_cast<size_t>(c1 - c0) * sizeof(float));
        if (bs > 1 && c1 == q.c) std::fill(out + img * row + q.c, out + (img + 1) * row, 0.f);
      }
    }
    ctx.res.set_out_bound(0, bound);
  });
  return k;
}

}  // namespace infera::cpu
