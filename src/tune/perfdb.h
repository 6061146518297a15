// The performance database: per (device, libraries, op, shape, dtype, formats, epilogue) the
// algorithm that won when the candidates were timed, its time and every candidate's time. One
// JSON file (docs/perfdb.md), shared by every process: writes take an exclusive flock on
// FILE.lock, read the file again, merge, write a temporary file and rename it over FILE, so two
// writers lose nothing and a reader never sees half a file. The file is untrusted when read:
// a bad one gives one warning line and an empty database, never a crash.
//
// A PerfDb is one plan build's handle (its search settings and counters) over a store shared by
// every session of the process that names the same file.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "infera/infera.h"

namespace infera {

struct PerfKey {
  std::string device;       // "cpu: <model> [avx512_core]", "gpu: NVIDIA H200 arch 90 x132 sm"
  std::string libs;         // "oneDNN 2.7.3", "cuda rt 13000 drv 13000 cuDNN 91900 cuBLASLt 130100"
  std::string op;           // "conv", "gemm"
  std::string shape;        // shapes, strides, pads, dilations, groups
  std::string dtype;        // "f32", "f16", "tf32"
  std::string formats;      // "nChw16c>nChw16c"
  std::string epilogue;     // "bias+sum+relu", "-"
  std::string str() const;  // one map key (fields are checked to hold no control characters)
};

struct PerfCandidate {
  std::string name;
  double ms = 0;  // best of the timed reps; < 0: the candidate failed
};

struct PerfEntry {
  PerfKey key;
  std::string winner;
  double ms = 0;
  std::string search = "fast";  // the search that made it: "fast" or "exhaustive"
  std::vector<PerfCandidate> candidates;
};

// Text <-> entries. parse() takes untrusted text: limits on size and counts, the format name and
// version checked, every field validated; the error says what is wrong.
constexpr int kPerfDbVersion = 1;
constexpr size_t kPerfDbMaxEntries = 200000;
constexpr size_t kPerfDbMaxCandidates = 512;
Result<std::vector<PerfEntry>> perf_db_parse(const std::string& text);
std::string perf_db_serialize(const std::vector<PerfEntry>& entries);
// $XDG_CACHE_HOME/infera/perfdb.json, else $HOME/.cache/infera/perfdb.json ("" if neither is set).
std::string perf_db_default_path();

// The search settings of one build (from SessionOptions).
struct TuneSettings {
  SessionOptions::ConvAlgo conv_algo = SessionOptions::ConvAlgo::kAuto;
  SessionOptions::WinogradMode winograd = SessionOptions::WinogradMode::kAuto;
  SessionOptions::SearchMode search = SessionOptions::SearchMode::kFast;
  int verbose = 0;
};
const char* conv_algo_name(SessionOptions::ConvAlgo a);  // "auto", "implicit_gemm", ...
const char* search_name(SessionOptions::SearchMode m);   // "fast", "exhaustive", "off"

class PerfStore;  // perfdb.cpp: the entries of one file, shared within the process
// Drops the process's stores: the next open reads its file again, as a new process would (tests).
void perf_db_forget_stores();
// An in-memory store holding `entries` (a saved plan's choices), for the life of the process:
// returns the path ("embedded:<hash of the entries>") that PerfDb::open serves it under. The
// same entries give the same path and store; nothing is ever written to a file.
std::string perf_db_embed(const std::vector<PerfEntry>& entries);

class PerfDb {
 public:
  // path: a file ("" = the default path), or "none": in memory only, for this handle alone. The
  // file is read at the first open of that path in the process (then kept: every build of the
  // process sees the same choices); a bad file is a warning (printed once to stderr) and an
  // empty database.
  static std::unique_ptr<PerfDb> open(const std::string& path, const TuneSettings& t);
  ~PerfDb();

  const TuneSettings& settings() const { return t_; }
  // The entry for key when this search may use it (an exhaustive search does not take entries a
  // fast search made). count_found(): the caller used it (PlanReport::perf_db_found).
  std::optional<PerfEntry> find(const PerfKey& key);
  void count_found() { ++found_; }
  // A choice just timed (counted as timed); kept in memory now, written by flush().
  void record(const PerfEntry& e);
  // Writes the entries recorded through any handle of this store that are not in the file yet.
  Status flush();
  // From now on, every entry this handle serves (find) or records is kept, by key: used() is
  // what a build's plan depends on (saved plans embed it).
  void keep_used();
  std::vector<PerfEntry> used() const;

  size_t found() const { return found_; }
  size_t timed() const { return timed_; }
  const std::string& path() const;  // "" when in memory only
  const std::string& warning() const;
  size_t size() const;  // entries in the store

 private:
  PerfDb(std::shared_ptr<PerfStore> s, const TuneSettings& t) : store_(std::move(s)), t_(t) {}
  std::shared_ptr<PerfStore> store_;
  TuneSettings t_;
  std::atomic<size_t> found_{0}, timed_{0};
  mutable std::mutex used_mu_;
  std::unique_ptr<std::map<std::string, PerfEntry>> used_;  // null: not kept
  void note_used(const std::string& key, const PerfEntry& e);
};

}  // namespace infera
