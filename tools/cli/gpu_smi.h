// The GPUs as the vendors' management libraries see them: NVML (libnvidia-ml.so.1) on NVIDIA and
// rocm-smi (librocm_smi64.so) on AMD, both opened with dlopen at run time, so that infera builds
// and runs on machines without them (`infera doctor`).
#pragma once

#include <string>
#include <vector>

namespace infera::cli {

struct SmiGpu {
  std::string name;
  std::string arch;  // "sm_90", "gfx90a"
  unsigned long long memory_total = 0, memory_used = 0;
  unsigned clock_sm = 0, clock_sm_max = 0, clock_mem = 0, clock_mem_max = 0;  // MHz
  int pcie_gen = -1, pcie_gen_max = -1, pcie_width = -1, pcie_width_max = -1;
  std::string bus_id;  // "0000:19:00.0"
  int numa_node = -1;  // from sysfs; -1 unknown
  int multiprocessors = 0;
};

struct SmiReport {
  std::string library;          // "NVML", "rocm-smi", or "" when none loaded
  std::string why_none;         // when no library could be loaded or initialised
  std::string driver_version;   // "550.54.15"
  int cuda_driver_version = 0;  // NVML: the CUDA version the driver supports (12040)
  std::string rocm_version;     // rocm-smi / /opt/rocm/.info/version
  std::vector<SmiGpu> gpus;
  // topology[i][j]: "X", "NV18" (NVLink lanes), "PIX", "PXB", "PHB", "NODE", "SYS", "?"
  std::vector<std::vector<std::string>> topology;
};

SmiReport probe_gpus();

}  // namespace infera::cli
