// The CPU's part of the database keys: /proc/cpuinfo's model name, oneDNN's ISA and version.
#include "tune/keys.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <fstream>

namespace infera::tune {

namespace {

std::string model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t c = line.find(':');
      if (c != std::string::npos && c + 2 <= line.size()) return line.substr(c + 2, 200);
    }
  return "unknown cpu";
}

const char* isa_str(dnnl::cpu_isa isa) {
  using i = dnnl::cpu_isa;
  switch (isa) {
    case i::sse41: return "sse41";
    case i::avx: return "avx";
    case i::avx2: return "avx2";
    case i::avx2_vnni: return "avx2_vnni";
    case i::avx512_core: return "avx512_core";
    case i::avx512_core_vnni: return "avx512_core_vnni";
    case i::avx512_core_bf16: return "avx512_core_bf16";
    case i::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

}  // namespace

std::string cpu_device_name() {
  static const std::string name = "cpu: " + model_name() + " [" + isa_str(dnnl::get_effective_cpu_isa()) + "]";
  return name;
}

std::string cpu_libs() {
  const dnnl_version_t* v = dnnl_version();
  char b[64];
  std::snprintf(b, sizeof b, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
  return b;
}

}  // namespace infera::tune
