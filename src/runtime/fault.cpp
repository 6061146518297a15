// The fault hooks of fault.h. INFERA_FAULT_INJECTION is set on this file only (CMake option of the
// same name), so switching it recompiles one file and release builds carry no parser.
#include "runtime/fault.h"

#ifdef INFERA_FAULT_INJECTION
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#endif

namespace infera::fault {

#ifndef INFERA_FAULT_INJECTION

bool hit(Kind) { return false; }
bool enabled() { return false; }
void arm(const char*) {}

#else

namespace {

constexpr int kKinds = 3;
std::atomic<long> g_target[kKinds];  // 0: never
std::atomic<long> g_count[kKinds];
std::once_flag g_env_once;

void parse(const char* spec) {
  for (int k = 0; k < kKinds; ++k) {
    g_target[k] = 0;
    g_count[k] = 0;
  }
  if (!spec) return;
  static const char* names[kKinds] = {"alloc", "launch", "write"};
  std::string s(spec);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    const size_t colon = item.find(':');
    for (int k = 0; k < kKinds && colon != std::string::npos; ++k)
      if (item.compare(0, colon, names[k]) == 0) g_target[k] = std::atol(item.c_str() + colon + 1);
    pos = end + 1;
  }
}

}  // namespace

bool enabled() { return true; }

void arm(const char* spec) {
  std::call_once(g_env_once, [] {});  // the environment no longer applies
  parse(spec);
}

bool hit(Kind k) {
  std::call_once(g_env_once, [] { parse(std::getenv("INFERA_FAULT")); });
  const int i = static_cast<int>(k);
  const long t = g_target[i].load(std::memory_order_relaxed);
  return t > 0 && ++g_count[i] == t;
}

#endif

}  // namespace infera::fault
