// NVML and rocm-smi through dlopen (gpu_smi.h). The few types used are declared here with the
// libraries' own layouts (nvml.h, rocm_smi.h), so no header or link-time dependency exists.
#include "gpu_smi.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

namespace infera::cli {
namespace {

// sysfs: the NUMA node of a PCI device ("0000:19:00.0"), -1 when unknown.
int pci_numa_node(const std::string& bus_id) {
  std::ifstream f("/sys/bus/pci/devices/" + bus_id + "/numa_node");
  int n = -1;
  if (!(f >> n)) return -1;
  return n;
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// ---------------------------------------------------------------- NVML
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct Nvml {
  void* h = nullptr;
  template <class F>
  F sym(const char* n) const {
    return reinterpret_cast<F>(dlsym(h, n));
  }
};

bool probe_nvml(SmiReport& r) {
  Nvml n;
  n.h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!n.h) {
    r.why_none = "NVML (libnvidia-ml.so.1) not found";
    return false;
  }
  auto init = n.sym<int (*)()>("nvmlInit_v2");
  auto shutdown = n.sym<int (*)()>("nvmlShutdown");
  auto count = n.sym<int (*)(unsigned*)>("nvmlDeviceGetCount_v2");
  auto handle = n.sym<int (*)(unsigned, nvmlDevice_t*)>("nvmlDeviceGetHandleByIndex_v2");
  if (!init || !shutdown || !count || !handle) {
    r.why_none = "NVML lacks nvmlInit_v2 / nvmlDeviceGetCount_v2 (driver too old)";
    dlclose(n.h);
    return false;
  }
  if (int rc = init(); rc != 0) {
    r.why_none = "nvmlInit failed (NVML error " + std::to_string(rc) + "; no NVIDIA driver loaded?)";
    dlclose(n.h);
    return false;
  }
  r.library = "NVML";
  char buf[96] = {};
  if (auto f = n.sym<int (*)(char*, unsigned)>("nvmlSystemGetDriverVersion"); f && f(buf, sizeof buf) == 0)
    r.driver_version = buf;
  if (auto f = n.sym<int (*)(int*)>("nvmlSystemGetCudaDriverVersion_v2")) f(&r.cuda_driver_version);
  auto name = n.sym<int (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetName");
  auto cc = n.sym<int (*)(nvmlDevice_t, int*, int*)>("nvmlDeviceGetCudaComputeCapability");
  auto mem = n.sym<int (*)(nvmlDevice_t, nvmlMemory_t*)>("nvmlDeviceGetMemoryInfo");
  auto clk = n.sym<int (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetClockInfo");
  auto clk_max = n.sym<int (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetMaxClockInfo");
  auto gen = n.sym<int (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetCurrPcieLinkGeneration");
  auto gen_max = n.sym<int (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetMaxPcieLinkGeneration");
  auto width = n.sym<int (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetCurrPcieLinkWidth");
  auto width_max = n.sym<int (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetMaxPcieLinkWidth");
  auto pci = n.sym<int (*)(nvmlDevice_t, nvmlPciInfo_t*)>("nvmlDeviceGetPciInfo_v3");
  auto topo = n.sym<int (*)(nvmlDevice_t, nvmlDevice_t, int*)>("nvmlDeviceGetTopologyCommonAncestor");
  auto link_state = n.sym<int (*)(nvmlDevice_t, unsigned, int*)>("nvmlDeviceGetNvLinkState");
  auto link_remote = n.sym<int (*)(nvmlDevice_t, unsigned, nvmlPciInfo_t*)>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  unsigned nd = 0;
  if (count(&nd) != 0) nd = 0;
  if (nd > 64) nd = 64;
  std::vector<nvmlDevice_t> devs;
  for (unsigned i = 0; i < nd; ++i) {
    nvmlDevice_t d = nullptr;
    if (handle(i, &d) != 0) continue;
    devs.push_back(d);
    SmiGpu g;
    char nm[96] = {};
    if (name && name(d, nm, sizeof nm) == 0) g.name = nm;
    int major = 0, minor = 0;
    if (cc && cc(d, &major, &minor) == 0) g.arch = "sm_" + std::to_string(major * 10 + minor);
    nvmlMemory_t m{};
    if (mem && mem(d, &m) == 0) g.memory_total = m.total, g.memory_used = m.used;
    unsigned v = 0;
    if (clk && clk(d, 1, &v) == 0) g.clock_sm = v;  // NVML_CLOCK_SM
    if (clk_max && clk_max(d, 1, &v) == 0) g.clock_sm_max = v;
    if (clk && clk(d, 2, &v) == 0) g.clock_mem = v;  // NVML_CLOCK_MEM
    if (clk_max && clk_max(d, 2, &v) == 0) g.clock_mem_max = v;
    if (gen && gen(d, &v) == 0) g.pcie_gen = static_cast<int>(v);
    if (gen_max && gen_max(d, &v) == 0) g.pcie_gen_max = static_cast<int>(v);
    if (width && width(d, &v) == 0) g.pcie_width = static_cast<int>(v);
    if (width_max && width_max(d, &v) == 0) g.pcie_width_max = static_cast<int>(v);
    nvmlPciInfo_t p{};
    if (pci && pci(d, &p) == 0) {
      p.busId[sizeof p.busId - 1] = 0;
      std::string b = lower(p.busId);  // "00000000:19:00.0": sysfs names the domain with 4 digits
      if (b.size() > 12 && b.compare(0, 4, "0000") == 0) b = b.substr(4);
      g.bus_id = b;
      g.numa_node = pci_numa_node(b);
    }
    r.gpus.push_back(g);
  }
  // Topology: NVLink lanes between each pair, else the PCIe level of their common ancestor.
  const size_t k = devs.size();
  std::map<std::string, size_t> by_bus;
  for (size_t i = 0; i < k; ++i) by_bus[r.gpus[i].bus_id] = i;
  std::vector<std::vector<int>> lanes(k, std::vector<int>(k, 0));
  if (link_state && link_remote)
    for (size_t i = 0; i < k; ++i)
      for (unsigned l = 0; l < 18; ++l) {
        int on = 0;
        nvmlPciInfo_t p{};
        if (link_state(devs[i], l, &on) != 0 || on != 1 || link_remote(devs[i], l, &p) != 0) continue;
        p.busId[sizeof p.busId - 1] = 0;
        std::string b = lower(p.busId);
        if (b.size() > 12 && b.compare(0, 4, "0000") == 0) b = b.substr(4);
        auto it = by_bus.find(b);
        if (it != by_bus.end()) ++lanes[i][it->second];
        // links to an NVSwitch name the switch: every GPU behind it is reached over them
        else
          for (size_t j = 0; j < k; ++j)
            if (j != i) ++lanes[i][j];
      }
  r.topology.assign(k, std::vector<std::string>(k, "?"));
  for (size_t i = 0; i < k; ++i)
    for (size_t j = 0; j < k; ++j) {
      if (i == j) {
        r.topology[i][j] = "X";
        continue;
      }
      if (lanes[i][j] > 0) {
        r.topology[i][j] = "NV" + std::to_string(lanes[i][j]);
        continue;
      }
      int level = -1;
      if (topo && topo(devs[i], devs[j], &level) == 0)
        r.topology[i][j] = level <= 10   ? "PIX"
                           : level <= 20 ? "PXB"
                           : level <= 30 ? "PHB"
                           : level <= 40 ? "NODE"
                                         : "SYS";
    }
  shutdown();
  dlclose(n.h);
  return true;
}

// ---------------------------------------------------------------- rocm-smi
struct rsmi_version_t {
  uint32_t major, minor, patch;
  const char* build;
};

bool probe_rocm_smi(SmiReport& r) {
  void* h = nullptr;
  for (const char* so :
       {"librocm_smi64.so.1", "librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5", "librocm_smi64.so"})
    if ((h = dlopen(so, RTLD_NOW | RTLD_LOCAL))) break;
  if (!h) return false;
  auto sym = [&](const char* n) { return dlsym(h, n); };
  auto init = reinterpret_cast<int (*)(uint64_t)>(sym("rsmi_init"));
  auto shutdown = reinterpret_cast<int (*)()>(sym("rsmi_shut_down"));
  auto count = reinterpret_cast<int (*)(uint32_t*)>(sym("rsmi_num_monitor_devices"));
  if (!init || !shutdown || !count || init(0) != 0) {
    r.why_none += "; rocm-smi found but rsmi_init failed (no amdgpu driver loaded?)";
    dlclose(h);
    return false;
  }
  r.library = "rocm-smi";
  rsmi_version_t ver{};
  if (auto f = reinterpret_cast<int (*)(rsmi_version_t*)>(sym("rsmi_version_get")); f && f(&ver) == 0)
    r.rocm_version = std::to_string(ver.major) + "." + std::to_string(ver.minor) + "." + std::to_string(ver.patch);
  auto name = reinterpret_cast<int (*)(uint32_t, char*, size_t)>(sym("rsmi_dev_name_get"));
  auto mem_total = reinterpret_cast<int (*)(uint32_t, int, uint64_t*)>(sym("rsmi_dev_memory_total_get"));
  auto mem_used = reinterpret_cast<int (*)(uint32_t, int, uint64_t*)>(sym("rsmi_dev_memory_usage_get"));
  auto bdf = reinterpret_cast<int (*)(uint32_t, uint64_t*)>(sym("rsmi_dev_pci_id_get"));
  auto numa = reinterpret_cast<int (*)(uint32_t, int32_t*)>(sym("rsmi_topo_numa_affinity_get"));
  auto link = reinterpret_cast<int (*)(uint32_t, uint32_t, uint64_t*, int*)>(sym("rsmi_topo_get_link_type"));
  uint32_t nd = 0;
  if (count(&nd) != 0) nd = 0;
  if (nd > 64) nd = 64;
  for (uint32_t i = 0; i < nd; ++i) {
    SmiGpu g;
    char nm[128] = {};
    if (name && name(i, nm, sizeof nm) == 0) g.name = nm;
    uint64_t v = 0;
    if (mem_total && mem_total(i, 0, &v) == 0) g.memory_total = v;  // RSMI_MEM_TYPE_VRAM
    if (mem_used && mem_used(i, 0, &v) == 0) g.memory_used = v;
    if (bdf && bdf(i, &v) == 0) {
      char b[32];
      std::snprintf(b, sizeof b, "%04x:%02x:%02x.%x", static_cast<unsigned>(v >> 32) & 0xffff,
                    static_cast<unsigned>(v >> 8) & 0xff, static_cast<unsigned>(v >> 3) & 0x1f,
                    static_cast<unsigned>(v) & 0x7);
      g.bus_id = b;
    }
    int32_t node = -1;
    g.numa_node = numa && numa(i, &node) == 0 ? node : pci_numa_node(g.bus_id);
    // PCIe from sysfs ("16.0 GT/s PCIe" -> gen 4)
    auto read = [&](const char* f) {
      std::ifstream s("/sys/bus/pci/devices/" + g.bus_id + "/" + f);
      std::string t;
      std::getline(s, t);
      return t;
    };
    auto gen_of = [](const std::string& sp) {
      const double gts = std::atof(sp.c_str());
      return gts >= 64 ? 6 : gts >= 32 ? 5 : gts >= 16 ? 4 : gts >= 8 ? 3 : gts >= 5 ? 2 : gts > 0 ? 1 : -1;
    };
    g.pcie_gen = gen_of(read("current_link_speed"));
    g.pcie_gen_max = gen_of(read("max_link_speed"));
    g.pcie_width = std::atoi(read("current_link_width").c_str());
    g.pcie_width_max = std::atoi(read("max_link_width").c_str());
    r.gpus.push_back(g);
  }
  r.topology.assign(nd, std::vector<std::string>(nd, "?"));
  for (uint32_t i = 0; i < nd; ++i)
    for (uint32_t j = 0; j < nd; ++j) {
      uint64_t hops = 0;
      int type = 0;
      if (i == j)
        r.topology[i][j] = "X";
      else if (link && link(i, j, &hops, &type) == 0)
        r.topology[i][j] = (type == 2 ? "XGMI" : type == 1 ? "PCIE" : "?") + std::string("/") + std::to_string(hops);
    }
  shutdown();
  dlclose(h);
  return true;
}

}  // namespace

SmiReport probe_gpus() {
  SmiReport r;
  if (probe_nvml(r)) return r;
  if (probe_rocm_smi(r)) return r;
  if (r.why_none.find("rocm-smi") == std::string::npos) r.why_none += "; rocm-smi (librocm_smi64.so) not found";
  std::ifstream v("/opt/rocm/.info/version");
  std::getline(v, r.rocm_version);
  return r;
}

}  // namespace infera::cli
