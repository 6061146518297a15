// Saved plans (docs/saved_plans.md): Session::save_plan writes the optimized graph, the algorithm
// choices its plans used, the input shapes to prepare and the weights those plans converted into
// their backends' formats where converting costs more than reading (Winograd transforms), under a header naming the
// device, its architecture and the library versions; Session::load recognizes the file by its magic bytes and rebuilds
// the session without passes or timing, or refuses a plan made elsewhere.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/packed_weights.h"
#include "graph/graph.h"
#include "infera/infera.h"
#include "tune/perfdb.h"

namespace infera {

class SessionImpl;

inline constexpr char kSavedPlanMagic[8] = {'\x89', 'I', 'P', 'L', 'A', 'N', '\r', '\n'};
inline constexpr uint32_t kSavedPlanFormat = 2;      // 2: the PACK section
inline constexpr size_t kSavedPlanPrefixBytes = 32;  // magic, format, reserved, body bytes, checksum

bool is_saved_plan(const std::string& bytes);           // starts with the magic
bool is_saved_plan_file(const std::string& path);       // its first 8 bytes are the magic
uint64_t saved_plan_checksum(const char* p, size_t n);  // 4-lane FNV-1a over 64-bit words

// What the header says (strings as this machine's keys name them; "" where it does not apply).
struct SavedPlanHeader {
  std::string infera_version;
  Device device;
  std::string cpu_device, cpu_isa, cpu_libs;   // "cpu: <model>", "avx512_core", "oneDNN 2.7.3"
  std::string gpu_device, gpu_arch, gpu_libs;  // GPU plans only
  Precision precision = Precision::kFp32;
  bool allow_tf32 = false, vendor_libraries = true, optimize = true;
  SessionOptions::ConvAlgo conv_algo = SessionOptions::ConvAlgo::kAuto;
  SessionOptions::WinogradMode winograd = SessionOptions::WinogradMode::kAuto;
  SessionOptions::SearchMode search = SessionOptions::SearchMode::kFast;
  std::vector<std::string> backends;  // resolved, in priority order
  std::string model;                  // the file it was built from (for info)
};

struct SavedPlan {
  SavedPlanHeader header;
  Graph graph;
  ModelSummary summary;  // as imported and optimized (node counts, histograms, passes)
  std::vector<PerfEntry> choices;
  std::vector<std::map<std::string, std::vector<int64_t>>> shapes;
  std::vector<PackedWeights::Entry> packed;  // weights in the backends' formats, as the saved shapes use them
};

std::string encode_saved_plan(const SavedPlan& sp);
// Gives every node the attributes that describe its typed op (fused epilogues set by passes) and
// refuses a node whose typed op its attributes would not make again (save_plan; tests).
Status attributes_for_ops(Graph& g);
// Decodes untrusted bytes. verify_checksum false only for the fuzzer (which cannot forge it).
// check_header, when given, runs right after the header is read: its error stops the decoding
// (a foreign plan is refused before its weights are copied).
using HeaderCheck = std::function<Status(const SavedPlanHeader&)>;
Result<SavedPlan> decode_saved_plan(const std::string& bytes, const limits::Limits& lim, bool verify_checksum = true,
                                    const HeaderCheck& check_header = nullptr);

// Makes the public Session around an impl (Session's constructor is private to session.cpp).
using SessionFactory = std::function<std::unique_ptr<Session>(std::unique_ptr<SessionImpl>)>;
// Loads a saved plan: refusal if made elsewhere, then the graph without passes, the embedded
// choices as the perf db, and every saved shape prepared. source names the file in messages.
Result<std::unique_ptr<Session>> load_saved_plan(const std::string& bytes, const std::string& source,
                                                 const SessionOptions& opts, const SessionFactory& make);
Result<std::unique_ptr<Session>> load_saved_plan_file(const std::string& path, const SessionOptions& opts,
                                                      const SessionFactory& make);

}  // namespace infera
