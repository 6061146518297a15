// infera bench: latency statistics and throughput per batch size, the configuration first, each
// row as its batch finishes, optional per-node profile and JSON report.
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include "bench.h"

namespace infera::cli {

const CommandSpec& bench_spec() {
  static const CommandSpec spec = [] {
    CommandSpec c{"bench",
                  "MODEL [options]",
                  "Times MODEL for each batch size: warmup runs, then timed runs for --duration\n"
                  "seconds (at least 3 runs) or exactly --iterations runs. Prints the configuration,\n"
                  "then one row per batch as it finishes: runs, mean/p50/p90/p99/min/max/stddev of\n"
                  "the latency (p99 only from 100 runs on), items/s, measured memory, plan build time.",
                  {}};
    c.options = {
        {"--batch", "LIST",
         "batch sizes, comma-separated, each 1..1048576 (default 1, or the batch\nof the --input files); refused where "
         "the model fixes the batch"},
    };
    for (auto& o : shape_opt_specs()) c.options.push_back(o);
    c.options.push_back({"--input", "NAME=PATH",
                         "time real data from a .npy or .pb file (repeatable; default:\nrandom floats U[-1,1), "
                         "integers [0,10), bools {0,1})",
                         "", true});
    c.options.push_back({"--seed", "N", "seed of the random inputs, 0..4294967295 (default 0)"});
    c.options.push_back({"--io", "WHERE",
                         "host | device (default host): where the inputs and outputs live; device\n"
                         "times the GPU's work without host transfers (as PyTorch does with CUDA tensors)"});
    c.options.push_back({"--streams", "LIST",
                         "runs in flight at once, comma-separated, each 1..64 (default 1): N\nthreads run the "
                         "batch on N run contexts (on a GPU, N streams); items/s is\ntheir sum, latencies are "
                         "per run (host clock)"});
    c.options.push_back({"--warmup", "N", "untimed runs before each batch's timed runs, 0..1000000 (default 5)"});
    c.options.push_back(
        {"--iterations", "N", "exactly N timed runs per batch, 1..100000000 (default: by --duration)", "--iters"});
    c.options.push_back({"--duration", "S", "seconds of timed runs per batch, 0.001..86400 (default 3)"});
    c.options.push_back({"--json", "FILE",
                         "write the configuration and results as JSON to FILE; '-' writes\nit to stdout and the table "
                         "to stderr (checked before timing)"});
    c.options.push_back({"--profile", "",
                         "time every step of the timed runs and print the slowest nodes\n(the latencies then include "
                         "the per-step timer overhead)"});
    c.options.push_back({"--top", "N", "rows of the --profile table, 1..1000000 (default 20)"});
    for (auto& o : session_opt_specs()) c.options.push_back(o);
    c.options.push_back({"--multi", "MODE",
                         "with a device list: latency (default: each run's batch split across\nthe devices) | "
                         "throughput (whole runs dealt to the devices in turn);\nprints the first device alone, "
                         "all of them, and the scaling"});
    c.options.push_back(verbose_opt_spec());
    c.options.push_back({"--quiet", "", "no configuration and no table (with --json FILE only the file)"});
    return c;
  }();
  return spec;
}

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

size_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<size_t>(u.ru_maxrss) * 1024;  // Linux: KiB
}

std::string inputs_json(const Session& s, const std::map<std::string, FileInput>& files, uint32_t seed) {
  std::string j = "[";
  uint32_t k = 0;
  for (const IoInfo& io : s.inputs()) {
    j += (k ? ", " : "") + std::string("{\"name\": ") + json_str(io.name) +
         ", \"dtype\": " + json_str(dtype_name(io.dtype)) + ", \"declared_shape\": " + json_str(io_shape_str(io));
    auto f = files.find(io.name);
    if (f != files.end())
      j += ", \"source\": \"file\", \"path\": " + json_str(f->second.path) + "}";
    else
      j += ", \"source\": \"random\", \"seed\": " + std::to_string(seed + k) + "}";
    ++k;
  }
  return j + "]";
}

// One batch: warmup, timed runs, statistics. Returns an error message or "".
std::string bench_one(Session& s, const ResolvedShapes& shapes, const std::map<std::string, FileInput>& files,
                      uint32_t seed, int warmup, int iters, double duration, bool profile, bool progress,
                      bool device_io, int streams, BenchRow& row) {
  row.streams = streams;
  row.batch = shapes.batch > 0 ? shapes.batch : 1;
  row.shapes = shapes.dims;
  auto rep = s.prepare(shapes.dims);
  if (!rep.is_ok()) return rep.message();
  row.build_ms = rep.value().build_ms;
  const std::string dname = s.options().device.str();
  if (s.options().device.is_gpu()) {  // what one run context holds on the device
    const auto& r = rep.value();
    auto at = [&](const std::map<std::string, size_t>& m) { return m.count(dname) ? m.at(dname) : size_t(0); };
    row.device_bytes = at(r.arena_bytes_per_device) + at(r.scratch_bytes_per_device) + at(r.weight_bytes_per_device);
  }
  row.planned_bytes = rep.value().arena_bytes + rep.value().weight_bytes + rep.value().scratch_bytes;
  {
    const auto& r = rep.value();
    auto at = [&](const std::map<std::string, size_t>& m) { return m.count(dname) ? m.at(dname) : size_t(0); };
    row.weight_bytes = s.options().device.is_cpu() ? r.weight_bytes : at(r.weight_bytes_per_device);
    row.arena_bytes = at(r.arena_bytes_per_device);
    row.scratch_bytes = at(r.scratch_bytes_per_device);
    row.peak_bytes = r.peak_bytes;
    row.chunk_batch = r.chunk_batch;
    row.chunks = r.chunks;
  }
  auto in = make_inputs(s, shapes, files, seed);
  if (!in.is_ok()) return in.message();
  std::map<std::string, Tensor> inputs = in.take();
  const Device dev = s.options().device;
  if (device_io) {  // the same data, copied to the device once
    for (auto& [n, t] : inputs) {
      auto d = Tensor::make_on(dev, t.dtype(), t.dims());
      if (!d.is_ok()) return d.message();
      Status st = copy_tensor(t, d.value());
      if (!st.is_ok()) return st.message();
      t = d.take();
    }
  }
  for (auto& [n, t] : inputs) {
    row.io_bytes += t.nbytes();
    if (device_io) row.device_bytes += t.nbytes();
  }

  // Outputs written in place; a data-dependent output shape is learned from one untimed run.
  std::vector<Tensor> outs;
  bool known = true;
  for (auto& d : rep.value().output_dims)
    for (int64_t x : d) known = known && x >= 0;
  if (!known || rep.value().output_dims.size() != s.outputs().size()) {
    auto r = s.run(inputs);
    if (!r.is_ok()) return r.message();
    outs = r.take();
  } else {
    for (size_t i = 0; i < s.outputs().size(); ++i) {
      auto t = device_io ? Tensor::make_on(dev, s.outputs()[i].dtype, rep.value().output_dims[i])
                         : Tensor::make(s.outputs()[i].dtype, rep.value().output_dims[i]);
      if (!t.is_ok()) return t.message();
      outs.push_back(t.take());
    }
  }
  for (const Tensor& t : outs) {
    row.io_bytes += t.nbytes();
    if (device_io) row.device_bytes += t.nbytes();
  }

  for (int i = 0; i < warmup; ++i) {
    if (progress) fprintf(stderr, "batch %lld: warmup %d/%d   \r", static_cast<long long>(row.batch), i + 1, warmup);
    Status st = s.run(inputs, outs);
    if (!st.is_ok()) return st.message();
  }
  std::vector<double> lat, dev_lat;
  if (streams > 1) {  // N threads, each with its own outputs, reading the same inputs
    std::vector<std::vector<Tensor>> souts(static_cast<size_t>(streams));
    for (auto& so : souts)
      for (const Tensor& t : outs) {
        auto c = t.device().is_cpu() ? Tensor::make(t.dtype(), t.dims()) : Tensor::make_on(dev, t.dtype(), t.dims());
        if (!c.is_ok()) return c.message();
        so.push_back(c.take());
      }
    std::vector<std::vector<double>> slat(souts.size());
    std::vector<Status> serr(souts.size(), Status::ok());
    std::vector<std::thread> pool;
    const auto start = Clock::now();
    for (size_t k = 0; k < souts.size(); ++k)
      pool.emplace_back([&, k] {
        for (int i = 0;; ++i) {
          if (iters ? i >= iters : i >= 3 && std::chrono::duration<double>(Clock::now() - start).count() >= duration)
            break;
          const auto t0 = Clock::now();
          Status st = s.run(inputs, souts[k]);
          if (!st.is_ok()) {
            serr[k] = st;
            return;
          }
          slat[k].push_back(ms_since(t0));
        }
      });
    for (auto& t : pool) t.join();
    const double wall = ms_since(start);
    for (size_t k = 0; k < souts.size(); ++k) {
      if (!serr[k].is_ok()) return serr[k].message();
      lat.insert(lat.end(), slat[k].begin(), slat[k].end());
    }
    row.host_lat = row.lat = latency_stats(lat);
    row.throughput = static_cast<double>(row.batch) * static_cast<double>(lat.size()) * 1000.0 / wall;
    row.session_bytes = s.allocated_bytes();
    row.peak_rss_bytes = peak_rss_bytes();
    return "";
  }
  std::vector<StepTiming> steps;
  std::map<std::string, NodeTime> per_node;
  RunOptions ro;
  if (profile) ro.profile = &steps;
  double dev_ms = -1;
  if (dev.is_gpu()) ro.device_ms = &dev_ms;
  const auto start = Clock::now();
  for (int i = 0;; ++i) {
    if (iters ? i >= iters : i >= 3 && std::chrono::duration<double>(Clock::now() - start).count() >= duration) break;
    const auto t0 = Clock::now();
    Status st = s.run(inputs, outs, ro);
    const double ms = ms_since(t0);
    if (!st.is_ok()) return st.message();
    lat.push_back(ms);
    if (dev_ms >= 0) dev_lat.push_back(dev_ms);
    if (profile) {
      for (const StepTiming& t : steps) {
        NodeTime& n = per_node[t.node.empty() ? "(" + t.op + ")" : t.node];
        if (n.calls == 0) {
          n.node = t.node.empty() ? "(inserted " + t.op + ")" : t.node;
          n.op = t.op;
          n.backend = t.backend;
        }
        n.ms += t.ms;
        ++n.calls;
      }
      ++row.profiled_runs;
    }
    if (progress && i % 5 == 0) fprintf(stderr, "batch %lld: %d runs   \r", static_cast<long long>(row.batch), i + 1);
  }
  if (progress) fprintf(stderr, "%40s\r", "");
  // On a GPU the latencies are the device's (events on the run's stream); the host's wall clock
  // is kept beside them.
  row.host_lat = latency_stats(lat);
  row.device_timed = !dev_lat.empty() && dev_lat.size() == lat.size();
  row.lat = row.device_timed ? latency_stats(dev_lat) : row.host_lat;
  row.throughput = static_cast<double>(row.batch) * 1000.0 / row.lat.mean;
  row.session_bytes = s.allocated_bytes();
  row.peak_rss_bytes = peak_rss_bytes();
  for (auto& [k, n] : per_node) row.profile.push_back(n);
  std::sort(row.profile.begin(), row.profile.end(), [](const NodeTime& a, const NodeTime& b) { return a.ms > b.ms; });
  return "";
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  const CommandSpec& spec = bench_spec();
  Args a = parse_args(argc, argv, 2, spec);
  SessionOptions opts;
  std::vector<Device> devices;
  session_options(a, opts, &devices);
  MultiDeviceOptions multi;
  multi.devices = devices;
  multi.mode = multi_mode(a, devices.size());
  if (devices.size() > 1)
    for (const char* o : {"--profile", "--streams", "--io", "--top"})
      if (a.has(o)) a.error(std::string(o) + " is not for a device list (--device " + a.get("--device") + ")");
  // Batches run one after another: the memory figure is this batch's (a batch run in chunks under
  // --memory-budget uses two plans: the chunk's and the last, smaller one's).
  opts.max_cached_plans = opts.memory_budget_bytes ? 2 : 1;
  const int warmup = static_cast<int>(a.get_int("--warmup", 5, 0, 1000000));
  const int iters = static_cast<int>(a.get_int("--iterations", 0, 1, 100000000));
  const double duration = a.get_double("--duration", 3.0, 0.001, 86400);
  const uint32_t seed = static_cast<uint32_t>(a.get_int("--seed", 0, 0, 4294967295ll));
  const size_t top = static_cast<size_t>(a.get_int("--top", 20, 1, 1000000));
  const std::string io = a.get("--io", "host");
  if (io != "host" && io != "device") a.error("--io expects host or device, got '" + io + "'");
  if (io == "device" && !opts.device.is_gpu()) a.error("--io device needs --device gpu");
  if (a.has("--iterations") && a.has("--duration")) a.error("give --iterations or --duration, not both");
  if (a.has("--top") && !a.has("--profile")) a.error("--top sets the rows of --profile; give --profile too");
  std::vector<std::optional<int64_t>> batches;
  if (a.has("--batch")) {
    std::stringstream ss(a.get("--batch"));
    std::string b;
    while (std::getline(ss, b, ',')) {
      char* end = nullptr;
      long long v = std::strtoll(b.c_str(), &end, 10);
      if (b.empty() || *end || v < 1 || v > (1 << 20)) {
        a.error("--batch expects a comma-separated list of integers in [1, 1048576], got '" + b + "'");
        break;
      }
      batches.push_back(v);
    }
    if (batches.empty()) a.error("--batch expects a comma-separated list of integers in [1, 1048576]");
  } else {
    batches.push_back(std::nullopt);
  }
  std::vector<int> stream_counts;
  {
    std::stringstream ss(a.get("--streams", "1"));
    std::string b;
    while (std::getline(ss, b, ',')) {
      char* end = nullptr;
      long v = std::strtol(b.c_str(), &end, 10);
      if (b.empty() || *end || v < 1 || v > 64) {
        a.error("--streams expects a comma-separated list of integers in [1, 64], got '" + b + "'");
        break;
      }
      stream_counts.push_back(static_cast<int>(v));
    }
    if (stream_counts.empty()) a.error("--streams expects a comma-separated list of integers in [1, 64]");
  }
  const int most_streams = stream_counts.empty() ? 1 : *std::max_element(stream_counts.begin(), stream_counts.end());
  if (most_streams > 1 && a.has("--profile")) a.error("--profile times one stream: give --streams 1 or no --profile");
  if (most_streams > 1) opts.max_run_contexts = std::max(opts.max_run_contexts, most_streams);
  std::vector<ShapeSpec> shape_specs = parse_shape_specs(a);
  if (a.positional.size() != 1)
    a.error(a.positional.empty() ? "bench needs a MODEL"
                                 : "bench takes one MODEL, got " + std::to_string(a.positional.size()) + " arguments");
  if (int rc = handle_help_and_usage(spec, a); rc >= 0) return rc;

  const std::string model = a.positional[0];
  if (devices.size() > 1) {
    BenchMultiRequest r;
    r.model = model;
    r.json_path = a.get("--json");
    for (int i = 0; i < argc; ++i) r.command += (i ? " " : "") + std::string(i ? argv[i] : "infera");
    r.opts = opts;
    r.multi = multi;
    r.batches = batches;
    r.shape_specs = shape_specs;
    r.input_specs = a.all("--input");
    r.seed = seed;
    r.warmup = warmup;
    r.iters = iters;
    r.duration = duration;
    r.quiet = a.has("--quiet");
    return bench_multi(r);
  }
  const std::string json_path = a.get("--json");
  const bool json_stdout = json_path == "-";
  const bool quiet = a.has("--quiet");
  FILE* out = json_stdout ? stderr : stdout;  // stdout then holds only the JSON
  const bool progress = !quiet && stderr_is_tty();
  BenchMeta meta;
  meta.date = utc_now_iso8601();
  for (int i = 0; i < argc; ++i) meta.command += (i ? " " : "") + std::string(i ? argv[i] : "infera");

  // The JSON target is checked (and its temporary created) before anything is timed.
  AtomicFile json_file;
  if (a.has("--json") && !json_stdout) {
    Status st = json_file.open(json_path);
    if (!st.is_ok()) return fail("--json " + st.message());
  }

  // The path comes from argv and may hold anything (ESC, CR): the error lines' escaping and cap.
  if (progress) fprintf(stderr, "loading %s...\r", safe_line(model).c_str());
  const auto load_t0 = Clock::now();
  auto sess = Session::load(model, opts);
  if (progress) fprintf(stderr, "\033[K");
  if (!sess.is_ok()) return fail(sess.message());
  const double load_ms = ms_since(load_t0);
  Session& s = *sess.value();

  auto files = load_file_inputs(s, a.all("--input"));
  if (!files.is_ok()) return fail(files.message());
  // Every batch's shapes are resolved before the first is timed: an impossible batch is refused
  // up front, not after minutes of timing.
  std::vector<ResolvedShapes> plans;
  for (const auto& b : batches) {
    auto r = resolve_shapes(s, ShapeRequest{shape_specs, b, &files.value()});
    if (!r.is_ok()) return fail(r.message());
    plans.push_back(r.take());
  }

  meta.model_path = model;
  struct stat st {};
  if (stat(model.c_str(), &st) == 0) meta.model_bytes = static_cast<size_t>(st.st_size);
  if (a.has("--json")) {
    auto h = sha256_file(model);
    if (!h.is_ok()) return fail(h.message());
    meta.model_sha256 = h.value();
  }
  meta.device = opts.device.str();
  meta.precision = precision_name(opts.precision);
  std::string backends;
  for (const std::string& b : opts.backends) backends += (backends.empty() ? "" : ",") + b;
  meta.backends = backends.empty() ? "default" : backends;
  meta.optimize = opts.optimize;
  meta.threads = opts.num_threads > 0 ? opts.num_threads : logical_cores();
  meta.warmup = warmup;
  meta.iterations = iters;
  meta.duration_s = duration;
  meta.inputs_json = inputs_json(s, files.value(), seed);

  if (!quiet) {
    fprintf(out, "infera bench %s, %s\n", version(), meta.date.c_str());
    fprintf(out, "model      %s (%s%s%s, load %.1f ms)\n", safe_line(model).c_str(),
            bytes_str(meta.model_bytes).c_str(), meta.model_sha256.empty() ? "" : ", sha256 ",
            meta.model_sha256.c_str(), load_ms);
    fprintf(out, "device     %s, precision %s, backends %s, graph passes %s\n", meta.device.c_str(),
            meta.precision.c_str(), meta.backends.c_str(), opts.optimize ? "on" : "off");
    fprintf(out, "threads    %d%s\n", meta.threads, opts.num_threads > 0 ? "" : " (all logical cores)");
    if (opts.device.is_gpu())
      fprintf(out,
              "timing     device events on the run's GPU stream (host wall clock in the JSON); inputs "
              "and outputs on the %s\n"
              "           device memory (planned, one run context: arena + scratch + weights + device I/O) "
              "in the JSON as device_memory_bytes\n",
              io == "device" ? "device (no host transfers)" : "host (transfers included)");
    if (iters)
      fprintf(out, "runs       %d warmup, then %d timed runs per batch\n", warmup, iters);
    else
      fprintf(out, "runs       %d warmup, then %g s of timed runs per batch (at least 3)%s\n", warmup, duration,
              a.has("--profile") ? "; every step timed (--profile)" : "");
    uint32_t k = 0;
    for (const IoInfo& io : s.inputs()) {
      auto f = files.value().find(io.name);
      std::string src =
          f != files.value().end() ? "from " + f->second.path : "random (seed " + std::to_string(seed + k) + ")";
      fprintf(out, "input      %s %s %s: %s\n", io.name.c_str(), dtype_name(io.dtype), io_shape_str(io).c_str(),
              src.c_str());
      ++k;
    }
    for (const ResolvedShapes& r : plans) {
      std::string line;
      for (auto& [n, d] : r.dims) line += (line.empty() ? "" : ", ") + n + " " + shape_str(d);
      fprintf(out, "shapes     batch %lld: %s\n", static_cast<long long>(r.batch > 0 ? r.batch : 1), line.c_str());
    }
    fprintf(out,
            "memory     measured: MiB = what the session holds after the timed runs (weights, arenas,\n"
            "           scratch) + input/output tensors; RSS = the process's peak resident set (getrusage)\n\n");
    print_table_header(out);
  }

  std::vector<BenchRow> rows;
  for (const ResolvedShapes& r : plans)
    for (int n : stream_counts) {
      BenchRow row;
      std::string why = bench_one(s, r, files.value(), seed, warmup, iters, duration, a.has("--profile"), progress,
                                  io == "device", n, row);
      if (!why.empty()) return fail(why);
      if (!quiet) print_table_row(out, row);
      rows.push_back(std::move(row));
    }
  if (!quiet) {
    fputc('\n', out);
    for (const BenchRow& r : rows)
      if (r.streams == stream_counts.front()) print_memory(out, meta.device, r);
  }
  if (!quiet && a.has("--profile"))
    for (const BenchRow& r : rows) print_profile(out, r, top);

  if (a.has("--json")) {
    if (Status w = write_json(json_path, json_file, bench_json(meta, rows, top)); !w.is_ok()) return fail(w.message());
  }
  return kExitOk;
}

}  // namespace infera::cli
