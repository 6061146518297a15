// Argument parsing, per-command help and did-you-mean, all from the commands' option tables.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "cli.h"

namespace infera::cli {

std::string Args::get(const std::string& k, const std::string& dflt) const {
  auto it = options.find(k);
  return it == options.end() || it->second.empty() ? dflt : it->second.back();
}

std::vector<std::string> Args::all(const std::string& k) const {
  auto it = options.find(k);
  return it == options.end() ? std::vector<std::string>{} : it->second;
}

long long Args::get_int(const std::string& k, long long dflt, long long lo, long long hi) {
  if (!has(k)) return dflt;
  std::string v = get(k);
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno == ERANGE || x < lo || x > hi) {
    error(k + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'");
    return dflt;
  }
  return x;
}

double Args::get_double(const std::string& k, double dflt, double lo, double hi) {
  if (!has(k)) return dflt;
  std::string v = get(k);
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !std::isfinite(x) || !(x >= lo && x <= hi)) {
    char range[96];
    snprintf(range, sizeof range, "[%g, %g]", lo, hi);
    error(k + " expects a number in " + range + ", got '" + v + "'");
    return dflt;
  }
  return x;
}

long long Args::get_size(const std::string& k, long long dflt, long long lo, long long hi) {
  if (!has(k)) return dflt;
  const std::string v = get(k);
  size_t i = 0;
  long long x = 0;
  bool ok = !v.empty() && std::isdigit(static_cast<unsigned char>(v[0]));
  for (; ok && i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])); ++i) {
    if (x > (hi - (v[i] - '0')) / 10) ok = false;  // past hi (and far from overflowing)
    x = x * 10 + (v[i] - '0');
  }
  if (ok && i < v.size()) {
    const std::string units = "KMGT";
    const size_t u = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(v[i]))));
    ok = u != std::string::npos && i + 1 == v.size();
    for (size_t n = 0; ok && n <= u; ++n) {
      if (x > hi / 1024) ok = false;
      x *= 1024;
    }
  }
  if (!ok || x < lo || x > hi) {
    error(k + " expects a size in [" + std::to_string(lo) + ", " + std::to_string(hi) +
          "] (digits, optionally followed by K, M, G or T for 2^10, 2^20, 2^30, 2^40), got '" + v + "'");
    return dflt;
  }
  return x;
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string strip_dashes(const std::string& s) {
  size_t i = s.find_first_not_of('-');
  return i == std::string::npos ? "" : s.substr(i);
}

// Options of trtexec and benchmark_app that mean something else here (or are spelled
// differently): a hint, never an alias, so that no spelling has two meanings.
const char* foreign_hint(const std::string& opt) {
  static const std::pair<const char*, const char*> table[] = {
      {"--warmUp", "--warmup N (it counts runs; trtexec's --warmUp is milliseconds)"},
      {"--onnx", "MODEL as the first argument"},
      {"--loadInputs", "--input NAME=PATH"},
      {"--exportTimes", "--json FILE"},
      {"--exportOutput", "infera run --output-dir DIR"},
      {"--dumpProfile", "--profile"},
      {"--exportProfile", "--profile with --json FILE"},
      {"--avgRuns", "--iterations N"},
      {"-niter", "--iterations N"},
      {"-pc", "--profile"},
      {"-nthreads", "--threads N"},
      {"-shape", "--shape NAME=DIMS"},
      {"-json_stats", "--json FILE"},
      {"-report_type", "--json FILE"},
      {"-m", "MODEL as the first argument"},
      {"-d", "--device"},
  };
  for (auto& [k, v] : table)
    if (opt == k) return v;
  return nullptr;
}

}  // namespace

static std::string suggestion(const std::string& bad, const CommandSpec& cmd) {
  if (const char* h = foreign_hint(bad)) return h;
  const std::string b = strip_dashes(bad);
  if (b.empty()) return "";
  std::vector<std::string> names;
  for (const OptSpec& o : cmd.options) {
    names.push_back(o.name);
    if (!o.alias.empty()) names.push_back(o.alias);
  }
  names.push_back("--help");
  // "-o": the one option whose name starts with that letter (-o -> --output-dir).
  if (bad.size() >= 2 && bad[0] == '-' && bad[1] != '-' && b.size() == 1) {
    std::string only;
    int n = 0;
    for (const OptSpec& o : cmd.options)
      if (strip_dashes(o.name)[0] == b[0]) {
        only = o.name;
        ++n;
      }
    return n == 1 ? only : "";
  }
  std::string best;
  size_t best_d = std::string::npos;
  for (const std::string& n : names) {
    std::string s = strip_dashes(n);
    size_t d = edit_distance(b, s);
    // A prefix of at least 3 letters counts as near ("--out" -> --output-dir).
    if (s.rfind(b, 0) == 0 && b.size() >= 3) d = std::min<size_t>(d, 1);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best_d <= std::max<size_t>(2, b.size() / 4) ? best : "";
}

// "run, bench": the commands that have option k, for a message that it does nothing here.
static std::string other_commands_with(const std::string& k, const CommandSpec& cmd) {
  std::string r;
  for (const CommandSpec* c : {&run_spec(), &bench_spec(), &info_spec(), &check_spec(), &doctor_spec(), &tune_spec(),
                               &profile_spec(), &quantize_spec(), &eval_spec()}) {
    if (c->name == cmd.name) continue;
    for (const OptSpec& o : c->options)
      if (o.name == k || o.alias == k) {
        r += (r.empty() ? "" : ", ") + c->name;
        break;
      }
  }
  return r;
}

Args parse_args(int argc, char** argv, int first, const CommandSpec& cmd) {
  Args a;
  auto find = [&](const std::string& k) -> const OptSpec* {
    for (const OptSpec& o : cmd.options)
      if (o.name == k || (!o.alias.empty() && o.alias == k)) return &o;
    return nullptr;
  };
  bool only_positional = false;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (only_positional || s.size() < 2 || s[0] != '-') {
      a.positional.push_back(s);
      continue;
    }
    if (s == "--") {
      only_positional = true;
      continue;
    }
    if (s == "--help" || s == "-h") {
      a.help = true;
      continue;
    }
    std::string k = s, v;
    size_t eq = s.find('=');
    const bool inline_value = s.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      k = s.substr(0, eq);
      v = s.substr(eq + 1);
    }
    const OptSpec* o = find(k);
    if (!o) {
      std::string hint = suggestion(k, cmd);
      std::string elsewhere = hint.empty() ? other_commands_with(k, cmd) : "";
      a.error("unknown option '" + k + "'" + (hint.empty() ? "" : "; did you mean " + hint + "?") +
              (elsewhere.empty() ? "" : " for " + cmd.name + " (an option of " + elsewhere + ")"));
      continue;
    }
    if (o->meta.empty()) {
      if (inline_value) a.error(o->name + " takes no value");
    } else if (!inline_value) {
      if (i + 1 >= argc) {
        a.error("option " + o->name + " needs a value (" + o->meta + ")");
        break;
      }
      v = argv[++i];
    }
    auto& vals = a.options[o->name];
    if (!vals.empty() && !o->repeatable) a.error(o->name + " given twice");
    vals.push_back(v);
  }
  return a;
}

std::string help_text(const CommandSpec& cmd) {
  std::string s = "usage: infera " + cmd.name + " " + cmd.synopsis + "\n\n" + cmd.about + "\n\noptions:\n";
  auto add = [&](const std::string& left, const std::string& help) {
    std::string l = "  " + left;
    size_t start = 0;
    bool first = true;
    while (start <= help.size()) {
      size_t nl = help.find('\n', start);
      std::string line = help.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      std::string head = first ? l : "";
      if (first && head.size() > 25) {
        s += head + "\n";
        head = "";
      }
      head.resize(26, ' ');
      s += head + line + "\n";
      first = false;
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  };
  for (const OptSpec& o : cmd.options) {
    std::string left = o.name + (o.meta.empty() ? "" : " " + o.meta);
    std::string help = o.help;
    if (!o.alias.empty()) help += "\n(also " + o.alias + ")";
    add(left, help);
  }
  add("--help, -h", "this help");
  if (cmd.reads_env) {
    // Commands with --threads run the model; info only plans it.
    bool runs = false;
    for (const OptSpec& o : cmd.options) runs = runs || o.name == "--threads";
    s += "\nenvironment:\n  INFERA_VERBOSE=1|2      as --verbose (2: also every oneDNN kernel made)\n";
    if (runs) s += "  INFERA_PROFILE=1        print the time per op kind after every run to stderr\n";
    s += "  INFERA_DNNL_WINOGRAD=0  do not force oneDNN's Winograd algorithm for 3x3 stride-1 Conv\n";
    s += "  INFERA_SMALLSPATIAL_CONV=0|all\n"
         "                          0: oneDNN's convs where infera's small-output loop would run (N*H*W <= 64,\n"
         "                          large weights); all: the loop for every conv it can run\n";
    if (runs)
      s += "  INFERA_GPU_PDL=N        GPU (sm_90): largest grid, in blocks per multiprocessor, of an int8-path\n"
           "                          kernel launched as a programmatic dependent (default 2; 0: off)\n";
    if (runs)
      s += "  GOMP_SPINCOUNT, OMP_WAIT_POLICY\n"
           "                          read by libgomp at process start: how long idle threads spin\n"
           "  (OMP_NUM_THREADS is not used: --threads decides)\n";
  }
  s += "\nexit codes: 0 ok, 1 model, input or runtime error, 2 usage error\n";
  return s;
}

std::string overview_text() {
  return "infera " + std::string(version()) +
         " - run ONNX CNNs fast\n"
         "\n"
         "usage: infera COMMAND [options]      infera COMMAND --help: that command's options\n"
         "\n"
         "commands:\n"
         "  (MODEL: an ONNX file or a saved plan from `infera build`)\n"
         "  run MODEL     one inference; inputs from .npy/.pb files or seeded random data; outputs to .npy\n"
         "  bench MODEL   latency and throughput per batch size, optional JSON report\n"
         "  info MODEL    inputs, outputs, op histogram, parameters, FLOPs, memory and plan for a shape\n"
         "  check DIR     run ONNX backend-test folders and compare with their expected outputs\n"
         "  profile MODEL time per step and per op kind: algorithm, FLOP/s and bandwidth against peak\n"
         "  tune MODEL    time the algorithm choices ahead of time and fill the performance database\n"
         "  build MODEL -o FILE  write a saved plan (.iplan) that every command loads without passes or search\n"
         "  quantize MODEL  int8 post-training quantization: calibrate, write a QDQ model\n"
         "  eval MODEL    top-1/top-5 accuracy on labelled images (.npy), any precision\n"
         "  doctor        this machine: CPU, ISA, cores, memory, backends, GPUs, checks with verdicts\n"
         "\n"
         "  infera --version    the version\n"
         "\n"
         "shapes: a free first dim is the batch (--batch N); any other free dim needs --shape NAME=DIMS.\n"
         "exit codes: 0 ok, 1 model, input or runtime error, 2 usage error; every error is one line on stderr\n";
}

std::vector<OptSpec> session_opt_specs() {
  const std::string cores = std::to_string(logical_cores());
  return {
      {"--device", "DEV",
       "cpu | gpu | gpu:N (default cpu; `infera doctor` lists the GPUs); run and bench\n"
       "also take a list: gpu:all, gpu:0,1, gpu:0,0 (two engines on one GPU), cpu,cpu"},
      {"--precision", "P",
       "fp32 | fp16 (fp16: GPU only; default fp32); int8 / mixed: run the file `infera\n"
       "quantize` writes (it needs calibration data), whose quantized layers run in int8"},
      {"--graph", "MODE", "GPU graphs: on | off | auto (default auto = on for static plans)"},
      {"--tf32", "", "GPU: allow TF32 matrix math for fp32 (default off: fp32 is fp32)"},
      {"--no-vendor-libs", "", "GPU: infera's own kernels only, no cuDNN / cuBLASLt candidates"},
      {"--threads", "N", "threads per run, 1.." + cores + " (default: all " + cores + " logical cores)"},
      {"--no-optimize", "", "skip the graph passes (folding, fusion)"},
      {"--no-dnnl", "", "reference kernels only (no oneDNN)"},
      {"--perf-db", "PATH",
       "the performance database of algorithm choices (default\n$XDG_CACHE_HOME/infera/perfdb.json, else "
       "~/.cache/infera/perfdb.json)"},
      {"--no-perf-db", "", "time the algorithm choices but neither read nor write the database"},
      {"--conv-algo", "A",
       "auto | implicit_gemm | winograd | direct | gemm | vendor: force one conv\nalgorithm where it applies "
       "(elsewhere: searched; --verbose says why)\n(default auto; the CPU has direct and winograd)"},
      {"--winograd", "MODE",
       "on | off | auto: Winograd convs always where they apply, never, or\nsearched (default auto)"},
      {"--search", "MODE",
       "fast | exhaustive | off: time the short list of candidates, every\ncandidate with more reps, or none "
       "(built-in rules, no database) (default fast)"},
      {"--memory-budget", "BYTES",
       "the most one run may hold on the device (weights, arena, scratch;\nK/M/G suffixes): a larger batch runs in "
       "chunks that fit (default: none on\nthe CPU, the GPU's memory on a GPU)"},
      {"--arena-extend", "MODE",
       "next_power_of_two | same_as_requested: arena blocks rounded up to a\npower of two (reused across batch "
       "sizes) or exact (default same_as_requested)"},
      // Limits on what is read from the model and tensor files (docs/limits.md): each may be
      // lowered, none raised past the default.
      {"--max-model-bytes", "SIZE",
       "largest model file (K/M/G suffixes; default and most " + std::to_string(limits::kMaxModelBytes) + ")"},
      {"--max-nodes", "N",
       "most nodes, initializers, inputs, outputs or value_info entries of\na graph (default and most " +
           std::to_string(limits::kMaxNodes) + ")"},
      {"--max-rank", "N", "most dimensions of a tensor (default and most " + std::to_string(limits::kMaxRank) + ")"},
      {"--max-tensor-elements", "N", "most elements of one tensor (K/M/G/T suffixes; default and most 2^40)"},
      {"--max-node-io", "N",
       "most inputs or outputs of one node (default and most " + std::to_string(limits::kMaxNodeIo) + ")"},
      {"--max-attribute-elements", "N",
       "most elements of a list attribute (default and most " + std::to_string(limits::kMaxAttributeElements) + ")"},
      {"--max-nesting", "N",
       "deepest protobuf message nesting (default and most " + std::to_string(limits::kMaxNesting) + ")"},
      {"--max-tensor-file-bytes", "SIZE", "largest --input tensor file (K/M/G suffixes; default and most 16G)"},
  };
}

std::vector<OptSpec> shape_opt_specs() {
  return {
      {"--shape", "NAME=DIMS",
       "the shape of input NAME, dims joined by x: input=1x3x224x224; the word\n"
       "'batch' stands for the --batch value (input=batchx3x224x224). Repeatable;\n"
       "needed for every free dim other than the first (default: none)",
       "", true},
      {"--shapes", "LIST", "trtexec style, NAME:DIMS[,NAME:DIMS...] (same meaning as --shape)", "", true},
  };
}

OptSpec verbose_opt_spec() {
  return {"--verbose", "", "print each plan's steps (backend, implementation) and every backend\ndecline to stderr"};
}

}  // namespace infera::cli
