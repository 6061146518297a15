// The infera command: shared argument parsing and helpers for the subcommands.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "infera/infera.h"

namespace infera::cli {

constexpr int kExitOk = 0, kExitModelError = 1, kExitUsage = 2;

// Thrown nowhere: usage problems are reported through Args::error and an exit code.
struct Args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;  // "--name" -> value ("" for flags)
  std::string usage_error;

  bool has(const std::string& k) const { return options.count(k) != 0; }
  std::string get(const std::string& k, const std::string& dflt = "") const;
  std::vector<std::string> all(const std::string& k) const;
  // Parses an integer/float option; on a bad value records a usage error.
  long long get_int(const std::string& k, long long dflt, long long lo, long long hi);
  double get_double(const std::string& k, double dflt, double lo, double hi);
};

// flags: options that take no value. Unknown options are usage errors.
Args parse_args(int argc, char** argv, int first, const std::vector<std::string>& with_value,
                const std::vector<std::string>& flags);

int fail(const std::string& msg);   // prints "infera: error: msg" and returns 1
int usage(const std::string& msg);  // prints the usage error and returns 2

// Common session options from --threads/--device/--precision/--no-optimize/--no-dnnl.
bool session_options(Args& a, SessionOptions& o);
// Concrete input shapes for a batch size (symbolic dims -> batch). Error if a dim is unknown.
Result<std::map<std::string, std::vector<int64_t>>> shapes_for_batch(const Session& s, int64_t batch);
// Seeded random tensor for an input (floats uniform in [-1,1), ints in [0,10), bools).
Result<Tensor> random_input(const IoInfo& io, const std::vector<int64_t>& dims, uint32_t seed);
std::string shape_str(const std::vector<int64_t>& d);
std::string io_shape_str(const IoInfo& io);
bool stderr_is_tty();

int cmd_run(int argc, char** argv);
int cmd_check(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_doctor(int argc, char** argv);

}  // namespace infera::cli
