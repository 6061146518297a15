// The GPU runtime infera was built with, the driver's, and the vendor libraries' versions, for
// `infera doctor`'s verdicts (the perf db's GPU keys use the same queries in gpu_conv.cpp).
#include "infera/infera.h"

#if defined(INFERA_GPU_CUDA) || defined(INFERA_GPU_HIP)
#include "backends/gpu/blas.h"
#include "backends/gpu/dnn.h"
#include "backends/gpu/vendor.h"
#endif

namespace infera {

GpuLibraryVersions gpu_library_versions() {
  GpuLibraryVersions v;
#if defined(INFERA_GPU_CUDA) || defined(INFERA_GPU_HIP)
  v.vendor = kGpuVendor;
  if (gpuRuntimeGetVersion(&v.runtime) != gpuSuccess) v.runtime = 0;
  if (gpuDriverGetVersion(&v.driver) != gpuSuccess) v.driver = 0;
  (void)gpuGetLastError();
  v.dnn = gpu::dnn_version();
  v.blas = gpu::blas_version();
#endif
  return v;
}

}  // namespace infera
