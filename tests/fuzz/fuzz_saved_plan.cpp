// libFuzzer target: the bytes are a saved plan (src/runtime/saved_plan.h). The checksum would
// stop almost every mutation at its first check, so the target decodes without it and then, with
// the checksum made right, loads the plan through Session::load_from_memory (header checks, graph
// rebuilt and inferred, saved shapes prepared). Any crash, leak, UB report or timeout is a bug:
// a bad plan must give an error Status with a message. The committed seed was made on the
// machine that fuzzed it (tests/fuzz/seeds/saved_plan: `infera build` of a small conv model); on
// another machine its header is refused as foreign, and only the decoding is fuzzed.
// Build and run: bash tests/fuzz/build.sh, then bash tests/fuzz/run.sh saved_plan 600.
#include <cstdint>
#include <cstring>
#include <string>

#include "infera/infera.h"
#include "runtime/saved_plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  infera::limits::Limits lim;
  lim.max_tensor_elements = int64_t(1) << 24;  // keep each input's allocations small
  auto decoded = infera::decode_saved_plan(bytes, lim, false);
  if (!decoded.is_ok() && decoded.message().empty()) __builtin_trap();
  if (bytes.size() < infera::kSavedPlanPrefixBytes || !infera::is_saved_plan(bytes)) return 0;
  const uint64_t body = bytes.size() - infera::kSavedPlanPrefixBytes;
  std::memcpy(&bytes[16], &body, 8);
  const uint64_t sum = infera::saved_plan_checksum(bytes.data() + infera::kSavedPlanPrefixBytes, body);
  std::memcpy(&bytes[24], &sum, 8);
  infera::SessionOptions o;
  o.num_threads = 1;
  o.limits = lim;
  auto s = infera::Session::load_from_memory(bytes, "", o);
  if (!s.is_ok() && s.message().empty()) __builtin_trap();
  return 0;
}
