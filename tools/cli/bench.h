// infera bench: what one batch size measured, and how it is reported (table row, profile, JSON).
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli.h"

namespace infera::cli {

struct LatencyStats {
  size_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0, stddev = 0;
  bool has_p99 = false;  // p99 of fewer than 100 samples is an extreme, not a percentile
};
LatencyStats latency_stats(std::vector<double> ms);

// Time of one node (or inserted step kind) summed over the timed runs.
struct NodeTime {
  std::string node, op, backend;
  double ms = 0;
  size_t calls = 0;
};

struct BenchRow {
  int64_t batch = 0;  // items per run (1 where the model has no batch)
  int streams = 1;    // runs in flight at once (--streams): one thread and one run context each
  std::map<std::string, std::vector<int64_t>> shapes;
  LatencyStats lat;       // device event times on a GPU, else the host's wall clock
  LatencyStats host_lat;  // the host's wall clock around each run
  bool device_timed = false;
  double throughput = 0;      // items per second from the mean
  double build_ms = 0;        // plan build time
  size_t planned_bytes = 0;   // arena + weights + scratch as planned
  size_t session_bytes = 0;   // Session::allocated_bytes() after the timed runs
  size_t io_bytes = 0;        // input and output tensors held by the benchmark
  size_t device_bytes = 0;    // GPU: arena + scratch + weights of one run context, + device I/O
  size_t peak_rss_bytes = 0;  // the process's high-water mark after this batch (getrusage)
  // The plan's own figures on the session's device (PlanReport): weights, arena, scratch, their
  // sum for one run (what --memory-budget bounds), and the chunks when the batch is split.
  size_t weight_bytes = 0, arena_bytes = 0, scratch_bytes = 0, peak_bytes = 0;
  int64_t chunk_batch = 0, chunks = 0;
  std::vector<NodeTime> profile;  // sorted, slowest first (all nodes; the report shows the top)
  size_t profiled_runs = 0;
};

// The human report: table header and one row per batch, printed as each finishes.
void print_table_header(FILE* out);
void print_table_row(FILE* out, const BenchRow& r);
void print_profile(FILE* out, const BenchRow& r, size_t top);
// The plan's memory on `device` (weights, arena, scratch, one run; chunks when split).
void print_memory(FILE* out, const std::string& device, const BenchRow& r);

struct BenchMeta {
  std::string model_path, model_sha256, date, device, precision, backends;
  size_t model_bytes = 0;
  bool optimize = true;
  int threads = 0;
  int warmup = 0;
  int iterations = 0;  // 0: by duration
  double duration_s = 0;
  std::string inputs_json;  // a JSON array describing each input's source
  std::string command;
};
std::string bench_json(const BenchMeta& m, const std::vector<BenchRow>& rows, size_t top);

extern const char* const kMemoryNote;

// --json's output: to stdout for "-", else into `file` (opened on path before timing), committed.
Status write_json(const std::string& path, AtomicFile& file, const std::string& j);
// A number for JSON ("%.6g"; null when not finite).
std::string json_num(double v);

// bench with a device list (bench_multi.cpp).
struct BenchMultiRequest {
  std::string model, json_path, command;
  SessionOptions opts;
  MultiDeviceOptions multi;
  std::vector<std::optional<int64_t>> batches;
  std::vector<ShapeSpec> shape_specs;
  std::vector<std::string> input_specs;
  uint32_t seed = 0;
  int warmup = 5, iters = 0;
  double duration = 3;
  bool quiet = false;
};
int bench_multi(const BenchMultiRequest& r);

}  // namespace infera::cli
