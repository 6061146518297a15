// infera profile: the time of every step of MODEL's plan (mean of N runs), its share, the
// algorithm and kernel chosen, FLOPs and achieved FLOP/s against the device's peak, bytes moved
// and bandwidth; then a summary by op kind (what rocprof --stats gives, at the model's level).
#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cli.h"
#include "gpu_smi.h"

namespace infera::cli {

const CommandSpec& profile_spec() {
  static const CommandSpec spec = [] {
    CommandSpec c{"profile",
                  "MODEL [options]",
                  "Runs MODEL --runs times after --warmup runs with every step timed (device events on a\n"
                  "GPU) and prints the --top steps by mean time: share of the total, backend, algorithm\n"
                  "and kernel, FLOPs (Conv/Gemm/MatMul) and GFLOP/s against the device's peak (an\n"
                  "estimate: stated how), bytes moved (inputs + outputs + weights) and GB/s; then the\n"
                  "time per op kind. Profiling runs without GPU graphs (each step is timed alone).",
                  {}};
    c.options.push_back({"--batch", "N", "the batch, 1..1048576 (default 1)"});
    for (auto& o : shape_opt_specs()) c.options.push_back(o);
    c.options.push_back({"--runs", "N", "timed runs, 1..100000 (default 10)"});
    c.options.push_back({"--warmup", "N", "untimed runs first, 0..100000 (default 3)"});
    c.options.push_back({"--top", "N", "rows of the step table, 1..1000000 (default 20)"});
    c.options.push_back({"--csv", "FILE", "every step as CSV"});
    c.options.push_back({"--json", "FILE", "every step and the summary as JSON"});
    for (auto& o : session_opt_specs())
      if (o.name != "--graph") c.options.push_back(o);  // always off: see above
    c.options.push_back(verbose_opt_spec());
    return c;
  }();
  return spec;
}

namespace {

struct Row {
  size_t index = 0;
  std::string node, op, backend, algorithm, kernel;
  double ms = 0, flops = 0;
  size_t bytes = 0;
};

// The algorithm family an implementation name says (the CPU's "[winograd: ...]" note, the GPU's
// kernel names, the vendor libraries).
std::string algorithm_of(const std::string& impl) {
  auto has = [&](const char* w) { return impl.find(w) != std::string::npos; };
  if (has("wino")) return "winograd";
  if (has("implicit_gemm")) return "implicit_gemm";
  if (has("cudnn") || has("cublaslt")) return "vendor";
  if (has("[direct") || has("direct")) return "direct";
  if (has("gemm")) return "gemm";                   // oneDNN's im2col + GEMM convs ("gemm:jit"), GEMM kernels
  if (has("conv") && has("jit:")) return "direct";  // oneDNN's jit convs (with one algorithm: no note)
  return "-";
}

struct Peak {
  double gflops = 0;  // 0: unknown
  std::string how;
};

// CPU: threads x max frequency x fp32 SIMD lanes x 2 (FMA) x 2 FMA units per core.
Peak cpu_peak(int threads) {
  std::ifstream ci("/proc/cpuinfo");
  std::string line, flags;
  double mhz = 0;
  while (std::getline(ci, line)) {
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = " " + line.substr(line.find(':') + 1) + " ";
    if (mhz == 0 && line.rfind("cpu MHz", 0) == 0) mhz = std::atof(line.substr(line.find(':') + 1).c_str());
  }
  std::ifstream mf("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  std::string src = "/proc/cpuinfo 'cpu MHz'";
  if (mf >> khz && khz > 0) mhz = khz / 1000, src = "cpufreq cpuinfo_max_freq";
  const int lanes = flags.find(" avx512f ") != std::string::npos ? 16
                    : flags.find(" avx2 ") != std::string::npos  ? 8
                                                                 : 4;
  Peak p;
  p.gflops = threads * mhz / 1000.0 * lanes * 2 * 2;
  char b[256];
  std::snprintf(b, sizeof b,
                "estimate: %d threads x %.2f GHz (%s) x %d fp32 lanes (%s) x 2 (FMA) x 2 FMA units per core", threads,
                mhz / 1000.0, src.c_str(), lanes,
                lanes == 16  ? "avx512f"
                : lanes == 8 ? "avx2"
                             : "sse");
  p.how = b;
  return p;
}

// GPU: multiprocessors x max SM clock (NVML) x dense FLOPs per SM per clock of the arch.
Peak gpu_peak(Precision prec, bool tf32) {
  Peak p;
  int sms = 0;
  for (const BackendInfo& b : available_backends())
    if (b.name == "gpu" && b.available) {
      const size_t at = b.details.find(" multiprocessors");
      if (at != std::string::npos) {
        size_t s = b.details.rfind(' ', at - 1);
        sms = std::atoi(b.details.substr(s + 1, at - s - 1).c_str());
      }
    }
  const SmiReport smi = probe_gpus();
  if (smi.gpus.empty() || sms <= 0) {
    p.how = "unknown (needs NVML and the GPU backend's multiprocessor count)";
    return p;
  }
  const SmiGpu& g = smi.gpus[0];
  // dense FLOPs / SM / clock: fp16 tensor, tf32 tensor, fp32 SIMT
  static const std::map<std::string, std::array<double, 3>> per_sm = {{"sm_80", {2048, 1024, 128}},
                                                                      {"sm_86", {1024, 512, 256}},
                                                                      {"sm_89", {1024, 512, 256}},
                                                                      {"sm_90", {4096, 2048, 256}}};
  auto it = per_sm.find(g.arch);
  if (it == per_sm.end() || g.clock_sm_max == 0) {
    p.how = "unknown for " + g.arch + " (no table entry or clock)";
    return p;
  }
  const int k = prec == Precision::kFp16 ? 0 : tf32 ? 1 : 2;
  p.gflops = sms * g.clock_sm_max / 1000.0 * it->second[k];
  char b[256];
  std::snprintf(b, sizeof b, "estimate: %d SMs x %.2f GHz (NVML max SM clock) x %.0f dense %s FLOPs per SM per clock",
                sms, g.clock_sm_max / 1000.0, it->second[k],
                k == 0   ? "fp16 tensor"
                : k == 1 ? "tf32 tensor"
                         : "fp32");
  p.how = b;
  return p;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string r = "\"";
  for (char c : s) r += c == '"' ? std::string("\"\"") : std::string(1, c);
  return r + "\"";
}

std::string num(double v, const char* fmt = "%.6g") {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

}  // namespace

int cmd_profile(int argc, char** argv) {
  const CommandSpec& spec = profile_spec();
  Args a = parse_args(argc, argv, 2, spec);
  SessionOptions opts;
  session_options(a, opts);
  opts.gpu_graphs = SessionOptions::GraphMode::kOff;
  const int64_t batch = a.get_int("--batch", 1, 1, 1 << 20);
  const int runs = static_cast<int>(a.get_int("--runs", 10, 1, 100000));
  const int warmup = static_cast<int>(a.get_int("--warmup", 3, 0, 100000));
  const size_t top = static_cast<size_t>(a.get_int("--top", 20, 1, 1000000));
  std::vector<ShapeSpec> shape_specs = parse_shape_specs(a);
  if (a.positional.size() != 1 && a.usage_error.empty())
    a.error(a.positional.empty()
                ? "profile needs a MODEL"
                : "profile takes one MODEL, got " + std::to_string(a.positional.size()) + " arguments");
  if (int rc = handle_help_and_usage(spec, a); rc >= 0) return rc;

  auto sess = Session::load(a.positional[0], opts);
  if (!sess.is_ok()) return fail(sess.message());
  Session& s = *sess.value();
  auto shapes = resolve_shapes(s, ShapeRequest{shape_specs, batch, nullptr});
  if (!shapes.is_ok()) return fail(shapes.message());
  std::map<std::string, FileInput> no_files;
  auto inputs = make_inputs(s, shapes.value(), no_files, 0);
  if (!inputs.is_ok()) return fail(inputs.message());
  auto rep = s.prepare(shapes.value().dims);
  if (!rep.is_ok()) return fail(rep.message());
  const PlanReport& plan = rep.value();
  auto first = s.run(inputs.value());  // allocates the outputs the timed runs write into
  if (!first.is_ok()) return fail(first.message());
  std::vector<Tensor> outs = first.take();
  for (int i = 0; i < warmup; ++i)
    if (Status st = s.run(inputs.value(), outs); !st.is_ok()) return fail(st.message());
  std::vector<StepTiming> steps;
  RunOptions ro;
  ro.profile = &steps;
  std::vector<double> sum;
  std::vector<StepTiming> first_steps;
  for (int r = 0; r < runs; ++r) {
    if (Status st = s.run(inputs.value(), outs, ro); !st.is_ok()) return fail(st.message());
    if (r == 0) first_steps = steps, sum.assign(steps.size(), 0.0);
    if (steps.size() != sum.size()) return fail("profile: the number of steps changed between runs (dynamic shapes?)");
    for (size_t i = 0; i < steps.size(); ++i) sum[i] += steps[i].ms;
  }
  // Steps and plan steps are both in execution order: the plan gives algorithm, FLOPs and bytes.
  // Skipped plan steps (a Concat its producers did in place) are not timed: matched by node and op.
  size_t next = 0;
  std::vector<Row> rows;
  double total = 0;
  for (size_t i = 0; i < first_steps.size(); ++i) {
    Row r;
    r.index = i;
    r.node = first_steps[i].node;
    r.op = first_steps[i].op;
    r.backend = first_steps[i].backend;
    r.ms = sum[i] / runs;
    size_t j = next;
    while (j < plan.step_list.size() && (plan.step_list[j].node != r.node || plan.step_list[j].op != r.op)) ++j;
    if (j < plan.step_list.size()) {
      next = j + 1;
      const PlanStepInfo& p = plan.step_list[j];
      r.kernel = p.impl;
      r.algorithm = algorithm_of(p.impl);
      r.flops = p.flops;
      r.bytes = p.input_bytes + p.output_bytes + p.weight_bytes;
    }
    total += r.ms;
    rows.push_back(std::move(r));
  }
  const Peak peak = opts.device.is_gpu() ? gpu_peak(opts.precision, opts.allow_tf32)
                                         : cpu_peak(opts.num_threads > 0 ? opts.num_threads : logical_cores());
  auto share = [&](double ms) { return total > 0 ? 100.0 * ms / total : 0.0; };
  auto gflops = [](double flops, double ms) { return ms > 0 ? flops / ms / 1e6 : 0.0; };

  struct Kind {
    size_t count = 0;
    double ms = 0, flops = 0;
    size_t bytes = 0;
  };
  std::map<std::string, Kind> kinds;
  for (const Row& r : rows) {
    Kind& k = kinds[r.op];
    ++k.count, k.ms += r.ms, k.flops += r.flops, k.bytes += r.bytes;
  }
  std::vector<std::pair<std::string, Kind>> by_kind(kinds.begin(), kinds.end());
  std::sort(by_kind.begin(), by_kind.end(), [](const auto& x, const auto& y) { return x.second.ms > y.second.ms; });

  printf("profile    %s on %s, %s, batch %lld: mean of %d runs after %d warmup\n", a.positional[0].c_str(),
         opts.device.str().c_str(), precision_name(opts.precision), static_cast<long long>(batch), runs, warmup);
  printf(
      "note       profiling runs without GPU graphs and times each step alone (a synchronisation per\n"
      "           step): the total is above `infera bench`'s latency\n");
  printf("peak       %s%s\n", peak.gflops > 0 ? (num(peak.gflops, "%.1f") + " GFLOP/s, ").c_str() : "",
         peak.how.c_str());
  printf("total      %.4f ms in %zu steps, %.3f GFLOP, %.2f GFLOP/s\n\n", total, rows.size(), plan.flops / 1e9,
         gflops(plan.flops, total));
  std::vector<Row> sorted = rows;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Row& x, const Row& y) { return x.ms > y.ms; });
  printf("%4s %9s %6s %-22s %-7s %-13s %9s %9s %6s %9s %8s  %s\n", "step", "ms", "share", "op", "backend", "algorithm",
         "GFLOP", "GFLOP/s", "peak%", "MB", "GB/s", "node / kernel");
  for (size_t i = 0; i < sorted.size() && i < top; ++i) {
    const Row& r = sorted[i];
    const double gf = gflops(r.flops, r.ms);
    printf("%4zu %9.4f %5.1f%% %-22s %-7s %-13s %9.4f %9.2f %6s %9.3f %8.2f  %s | %s\n", r.index, r.ms, share(r.ms),
           r.op.substr(0, 22).c_str(), r.backend.c_str(), r.algorithm.empty() ? "-" : r.algorithm.c_str(),
           r.flops / 1e9, gf, r.flops > 0 && peak.gflops > 0 ? num(100 * gf / peak.gflops, "%.1f").c_str() : "-",
           r.bytes / 1e6, r.ms > 0 ? r.bytes / r.ms / 1e6 : 0.0, r.node.empty() ? "(inserted)" : r.node.c_str(),
           r.kernel.c_str());
  }
  if (sorted.size() > top) printf("(%zu more steps: --top N, --csv FILE)\n", sorted.size() - top);
  printf("\nby op kind\n%-24s %6s %10s %6s %9s %9s\n", "op", "steps", "ms", "share", "GFLOP/s", "GB/s");
  for (const auto& [op, k] : by_kind)
    printf("%-24s %6zu %10.4f %5.1f%% %9.2f %9.2f\n", op.substr(0, 24).c_str(), k.count, k.ms, share(k.ms),
           gflops(k.flops, k.ms), k.ms > 0 ? k.bytes / k.ms / 1e6 : 0.0);

  if (a.has("--csv")) {
    std::string c =
        "step,node,op,backend,algorithm,kernel,mean_ms,share_pct,flops,gflops_per_s,peak_pct,bytes,gb_per_s\n";
    for (const Row& r : rows) {
      const double gf = gflops(r.flops, r.ms);
      c += std::to_string(r.index) + "," + csv_field(r.node) + "," + csv_field(r.op) + "," + csv_field(r.backend) +
           "," + csv_field(r.algorithm) + "," + csv_field(r.kernel) + "," + num(r.ms) + "," + num(share(r.ms)) + "," +
           num(r.flops, "%.0f") + "," + num(gf) + "," + (peak.gflops > 0 ? num(100 * gf / peak.gflops) : "") + "," +
           std::to_string(r.bytes) + "," + num(r.ms > 0 ? r.bytes / r.ms / 1e6 : 0.0) + "\n";
    }
    AtomicFile f;
    Status st = f.open(a.get("--csv"));
    if (st.is_ok()) st = f.write(c);
    if (st.is_ok()) st = f.commit();
    if (!st.is_ok()) return fail(st.message());
  }
  if (a.has("--json")) {
    std::string j = "{\"model\": " + json_str(a.positional[0]) + ", \"device\": " + json_str(opts.device.str()) +
                    ", \"precision\": " + json_str(precision_name(opts.precision)) +
                    ", \"batch\": " + std::to_string(batch) + ", \"runs\": " + std::to_string(runs) +
                    ", \"warmup\": " + std::to_string(warmup) + ", \"gpu_graphs\": false, \"total_ms\": " + num(total) +
                    ", \"flops\": " + num(plan.flops, "%.0f") +
                    ", \"peak_gflops\": " + (peak.gflops > 0 ? num(peak.gflops) : "null") +
                    ", \"peak_how\": " + json_str(peak.how) + ",\n \"steps\": [";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const double gf = gflops(r.flops, r.ms);
      j += std::string(i ? ",\n  " : "\n  ") + "{\"step\": " + std::to_string(r.index) +
           ", \"node\": " + json_str(r.node) + ", \"op\": " + json_str(r.op) + ", \"backend\": " + json_str(r.backend) +
           ", \"algorithm\": " + json_str(r.algorithm) + ", \"kernel\": " + json_str(r.kernel) +
           ", \"mean_ms\": " + num(r.ms) + ", \"share_pct\": " + num(share(r.ms)) +
           ", \"flops\": " + num(r.flops, "%.0f") + ", \"gflops_per_s\": " + num(gf) +
           ", \"peak_pct\": " + (r.flops > 0 && peak.gflops > 0 ? num(100 * gf / peak.gflops) : "null") +
           ", \"bytes\": " + std::to_string(r.bytes) + ", \"gb_per_s\": " + num(r.ms > 0 ? r.bytes / r.ms / 1e6 : 0.0) +
           "}";
    }
    j += "],\n \"by_op\": [";
    for (size_t i = 0; i < by_kind.size(); ++i) {
      const auto& [op, k] = by_kind[i];
      j += std::string(i ? ",\n  " : "\n  ") + "{\"op\": " + json_str(op) + ", \"steps\": " + std::to_string(k.count) +
           ", \"ms\": " + num(k.ms) + ", \"share_pct\": " + num(share(k.ms)) +
           ", \"gflops_per_s\": " + num(gflops(k.flops, k.ms)) + "}";
    }
    j += "]}\n";
    AtomicFile f;
    Status st = f.open(a.get("--json"));
    if (st.is_ok()) st = f.write(j);
    if (st.is_ok()) st = f.commit();
    if (!st.is_ok()) return fail(st.message());
  }
  return kExitOk;
}

}  // namespace infera::cli
