// The kernel table generated from list.h, and the device query the dispatch needs.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "backends/gpu/arch.h"
#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/igemm.h"

namespace infera::gpu {
namespace {

constexpr KernelInfo kKernels[] = {
#define INFERA_GPU_KERNEL(name, family, dtype, what) {KernelId::name, #name, KernelFamily::family, DType::dtype, what},
#include "backends/gpu/kernels/list.h"
#undef INFERA_GPU_KERNEL
};
static_assert(sizeof(kKernels) / sizeof(kKernels[0]) == static_cast<size_t>(KernelId::kCount), "list.h");

}  // namespace

int kernel_count() { return static_cast<int>(KernelId::kCount); }
const KernelInfo& kernel_info(KernelId id) { return kKernels[static_cast<int>(id)]; }
const KernelInfo& kernel_info(int index) { return kKernels[index]; }

Status query_device(int device, DeviceInfo* out) {
  if (!out) return {"query_device: null output"};
  gpuDeviceProp prop{};
  GPU_TRY(gpuGetDeviceProperties(&prop, device));
  out->device = device;
  out->arch = gpuPropArch(prop);
  out->sm_count = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
  out->smem_optin = gpuPropSmemOptin(prop);
  int current = 0;
  GPU_TRY(gpuGetDevice(&current));
  if (current != device) GPU_TRY(gpuSetDevice(device));
  out->wgmma = out->arch == 90 && igemm_wgmma_built();
  if (current != device) GPU_TRY(gpuSetDevice(current));
  return {};
}

namespace arch {

int64_t pdl_block_limit() {
#if defined(INFERA_GPU_CUDA)
  // Blocks per multiprocessor; INFERA_GPU_PDL=N sets it (0: off), read once.
  static const int64_t per_sm = [] {
    const char* e = std::getenv("INFERA_GPU_PDL");
    char* end = nullptr;
    const long v = e ? std::strtol(e, &end, 10) : 0;
    return e && end != e && *end == 0 && v >= 0 && v <= 64 ? int64_t{v} : int64_t{kPdlBlocksPerSm};
  }();
  static std::atomic<int64_t> sms[64];  // per device: 0 not asked yet, -1 not capable, else its SM count
  int dev = 0;
  if (!per_sm || gpuGetDevice(&dev) != gpuSuccess || dev < 0 || dev >= 64) return 0;
  int64_t v = sms[dev].load(std::memory_order_relaxed);
  if (!v) {
    gpuDeviceProp prop{};
    v = gpuGetDeviceProperties(&prop, dev) == gpuSuccess && prop.major >= 9 ? int64_t{prop.multiProcessorCount} : -1;
    sms[dev].store(v, std::memory_order_relaxed);
  }
  return v > 0 ? per_sm * v : 0;
#else
  return 0;
#endif
}

}  // namespace arch

}  // namespace infera::gpu
