// infera bench: latency percentiles and throughput per batch size, optional JSON.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "cli.h"

namespace infera::cli {

namespace {

struct BenchRow {
  int64_t batch;
  double p50, p90, p99, mean, throughput, build_ms;
  size_t peak_memory;
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  double idx = p / 100.0 * (v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(idx)), hi = static_cast<size_t>(std::ceil(idx));
  return v[lo] + (v[hi] - v[lo]) * (idx - lo);
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  Args a = parse_args(
      argc, argv, 2, {"--batch", "--warmup", "--iters", "--duration", "--threads", "--json", "--device", "--precision"},
      {"--quiet", "--no-optimize", "--no-dnnl"});
  SessionOptions opts;
  session_options(a, opts);
  int warmup = static_cast<int>(a.get_int("--warmup", 5, 0, 1000000));
  int iters = static_cast<int>(a.get_int("--iters", 0, 1, 100000000));
  double duration = a.get_double("--duration", 3.0, 0.001, 86400);
  if (a.has("--iters") && a.has("--duration") && a.usage_error.empty())
    a.usage_error = "give --iters or --duration, not both";
  std::vector<int64_t> batches;
  {
    std::stringstream ss(a.get("--batch", "1"));
    std::string b;
    while (std::getline(ss, b, ',')) {
      char* end = nullptr;
      long long v = std::strtoll(b.c_str(), &end, 10);
      if (b.empty() || *end || v < 1 || v > (1 << 20)) {
        if (a.usage_error.empty()) a.usage_error = "--batch expects a list of positive integers, got '" + b + "'";
        break;
      }
      batches.push_back(v);
    }
  }
  if (!a.usage_error.empty()) return usage(a.usage_error);
  if (a.positional.size() != 1) return usage("bench takes one MODEL");
  const bool quiet = a.has("--quiet");
  const bool progress = !quiet && stderr_is_tty();
  if (progress) fprintf(stderr, "loading %s...\r", a.positional[0].c_str());
  auto load_t0 = std::chrono::steady_clock::now();
  auto sess = Session::load(a.positional[0], opts);
  if (progress) fprintf(stderr, "\033[K");
  if (!sess.is_ok()) return fail(sess.message());
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_t0).count();
  Session& s = *sess.value();
  std::vector<BenchRow> rows;
  for (int64_t batch : batches) {
    auto shapes = shapes_for_batch(s, batch);
    if (!shapes.is_ok()) return fail(shapes.message());
    auto rep = s.prepare(shapes.value());
    if (!rep.is_ok()) return fail(rep.message());
    std::map<std::string, Tensor> inputs;
    size_t io_bytes = 0;
    uint32_t k = 0;
    for (const IoInfo& io : s.inputs()) {
      auto t = random_input(io, shapes.value()[io.name], k++);
      if (!t.is_ok()) return fail(t.message());
      io_bytes += t.value().nbytes();
      inputs[io.name] = t.take();
    }
    for (int i = 0; i < warmup; ++i) {
      if (progress) fprintf(stderr, "batch %lld: warmup %d/%d   \r", (long long)batch, i + 1, warmup);
      auto r = s.run(inputs);
      if (!r.is_ok()) return fail(r.message());
      if (i == 0)
        for (auto& t : r.value()) io_bytes += t.nbytes();
    }
    std::vector<double> lat;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0;; ++i) {
      if (iters
              ? i >= iters
              : (i >= 3 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= duration))
        break;
      auto t0 = std::chrono::steady_clock::now();
      auto r = s.run(inputs);
      auto t1 = std::chrono::steady_clock::now();
      if (!r.is_ok()) return fail(r.message());
      lat.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      if (progress && i % 5 == 0) fprintf(stderr, "batch %lld: %d runs   \r", (long long)batch, i + 1);
    }
    if (progress) fprintf(stderr, "%40s\r", "");
    BenchRow row;
    row.batch = batch;
    row.p50 = percentile(lat, 50);
    row.p90 = percentile(lat, 90);
    row.p99 = percentile(lat, 99);
    row.mean = std::accumulate(lat.begin(), lat.end(), 0.0) / lat.size();
    row.throughput = batch * 1000.0 / row.mean;
    row.build_ms = rep.value().build_ms;
    row.peak_memory = rep.value().arena_bytes + rep.value().weight_bytes + io_bytes;
    rows.push_back(row);
  }
  if (!quiet) {
    printf("model %s (load %.1f ms)\n", a.positional[0].c_str(), load_ms);
    printf("%6s %10s %10s %10s %10s %12s %12s %10s\n", "batch", "p50 ms", "p90 ms", "p99 ms", "mean ms", "items/s",
           "peak MiB", "build ms");
    for (auto& r : rows)
      printf("%6lld %10.3f %10.3f %10.3f %10.3f %12.1f %12.1f %10.1f\n", (long long)r.batch, r.p50, r.p90, r.p99,
             r.mean, r.throughput, r.peak_memory / 1048576.0, r.build_ms);
  }
  if (a.has("--json")) {
    std::ofstream f(a.get("--json"));
    if (!f) return fail(a.get("--json") + ": cannot write");
    f << "[\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const BenchRow& r = rows[i];
      char buf[512];
      snprintf(
          buf, sizeof buf,
          "  {\"batch\": %lld, \"latency_ms_p50\": %.4f, \"latency_ms_p90\": %.4f, \"latency_ms_p99\": %.4f, "
          "\"latency_ms_mean\": %.4f, \"throughput_per_s\": %.3f, \"peak_memory_bytes\": %zu, \"build_ms\": %.3f}%s\n",
          (long long)r.batch, r.p50, r.p90, r.p99, r.mean, r.throughput, r.peak_memory, r.build_ms,
          i + 1 < rows.size() ? "," : "");
      f << buf;
    }
    f << "]\n";
  }
  return kExitOk;
}

}  // namespace infera::cli
