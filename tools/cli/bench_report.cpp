// infera bench reports: latency statistics, the table, the per-node profile and the JSON file.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "bench.h"

namespace infera::cli {

const char* const kMemoryNote =
    "memory = bytes the session holds after the timed runs (weights, arenas, scratch: "
    "Session::allocated_bytes, one plan cached at a time) + the input and output tensors; "
    "peak RSS = the process's high-water mark so far (getrusage), which also counts the model file, "
    "libraries and data-dependent outputs. On a GPU, memory = the device memory one run context holds "
    "(arena + scratch + uploaded weights) + device-resident inputs and outputs";

static double percentile(const std::vector<double>& sorted, double p) {
  double idx = p / 100.0 * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(idx)), hi = static_cast<size_t>(std::ceil(idx));
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (idx - static_cast<double>(lo));
}

LatencyStats latency_stats(std::vector<double> ms) {
  LatencyStats s;
  s.count = ms.size();
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  s.p50 = percentile(ms, 50);
  s.p90 = percentile(ms, 90);
  s.has_p99 = ms.size() >= 100;
  s.p99 = s.has_p99 ? percentile(ms, 99) : 0;
  s.min = ms.front();
  s.max = ms.back();
  double ss = 0;
  for (double x : ms) ss += (x - s.mean) * (x - s.mean);
  s.stddev = ms.size() > 1 ? std::sqrt(ss / static_cast<double>(ms.size() - 1)) : 0;
  return s;
}

void print_table_header(FILE* out) {
  fprintf(out, "%6s %7s %9s %9s %9s %9s %9s %9s %9s %11s %10s %9s %9s %7s\n", "batch", "runs", "mean ms", "p50 ms",
          "p90 ms", "p99 ms", "min ms", "max ms", "stddev", "items/s", "memory MiB", "RSS MiB", "build ms", "streams");
  fflush(out);
}

void print_table_row(FILE* out, const BenchRow& r) {
  char p99[32] = "-";
  if (r.lat.has_p99) snprintf(p99, sizeof p99, "%.4f", r.lat.p99);
  fprintf(out, "%6lld %7zu %9.4f %9.4f %9.4f %9s %9.4f %9.4f %9.4f %11.1f %10.1f %9.1f %9.1f %7d\n",
          static_cast<long long>(r.batch), r.lat.count, r.lat.mean, r.lat.p50, r.lat.p90, p99, r.lat.min, r.lat.max,
          r.lat.stddev, r.throughput,
          static_cast<double>(r.device_bytes ? r.device_bytes : r.session_bytes + r.io_bytes) / 1048576.0,
          static_cast<double>(r.peak_rss_bytes) / 1048576.0, r.build_ms, r.streams);
  fflush(out);
}

void print_memory(FILE* out, const std::string& device, const BenchRow& r) {
  auto mib = [](size_t b) { return static_cast<double>(b) / 1048576.0; };
  fprintf(out, "plan memory, batch %lld on %s: weights %.1f MiB, arena %.1f MiB, scratch %.1f MiB, one run %.1f MiB",
          static_cast<long long>(r.batch), device.c_str(), mib(r.weight_bytes), mib(r.arena_bytes),
          mib(r.scratch_bytes), mib(r.peak_bytes));
  if (r.chunks)
    fprintf(out, "; in %lld chunks of at most %lld (--memory-budget)", static_cast<long long>(r.chunks),
            static_cast<long long>(r.chunk_batch));
  fputc('\n', out);
}

void print_profile(FILE* out, const BenchRow& r, size_t top) {
  double total = 0;
  for (const NodeTime& n : r.profile) total += n.ms;
  const double runs = static_cast<double>(std::max<size_t>(1, r.profiled_runs));
  fprintf(out, "\nprofile, batch %lld: %.3f ms of step time per run, mean over %zu timed runs; top %zu of %zu nodes\n",
          static_cast<long long>(r.batch), total / runs, r.profiled_runs, std::min(top, r.profile.size()),
          r.profile.size());
  fprintf(out, "%10s %6s %6s  %-40s %-24s %s\n", "ms/run", "%", "calls", "node", "op", "backend");
  for (size_t i = 0; i < r.profile.size() && i < top; ++i) {
    const NodeTime& n = r.profile[i];
    fprintf(out, "%10.4f %6.1f %6.1f  %-40s %-24s %s\n", n.ms / runs, total > 0 ? 100.0 * n.ms / total : 0.0,
            static_cast<double>(n.calls) / runs, n.node.c_str(), n.op.c_str(), n.backend.c_str());
  }
  fflush(out);
}

Status write_json(const std::string& path, AtomicFile& file, const std::string& j) {
  if (path == "-") {
    fputs(j.c_str(), stdout);
    fflush(stdout);
    return Status::ok();
  }
  Status w = file.write(j);
  return w.is_ok() ? file.commit() : w;
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  snprintf(b, sizeof b, "%.6g", v);
  return b;
}

static std::string dims_json(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

std::string bench_json(const BenchMeta& m, const std::vector<BenchRow>& rows, size_t top) {
  std::string j = "{\n";
  j += "  \"infera_version\": " + json_str(version()) + ",\n";
  j += "  \"date\": " + json_str(m.date) + ",\n";
  j += "  \"command\": " + json_str(m.command) + ",\n";
  j += "  \"model\": {\"path\": " + json_str(m.model_path) + ", \"sha256\": " + json_str(m.model_sha256) +
       ", \"bytes\": " + std::to_string(m.model_bytes) + "},\n";
  j += "  \"device\": " + json_str(m.device) + ",\n";
  j += "  \"precision\": " + json_str(m.precision) + ",\n";
  j += "  \"backends\": " + json_str(m.backends) + ",\n";
  j += std::string("  \"optimize\": ") + (m.optimize ? "true" : "false") + ",\n";
  j += "  \"threads\": " + std::to_string(m.threads) + ",\n";
  j += "  \"warmup_runs\": " + std::to_string(m.warmup) + ",\n";
  j += "  \"iterations\": " + (m.iterations ? std::to_string(m.iterations) : "null") + ",\n";
  j += "  \"duration_s\": " + (m.iterations ? "null" : json_num(m.duration_s)) + ",\n";
  j += "  \"inputs\": " + m.inputs_json + ",\n";
  j += "  \"memory_note\": " + json_str(kMemoryNote) + ",\n";
  j += "  \"results\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& r = rows[i];
    j += i ? ",\n    {" : "\n    {";
    j += "\"batch\": " + std::to_string(r.batch) + ", \"shapes\": {";
    size_t k = 0;
    for (auto& [name, d] : r.shapes) j += (k++ ? ", " : "") + json_str(name) + ": " + dims_json(d);
    j += "}, \"streams\": " + std::to_string(r.streams) + ", \"count\": " + std::to_string(r.lat.count);
    j += ", \"latency_ms_p50\": " + json_num(r.lat.p50) + ", \"latency_ms_p90\": " + json_num(r.lat.p90);
    j += ", \"latency_ms_p99\": " + (r.lat.has_p99 ? json_num(r.lat.p99) : "null");
    j += ", \"latency_source\": " + std::string(r.device_timed ? "\"device events\"" : "\"host clock\"") +
         ", \"host_latency_ms_mean\": " + json_num(r.host_lat.mean) +
         ", \"host_latency_ms_p50\": " + json_num(r.host_lat.p50);
    j += ", \"latency_ms_mean\": " + json_num(r.lat.mean) + ", \"latency_ms_min\": " + json_num(r.lat.min);
    j += ", \"latency_ms_max\": " + json_num(r.lat.max) + ", \"latency_ms_stddev\": " + json_num(r.lat.stddev);
    j += ", \"throughput_per_s\": " + json_num(r.throughput);
    j += ", \"peak_memory_bytes\": " + std::to_string(r.session_bytes + r.io_bytes);
    if (r.device_bytes) j += ", \"device_memory_bytes\": " + std::to_string(r.device_bytes);
    j += ", \"session_allocated_bytes\": " + std::to_string(r.session_bytes);
    j += ", \"io_bytes\": " + std::to_string(r.io_bytes);
    j += ", \"planned_bytes\": " + std::to_string(r.planned_bytes);
    j += ", \"peak_rss_bytes\": " + std::to_string(r.peak_rss_bytes);
    j += ", \"build_ms\": " + json_num(r.build_ms);
    j += ", \"plan_memory\": {\"weight_bytes\": " + std::to_string(r.weight_bytes) +
         ", \"arena_bytes\": " + std::to_string(r.arena_bytes) +
         ", \"scratch_bytes\": " + std::to_string(r.scratch_bytes) +
         ", \"peak_bytes\": " + std::to_string(r.peak_bytes) + ", \"chunk_batch\": " + std::to_string(r.chunk_batch) +
         ", \"chunks\": " + std::to_string(r.chunks) + "}";
    if (r.profiled_runs) {
      const double runs = static_cast<double>(r.profiled_runs);
      j += ", \"profile\": [";
      for (size_t n = 0; n < r.profile.size() && n < top; ++n) {
        const NodeTime& t = r.profile[n];
        j += (n ? ", " : "") + std::string("{\"node\": ") + json_str(t.node) + ", \"op\": " + json_str(t.op) +
             ", \"backend\": " + json_str(t.backend) + ", \"ms_per_run\": " + json_num(t.ms / runs) +
             ", \"calls_per_run\": " + json_num(static_cast<double>(t.calls) / runs) + "}";
      }
      j += "]";
    }
    j += "}";
  }
  j += "\n  ]\n}\n";
  return j;
}

}  // namespace infera::cli
