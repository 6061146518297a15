// Mixed int8 / float precision under an accuracy budget (include/infera/quantize.h: choose_mixed):
// per-layer sensitivity from QDQ models with one layer quantized, a greedy choice, a measurement; the
// error is the relative output error, or with labels the top-1 points lost.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>

#include "infera/quantize.h"

namespace infera {

std::vector<std::string> MixedPlan::float_layers() const {
  std::vector<std::string> f;
  for (const LayerChoice& l : layers)
    if (!l.int8) f.push_back(l.layer);
  return f;
}

namespace {

using Outputs = std::vector<std::vector<Tensor>>;  // per sample, per model output

Result<Outputs> run_all(const std::string& path, const std::vector<CalibrationSample>& samples, int threads) {
  SessionOptions o;
  o.num_threads = threads;
  o.search = SessionOptions::SearchMode::kOff;  // measurements, not speed: no timing, no perf db
  auto s = Session::load(path, o);
  if (!s.is_ok()) return s.status();
  if (s.value()->inputs().size() != 1)
    return Status::error(StatusCode::kInvalidInput, path + ": mixed precision takes models with one input");
  const std::string in = s.value()->inputs()[0].name;
  Outputs out;
  for (const CalibrationSample& c : samples) {
    auto y = s.value()->run({{in, c.tensor}});
    if (!y.is_ok()) return y.status().prefixed(c.name + ": ");
    out.push_back(y.take());
  }
  return out;
}

// Mean over samples of ||y - ref|| / ||ref|| (all outputs of a sample together).
double rel_error(const Outputs& y, const Outputs& ref) {
  double sum = 0;
  for (size_t s = 0; s < ref.size(); ++s) {
    double d = 0, r = 0;
    for (size_t o = 0; o < ref[s].size(); ++o) {
      if (ref[s][o].dtype() != DataType::kFloat32 || y[s][o].numel() != ref[s][o].numel()) continue;
      const float* a = y[s][o].data_as<float>();
      const float* b = ref[s][o].data_as<float>();
      for (int64_t i = 0; i < ref[s][o].numel(); ++i) {
        d += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        r += double(b[i]) * b[i];
      }
    }
    sum += std::sqrt(d) / std::max(std::sqrt(r), 1e-30);
  }
  return ref.empty() ? 0 : sum / static_cast<double>(ref.size());
}

// Rows of the samples whose top-1 matches the label (no class scores above the label's; ties count
// for the label, as infera eval counts). The first output must be float [rows, classes].
Result<int64_t> top1_correct(const Outputs& y, const std::vector<int64_t>& labels) {
  int64_t row = 0, correct = 0;
  for (size_t s = 0; s < y.size(); ++s) {
    const Tensor& t = y[s][0];
    if (t.dtype() != DataType::kFloat32 || t.dims().size() != 2)
      return Status::error(StatusCode::kInvalidInput,
                           "top-1 against labels needs a first output float32 [batch, classes]; it is " +
                               std::string(dtype_name(t.dtype())) + " of rank " + std::to_string(t.dims().size()));
    const int64_t n = t.dims()[0], C = t.dims()[1];
    for (int64_t i = 0; i < n; ++i, ++row) {
      if (row >= static_cast<int64_t>(labels.size())) break;
      const int64_t lab = labels[row];
      if (lab < 0 || lab >= C)
        return Status::error(StatusCode::kInvalidInput, "label " + std::to_string(lab) + " of calibration sample " +
                                                            std::to_string(row) + " is outside [0, " +
                                                            std::to_string(C) + ")");
      const float* r = t.data_as<float>() + i * C;
      int64_t above = 0;
      for (int64_t c = 0; c < C; ++c) above += r[c] > r[lab];
      correct += above == 0;
    }
  }
  return correct;
}

// A scratch file for the candidate QDQ models, removed when done.
struct TempModel {
  std::string path;
  TempModel() {
    char buf[] = "/tmp/infera-mixed-XXXXXX";
    const int fd = mkstemp(buf);
    if (fd >= 0) {
      close(fd);
      path = buf;
    }
  }
  ~TempModel() {
    if (!path.empty()) std::remove(path.c_str());
  }
};

}  // namespace

Result<MixedPlan> choose_mixed(const std::string& model_path, const CalibrationTable& table,
                               const std::vector<CalibrationSample>& all_samples, const MixedOptions& o) {
  if (!(o.budget >= 0) || !std::isfinite(o.budget))
    return Status::error(StatusCode::kInvalidInput, "accuracy budget must be a number >= 0");
  if (all_samples.empty()) return Status::error(StatusCode::kInvalidInput, "mixed precision: no samples");
  const bool top1 = !o.labels.empty();
  const std::vector<CalibrationSample> samples(
      all_samples.begin(),
      all_samples.begin() +
          static_cast<std::ptrdiff_t>(top1 ? all_samples.size()
                                           : std::min(o.max_samples ? o.max_samples : size_t(1), all_samples.size())));
  int64_t rows = 0;
  for (const CalibrationSample& c : samples) rows += c.tensor.dims().empty() ? 1 : c.tensor.dims()[0];
  if (top1 && static_cast<int64_t>(o.labels.size()) != rows)
    return Status::error(StatusCode::kInvalidInput, "mixed precision: " + std::to_string(o.labels.size()) +
                                                        " labels for " + std::to_string(rows) +
                                                        " calibration samples (one label per sample)");
  auto layers = qdq_layers(model_path);
  if (!layers.is_ok()) return layers.status();
  const std::vector<std::string>& names = layers.value();
  const std::set<std::string> known(names.begin(), names.end());
  for (const auto* list : {&o.force_float, &o.force_int8})
    for (const std::string& n : *list)
      if (!known.count(n))
        return Status::error(StatusCode::kInvalidInput,
                             "layer '" + n + "' is not a quantizable Conv or residual Add of " + model_path);
  const std::set<std::string> ff(o.force_float.begin(), o.force_float.end()),
      fi(o.force_int8.begin(), o.force_int8.end());
  auto ref = run_all(model_path, samples, o.num_threads);
  if (!ref.is_ok()) return ref.status();
  int64_t ref_correct = 0;
  if (top1) {
    auto c = top1_correct(ref.value(), o.labels);
    if (!c.is_ok()) return c.status();
    ref_correct = c.value();
  }
  double last_rel = 0;  // the relative output error of the last measured model (top1: the tie-break)
  TempModel tmp;
  if (tmp.path.empty()) return Status::error(StatusCode::kIo, "mixed precision: cannot create a temporary file");
  // The error of the model with exactly `int8` quantized.
  auto measure = [&](const std::set<std::string>& int8) -> Result<double> {
    std::vector<std::string> floats;
    for (const std::string& n : names)
      if (!int8.count(n)) floats.push_back(n);
    Status w = write_qdq_model(model_path, table, tmp.path, floats);
    if (!w.is_ok()) return w;
    auto y = run_all(tmp.path, samples, o.num_threads);
    if (!y.is_ok()) return y.status();
    last_rel = rel_error(y.value(), ref.value());
    if (!top1) return last_rel;
    auto c = top1_correct(y.value(), o.labels);
    if (!c.is_ok()) return c.status();
    return 100.0 * static_cast<double>(ref_correct - c.value()) / static_cast<double>(rows);
  };
  MixedPlan plan;
  plan.top1 = top1;
  plan.rows = rows;
  plan.float_top1 = top1 ? static_cast<double>(ref_correct) / static_cast<double>(rows) : 0;
  for (const std::string& n : names) plan.layers.push_back({n, -1, true, "", -1});
  size_t done = 0;
  for (LayerChoice& l : plan.layers) {
    const bool forced = ff.count(l.layer) || fi.count(l.layer) || (o.float_by_default && !fi.count(l.layer));
    if (!forced) {
      auto e = measure({l.layer});
      if (!e.is_ok()) return e.status().prefixed("layer '" + l.layer + "' alone: ");
      l.sensitivity = e.value();
      l.rel_error = last_rel;
    }
    if (o.progress) o.progress(++done, plan.layers.size());
  }
  std::set<std::string> all(names.begin(), names.end());
  auto e_all = measure(all);
  if (!e_all.is_ok()) return e_all.status();
  plan.all_int8 = e_all.value();
  // Forced choices first; then the free layers from the most sensitive go float until the sum of
  // the int8 ones' sensitivities fits.
  std::vector<size_t> free;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    LayerChoice& l = plan.layers[i];
    if (ff.count(l.layer) || (o.float_by_default && !fi.count(l.layer))) {
      l.int8 = false, l.why = "forced fp32";
    } else if (fi.count(l.layer)) {
      l.why = "forced int8";
    } else {
      free.push_back(i);
    }
  }
  std::sort(free.begin(), free.end(), [&](size_t a, size_t b) {
    const LayerChoice &x = plan.layers[a], &y = plan.layers[b];
    if (top1 && x.sensitivity == y.sensitivity) return x.rel_error > y.rel_error;  // top-1 ties are common
    return x.sensitivity > y.sensitivity;
  });
  // The k most sensitive free layers float: the measured error falls (nearly monotonically) with k,
  // so the smallest k that fits is found by bisection, each step one measured model.
  auto set_k = [&](size_t k) {
    for (size_t j = 0; j < free.size(); ++j) plan.layers[free[j]].int8 = j >= k;
  };
  auto measured = [&](size_t k) -> Result<double> {
    set_k(k);
    std::set<std::string> int8;
    for (const LayerChoice& l : plan.layers)
      if (l.int8) int8.insert(l.layer);
    return measure(int8);
  };
  size_t lo = 0, hi = free.size(), k = 0;  // measured(lo) over the budget, measured(hi) within
  // Top-1 with budget 0: every free layer float (see quantize.h), the one model measured.
  const bool none = top1 && o.budget == 0;
  auto m0 = measured(none ? hi : 0);
  if (!m0.is_ok()) return m0.status();
  double best = m0.value();
  if (none) k = hi;
  if (!none && best > o.budget) {
    auto mh = measured(hi);
    if (!mh.is_ok()) return mh.status();
    best = mh.value(), k = hi;
    while (hi - lo > 1 && best <= o.budget) {
      const size_t mid = (lo + hi) / 2;
      auto mm = measured(mid);
      if (!mm.is_ok()) return mm.status();
      if (mm.value() <= o.budget)
        hi = mid, k = mid, best = mm.value();
      else
        lo = mid;
    }
  }
  set_k(k);
  plan.measured = best;
  for (size_t j = 0; j < k; ++j) plan.layers[free[j]].why = "among the most sensitive: float to meet the budget";
  // Estimate: independent quantization noise adds in quadrature; lost top-1 points add.
  double sq = 0, sum = 0;
  for (const LayerChoice& l : plan.layers)
    if (l.int8 && l.sensitivity > 0) sq += l.sensitivity * l.sensitivity, sum += l.sensitivity;
  plan.estimated = top1 ? sum : std::sqrt(sq);
  for (LayerChoice& l : plan.layers)
    if (l.why.empty()) l.why = "within the budget";
  return plan;
}

}  // namespace infera
