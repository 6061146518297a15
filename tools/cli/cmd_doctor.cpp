// infera doctor: the production checklist for this machine (CPU, ISA, oneDNN, memory, GPUs through
// NVML / rocm-smi, the perf db), then verdicts, each a line `ok|warn|fail: ...`. --json for scripts.
#include <dlfcn.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "cli.h"
#include "gpu_smi.h"

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
  static const CommandSpec spec{
      "doctor",
      "[options]",
      "Shows this machine as infera sees it: OS, CPU, cores, ISA extensions, NUMA nodes, memory,\n"
      "each backend (oneDNN version, the kernels it picks), every GPU through NVML or rocm-smi\n"
      "(loaded at run time: name, architecture, memory, clocks, PCIe link, NUMA node, topology),\n"
      "the runtime and library versions and the perf db; then one verdict per check, each a\n"
      "line 'ok|warn|fail: ...'. Takes no arguments.",
      {{"--json", "", "the same as one JSON object on stdout (verdicts included)"},
       {"--perf-db", "PATH", "the perf db to report (default: as the other commands use)"}},
      false};
  return spec;
}

namespace {

struct Verdict {
  std::string level, text;
};

// CUDA-style versions (runtime, driver, cudnnGetCudartVersion: 13000 -> "13.0"; HIP's
// major*10^7 + minor*10^5 + patch too) and library-style ones (cuDNN 91900, cuBLASLt 130100 -> "9.19", "13.1").
std::string ver_str(int v) {
  if (v <= 0) return "absent";
  if (v >= 1000000) return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100);
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}
std::string lib_ver_str(int v) {
  if (v <= 0) return "absent";
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100);
}

// The NUMA nodes of the CPUs this process may run on.
// PCI bridges between the root complex and a device, from its sysfs path
// (/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0: one, the root port); -1 when unknown.
int pci_bridges(const std::string& bus_id) {
  std::string id = bus_id;
  for (char& c : id)
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  char buf[4096];
  if (!realpath(("/sys/bus/pci/devices/" + id).c_str(), buf)) return -1;
  std::stringstream ss(buf);
  std::string part;
  int devices = 0;  // path components that are PCI functions ("0000:01:00.0"), the device's own included
  while (std::getline(ss, part, '/'))
    if (part.size() == 12 && part[4] == ':' && part[7] == ':' && part[10] == '.') ++devices;
  return devices > 0 ? devices - 1 : -1;
}

std::set<int> process_numa_nodes() {
  std::set<int> nodes;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return nodes;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    for (int n = 0; n < 64; ++n)
      if (access(("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/node" + std::to_string(n)).c_str(), F_OK) ==
          0) {
        nodes.insert(n);
        break;
      }
  }
  return nodes;
}

// ROCm's minimum kernel (the seeds' table): 5.3 needs >= 5.13, 5.4 needs >= 5.15.
void rocm_kernel_verdict(const std::string& rocm, const std::string& kernel, std::vector<Verdict>& v) {
  int rmaj = 0, rmin = 0, kmaj = 0, kmin = 0;
  if (std::sscanf(rocm.c_str(), "%d.%d", &rmaj, &rmin) != 2 || std::sscanf(kernel.c_str(), "%d.%d", &kmaj, &kmin) != 2)
    return;
  struct Need {
    int rmaj, rmin, kmaj, kmin;
  };
  for (const Need& n : {Need{5, 3, 5, 13}, Need{5, 4, 5, 15}})
    if (rmaj == n.rmaj && rmin == n.rmin) {
      const bool ok = kmaj > n.kmaj || (kmaj == n.kmaj && kmin >= n.kmin);
      v.push_back({ok ? "ok" : "fail", "ROCm " + rocm + " needs Linux >= " + std::to_string(n.kmaj) + "." +
                                           std::to_string(n.kmin) + "; this kernel is " + kernel});
      return;
    }
  v.push_back({"ok", "ROCm " + rocm + " on Linux " + kernel + " (no kernel requirement in infera's table for it)"});
}

}  // namespace

int cmd_doctor(int argc, char** argv) {
  const CommandSpec& spec = doctor_spec();
  Args a = parse_args(argc, argv, 2, spec);
  if (!a.positional.empty()) a.error("doctor takes no arguments");
  if (int rc = handle_help_and_usage(spec, a); rc >= 0) return rc;
  const bool json = a.has("--json");
  std::vector<Verdict> verdicts;
  std::string out;  // the text report (printed unless --json)
  auto line = [&](const std::string& k, const std::string& v) {
    std::string key = k;
    key.resize(std::max<size_t>(k.size() + 1, 11), ' ');
    out += key + v + "\n";
  };

  utsname u{};
  uname(&u);
  out += std::string("infera ") + version() + "\n";
  line("os", std::string(u.sysname) + " " + u.release + " " + u.machine);
  const std::string model = cpuinfo_field("model name");
  line("cpu", model.empty() ? "unknown" : model);
  line("cores", std::to_string(std::thread::hardware_concurrency()) + " logical (hardware_concurrency), " +
                    std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " online");
  std::set<std::string> flags;
  {
    std::stringstream ss(cpuinfo_field("flags"));
    std::string f;
    while (ss >> f) flags.insert(f);
  }
  std::string isa;
  const char* isa_names[] = {"avx2",        "fma",      "avx512f",  "avx512bw", "avx512vl", "avx512_vnni",
                             "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16"};
  for (const char* f : isa_names) isa += std::string(" ") + f + "=" + (flags.count(f) ? "yes" : "no");
  out += "isa       " + isa + "\n";
  int numa = 0;
  for (int i = 0; i < 64; ++i)
    if (access(("/sys/devices/system/node/node" + std::to_string(i)).c_str(), F_OK) == 0) ++numa;
  line("numa", std::to_string(numa) + " node(s)");
  const long long total = meminfo_kb("MemTotal"), avail = meminfo_kb("MemAvailable");
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.1f GiB total, %.1f GiB available", total / 1048576.0, avail / 1048576.0);
  line("memory", buf);
  const std::vector<BackendInfo> backends = available_backends();
  bool gpu_backend = false;
  for (const BackendInfo& b : backends) {
    line("backend", b.name + " on " + b.device + ": " + (b.available ? "available" : "unavailable") +
                        (b.version.empty() ? "" : ", ") + b.version);
    std::stringstream ss(b.details);
    for (std::string l; std::getline(ss, l);) out += "           " + l + "\n";
    gpu_backend = gpu_backend || (b.device != "cpu" && b.available);
  }

  // ---- GPUs
  const GpuLibraryVersions libs = gpu_library_versions();
  const SmiReport smi = probe_gpus();
  if (libs.vendor.empty())
    line("gpu build", "none: this build has no GPU backend (configure with -DINFERA_GPU=cuda or hip)");
  else
    line("gpu build", libs.vendor + " runtime " + ver_str(libs.runtime) + ", driver API " + ver_str(libs.driver) +
                          ", cuDNN " + lib_ver_str(libs.dnn) + ", cuBLASLt " + lib_ver_str(libs.blas));
  if (smi.library.empty()) {
    line("gpu", "none found: " + smi.why_none.substr(smi.why_none.rfind("; ", 0) == 0 ? 2 : 0) +
                    (smi.rocm_version.empty() ? "" : " (ROCm " + smi.rocm_version + " installed)"));
  } else {
    line("gpu driver", smi.library + ": driver " + (smi.driver_version.empty() ? "?" : smi.driver_version) +
                           (smi.cuda_driver_version ? ", supports CUDA " + ver_str(smi.cuda_driver_version) : "") +
                           (smi.rocm_version.empty() ? "" : ", ROCm " + smi.rocm_version));
    for (size_t i = 0; i < smi.gpus.size(); ++i) {
      const SmiGpu& g = smi.gpus[i];
      std::snprintf(buf, sizeof buf,
                    "%s, %s, %.1f GiB (%.1f used), SM clock %u/%u MHz, memory clock %u/%u MHz, PCIe gen %d x%d "
                    "(max gen %d x%d), bus %s, NUMA node %d",
                    g.name.c_str(), g.arch.empty() ? "arch ?" : g.arch.c_str(), g.memory_total / 1073741824.0,
                    g.memory_used / 1073741824.0, g.clock_sm, g.clock_sm_max, g.clock_mem, g.clock_mem_max, g.pcie_gen,
                    g.pcie_width, g.pcie_gen_max, g.pcie_width_max, g.bus_id.c_str(), g.numa_node);
      line("gpu" + std::to_string(i), buf);
    }
    if (smi.gpus.size() > 1) {
      std::string head = "      ";
      for (size_t j = 0; j < smi.gpus.size(); ++j) head += " gpu" + std::to_string(j) + (j < 10 ? "  " : " ");
      line("topology", head);
      for (size_t i = 0; i < smi.topology.size(); ++i) {
        std::string row = "gpu" + std::to_string(i) + (i < 10 ? "  " : " ");
        for (const std::string& t : smi.topology[i]) {
          std::string c = t;
          c.resize(std::max<size_t>(c.size() + 1, 7), ' ');
          row += c;
        }
        line("", row);
      }
    }
  }

  // ---- verdicts
  if (!libs.vendor.empty() && libs.vendor == "cuda" && smi.cuda_driver_version > 0 && libs.runtime > 0) {
    const bool ok = libs.runtime <= smi.cuda_driver_version;
    verdicts.push_back({ok ? "ok" : "fail", "CUDA runtime " + ver_str(libs.runtime) + " of this build " +
                                                (ok ? "is supported by" : "is newer than") + " the driver (CUDA " +
                                                ver_str(smi.cuda_driver_version) + ")" +
                                                (ok ? "" : ": update the NVIDIA driver")});
  }
  if (libs.vendor == "cuda") {
    if (libs.dnn <= 0) {
      verdicts.push_back({"warn", "cuDNN is absent from this build or does not load: infera's own conv kernels only"});
    } else if (auto f = reinterpret_cast<size_t (*)()>(dlsym(RTLD_DEFAULT, "cudnnGetCudartVersion"))) {
      const int built = static_cast<int>(f());
      const bool ok = built / 1000 == libs.runtime / 1000;
      verdicts.push_back(
          {ok ? "ok" : "fail",
           "cuDNN " + lib_ver_str(libs.dnn) + " was built for CUDA " + ver_str(built) +
               (ok ? ", the runtime's major version" : "; the runtime is CUDA " + ver_str(libs.runtime))});
    }
  }
  if (!smi.rocm_version.empty()) rocm_kernel_verdict(smi.rocm_version, u.release, verdicts);
  if (smi.library == "rocm-smi")
    for (size_t i = 0; i < smi.gpus.size(); ++i)
      if (smi.gpus[i].arch.empty())
        verdicts.push_back({"warn", "gpu" + std::to_string(i) +
                                        ": rocm-smi does not say its gfx architecture: check it against the HIP "
                                        "build's targets (gfx908, gfx90a, gfx1030)"});
  const std::set<int> my_nodes = process_numa_nodes();
  for (size_t i = 0; i < smi.gpus.size(); ++i) {
    const SmiGpu& g = smi.gpus[i];
    const std::string n = "gpu" + std::to_string(i);
    if (g.pcie_gen > 0 && g.pcie_gen_max > 0 && g.pcie_width > 0 && g.pcie_width_max > 0) {
      const bool full = g.pcie_gen >= g.pcie_gen_max && g.pcie_width >= g.pcie_width_max;
      verdicts.push_back({full ? "ok" : "warn",
                          n + " PCIe link gen " + std::to_string(g.pcie_gen) + " x" + std::to_string(g.pcie_width) +
                              (full ? " (its maximum)"
                                    : " below its maximum gen " + std::to_string(g.pcie_gen_max) + " x" +
                                          std::to_string(g.pcie_width_max) +
                                          " (an idle GPU lowers the generation to save power: check under load)")});
    }
    // The seeds' checklist: every GPU on an x16 link straight to the CPU (no PCIe switch, whose
    // uplink the GPUs behind it share).
    if (g.pcie_width_max > 0 && g.pcie_width_max < 16)
      verdicts.push_back({"warn", n + " has an x" + std::to_string(g.pcie_width_max) +
                                      " link at most: host copies get at most " +
                                      std::to_string(100 * g.pcie_width_max / 16) + "% of an x16 slot's bandwidth"});
    if (const int b = g.bus_id.empty() ? -1 : pci_bridges(g.bus_id); b >= 0)
      verdicts.push_back(
          {b <= 1 ? "ok" : "warn",
           n + (b == 0   ? " sits on the root bus (no bridge: a virtual machine's passthrough)"
                : b == 1 ? " is attached to a root port of the CPU (no PCIe switch)"
                         : " is behind a PCIe switch (" + std::to_string(b) +
                               " bridges to the root complex): the GPUs under it share the switch's uplink")});
    if (g.numa_node >= 0 && !my_nodes.empty()) {
      const bool local = my_nodes.count(g.numa_node) != 0;
      std::string nodes;
      for (int x : my_nodes) nodes += (nodes.empty() ? "" : ",") + std::to_string(x);
      verdicts.push_back({local ? "ok" : "warn", n + " is on NUMA node " + std::to_string(g.numa_node) +
                                                     (local ? ", among" : ", not among") +
                                                     " the nodes of this process's CPUs (" + nodes + ")" +
                                                     (local ? "" : ": bind with numactl --cpunodebind")});
    }
  }
  {
    auto t = Tensor::make(DataType::kFloat32, {17});  // an odd size: the allocator must still align
    const bool aligned = t.is_ok() && reinterpret_cast<uintptr_t>(t.value().data()) % 64 == 0;
    verdicts.push_back({aligned ? "ok" : "fail", std::string("host buffers are ") + (aligned ? "" : "not ") +
                                                     "64-byte aligned (checked on an allocation now; arenas take "
                                                     "each backend's alignment: 64 host, 256 GPU)"});
  }
  const std::string db_path = a.get("--perf-db", "");
  const PerfDbInfo db = perf_db_info(db_path);
  size_t mine = 0;
  for (const auto& [dev, n] : db.entries_per_device)
    if (dev.rfind(db.cpu_device, 0) == 0)
      mine += n;
    else
      for (const SmiGpu& g : smi.gpus)
        if (!g.name.empty() && dev.find(g.name) != std::string::npos) mine += n;
  line("perf db", db.path.empty() ? "none (no XDG_CACHE_HOME or HOME)" : db.path);
  if (db.path.empty())
    verdicts.push_back({"warn", "perf db: no default location (set XDG_CACHE_HOME or HOME, or give --perf-db)"});
  else if (!db.warning.empty())
    verdicts.push_back({"warn", "perf db " + db.path + ": " + db.warning + " (ignored; rewritten at the next save)"});
  else if (!db.exists)
    verdicts.push_back({"ok", "perf db " + db.path + " does not exist yet (the first build with a search makes it)"});
  else
    verdicts.push_back({"ok", "perf db " + db.path + ": " + bytes_str(db.file_bytes) + ", " +
                                  std::to_string(db.entries) + " entries, " + std::to_string(mine) +
                                  " for this machine's devices"});
  if (!gpu_backend && smi.gpus.empty()) out += "gpu        the checks below are the CPU's: no GPU here\n";

  if (!json) {
    fputs(out.c_str(), stdout);
    for (const Verdict& v : verdicts) printf("%s: %s\n", v.level.c_str(), v.text.c_str());
    return kExitOk;
  }
  std::string j = "{\"infera\": " + json_str(version()) +
                  ", \"os\": " + json_str(std::string(u.sysname) + " " + u.release + " " + u.machine) +
                  ",\n \"cpu\": {\"model\": " + json_str(model) +
                  ", \"logical_cores\": " + std::to_string(std::thread::hardware_concurrency()) +
                  ", \"numa_nodes\": " + std::to_string(numa) + ", \"memory_total_kib\": " + std::to_string(total) +
                  ", \"isa\": {";
  for (size_t i = 0; i < sizeof isa_names / sizeof *isa_names; ++i)
    j += (i ? ", " : "") + json_str(isa_names[i]) + ": " + (flags.count(isa_names[i]) ? "true" : "false");
  j += "}},\n \"backends\": [";
  for (size_t i = 0; i < backends.size(); ++i)
    j += std::string(i ? ", " : "") + "{\"name\": " + json_str(backends[i].name) +
         ", \"device\": " + json_str(backends[i].device) +
         ", \"available\": " + (backends[i].available ? "true" : "false") +
         ", \"version\": " + json_str(backends[i].version) + ", \"details\": " + json_str(backends[i].details) + "}";
  j += "],\n \"gpu\": {\"build\": " + json_str(libs.vendor) + ", \"runtime\": " + std::to_string(libs.runtime) +
       ", \"driver_api\": " + std::to_string(libs.driver) + ", \"cudnn\": " + std::to_string(libs.dnn) +
       ", \"cublaslt\": " + std::to_string(libs.blas) + ", \"library\": " + json_str(smi.library) +
       ", \"why_none\": " + json_str(smi.why_none) + ", \"driver_version\": " + json_str(smi.driver_version) +
       ", \"cuda_driver_version\": " + std::to_string(smi.cuda_driver_version) +
       ", \"rocm_version\": " + json_str(smi.rocm_version) + ", \"devices\": [";
  for (size_t i = 0; i < smi.gpus.size(); ++i) {
    const SmiGpu& g = smi.gpus[i];
    j += std::string(i ? ", " : "") + "{\"name\": " + json_str(g.name) + ", \"arch\": " + json_str(g.arch) +
         ", \"memory_total\": " + std::to_string(g.memory_total) +
         ", \"memory_used\": " + std::to_string(g.memory_used) + ", \"clock_sm_mhz\": " + std::to_string(g.clock_sm) +
         ", \"clock_sm_max_mhz\": " + std::to_string(g.clock_sm_max) +
         ", \"clock_mem_mhz\": " + std::to_string(g.clock_mem) +
         ", \"clock_mem_max_mhz\": " + std::to_string(g.clock_mem_max) +
         ", \"pcie_gen\": " + std::to_string(g.pcie_gen) + ", \"pcie_gen_max\": " + std::to_string(g.pcie_gen_max) +
         ", \"pcie_width\": " + std::to_string(g.pcie_width) +
         ", \"pcie_width_max\": " + std::to_string(g.pcie_width_max) + ", \"bus_id\": " + json_str(g.bus_id) +
         ", \"numa_node\": " + std::to_string(g.numa_node) + "}";
  }
  j += "], \"topology\": [";
  for (size_t i = 0; i < smi.topology.size(); ++i) {
    j += i ? ", [" : "[";
    for (size_t k = 0; k < smi.topology[i].size(); ++k) j += (k ? ", " : "") + json_str(smi.topology[i][k]);
    j += "]";
  }
  j += "]},\n \"perf_db\": {\"path\": " + json_str(db.path) + ", \"exists\": " + (db.exists ? "true" : "false") +
       ", \"bytes\": " + std::to_string(db.file_bytes) + ", \"entries\": " + std::to_string(db.entries) +
       ", \"entries_this_machine\": " + std::to_string(mine) + ", \"warning\": " + json_str(db.warning) +
       "},\n \"verdicts\": [";
  for (size_t i = 0; i < verdicts.size(); ++i)
    j += std::string(i ? ",\n  " : "\n  ") + "{\"level\": " + json_str(verdicts[i].level) +
         ", \"message\": " + json_str(verdicts[i].text) + "}";
  j += "]}\n";
  fputs(j.c_str(), stdout);
  return kExitOk;
}

}  // namespace infera::cli
