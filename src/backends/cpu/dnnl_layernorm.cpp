// LayerNormalization (ONNX opset 17 and com.infera.LayerNormalization, the fuse_layer_norm pass's)
// of float32 values in the plain format: our own loop over the rows of X as [rows][cols] (cols:
// the dims from `axis` on), not oneDNN's layer_normalization, whose float statistics miss the
// reference by 4e-3 (normalized) on rows of 1e5 + N(0, 1) (measured, oneDNN 2.6, 2026-12-07). The
// statistics are the reference kernel's (src/ops/layer_norm.cpp): two passes in double (mean, then
// the sum of squared deviations), so that a row far from zero keeps its precision and NaN / Inf
// spread over their row as there; the output is (x - mean) * inv * Scale + B in float, mean and
// inv rounded to float first, as there. The reference sums one element at a time on one thread
// per row range; this loop sums 32 lanes at a time (INFERA_CLONES: AVX-512, AVX2, baseline),
// overlaps the rows' statistics, and splits the rows over the session's threads.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/dnnl_internal.h"
#include "ops/tensor_ops.h"
#include "ops/util.h"

namespace infera::cpu {
namespace {

struct LnPlan {
  int64_t rows = 0, cols = 0;
  float eps = 1e-5f;
  // Scale (slot 1) and B (slot 2) as cols floats: a constant broadcast to the normalized dims at
  // creation (B absent: zeros, as the reference adds), or empty: read input i each run, dense when
  // it has cols elements, else broadcast into the kernel's scratch (dims: its shape).
  std::vector<float> scale, bias;
  Dims scale_dims, bias_dims, tail;
  bool scale_dense = false, bias_dense = false;
  float scale_max = -1.f, bias_max = -1.f;  // max |Scale|, |B| of constants (+Inf: not finite); -1: per run
};

// Why the step is declined, or "" with p filled.
std::string plan_layernorm(const StepRequest& req, LnPlan& p) {
  const Node& n = *req.node;
  if (!req.has_in(0) || !req.has_in(1) || !req.has_out(0)) return "no X, Scale or Y";
  if (req.inputs[0]->value) return "a constant X (folded before planning)";
  // The reference kernel rejects the rest when it is made (ops/layer_norm.cpp); checked again here.
  if (n.attr_int("stash_type", 1) != 1) return "stash_type other than 1";
  p.eps = n.attr_float("epsilon", 1e-5f);
  if (!(p.eps > 0) || !std::isfinite(p.eps)) return "epsilon not positive";
  const Dims x = req.in_dims(0);
  int64_t axis = n.attr_int("axis", -1);
  if (!normalize_axis(axis, static_cast<int64_t>(x.size()))) return "axis out of range";
  if (req.out_dims(0) != x) return "Y's shape differs from X's";
  p.rows = 1, p.cols = 1;
  for (size_t d = 0; d < x.size(); ++d) (static_cast<int64_t>(d) < axis ? p.rows : p.cols) *= x[d];
  if (p.rows <= 0 || p.cols <= 0) return "an empty X";
  p.tail.assign(x.begin() + axis, x.end());
  for (size_t o = 1; o < req.outputs.size(); ++o)
    if (req.has_out(o) && req.outputs[o]->shape.numel() != p.rows) return "Mean / InvStdDev not of one value per row";
  for (size_t i = 1; i <= 2; ++i) {
    std::vector<float>& dense = i == 1 ? p.scale : p.bias;
    if (!req.has_in(i)) {  // B absent
      dense.assign(static_cast<size_t>(p.cols), 0.f);
      p.bias_max = 0.f;
      continue;
    }
    const ValueInfo& v = *req.inputs[i];
    const Dims d = v.shape.concrete();
    if (d.size() > p.tail.size()) return "Scale or B of a higher rank than the normalized dims";
    for (size_t k = 0; k < d.size(); ++k) {
      const int64_t t = p.tail[p.tail.size() - d.size() + k];
      if (d[k] != 1 && d[k] != t) return "Scale or B that does not broadcast to the normalized dims";
    }
    if (v.value) {
      dense.assign(static_cast<size_t>(p.cols), 0.f);
      strided_copy(v.value->data(), dense.data(), sizeof(float), p.tail, broadcast_strides(d, p.tail), 0, 1);
      (i == 1 ? p.scale_max : p.bias_max) = max_abs(dense.data(), p.cols, 1);
    } else {
      (i == 1 ? p.scale_dims : p.bias_dims) = d;
      (i == 1 ? p.scale_dense : p.bias_dense) = v.shape.numel() == p.cols;
    }
  }
  return "";
}

constexpr int kLanes = 32;    // doubles summed side by side: 4 AVX-512 registers, no add waits on the last
constexpr int kRowBlock = 8;  // rows whose statistics are taken one after the other, before their outputs

// The sum of a[0..kLanes), pairwise (a tree of depth 5, not a chain of 32 dependent adds). Fixed
// widths: GCC vectorizes each whole, where a loop over the widths became a generic loop with
// branches and stack traffic.
inline double fold(double* a) {
  static_assert(kLanes == 32);
#pragma omp simd
  for (int l = 0; l < 16; ++l) a[l] += a[l + 16];
#pragma omp simd
  for (int l = 0; l < 8; ++l) a[l] += a[l + 8];
#pragma omp simd
  for (int l = 0; l < 4; ++l) a[l] += a[l + 4];
  return (a[0] + a[2]) + (a[1] + a[3]);
}

// The reference's statistics of a row of n: mean, then the sum of squared deviations from it,
// both in double (kLanes partial sums: another order than the reference's, far below float's
// precision).
inline void row_stats(const float* x, int64_t n, double& mean, double& sq) {
  const int64_t full = n / kLanes * kLanes;
  double acc[kLanes] = {};
  for (int64_t i = 0; i < full; i += kLanes) {
#pragma omp simd
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l];
  }
  double sum = fold(acc);
  for (int64_t i = full; i < n; ++i) sum += x[i];
  mean = sum / static_cast<double>(n);
  for (int l = 0; l < kLanes; ++l) acc[l] = 0;
  for (int64_t i = 0; i < full; i += kLanes) {
#pragma omp simd
    for (int l = 0; l < kLanes; ++l) {
      const double d = x[i + l] - mean;
      acc[l] += d * d;
    }
  }
  sq = fold(acc);
  for (int64_t i = full; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
}

// What rows tell about their outputs' magnitude, from their statistics: t = max over rows of
// s^2 * sum_i (x_i - m)^2, so |x_i - m| * s <= sqrt(t) for every element; bad when some row
// is not finite or x_i - m could overflow in float.
struct RowsBound {
  double t = 0;
  int bad = 0;
};

// Rows [r0, r1) of x into y (x may be y: each row is read whole before it is written), in
// blocks of kRowBlock: the statistics of a block's rows first, then their outputs, so that one
// row's chain of latencies (sums, folds, divisions, square root) overlaps the next row's
// (one row at a time, the statistics took 2-3x the output pass on rows of 96).
INFERA_CLONES RowsBound ln_rows(const float* x, float* y, int64_t r0, int64_t r1, int64_t n, const float* g,
                                const float* b, double eps, float* mean_out, float* inv_out) {
  RowsBound r;
  const double dn = static_cast<double>(n);
  for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
    const int nb = static_cast<int>(std::min<int64_t>(kRowBlock, r1 - rb));
    double mean[kRowBlock], sq[kRowBlock];
    for (int k = 0; k < nb; ++k) row_stats(x + (rb + k) * n, n, mean[k], sq[k]);
    for (int k = 0; k < nb; ++k) {
      const int64_t row = rb + k;
      const float* xr = x + row * n;
      float* yr = y + row * n;
      const double inv = 1.0 / std::sqrt(sq[k] / dn + eps);
      const float m = static_cast<float>(mean[k]), s = static_cast<float>(inv);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - m) * s * g[i] + b[i];
      if (mean_out) mean_out[row] = m;
      if (inv_out) inv_out[row] = s;
      // The sum of (x_i - m)^2 about the float m that the outputs use.
      const double ss = sq[k] + dn * (mean[k] - m) * (mean[k] - m), t = ss * static_cast<double>(s) * s;
      r.t = std::max(r.t, t);
      r.bad |= !(t <= 1e300) || !(ss <= 0x1p250);
    }
  }
  return r;
}

}  // namespace

Support layernorm_query(const StepRequest& req) {
  LnPlan p;
  const std::string why = plan_layernorm(req, p);
  if (!why.empty()) return Support::no("a LayerNormalization this kernel does not take: " + why);
  Support s = Support::plain(req.inputs.size(), req.outputs.size());
  s.in_place.emplace_back(0, 0);
  return s;
}

std::unique_ptr<DnnlKernel> layernorm_create(const StepRequest& req) {
  auto p = std::make_shared<LnPlan>();
  if (!plan_layernorm(req, *p).empty()) return nullptr;
  for (size_t i = 0; i < req.outputs.size(); ++i)
    if (req.has_out(i) && req.out_format(i) != Format::kPlain) return nullptr;
  for (size_t i = 0; i < req.inputs.size(); ++i)
    if (req.has_in(i) && req.in_format(i) != Format::kPlain) return nullptr;
  auto k = std::make_unique<DnnlKernel>("infera layernorm");
  // Non-constant Scale / B that broadcast: into the scratch each run.
  size_t scale_at = SIZE_MAX, bias_at = SIZE_MAX;
  if (!p->scale_dims.empty() && !p->scale_dense) scale_at = k->temp_offset(k->temp(plain_md({p->cols})));
  if (!p->bias_dims.empty() && !p->bias_dense) bias_at = k->temp_offset(k->temp(plain_md({p->cols})));
  k->set_impl("loop, double statistics (" + std::to_string(p->rows) + " rows of " + std::to_string(p->cols) + ")");
  k->set_after([p, scale_at, bias_at](ComputeContext& ctx) {
    const LnPlan& q = *p;
    char* scratch = static_cast<char*>(ctx.res.scratch);
    auto operand = [&](size_t slot, const std::vector<float>& dense, const Dims& dims, size_t at) -> const float* {
      if (!dense.empty()) return dense.data();
      const float* v = ctx.in(slot).ptr<const float>();
      if (at == SIZE_MAX) return v;
      float* t = reinterpret_cast<float*>(scratch + at);
      strided_copy(v, t, sizeof(float), q.tail, broadcast_strides(dims, q.tail), 0, 1);
      return t;
    };
    const float* g = operand(1, q.scale, q.scale_dims, scale_at);
    const float* b = operand(2, q.bias, q.bias_dims, bias_at);
    const float* x = ctx.in(0).ptr<const float>();
    float* y = ctx.out(0).ptr<float>();
    float* mean_out = ctx.has_output(1) ? ctx.out(1).ptr<float>() : nullptr;
    float* inv_out = ctx.has_output(2) ? ctx.out(2).ptr<float>() : nullptr;
    // Threads from 32k elements on, as the BatchNorm loop (ConvNeXt-T's 49 rows of 768: 2 threads
    // take 6 us where 1 takes 10; `infera profile --threads 1|2` of a chain of 8, 2026-12-07).
    const bool parallel = q.rows >= 2 && q.rows * q.cols >= (int64_t(1) << 15);
    const int threads = parallel ? static_cast<int>(std::min<int64_t>(std::max(1, ctx.num_threads), q.rows)) : 1;
    const double eps = q.eps;
    double t = 0;
    int bad = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(max : t) reduction(| : bad)
    for (int j = 0; j < threads; ++j) {
      const int64_t r0 = q.rows * j / threads, r1 = q.rows * (j + 1) / threads;
      const RowsBound r = ln_rows(x, y, r0, r1, q.cols, g, b, eps, mean_out, inv_out);
      t = std::max(t, r.t);
      bad |= r.bad;
    }
    // The output's bound (RunResources), as the BatchNorm loop gives one, here from the rows'
    // statistics with no read of Y: |y| <= sqrt(t) max |Scale| + max |B|; the margins cover
    // float's roundings of x - m and of the products (a few 2^-24).
    const double gm = q.scale_max >= 0 ? q.scale_max : max_abs(g, q.cols, 1);
    const double bm = q.bias_max >= 0 ? q.bias_max : max_abs(b, q.cols, 1);
    const double bound = std::sqrt(t) * gm * 1.125 + bm * 1.0625;
    ctx.res.set_out_bound(0, bad || !(bound <= FLT_MAX) ? RunResources::kNoBound : static_cast<float>(bound));
  });
  return k;
}

}  // namespace infera::cpu
