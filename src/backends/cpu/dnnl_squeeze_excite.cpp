// com.infera.SqueezeExcite (ops/squeeze_excite.h) on the host: our own loop, one step for what was a
// GlobalAveragePool and two tiny 1x1 convs (three steps, a pool primitive reading X at ~40 GB/s
// and two conv primitives of a few microseconds each on a 1x1 image). X plain or blocked (nChw16c /
// nChw8c), S plain or blocked; the spatial sums in float over 4 interleaved accumulators, the
// two matrix-vector products as axpys over packed, zero-padded weights. S's bound (RunResources)
// is its max |s|, so the Mul after it and the conv after that keep theirs.
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
  std::vector<float> w1t, b1, w2t, b2;  // W1 as [C][Rp], B1 [Rp], W2 as [R][Cp], B2 [Cp]
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
  p.w1t.assign(static_cast<size_t>(p.c * p.rp), 0.f);
  p.w2t.assign(static_cast<size_t>(p.r * p.cp), 0.f);
  p.b1.assign(static_cast<size_t>(p.rp), 0.f);
  p.b2.assign(static_cast<size_t>(p.cp), 0.f);
  for (int64_t j = 0; j < p.r; ++j)
    for (int64_t k = 0; k < p.c; ++k) {
      p.w1t[k * p.rp + j] = pw1[j * p.c + k];
      p.w2t[j * p.cp + k] = pw2[k * p.r + j];
    }
  if (req.has_in(2)) std::memcpy(p.b1.data(), req.inputs[2]->value->data(), static_cast<size_t>(p.r) * sizeof(float));
  if (req.has_in(4)) std::memcpy(p.b2.data(), req.inputs[4]->value->data(), static_cast<size_t>(p.c) * sizeof(float));
  return true;
}

// mean over hw pixels of `lanes` (8 or 16) interleaved channels (a blocked layout's channel block)
INFERA_CLONES void mean_block16(const float* x, int64_t hw, float* out) {
  float a[4][16] = {};
  int64_t i = 0;
  for (; i + 4 <= hw; i += 4)
    for (int u = 0; u < 4; ++u)
      for (int l = 0; l < 16; ++l) a[u][l] += x[(i + u) * 16 + l];
  for (; i < hw; ++i)
    for (int l = 0; l < 16; ++l) a[0][l] += x[i * 16 + l];
  const float inv = 1.f / static_cast<float>(hw);
  for (int l = 0; l < 16; ++l) out[l] = ((a[0][l] + a[1][l]) + (a[2][l] + a[3][l])) * inv;
}

INFERA_CLONES void mean_block8(const float* x, int64_t hw, float* out) {
  float a[4][8] = {};
  int64_t i = 0;
  for (; i + 4 <= hw; i += 4)
    for (int u = 0; u < 4; ++u)
      for (int l = 0; l < 8; ++l) a[u][l] += x[(i + u) * 8 + l];
  for (; i < hw; ++i)
    for (int l = 0; l < 8; ++l) a[0][l] += x[i * 8 + l];
  const float inv = 1.f / static_cast<float>(hw);
  for (int l = 0; l < 8; ++l) out[l] = ((a[0][l] + a[1][l]) + (a[2][l] + a[3][l])) * inv;
}

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

// y[0, n) = b + sum_k v[k] * w[k][0, n) (rows of w ld apart), n a multiple of 16.
INFERA_CLONES void axpys(const float* w, int64_t ld, const float* v, int64_t k, const float* b, float* y, int64_t n) {
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
  k->set_after([p, tmp, bx, bs](ComputeContext& ctx) {
    const SePlan& q = *p;
    const float* x = ctx.in(0).ptr<const float>();
    float* m = reinterpret_cast<float*>(static_cast<char*>(ctx.res.scratch) + tmp);
    float* h = m + q.n * q.cp;
    float* s = h + q.n * q.rp;
    // The means: one item per channel block (blocked X) or channel (plain X) of each image.
    const int64_t per = bx == 1 ? q.c : (q.c + bx - 1) / bx, items = q.n * per;
    const bool par = q.n * q.c * q.hw >= (int64_t(1) << 15) && items > 1;
    const int threads = par ? static_cast<int>(std::min<int64_t>(std::max(1, ctx.num_threads), items)) : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t it = 0; it < items; ++it) {
      const int64_t img = it / per, blk = it % per;
      if (bx == 1)
        m[img * q.cp + blk] = mean_plane(x + it * q.hw, q.hw);
      else if (bx == 16)
        mean_block16(x + it * q.hw * 16, q.hw, m + img * q.cp + blk * 16);
      else
        mean_block8(x + it * q.hw * 8, q.hw, m + img * q.cp + blk * 8);
    }
    // Padded lanes of a blocked X may hold anything (oneDNN writes 0 * x there): ignored.
    const int nt = q.n > 1 ? static_cast<int>(std::min<int64_t>(std::max(1, ctx.num_threads), q.n)) : 1;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t img = 0; img < q.n; ++img) {
      float *mi = m + img * q.cp, *hi = h + img * q.rp, *si = s + img * q.cp;
      std::fill(mi + q.c, mi + q.cp, 0.f);
      axpys(q.w1t.data(), q.rp, mi, q.c, q.b1.data(), hi, q.rp);
      apply_activation(q.act, hi, q.r);
      axpys(q.w2t.data(), q.cp, hi, q.r, q.b2.data(), si, q.cp);
      apply_activation(q.gate, si, q.c);
    }
    float* out = ctx.out(0).ptr<float>();
    float bound = 0.f;
    for (int64_t img = 0; img < q.n; ++img) {
      const float* si = s + img * q.cp;
      bound = std::max(bound, max_abs(si, q.c, 1));
      if (bs == 1) {
        std::memcpy(out + img * q.c, si, static_cast<size_t>(q.c) * sizeof(float));
      } else {
        const int64_t cb = round_up(q.c, bs);
        std::memcpy(out + img * cb, si, static_cast<size_t>(q.c) * sizeof(float));
        std::fill(out + img * cb + q.c, out + (img + 1) * cb, 0.f);
      }
    }
    ctx.res.set_out_bound(0, bound);
  });
  return k;
}

}  // namespace infera::cpu
