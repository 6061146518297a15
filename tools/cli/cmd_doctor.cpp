// infera doctor: the production checklist for this machine (CPU, ISA, oneDNN, memory, GPU).
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "cli.h"

namespace infera::cli {

static std::string cpuinfo_field(const std::string& key) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) {
      size_t c = line.find(':');
      return c == std::string::npos ? "" : line.substr(c + 2);
    }
  return "";
}

static long long meminfo_kb(const std::string& key) {
  std::ifstream f("/proc/meminfo");
  std::string k;
  long long v;
  std::string unit;
  while (f >> k >> v >> unit)
    if (k == key + ":") return v;
  return -1;
}

const CommandSpec& doctor_spec() {
  static const CommandSpec spec{"doctor",
                                "[options]",
                                "Shows this machine as infera sees it: OS, CPU, cores, ISA extensions, NUMA nodes,\n"
                                "memory, each backend (oneDNN version, the kernels it picks) and whether a GPU\n"
                                "backend is built in. Takes no arguments.",
                                {},
                                false};
  return spec;
}

int cmd_doctor(int argc, char** argv) {
  const CommandSpec& spec = doctor_spec();
  Args a = parse_args(argc, argv, 2, spec);
  if (!a.positional.empty()) a.error("doctor takes no arguments");
  if (int rc = handle_help_and_usage(spec, a); rc >= 0) return rc;
  utsname u{};
  uname(&u);
  printf("infera %s\n", version());
  printf("os         %s %s %s\n", u.sysname, u.release, u.machine);
  std::string model = cpuinfo_field("model name");
  printf("cpu        %s\n", model.empty() ? "unknown" : model.c_str());
  printf("cores      %u logical (hardware_concurrency), %ld online\n", std::thread::hardware_concurrency(),
         sysconf(_SC_NPROCESSORS_ONLN));
  std::set<std::string> flags;
  {
    std::stringstream ss(cpuinfo_field("flags"));
    std::string f;
    while (ss >> f) flags.insert(f);
  }
  printf("isa       ");
  for (const char* f : {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx_vnni",
                        "amx_tile", "amx_int8", "amx_bf16"})
    printf(" %s=%s", f, flags.count(f) ? "yes" : "no");
  printf("\n");
  int numa = 0;
  for (int i = 0; i < 64; ++i)
    if (access(("/sys/devices/system/node/node" + std::to_string(i)).c_str(), F_OK) == 0) ++numa;
  printf("numa       %d node(s)\n", numa);
  long long total = meminfo_kb("MemTotal"), avail = meminfo_kb("MemAvailable");
  printf("memory     %.1f GiB total, %.1f GiB available\n", total / 1048576.0, avail / 1048576.0);
  bool gpu = false;
  for (const BackendInfo& b : available_backends()) {
    printf("backend    %s on %s: %s%s%s\n", b.name.c_str(), b.device.c_str(), b.available ? "available" : "unavailable",
           b.version.empty() ? "" : ", ", b.version.c_str());
    std::stringstream ss(b.details);
    for (std::string line; std::getline(ss, line);) printf("           %s\n", line.c_str());
    gpu = gpu || b.device != "cpu";
  }
  if (!gpu) printf("gpu        none: this build has no GPU backend (configure with -DINFERA_GPU=cuda or hip)\n");
  return kExitOk;
}

}  // namespace infera::cli
