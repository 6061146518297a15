// One layer's algorithm choice, shared by the CPU (oneDNN direct vs Winograd) and the GPU (our
// kernels, cuDNN engines, cuBLASLt algorithms): which candidates the settings allow, the
// database's answer when it has one, else the times of the candidates, kept in the database.
// The backends only make and time their candidates.
#pragma once

#include <cfloat>
#include <optional>
#include <string>
#include <vector>

#include "tune/perfdb.h"

namespace infera::tune {

// The algorithm family a candidate's name says: "...winograd..." kWinograd, "...implicit_gemm..."
// kImplicitGemm, "...direct..." kDirect, "cudnn.../cublaslt..." kVendor, other "...gemm..." kGemm,
// else kAuto (unknown).
SessionOptions::ConvAlgo algo_of(const std::string& candidate);

// The candidates a build may use (indices into names, in their order). filtered: a forced
// setting removed some, so the database is neither read nor written (its entries are the
// unforced search's). note: why a forced setting was not followed (MIOpen's fallback: a layer
// the forced algorithm cannot do is searched as with auto), "" when it was or there is none.
struct Allowed {
  std::vector<size_t> index;
  bool filtered = false;
  std::string note;
};
Allowed allowed_candidates(const std::vector<std::string>& names, const TuneSettings& t);

class Choice {
 public:
  // db may be null (no search: the backend's heuristic decides).
  Choice(PerfDb* db, PerfKey key, const Allowed& allowed);
  bool searching() const;  // a db, search not off, the database usable for these settings
  // The database's winner when it is among names: its index; nothing needs timing then.
  std::optional<size_t> known(const std::vector<std::string>& names);
  // The database's winner, whatever it is (nothing counted): for a backend that makes some
  // candidates only when needed (cuDNN engines are compiled at run time).
  std::optional<std::string> winner() const;
  // A timed candidate; ms = DBL_MAX (or < 0) when it failed.
  void note(const std::string& name, double ms);
  // Records what was timed (when searching and something ran).
  void store();
  int reps() const;         // timed reps per candidate: fast 3, exhaustive 10
  bool exhaustive() const;  // every candidate to the end (no early cutoff)

  const std::string& best() const { return best_; }
  double best_ms() const { return best_ms_; }
  bool from_db() const { return from_db_; }
  // For the step's implementation name: "0.1234 ms of: a 0.1234 ms, b 0.2 ms", "perf db 0.1234 ms".
  std::string summary() const;

 private:
  PerfDb* db_;
  PerfKey key_;
  bool filtered_;
  bool from_db_ = false;
  std::string best_;
  double best_ms_ = DBL_MAX;
  std::vector<PerfCandidate> tried_;
};

}  // namespace infera::tune
