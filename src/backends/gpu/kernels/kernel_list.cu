// The kernel table generated from list.h, and the device query the dispatch needs.
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

}  // namespace infera::gpu
