#include <unistd.h>

#include <cstdlib>
#include <random>

#include "cli.h"

namespace infera::cli {

std::string Args::get(const std::string& k, const std::string& dflt) const {
  auto it = options.find(k);
  return it == options.end() ? dflt : it->second;
}

std::vector<std::string> Args::all(const std::string& k) const {
  std::vector<std::string> r;
  auto [b, e] = options.equal_range(k);
  for (auto it = b; it != e; ++it) r.push_back(it->second);
  return r;
}

long long Args::get_int(const std::string& k, long long dflt, long long lo, long long hi) {
  if (!has(k)) return dflt;
  std::string v = get(k);
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || x < lo || x > hi) {
    if (usage_error.empty())
      usage_error =
          k + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'";
    return dflt;
  }
  return x;
}

double Args::get_double(const std::string& k, double dflt, double lo, double hi) {
  if (!has(k)) return dflt;
  std::string v = get(k);
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !(x >= lo && x <= hi)) {
    if (usage_error.empty()) usage_error = k + " expects a number, got '" + v + "'";
    return dflt;
  }
  return x;
}

Args parse_args(int argc, char** argv, int first, const std::vector<std::string>& with_value,
                const std::vector<std::string>& flags) {
  Args a;
  auto in = [](const std::vector<std::string>& l, const std::string& s) {
    for (auto& x : l)
      if (x == s) return true;
    return false;
  };
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.size() > 2 && s[0] == '-' && s[1] == '-') {
      std::string k = s, v;
      size_t eq = s.find('=');
      bool inline_value = eq != std::string::npos;
      if (inline_value) {
        k = s.substr(0, eq);
        v = s.substr(eq + 1);
      }
      if (in(flags, k)) {
        a.options.emplace(k, "");
      } else if (in(with_value, k)) {
        if (!inline_value) {
          if (i + 1 >= argc) {
            if (a.usage_error.empty()) a.usage_error = "option " + k + " needs a value";
            break;
          }
          v = argv[++i];
        }
        a.options.emplace(k, v);
      } else if (a.usage_error.empty()) {
        a.usage_error = "unknown option " + k;
      }
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

int fail(const std::string& msg) {
  std::string m = msg;
  for (char& c : m)
    if (c == '\n') c = ' ';
  fprintf(stderr, "infera: error: %s\n", m.c_str());
  return kExitModelError;
}

int usage(const std::string& msg) {
  fprintf(stderr, "infera: usage error: %s (see 'infera --help')\n", msg.c_str());
  return kExitUsage;
}

bool session_options(Args& a, SessionOptions& o) {
  o.num_threads = static_cast<int>(a.get_int("--threads", 0, 0, 1024));
  auto dev = Device::parse(a.get("--device", "cpu"));
  auto prec = parse_precision(a.get("--precision", "fp32"));
  if (!dev.is_ok() && a.usage_error.empty()) a.usage_error = "--device: " + dev.message();
  if (!prec.is_ok() && a.usage_error.empty()) a.usage_error = "--precision: " + prec.message();
  if (dev.is_ok()) o.device = dev.value();
  if (prec.is_ok()) o.precision = prec.value();
  o.optimize = !a.has("--no-optimize");
  if (a.has("--no-dnnl")) o.backends = {"ref"};
  return a.usage_error.empty();
}

std::string shape_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

std::string io_shape_str(const IoInfo& io) {
  std::string s = "[";
  for (size_t i = 0; i < io.dims.size(); ++i) {
    if (i) s += ",";
    s += io.dims[i].value >= 0 ? std::to_string(io.dims[i].value) : io.dims[i].symbol.empty() ? "?" : io.dims[i].symbol;
  }
  return s + "]";
}

bool stderr_is_tty() { return isatty(2); }

Result<std::map<std::string, std::vector<int64_t>>> shapes_for_batch(const Session& s, int64_t batch) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const IoInfo& io : s.inputs()) {
    std::vector<int64_t> d;
    for (size_t i = 0; i < io.dims.size(); ++i) {
      if (io.dims[i].value >= 0) {
        d.push_back(io.dims[i].value);
      } else if (!io.dims[i].symbol.empty() || i == 0) {
        d.push_back(batch);
      } else {
        return Status::error("input '" + io.name + "' dim " + std::to_string(i) +
                             " is unknown: give the input with --input");
      }
    }
    shapes[io.name] = d;
  }
  return shapes;
}

Result<Tensor> random_input(const IoInfo& io, const std::vector<int64_t>& dims, uint32_t seed) {
  auto r = Tensor::make(io.dtype, dims);
  if (!r.is_ok()) return Status::error("input '" + io.name + "': " + r.message());
  Tensor t = r.take();
  std::mt19937 rng(seed);
  const int64_t n = t.numel();
  switch (io.dtype) {
    case DataType::kFloat32: {
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = u(rng);
      break;
    }
    case DataType::kFloat64: {
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      for (int64_t i = 0; i < n; ++i) t.data_as<double>()[i] = u(rng);
      break;
    }
    case DataType::kInt64:
      for (int64_t i = 0; i < n; ++i) t.data_as<int64_t>()[i] = rng() % 10;
      break;
    case DataType::kInt32:
      for (int64_t i = 0; i < n; ++i) t.data_as<int32_t>()[i] = rng() % 10;
      break;
    case DataType::kBool:
    case DataType::kUInt8:
    case DataType::kInt8:
      for (int64_t i = 0; i < n; ++i) t.data_as<uint8_t>()[i] = io.dtype == DataType::kBool ? rng() % 2 : rng() % 10;
      break;
    default: return Status::error("input '" + io.name + "': cannot make random data of type " + dtype_name(io.dtype));
  }
  return t;
}

}  // namespace infera::cli

using namespace infera::cli;

static const char* kHelp =
    "infera — run ONNX CNNs fast\n"
    "\n"
    "usage: infera COMMAND [options]\n"
    "  run MODEL [--input NAME=PATH]... [--output-dir DIR] [--batch N] [--seed N]\n"
    "            [--device cpu] [--precision fp32] [--threads N] [--quiet]\n"
    "  check DIR [--rtol 1e-3] [--atol 1e-5] [--skip-file FILE] [--device cpu] [--precision fp32]\n"
    "  bench MODEL [--batch 1,16,...] [--warmup N] [--iters N | --duration S] [--threads N]\n"
    "            [--json FILE] [--quiet]\n"
    "  info MODEL [--passes]\n"
    "  doctor\n"
    "common: --no-optimize (skip graph passes), --no-dnnl (reference kernels only)\n"
    "exit codes: 0 ok, 1 model or input error, 2 usage error\n";

int main(int argc, char** argv) {
  if (argc < 2) return usage("missing command");
  std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    fputs(kHelp, stdout);
    return kExitOk;
  }
  if (cmd == "--version") {
    printf("infera %s\n", infera::version());
    return kExitOk;
  }
  if (cmd == "run") return cmd_run(argc, argv);
  if (cmd == "check") return cmd_check(argc, argv);
  if (cmd == "bench") return cmd_bench(argc, argv);
  if (cmd == "info") return cmd_info(argc, argv);
  if (cmd == "doctor") return cmd_doctor(argc, argv);
  return usage("unknown command '" + cmd + "'");
}
