// Batch chunking under the memory budget (docs/memory.md): the SessionImpl members that choose a
// batch's chunk size and run a batch in chunks. The proof that a graph's samples are independent and
// the chunk arithmetic are in chunking.cpp.
#include <algorithm>
#include <cstdio>
#include <thread>

#include "runtime/chunking.h"
#include "runtime/session_impl.h"

namespace infera {

namespace {

std::string mib(size_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%zu bytes (%.1f MiB)", b, b / 1048576.0);
  return buf;
}

}  // namespace

size_t SessionImpl::peak_of(const Plan& p) const {
  size_t n = plan_peak_bytes(p.report, opts.device);
  // A GPU session's budget also bounds what its host steps hold (steps no GPU kernel takes).
  if (opts.device.is_gpu()) n += plan_peak_bytes(p.report, Device::cpu()) - p.report.weight_bytes;
  return n;
}

size_t SessionImpl::chunk_peak(const Plan& p) const {
  const size_t one = peak_of(p);
  if (!opts.device.is_gpu()) return one;
  // Two run contexts, so that one chunk's copies overlap the previous chunk's compute.
  auto it = p.report.weight_bytes_per_device.find(opts.device.str());
  return 2 * one - (it == p.report.weight_bytes_per_device.end() ? 0 : it->second);
}

Status SessionImpl::check_split(const Dims& dims, const std::vector<ValueInfo>* whole) const {
  std::string sym;
  if (Status b = batch_symbol(graph, sym); !b.is_ok()) return b;
  const int64_t n = dims.empty() || dims[0].empty() ? 0 : dims[0][0];
  if (n < 2) return Status::ok();  // nothing to split
  // The samples must be independent: shapes at half the batch against the whole one.
  std::vector<ValueInfo> mine;
  if (!whole) {
    auto w = infer_values(graph, dims);
    if (!w.is_ok()) return w.status();
    mine = w.take();
    whole = &mine;
  }
  auto half = infer_values(graph, with_batch(dims, n / 2));
  return half.is_ok() ? check_chunkable(graph, half.value(), n / 2, *whole, n) : half.status();
}

Result<int64_t> SessionImpl::chunk_for(const Dims& dims) {
  if (budget == 0 || dims.empty()) return int64_t(0);
  {
    std::lock_guard<std::mutex> l(chunk_mu);
    auto it = chunk_of.find(dims);
    if (it != chunk_of.end()) return it->second;
  }
  auto remember = [&](int64_t c) -> Result<int64_t> {
    std::lock_guard<std::mutex> l(chunk_mu);
    if (chunk_of.size() >= 1024) chunk_of.clear();  // input signatures come from callers: bounded
    chunk_of[dims] = c;
    return c;
  };
  auto whole_info = infer_values(graph, dims);
  if (!whole_info.is_ok()) return int64_t(0);  // the run reports the same error with its context
  const size_t lb = lower_bound_bytes(graph, whole_info.value(), opts.precision == Precision::kFp16 ? 2 : 4);
  size_t whole = 0;  // the whole batch's plan, when one was made
  if (lb <= budget) {
    auto e = entry_for(dims);
    if (e.is_ok()) {
      whole = peak_of(*e.value()->plan);
      if (whole <= budget) return remember(0);
    } else if (e.status().code() != StatusCode::kOutOfMemory) {
      return e.status();
    }
  }
  const std::string dev = opts.device.str();
  auto too_big = [&](const std::string& why) {
    return Status::error(StatusCode::kOutOfMemory,
                         "this batch needs " + std::string(whole ? "" : "at least ") + mib(whole ? whole : lb) +
                             " on " + dev + " (weights, arena and scratch), over the memory budget of " + mib(budget) +
                             (opts.memory_budget_bytes ? "" : " (the device's memory)") + ", and " + why);
  };
  if (whole) {  // not run whole: its plan (and the weights its kernels hold) need not stay cached
    std::lock_guard<std::mutex> l(mu);
    plans.erase(dims);
  }
  const int64_t n = dims[0].empty() ? 0 : dims[0][0];
  if (n < 2) return too_big("a batch of " + std::to_string(n) + " cannot be split");
  if (Status sep = check_split(dims, &whole_info.value()); !sep.is_ok())
    return too_big("it cannot run in chunks: " + sep.message());
  // Plans of chunk sizes until one fits: bytes = fixed (weights) + per-row x rows, learned from
  // each plan made (the whole batch's, or else the lower bound, gives the first guess).
  double fixed = 0, per = static_cast<double>(whole ? whole : lb) / static_cast<double>(n);
  auto guess = [&](double room) {
    return std::clamp<int64_t>(static_cast<int64_t>((room - fixed) / std::max(per, 1.0)), 1, n - 1);
  };
  int64_t c = guess(static_cast<double>(budget)), best = 0, bad = n;  // bad: the smallest size seen not to fit
  std::vector<int64_t> tried;
  // The peak of a plan of c rows: SIZE_MAX when it ran out of memory; other errors are returned.
  auto peak_at = [&](int64_t rows) -> Result<size_t> {
    tried.push_back(rows);
    auto e = entry_for(with_batch(dims, rows));
    if (!e.is_ok() && e.status().code() != StatusCode::kOutOfMemory) return e.status();
    const size_t pk = e.is_ok() ? chunk_peak(*e.value()->plan) : SIZE_MAX;
    if (e.is_ok()) {
      const PlanReport& r = e.value()->plan->report;
      auto at = [&](const std::map<std::string, size_t>& m) {
        auto it = m.find(dev);
        return it == m.end() ? size_t(0) : it->second;
      };
      fixed = static_cast<double>(opts.device.is_cpu() ? r.weight_bytes : at(r.weight_bytes_per_device));
      per = (static_cast<double>(pk) - fixed) / static_cast<double>(rows);
    }
    if (verbose >= 2)
      std::fprintf(stderr, "infera: chunk of %lld: %s\n", static_cast<long long>(rows), mib(pk).c_str());
    if (pk > budget) bad = std::min(bad, rows);
    return pk;
  };
  for (int tries = 0; tries < 12 && !best; ++tries) {
    auto pk = peak_at(c);
    if (!pk.is_ok()) return pk.status();
    if (pk.value() <= budget) {
      best = c;
    } else if (c == 1) {
      return Status::error(
          StatusCode::kOutOfMemory,
          "the memory budget of " + mib(budget) + " is too small for batch 1 of this model: it needs " +
              (pk.value() == SIZE_MAX ? std::string("more (its plan ran out of memory)") : mib(pk.value())) + " on " +
              dev + " (weights, arena and scratch)");
    } else {
      c = pk.value() == SIZE_MAX ? c / 2 : std::min(guess(static_cast<double>(budget)), c - 1);
    }
  }
  if (!best) return too_big("no chunk size fit after 12 plans");
  // The fewest chunks: what is run are balanced chunks ceil(n / k), so search the chunk count k
  // between the one that fits (ceil(n / best)) and the one that does not (bad), by bisection over
  // the balanced sizes strictly between them (arenas are nearly, not exactly, linear in the batch,
  // so the first fit is often one or two chunk counts short). Peaks grow with the rows.
  for (int tries = 0; tries < 8; ++tries) {
    const int64_t k_fit = (n + best - 1) / best, k_bad = (n + bad - 1) / bad;
    std::vector<int64_t> between;  // balanced sizes of the chunk counts k_bad < k < k_fit
    for (int64_t k = k_fit - 1; k > k_bad; --k)
      if (const int64_t sz = (n + k - 1) / k; sz > best && sz < bad) between.push_back(sz);
    if (between.empty()) break;
    const int64_t mid = between[between.size() / 2];
    auto pk = peak_at(mid);
    if (!pk.is_ok()) return pk.status();
    if (pk.value() <= budget) best = mid;
  }
  // Balanced chunks (37 in at most 12: 10, 10, 10, 7): at most two plan sizes are run; the plans
  // made only to measure are dropped (on a GPU each holds its own copy of the weights).
  const std::vector<int64_t> sizes = chunk_sizes(n, best);
  best = sizes.front();
  {
    std::lock_guard<std::mutex> l(mu);
    for (int64_t t : tried)
      if (t != sizes.front() && t != sizes.back()) plans.erase(with_batch(dims, t));
  }
  if (verbose >= 1)
    std::fprintf(stderr, "infera: batch %lld runs in %zu chunks of at most %lld (memory budget %s)\n",
                 static_cast<long long>(n), sizes.size(), static_cast<long long>(best), mib(budget).c_str());
  return remember(best);
}

Status SessionImpl::run_chunked(const std::map<std::string, Tensor>& in, const Dims& dims, int64_t chunk,
                                std::vector<Tensor>& out, bool allocate, const RunOptions& ro) {
  const int64_t n = dims[0][0];
  auto info = infer_values(graph, dims);
  if (!info.is_ok()) return info.status();
  std::vector<std::vector<int64_t>> od;
  for (int v : graph.outputs) od.push_back(info.value()[v].shape.concrete());  // chunkable: known
  if (allocate) {
    out.clear();
    for (size_t i = 0; i < od.size(); ++i) {
      auto t = Tensor::make(outputs[i].dtype, od[i]);
      if (!t.is_ok()) return t.status().prefixed("output '" + outputs[i].name + "': ");
      out.push_back(t.take());
    }
  } else {
    if (out.size() != od.size())
      return Status::error(
          StatusCode::kInvalidInput,
          "run: " + std::to_string(out.size()) + " output tensors given, the model has " + std::to_string(od.size()));
    for (size_t i = 0; i < od.size(); ++i)
      if (out[i].dtype() != outputs[i].dtype || out[i].dims() != od[i] || (!out[i].data() && out[i].numel() != 0))
        return Status::error(StatusCode::kInvalidInput, "run: output '" + outputs[i].name + "' must be " +
                                                            dtype_name(outputs[i].dtype) + " " +
                                                            Shape::of(od[i]).str() + " with a buffer");
  }
  // Rows [at, at + c) of every input and output, as views: each chunk writes its rows in place.
  const std::vector<int64_t> sizes = chunk_sizes(n, chunk);
  std::vector<int64_t> first(sizes.size(), 0);
  for (size_t i = 1; i < sizes.size(); ++i) first[i] = first[i - 1] + sizes[i - 1];
  std::vector<std::vector<StepTiming>> timings(sizes.size());
  std::vector<double> device_ms(sizes.size(), 0);
  auto one = [&](size_t i) -> Status {
    const int64_t at = first[i], c = sizes[i];
    std::map<std::string, Tensor> vin;
    for (const auto& [name, t] : in) vin.emplace(name, batch_rows(t, n, at, c));
    std::vector<Tensor> vout;
    for (const Tensor& t : out) vout.push_back(batch_rows(t, n, at, c));
    RunOptions r;
    if (ro.profile) r.profile = &timings[i];
    if (ro.device_ms) r.device_ms = &device_ms[i];
    Status s = run(vin, vout, false, r);
    return s.is_ok() ? s
                     : s.prefixed("rows " + std::to_string(at) + ".." + std::to_string(at + c - 1) + " of the batch: ");
  };
  // On a GPU two threads take alternate chunks, each on its own run context and stream (the
  // budget counted two): the copies of one overlap the compute of the other.
  const size_t lanes = opts.device.is_gpu() && sizes.size() > 1 ? 2 : 1;
  std::vector<Status> err(lanes, Status::ok());
  auto lane = [&](size_t k) {
    for (size_t i = k; i < sizes.size() && err[k].is_ok(); i += lanes) err[k] = one(i);
  };
  if (lanes == 1) {
    lane(0);
  } else {
    std::thread second(lane, 1);
    lane(0);
    second.join();
  }
  for (const Status& e : err)
    if (!e.is_ok()) return e;
  std::vector<StepTiming> all;
  double device_total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    all.insert(all.end(), timings[i].begin(), timings[i].end());
    device_total += device_ms[i];
  }
  if (ro.profile) *ro.profile = std::move(all);
  if (ro.device_ms) *ro.device_ms = device_total;
  return Status::ok();
}

}  // namespace infera
