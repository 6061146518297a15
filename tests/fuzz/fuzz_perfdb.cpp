// libFuzzer target: the bytes are a perf db file (src/tune/perfdb.h). perf_db_parse must refuse
// (with a message) or accept without crashing, in bounded time and memory; what it accepts must
// serialize and parse back to the same entries. Build and run: bash tests/fuzz/build.sh, then
// bash tests/fuzz/run.sh perfdb 600.
#include <cstdint>
#include <string>

#include "tune/perfdb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = infera::perf_db_parse(text);
  if (!r.is_ok()) {
    if (r.status().message().empty()) __builtin_trap();
    return 0;
  }
  if (r.value().size() > infera::kPerfDbMaxEntries) __builtin_trap();
  auto back = infera::perf_db_parse(infera::perf_db_serialize(r.value()));
  if (!back.is_ok() || back.value().size() != r.value().size()) __builtin_trap();
  for (size_t i = 0; i < back.value().size(); ++i) {
    const auto& a = r.value()[i];
    const auto& b = back.value()[i];
    if (a.key.str() != b.key.str() || a.winner != b.winner || a.ms != b.ms || a.search != b.search ||
        a.candidates.size() != b.candidates.size())
      __builtin_trap();
  }
  return 0;
}
