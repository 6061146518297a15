// infera bench with a device list (--device gpu:all, gpu:0,1, gpu:0,0, cpu,cpu): per batch, the
// first device alone, then every device through a MultiDeviceSession (latency mode: each run's
// batch split across them; throughput mode: whole runs dealt in turn), and the scaling against
// linear (items/s of all / (devices x items/s of one)), with each device's share.
#include <chrono>
#include <thread>

#include "bench.h"

namespace infera::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct Phase {
  double items_per_s = 0;
  LatencyStats lat;
  double wall_s = 0;
};

// `callers` threads run `one()` (one run of `batch` items) until the time or count is reached.
template <class F>
Result<Phase> timed(int callers, int64_t batch, int warmup, int iters, double duration, F&& one) {
  for (int i = 0; i < warmup; ++i)
    if (Status s = one(); !s.is_ok()) return s;
  std::vector<std::vector<double>> lat(static_cast<size_t>(callers));
  std::vector<Status> err(lat.size(), Status::ok());
  std::vector<std::thread> ts;
  const auto start = Clock::now();
  for (size_t k = 0; k < lat.size(); ++k)
    ts.emplace_back([&, k] {
      for (int i = 0;; ++i) {
        const double el = std::chrono::duration<double>(Clock::now() - start).count();
        if (iters ? i >= iters : i >= 3 && el >= duration) break;
        const auto t0 = Clock::now();
        if (Status s = one(); !s.is_ok()) {
          err[k] = s;
          return;
        }
        lat[k].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
    });
  for (std::thread& t : ts) t.join();
  Phase p;
  p.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (size_t k = 0; k < lat.size(); ++k) {
    if (!err[k].is_ok()) return err[k];
    all.insert(all.end(), lat[k].begin(), lat[k].end());
  }
  p.lat = latency_stats(all);
  p.items_per_s = static_cast<double>(batch) * static_cast<double>(all.size()) / p.wall_s;
  return p;
}

}  // namespace

int bench_multi(const BenchMultiRequest& r) {
  FILE* out = r.json_path == "-" ? stderr : stdout;
  AtomicFile json_file;
  if (!r.json_path.empty() && r.json_path != "-") {
    Status st = json_file.open(r.json_path);
    if (!st.is_ok()) return fail("--json " + st.message());
  }
  const auto t0 = Clock::now();
  auto md = MultiDeviceSession::load(r.model, r.opts, r.multi);
  if (!md.is_ok()) return fail(md.message());
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  MultiDeviceSession& m = *md.value();
  Session& first = m.session(0);
  auto files = load_file_inputs(first, r.input_specs);
  if (!files.is_ok()) return fail(files.message());
  std::vector<ResolvedShapes> plans;
  for (const auto& b : r.batches) {
    auto s = resolve_shapes(first, ShapeRequest{r.shape_specs, b, &files.value()});
    if (!s.is_ok()) return fail(s.message());
    plans.push_back(s.take());
  }
  const bool thr = r.multi.mode == MultiDeviceOptions::Mode::kThroughput;
  const int per_device = r.multi.threads_per_device ? r.multi.threads_per_device : thr ? 2 : 1;
  const size_t nd = m.device_count();
  std::string devs;
  for (const DeviceStats& d : m.stats())
    devs += (devs.empty() ? "" : ", ") + d.device.str() +
            (d.numa_node >= 0 ? " (NUMA node " + std::to_string(d.numa_node) + (d.pinned ? ", pinned)" : ")") : "");
  if (!r.quiet) {
    fprintf(out, "infera bench %s, %s\n", version(), utc_now_iso8601().c_str());
    fprintf(out, "model      %s (load on %zu devices %.1f ms)\n", safe_line(r.model).c_str(), nd, load_ms);
    fprintf(out, "devices    %s\n", devs.c_str());
    fprintf(out, "mode       %s, precision %s; %s\n", thr ? "throughput" : "latency", precision_name(r.opts.precision),
            thr ? "whole runs dealt to the devices in turn, 2 host threads per device"
                : "each run's batch split into one block of rows per device");
    fprintf(
        out,
        "timing     host wall clock, inputs and outputs on the host; 'one' = the first device alone\n"
        "           (%d caller thread%s), 'all' = every device (%zu caller thread%s); scaling = all / (%zu x one);\n"
        "           busy = time inside runs / wall time, summed over a device's threads\n\n",
        per_device, per_device == 1 ? "" : "s", thr ? nd * per_device : 1, thr && nd * per_device > 1 ? "s" : "", nd);
    fprintf(out, "%7s %12s %12s %9s %10s %10s  %s\n", "batch", "one items/s", "all items/s", "scaling", "one p50 ms",
            "all p50 ms", "per device items/s (busy)");
  }
  std::string rows_json;
  for (const ResolvedShapes& sh : plans) {
    const int64_t batch = sh.batch > 0 ? sh.batch : 1;
    auto in = make_inputs(first, sh, files.value(), r.seed);
    if (!in.is_ok()) return fail(in.message());
    const std::map<std::string, Tensor> inputs = in.take();
    auto single = timed(per_device, batch, r.warmup, r.iters, r.duration, [&] { return first.run(inputs).status(); });
    if (!single.is_ok()) return fail(single.message());
    if (Status p = m.prepare(sh.dims); !p.is_ok()) return fail(p.message());
    const int callers = thr ? static_cast<int>(nd) * per_device : 1;
    for (int i = 0; i < r.warmup; ++i)
      if (Status w = m.run(inputs).status(); !w.is_ok()) return fail(w.message());
    m.reset_stats();  // the stats then count the timed runs only
    auto all = timed(callers, batch, 0, r.iters, r.duration, [&] { return m.run(inputs).status(); });
    if (!all.is_ok()) return fail(all.message());
    const double scaling = all.value().items_per_s / (static_cast<double>(nd) * single.value().items_per_s);
    std::string per, per_json;
    for (const DeviceStats& d : m.stats()) {
      const double ips = static_cast<double>(d.rows) / all.value().wall_s;
      const double busy = 100.0 * d.busy_ms / 1000.0 / all.value().wall_s;
      char buf[96];
      snprintf(buf, sizeof buf, "%s%s %.1f (%.0f%%)", per.empty() ? "" : ", ", d.device.str().c_str(), ips, busy);
      per += buf;
      per_json += std::string(per_json.empty() ? "" : ", ") + "{\"device\": " + json_str(d.device.str()) +
                  ", \"numa_node\": " + std::to_string(d.numa_node) + ", \"pinned\": " + (d.pinned ? "true" : "false") +
                  ", \"runs\": " + std::to_string(d.runs) + ", \"rows\": " + std::to_string(d.rows) +
                  ", \"items_per_s\": " + json_num(ips) + ", \"busy_percent\": " + json_num(busy) + "}";
    }
    if (!r.quiet)
      fprintf(out, "%7lld %12.1f %12.1f %8.1f%% %10.3f %10.3f  %s\n", static_cast<long long>(batch),
              single.value().items_per_s, all.value().items_per_s, 100 * scaling, single.value().lat.p50,
              all.value().lat.p50, per.c_str());
    rows_json += std::string(rows_json.empty() ? "" : ",\n    ") + "{\"batch\": " + std::to_string(batch) +
                 ", \"one_items_per_s\": " + json_num(single.value().items_per_s) +
                 ", \"all_items_per_s\": " + json_num(all.value().items_per_s) + ", \"scaling\": " + json_num(scaling) +
                 ", \"one_p50_ms\": " + json_num(single.value().lat.p50) +
                 ", \"all_p50_ms\": " + json_num(all.value().lat.p50) +
                 ", \"all_runs\": " + std::to_string(all.value().lat.count) + ", \"per_device\": [" + per_json + "]}";
  }
  if (!r.json_path.empty()) {
    std::string j = "{\n  \"date\": " + json_str(utc_now_iso8601()) + ",\n  \"command\": " + json_str(r.command) +
                    ",\n  \"model\": " + json_str(r.model) + ",\n  \"devices\": " + json_str(devs) +
                    ",\n  \"mode\": " + json_str(thr ? "throughput" : "latency") +
                    ",\n  \"precision\": " + json_str(precision_name(r.opts.precision)) + ",\n  \"rows\": [\n    " +
                    rows_json + "\n  ]\n}\n";
    if (Status w = write_json(r.json_path, json_file, j); !w.is_ok()) return fail(w.message());
  }
  return kExitOk;
}

}  // namespace infera::cli
