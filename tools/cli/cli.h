// The infera command: shared argument parsing, help, shapes, inputs and files for the subcommands.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "infera/infera.h"
#include "infera/multi_device.h"

namespace infera::cli {

constexpr int kExitOk = 0, kExitModelError = 1, kExitUsage = 2;

// ---------------------------------------------------------------- options and help (args.cpp)
// One option of a command. The table is the single source of the parser, the help text and the
// did-you-mean suggestions, so an option cannot exist without being documented.
struct OptSpec {
  std::string name;        // "--batch"
  std::string meta;        // "N", "PATH"; "" for a flag
  std::string help;        // one or more lines (the default and range included)
  std::string alias = "";  // another long name with the same meaning ("--iters"), or ""
  bool repeatable = false;
};

struct CommandSpec {
  std::string name;      // "bench"
  std::string synopsis;  // "MODEL [options]"
  std::string about;     // what the command does, a few lines
  std::vector<OptSpec> options;
  bool reads_env = true;  // prints the environment variables section
};

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> options;  // canonical name -> values ("" for flags)
  std::string usage_error;
  bool help = false;  // --help or -h was given

  bool has(const std::string& k) const { return options.count(k) != 0; }
  std::string get(const std::string& k, const std::string& dflt = "") const;
  std::vector<std::string> all(const std::string& k) const;
  // Parse numeric options; a bad or out-of-range value records a usage error stating the range.
  long long get_int(const std::string& k, long long dflt, long long lo, long long hi);
  double get_double(const std::string& k, double dflt, double lo, double hi);
  // A size: digits with an optional binary suffix K, M, G or T (64M = 64 * 2^20); the range as
  // get_int's.
  long long get_size(const std::string& k, long long dflt, long long lo, long long hi);
  void error(const std::string& msg) {
    if (usage_error.empty()) usage_error = msg;
  }
};

Args parse_args(int argc, char** argv, int first, const CommandSpec& cmd);
std::string help_text(const CommandSpec& cmd);
std::string overview_text();

// Shared option groups, used by several commands' tables.
// --device --precision --graph --tf32 --no-vendor-libs --threads --no-optimize --no-dnnl, and the
// algorithm search: --perf-db --no-perf-db --conv-algo --winograd --search, memory:
// --memory-budget --arena-extend
std::vector<OptSpec> session_opt_specs();
std::vector<OptSpec> shape_opt_specs();  // --shape --shapes
OptSpec verbose_opt_spec();

// ---------------------------------------------------------------- errors (common.cpp)
std::string safe_line(const std::string& msg);              // escaped, capped: one line
int fail(const std::string& msg);                           // "infera: error: msg", returns 1
int usage(const std::string& cmd, const std::string& msg);  // "infera: usage error: ...", returns 2
// The standard start of a command: --help, usage errors. Returns -1 to go on, else the exit code.
int handle_help_and_usage(const CommandSpec& cmd, const Args& a);

// Logical cores (the library's default thread count, and the top of --threads' range).
int logical_cores();
// Session options from --threads/--device/--precision/--no-optimize/--no-dnnl/--verbose.
// devices: where the command takes a device list (--device gpu:all, gpu:0,1: run and bench), the
// list (one entry for a single device; o.device is its first); elsewhere a list is a usage error.
void session_options(Args& a, SessionOptions& o, std::vector<Device>* devices = nullptr);
// --multi latency|throughput (run and bench with a device list).
MultiDeviceOptions::Mode multi_mode(Args& a, size_t devices);

std::string shape_str(const std::vector<int64_t>& d);  // "[1,3,8,8]" (shape_str.cpp)
std::string io_shape_str(const IoInfo& io);            // "[batch,3,8,8]" (shape_str.cpp)
std::string count_str(double n);                       // 25.5 M, 1.2 k, 3.63 G
std::string bytes_str(size_t n);                       // 795 bytes, 12.3 KiB, 97.8 MiB
std::string json_str(const std::string& s);            // a JSON string literal (valid UTF-8)
std::string utc_now_iso8601();
bool stderr_is_tty();

// ---------------------------------------------------------------- shapes and inputs (shapes.cpp, inputs.cpp)
// A --shape request: NAME and its dims; kBatchDim marks the word 'batch' (filled by --batch).
constexpr int64_t kBatchDim = -2;
struct ShapeSpec {
  std::string input;
  std::vector<int64_t> dims;
  std::string text;  // as given, for messages
};
// Reads every --shape and --shapes value; usage errors go to a.
std::vector<ShapeSpec> parse_shape_specs(Args& a);
// --batch as a comma-separated list, each in [1, 1048576] (tune, build); {1} when not given.
std::vector<int64_t> parse_batch_list(Args& a);

// An input tensor read from --input NAME=PATH.
struct FileInput {
  std::string path;
  Tensor tensor;
};
// Reads every --input: unknown names (listing the model's inputs), duplicates and unreadable
// files are errors.
Result<std::map<std::string, FileInput>> load_file_inputs(const Session& s, const std::vector<std::string>& specs);

// The concrete shape of every input. batch: the --batch value, if given. Refuses to guess free
// dims, a batch the model fixes, shapes that contradict the model or the input files.
struct ShapeRequest {
  std::vector<ShapeSpec> specs;
  std::optional<int64_t> batch;
  const std::map<std::string, FileInput>* files = nullptr;
};
struct ResolvedShapes {
  std::map<std::string, std::vector<int64_t>> dims;
  int64_t batch = 1;       // the batch these shapes have
  bool has_batch = false;  // some input has a first dim that is not fixed by the model
};
Result<ResolvedShapes> resolve_shapes(const Session& s, const ShapeRequest& req);
// A hint when dims look like NHWC data for an NCHW input, else "".
std::string nhwc_hint(const IoInfo& io, const std::vector<int64_t>& dims);

// A tensor file read under the session's limits (--max-tensor-file-bytes before reading,
// --max-rank and --max-tensor-elements of what it holds): every tensor file the CLI reads for a
// session goes through this.
Result<Tensor> load_tensor_limited(const std::string& path, const limits::Limits& lim);

// Seeded random tensor for an input (floats uniform in [-1,1), ints in [0,10), bools).
Result<Tensor> random_input(const IoInfo& io, const std::vector<int64_t>& dims, uint32_t seed);
// All inputs: from files if any --input is given (then for every input), else random with seed +
// input index.
Result<std::map<std::string, Tensor>> make_inputs(const Session& s, const ResolvedShapes& shapes,
                                                  const std::map<std::string, FileInput>& files, uint32_t seed);

// ---------------------------------------------------------------- files (files.cpp)
bool is_dir(const std::string& p);
bool is_file(const std::string& p);
std::vector<std::string> list_dir(const std::string& d);  // sorted, without . and ..
std::string base_name(std::string p);
std::string dir_name(const std::string& p);
// mkdir -p; the error names the folder and the errno text.
Status make_dirs(const std::string& dir);
// A file written whole or not at all: a temporary file beside the target (created exclusively,
// never through a symlink) renamed over it by commit().
class AtomicFile {
 public:
  ~AtomicFile();
  Status open(const std::string& path);  // checks that the target's folder is writable now
  const std::string& temp_path() const { return tmp_; }
  Status write(const std::string& bytes);
  Status commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
};
Result<std::string> sha256_file(const std::string& path);  // lowercase hex

// ---------------------------------------------------------------- commands
int cmd_run(int argc, char** argv);
int cmd_check(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_doctor(int argc, char** argv);
int cmd_tune(int argc, char** argv);
int cmd_profile(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_eval(int argc, char** argv);
int cmd_build(int argc, char** argv);
const CommandSpec& run_spec();
const CommandSpec& check_spec();
const CommandSpec& bench_spec();
const CommandSpec& info_spec();
const CommandSpec& doctor_spec();
const CommandSpec& tune_spec();
const CommandSpec& profile_spec();
const CommandSpec& quantize_spec();
const CommandSpec& eval_spec();
const CommandSpec& build_spec();

}  // namespace infera::cli
