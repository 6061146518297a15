// Mixed int8 / float precision under an accuracy budget (include/infera/quantize.h: choose_mixed):
// per-layer sensitivity from QDQ models with one layer quantized, a greedy choice, a measurement.
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
  const std::vector<CalibrationSample> samples(
      all_samples.begin(), all_samples.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                     o.max_samples ? o.max_samples : size_t(1), all_samples.size())));
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
    return rel_error(y.value(), ref.value());
  };
  MixedPlan plan;
  for (const std::string& n : names) plan.layers.push_back({n, -1, true, ""});
  size_t done = 0;
  for (LayerChoice& l : plan.layers) {
    const bool forced = ff.count(l.layer) || fi.count(l.layer) || (o.float_by_default && !fi.count(l.layer));
    if (!forced) {
      auto e = measure({l.layer});
      if (!e.is_ok()) return e.status().prefixed("layer '" + l.layer + "' alone: ");
      l.sensitivity = e.value();
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
  std::sort(free.begin(), free.end(),
            [&](size_t a, size_t b) { return plan.layers[a].sensitivity > plan.layers[b].sensitivity; });
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
  auto m0 = measured(0);
  if (!m0.is_ok()) return m0.status();
  double best = m0.value();
  if (best > o.budget) {
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
  // Estimate: independent quantization noise adds in quadrature.
  double sq = 0;
  for (const LayerChoice& l : plan.layers)
    if (l.int8 && l.sensitivity > 0) sq += l.sensitivity * l.sensitivity;
  plan.estimated = std::sqrt(sq);
  for (LayerChoice& l : plan.layers)
    if (l.why.empty()) l.why = "within the budget";
  return plan;
}

}  // namespace infera
