// Calibration (issue 11): runs the float model with the tensors to quantize as extra outputs over the
// samples, and keeps one range per tensor: minmax (max |x|, one pass), or a 2048-bin histogram of |x|
// over [0, max] (a second pass) reduced by percentile or entropy (TensorRT's KL-divergence calibrator).
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "infera/quantize.h"
#include "quant/qdq_model.h"

namespace infera {

std::string calib_method_name(CalibMethod m, double percentile) {
  if (m == CalibMethod::kMinMax) return "minmax";
  if (m == CalibMethod::kEntropy) return "entropy";
  char b[64];
  snprintf(b, sizeof b, "percentile:%g", percentile);
  return b;
}

Status parse_calib_method(const std::string& s, CalibMethod& m, double& percentile) {
  percentile = 99.99;
  if (s == "minmax") return m = CalibMethod::kMinMax, Status::ok();
  if (s == "entropy") return m = CalibMethod::kEntropy, Status::ok();
  if (s == "percentile" || s.rfind("percentile:", 0) == 0) {
    m = CalibMethod::kPercentile;
    if (s.size() > 11) {
      char* end = nullptr;
      const std::string v = s.substr(11);
      percentile = std::strtod(v.c_str(), &end);
      if (!end || *end || !(percentile > 0 && percentile <= 100))
        return Status::error(StatusCode::kInvalidInput,
                             "calibration method '" + s + "': the percentile must be a number in (0, 100]");
    }
    return Status::ok();
  }
  return Status::error(StatusCode::kInvalidInput,
                       "unknown calibration method '" + s + "' (minmax, percentile[:P], entropy)");
}

float amax_percentile(const std::vector<double>& hist, float hist_max, double percentile) {
  double total = 0;
  for (double h : hist) total += h;
  if (total <= 0 || hist.empty()) return 0.f;
  const double want = total * percentile / 100.0;
  double cum = 0;
  for (size_t i = 0; i < hist.size(); ++i) {
    cum += hist[i];
    if (cum >= want) return hist_max * static_cast<float>(i + 1) / static_cast<float>(hist.size());
  }
  return hist_max;
}

float amax_entropy(const std::vector<double>& hist_in, float hist_max) {
  // TensorRT's entropy calibration as NVIDIA's pytorch-quantization (_compute_amax_entropy) writes it:
  // the first bin (|x| ~ 0: ReLU's zeros, padding) takes its neighbour's count, as NVIDIA's calibrators
  // do: its spike would otherwise dominate the divergence and pick a threshold that clips almost
  // everything (measured: Fashion-MNIST top-1 0.18 without this, see docs/int8.md).
  std::vector<double> hist = hist_in;
  if (hist.size() > 1) hist[0] = hist[1];
  const int bins = static_cast<int>(hist.size()), levels = 128;
  double total = 0;
  for (double h : hist) total += h;
  if (total <= 0 || bins < levels) return hist_max;
  double best = INFINITY;
  int best_i = bins;
  std::vector<double> p(bins), q(bins);
  for (int i = levels; i <= bins; ++i) {
    // p: the first i bins, the mass beyond clipped into the last; q: those i bins merged into 128
    // levels and spread back over the bins that were non-zero.
    double outliers = 0;
    for (int k = i; k < bins; ++k) outliers += hist[k];
    for (int k = 0; k < i; ++k) p[k] = hist[k];
    p[i - 1] += outliers;
    // Bin k belongs to level j when j * i / 128 <= k < (j + 1) * i / 128 (numpy's digitize over
    // linspace(0, i, 129) in the reference; exact in double: i / 128 is a power-of-two division). This
    // used floor() for both ends, which moved the first bin of each level into the one before.
    const double merged = static_cast<double>(i) / levels;
    for (int j = 0; j < levels; ++j) {
      const int s = static_cast<int>(std::ceil(j * merged)),
                e = j == levels - 1 ? i : static_cast<int>(std::ceil((j + 1) * merged));
      double sum = 0;
      int nz = 0;
      for (int k = s; k < e; ++k) {
        sum += hist[k];
        nz += hist[k] != 0;
      }
      for (int k = s; k < e; ++k) q[k] = nz && hist[k] != 0 ? sum / nz : 0;
    }
    double ps = 0, qs = 0;
    for (int k = 0; k < i; ++k) ps += p[k], qs += q[k];
    if (ps <= 0 || qs <= 0) continue;
    // KL(p || q). Where p has mass and q none (the clipped mass folded into an empty last bin) the
    // divergence is infinite and the candidate is out, as in the reference (scipy's entropy). This
    // used to be smoothed with q = 1e-10, which made clipping into an empty bin nearly free: on
    // sparse tails the minimum then landed on such a bin, below the reference's threshold.
    double kl = 0;
    bool finite = true;
    for (int k = 0; k < i && finite; ++k) {
      if (p[k] <= 0) continue;
      if (q[k] <= 0) {
        finite = false;
        break;
      }
      const double pk = p[k] / ps, qk = q[k] / qs;
      kl += pk * std::log(pk / qk);
    }
    // Ties go to the larger threshold (the reference takes the last minimum).
    if (finite && kl <= best) best = kl, best_i = i;
  }
  return hist_max * static_cast<float>(best_i) / static_cast<float>(bins);
}

namespace {

Status check_finite(const CalibrationSample& s) {
  if (s.tensor.dtype() != DataType::kFloat32)
    return Status::error("calibration data " + s.name + ": dtype " + dtype_name(s.tensor.dtype()) +
                         ", the model takes float32");
  const float* p = s.tensor.data_as<float>();
  for (int64_t i = 0; i < s.tensor.numel(); ++i)
    if (!std::isfinite(p[i]))
      return Status::error("calibration data " + s.name + ": element " + std::to_string(i) + " is " +
                           (std::isnan(p[i]) ? "NaN" : "infinite") + "; calibration needs finite samples");
  return Status::ok();
}

}  // namespace

Result<CalibrationTable> calibrate(const std::string& model_path, const std::vector<CalibrationSample>& samples,
                                   const CalibrationOptions& opts) {
  if (samples.empty()) return Status::error("calibration data: the set is empty (no samples)");
  onnx::ModelProto m;
  auto bytes = read_model_proto(model_path, m);
  if (!bytes.is_ok()) return bytes.status();
  const std::vector<std::string> names = qdq_tensor_names(m.graph(), {});
  if (names.empty()) return Status::error(model_path + ": no Conv with constant weights to quantize");
  // The tensors become extra graph outputs, so the run returns them (passes keep graph outputs).
  std::set<std::string> outs;
  for (const auto& o : m.graph().output()) outs.insert(o.name());
  for (const std::string& n : names)
    if (!outs.count(n)) m.mutable_graph()->add_output()->set_name(n);
  std::string patched;
  m.SerializeToString(&patched);
  const std::string dir = model_path.find('/') == std::string::npos ? "." : model_path.substr(0, model_path.rfind('/'));
  SessionOptions so;
  so.num_threads = opts.num_threads;
  auto sess = Session::load_from_memory(patched, dir, so);
  if (!sess.is_ok()) return Status::error(model_path + ": " + sess.message());
  Session& s = *sess.value();
  if (s.inputs().size() != 1)
    return Status::error(model_path + ": calibration takes models with one input; this one has " +
                         std::to_string(s.inputs().size()));
  const std::string in = s.inputs()[0].name;
  std::map<std::string, size_t> slot;
  for (size_t i = 0; i < s.outputs().size(); ++i) slot[s.outputs()[i].name] = i;
  for (const auto& smp : samples) {
    Status st = check_finite(smp);
    if (!st.is_ok()) return st;
  }
  const bool hist = opts.method != CalibMethod::kMinMax;
  const size_t total = samples.size() * (hist ? 2 : 1);
  size_t done = 0;
  std::vector<float> amax(names.size(), 0.f);
  std::vector<std::vector<double>> h(names.size(), std::vector<double>(hist ? 2048 : 0, 0.0));
  for (int pass = 0; pass < (hist ? 2 : 1); ++pass) {
    for (const auto& smp : samples) {
      auto r = s.run({{in, smp.tensor}});
      if (!r.is_ok()) return Status::error("calibration data " + smp.name + ": " + r.message());
      for (size_t t = 0; t < names.size(); ++t) {
        const Tensor& v = r.value()[slot.at(names[t])];
        if (v.dtype() != DataType::kFloat32) continue;
        const float* p = v.data_as<float>();
        const int64_t n = v.numel();
        if (pass == 0) {
          float a = amax[t];
          for (int64_t i = 0; i < n; ++i) a = std::max(a, std::fabs(p[i]));
          if (!std::isfinite(a))
            return Status::error("calibration data " + smp.name + ": tensor '" + names[t] + "' is not finite");
          amax[t] = a;
        } else if (amax[t] > 0) {
          const double k = 2048.0 / amax[t];
          for (int64_t i = 0; i < n; ++i) h[t][std::min<int64_t>(2047, static_cast<int64_t>(std::fabs(p[i]) * k))] += 1;
        }
      }
      if (opts.progress) opts.progress(++done, total);
    }
  }
  CalibrationTable tab;
  tab.method = calib_method_name(opts.method, opts.percentile);
  // The model's input keeps its full range under entropy. It is data, not an activation: images are
  // a few discrete values (8-bit pixels) with a spike (the background), and KL(P||Q) is blind to
  // clipping into a spike (the folded mass barely changes a bin that already holds most of it) and to
  // rounding where each of the 128 levels holds one value. On the Fashion model the minimum clipped
  // the input at |background| = 0.81 of 2.02: every bright pixel lost, top-1 0.9259 -> 0.8421.
  std::set<std::string> graph_inputs;
  for (const auto& i : m.graph().input()) graph_inputs.insert(i.name());
  for (size_t t = 0; t < names.size(); ++t) {
    float a = amax[t];
    if (opts.method == CalibMethod::kPercentile) a = amax_percentile(h[t], amax[t], opts.percentile);
    if (opts.method == CalibMethod::kEntropy && !graph_inputs.count(names[t])) a = amax_entropy(h[t], amax[t]);
    tab.amax[names[t]] = a;
  }
  return tab;
}

}  // namespace infera
