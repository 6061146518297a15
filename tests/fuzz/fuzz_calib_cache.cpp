// libFuzzer target: the bytes are a calibration cache (tools/cli/calib_cache.cpp, the JSON file of
// `infera quantize --cache` / `infera eval`). parse_calib_cache must refuse (with a message) or
// accept without crashing, in bounded time and memory; what it accepts has the cache's format, a
// model hash, a method and at least one tensor, each with a finite, non-negative amax, and parsing
// the same text again gives the same table. Build and run: bash tests/fuzz/build.sh, then
// bash tests/fuzz/run.sh calib_cache 600.
#include <cmath>
#include <cstdint>
#include <string>

#include "calib.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = infera::cli::parse_calib_cache(text, "fuzz.json");
  if (!r.is_ok()) {
    if (r.status().message().empty()) __builtin_trap();
    return 0;
  }
  const infera::cli::CalibCache& c = r.value();
  if (c.model_sha256.empty() || c.table.method.empty() || c.table.amax.empty()) __builtin_trap();
  for (const auto& [name, amax] : c.table.amax)
    if (!std::isfinite(amax) || amax < 0) __builtin_trap();
  auto again = infera::cli::parse_calib_cache(text, "fuzz.json");
  if (!again.is_ok() || again.value().table.amax != c.table.amax || again.value().model_sha256 != c.model_sha256)
    __builtin_trap();
  return 0;
}
