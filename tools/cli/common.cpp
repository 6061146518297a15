// Errors, session options and small formatting helpers shared by the commands.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "cli.h"
#include "tune/json.h"

namespace infera::cli {

// One safe line: the library's rule (Status::error): control characters and invalid UTF-8 as
// \xNN, capped at Status::kMaxMessage bytes; CLI messages quote names from the model and argv.
std::string safe_line(const std::string& msg) { return Status::error(StatusCode::kInternal, msg).message(); }

int fail(const std::string& msg) {
  fprintf(stderr, "infera: error: %s\n", safe_line(msg).c_str());
  return kExitModelError;
}

int usage(const std::string& cmd, const std::string& msg) {
  std::string see = cmd.empty() ? "infera --help" : "infera " + cmd + " --help";
  fprintf(stderr, "infera: usage error: %s (see '%s')\n", safe_line(msg).c_str(), see.c_str());
  return kExitUsage;
}

int handle_help_and_usage(const CommandSpec& cmd, const Args& a) {
  if (a.help) {
    fputs(help_text(cmd).c_str(), stdout);
    return kExitOk;
  }
  if (!a.usage_error.empty()) return usage(cmd.name, a.usage_error);
  return -1;
}

MultiDeviceOptions::Mode multi_mode(Args& a, size_t devices) {
  const std::string m = a.get("--multi", "latency");
  if (a.has("--multi") && devices < 2) a.error("--multi needs a device list (--device gpu:all, gpu:0,1, ...)");
  if (m == "throughput") return MultiDeviceOptions::Mode::kThroughput;
  if (m != "latency") a.error("--multi expects latency or throughput, got '" + m + "'");
  return MultiDeviceOptions::Mode::kLatency;
}

int logical_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

void session_options(Args& a, SessionOptions& o, std::vector<Device>* devices) {
  // More threads than cores only makes OpenMP threads wait on each other, and a huge count ends
  // in libgomp's own abort when thread creation fails: the range is the machine's cores.
  o.num_threads = static_cast<int>(a.get_int("--threads", 0, 1, logical_cores()));
  if (devices) *devices = {o.device};
  if (a.has("--device")) {
    const std::string d = a.get("--device");
    if (d.find(',') != std::string::npos || d == "gpu:all") {
      auto list = parse_device_list(d);
      if (!devices)
        a.error("--device: a device list ('" + d + "') is for run and bench; give one device (cpu, gpu, gpu:N)");
      else if (!list.is_ok())
        a.error("--device: " + list.message());
      else
        *devices = list.value(), o.device = list.value()[0];
    } else {
      auto dev = Device::parse(d);
      if (dev.is_ok())
        o.device = dev.value();
      else
        a.error("--device: " + dev.message());
      if (devices) *devices = {o.device};
    }
  }
  if (a.has("--precision")) {
    auto prec = parse_precision(a.get("--precision"));
    if (prec.is_ok())
      o.precision = prec.value();
    else
      a.error("--precision: " + prec.message());
  }
  if (a.has("--graph")) {
    const std::string g = a.get("--graph");
    if (g == "on")
      o.gpu_graphs = SessionOptions::GraphMode::kOn;
    else if (g == "off")
      o.gpu_graphs = SessionOptions::GraphMode::kOff;
    else if (g == "auto")
      o.gpu_graphs = SessionOptions::GraphMode::kAuto;
    else
      a.error("--graph expects on, off or auto, got '" + g + "'");
  }
  o.allow_tf32 = a.has("--tf32");
  o.vendor_libraries = !a.has("--no-vendor-libs");
  o.optimize = !a.has("--no-optimize");
  if (a.has("--no-dnnl")) o.backends = {"ref"};
  if (a.has("--perf-db") && a.has("--no-perf-db")) a.error("--perf-db and --no-perf-db contradict each other");
  if (a.has("--perf-db")) {
    o.perf_db = a.get("--perf-db");
    if (o.perf_db.empty() || o.perf_db == "none") a.error("--perf-db expects a file path (--no-perf-db turns it off)");
  }
  if (a.has("--no-perf-db")) o.perf_db = "none";
  auto pick = [&](const char* opt, auto& field, const auto& table) {
    if (!a.has(opt)) return;
    const std::string v = a.get(opt);
    std::string names;
    for (const auto& [name, value] : table) {
      if (v == name) {
        field = value;
        return;
      }
      names += (names.empty() ? "" : ", ") + std::string(name);
    }
    a.error(std::string(opt) + " expects one of " + names + ", got '" + v + "'");
  };
  using A = SessionOptions::ConvAlgo;
  using W = SessionOptions::WinogradMode;
  using S = SessionOptions::SearchMode;
  pick("--conv-algo", o.conv_algo,
       std::vector<std::pair<const char*, A>>{{"auto", A::kAuto},
                                              {"implicit_gemm", A::kImplicitGemm},
                                              {"winograd", A::kWinograd},
                                              {"direct", A::kDirect},
                                              {"gemm", A::kGemm},
                                              {"vendor", A::kVendor}});
  pick("--winograd", o.winograd,
       std::vector<std::pair<const char*, W>>{{"on", W::kOn}, {"off", W::kOff}, {"auto", W::kAuto}});
  pick("--search", o.search,
       std::vector<std::pair<const char*, S>>{{"fast", S::kFast}, {"exhaustive", S::kExhaustive}, {"off", S::kOff}});
  o.memory_budget_bytes = static_cast<size_t>(a.get_size("--memory-budget", 0, 1, LLONG_MAX));
  using E = SessionOptions::ArenaExtend;
  pick("--arena-extend", o.arena_extend,
       std::vector<std::pair<const char*, E>>{{"next_power_of_two", E::kNextPowerOfTwo},
                                              {"same_as_requested", E::kSameAsRequested}});
  // The --max-* limits: one flag per SessionOptions::limits field, in [1, the constant].
  limits::Limits& lim = o.limits;
  lim.max_model_bytes = a.get_size("--max-model-bytes", lim.max_model_bytes, 1, limits::kMaxModelBytes);
  lim.max_tensor_file_bytes =
      a.get_size("--max-tensor-file-bytes", lim.max_tensor_file_bytes, 1, limits::kMaxTensorFileBytes);
  lim.max_tensor_elements = a.get_size("--max-tensor-elements", lim.max_tensor_elements, 1, limits::kMaxTensorElements);
  lim.max_rank = static_cast<int>(a.get_int("--max-rank", lim.max_rank, 1, limits::kMaxRank));
  lim.max_nodes = a.get_int("--max-nodes", lim.max_nodes, 1, limits::kMaxNodes);
  lim.max_node_io = a.get_int("--max-node-io", lim.max_node_io, 1, limits::kMaxNodeIo);
  lim.max_attribute_elements =
      a.get_int("--max-attribute-elements", lim.max_attribute_elements, 1, limits::kMaxAttributeElements);
  lim.max_nesting = static_cast<int>(a.get_int("--max-nesting", lim.max_nesting, 1, limits::kMaxNesting));
  if (a.has("--verbose")) {
    o.verbose = 1;
    // Until every part of the library reads SessionOptions::verbose, the environment variable
    // carries it (read once, at first use, which is after this).
    const char* e = getenv("INFERA_VERBOSE");
    if (!e || atoi(e) < 1) setenv("INFERA_VERBOSE", "1", 1);
  }
}

std::string count_str(double n) {
  char b[64];
  const double a = std::fabs(n);
  if (a < 1e3)
    snprintf(b, sizeof b, "%.0f", n);
  else if (a < 1e6)
    snprintf(b, sizeof b, "%.1f k", n / 1e3);
  else if (a < 1e9)
    snprintf(b, sizeof b, "%.1f M", n / 1e6);
  else if (a < 1e12)
    snprintf(b, sizeof b, "%.2f G", n / 1e9);
  else
    snprintf(b, sizeof b, "%.2f T", n / 1e12);
  return b;
}

std::string bytes_str(size_t n) {
  char b[64];
  if (n < 1024)
    snprintf(b, sizeof b, "%zu bytes", n);
  else if (n < (size_t{1} << 20))
    snprintf(b, sizeof b, "%.1f KiB", static_cast<double>(n) / 1024.0);
  else
    snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(n) / 1048576.0);
  return b;
}

// A model's names need not be UTF-8; the JSON must be: one quoting rule, the perf DB's.
std::string json_str(const std::string& s) { return json::quote(s); }

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

bool stderr_is_tty() { return isatty(2); }

}  // namespace infera::cli
