// The one file that names the CUDA or HIP runtime: neutral gpu* names for the types and calls the
// GPU backend uses, mapped by INFERA_GPU_CUDA or INFERA_GPU_HIP. Every other GPU source (kernels,
// backend, tests) uses these names only, so the same .cu files build with nvcc and with hipcc.
// Every call returns gpuError_t; GPU_TRY turns a failure into the library's Status (an error
// string), which is also how HIP's [[nodiscard]] return values are always consumed.
#pragma once

#if defined(INFERA_GPU_HIP) == defined(INFERA_GPU_CUDA)
#error "define exactly one of INFERA_GPU_HIP and INFERA_GPU_CUDA"
#endif

#include <cstddef>

#include "backends/gpu/status.h"

#if defined(INFERA_GPU_HIP)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuGraph_t = hipGraph_t;
using gpuGraphExec_t = hipGraphExec_t;
using gpuDeviceProp = hipDeviceProp_t;
inline constexpr gpuError_t gpuSuccess = hipSuccess;
inline constexpr const char* kGpuVendor = "hip";

inline const char* gpuGetErrorString(gpuError_t e) { return hipGetErrorString(e); }
inline gpuError_t gpuGetLastError() { return hipGetLastError(); }
inline gpuError_t gpuGetDevice(int* d) { return hipGetDevice(d); }
inline gpuError_t gpuSetDevice(int d) { return hipSetDevice(d); }
inline gpuError_t gpuGetDeviceCount(int* n) { return hipGetDeviceCount(n); }
inline gpuError_t gpuDriverGetVersion(int* v) { return hipDriverGetVersion(v); }
inline gpuError_t gpuDeviceGetPCIBusId(char* id, int len, int d) { return hipDeviceGetPCIBusId(id, len, d); }
inline gpuError_t gpuRuntimeGetVersion(int* v) { return hipRuntimeGetVersion(v); }
inline gpuError_t gpuGetDeviceProperties(gpuDeviceProp* p, int d) { return hipGetDeviceProperties(p, d); }
inline gpuError_t gpuDeviceSynchronize() { return hipDeviceSynchronize(); }
inline gpuError_t gpuMalloc(void** p, size_t n) { return hipMalloc(p, n); }
inline gpuError_t gpuFree(void* p) { return hipFree(p); }
inline gpuError_t gpuMallocHost(void** p, size_t n) { return hipHostMalloc(p, n, hipHostMallocDefault); }
inline gpuError_t gpuFreeHost(void* p) { return hipHostFree(p); }
inline gpuError_t gpuMemcpyHtoD(void* d, const void* s, size_t n) { return hipMemcpy(d, s, n, hipMemcpyHostToDevice); }
inline gpuError_t gpuMemcpyDtoH(void* d, const void* s, size_t n) { return hipMemcpy(d, s, n, hipMemcpyDeviceToHost); }
inline gpuError_t gpuMemcpyAsync(void* d, const void* s, size_t n, gpuStream_t st) {
  return hipMemcpyAsync(d, s, n, hipMemcpyDefault, st);
}
inline gpuError_t gpuMemsetAsync(void* d, int v, size_t n, gpuStream_t st) { return hipMemsetAsync(d, v, n, st); }
inline gpuError_t gpuStreamCreate(gpuStream_t* s) { return hipStreamCreateWithFlags(s, hipStreamNonBlocking); }
inline gpuError_t gpuStreamDestroy(gpuStream_t s) { return hipStreamDestroy(s); }
inline gpuError_t gpuStreamSynchronize(gpuStream_t s) { return hipStreamSynchronize(s); }
inline gpuError_t gpuEventCreate(gpuEvent_t* e) { return hipEventCreate(e); }
inline gpuError_t gpuEventDestroy(gpuEvent_t e) { return hipEventDestroy(e); }
inline gpuError_t gpuEventRecord(gpuEvent_t e, gpuStream_t s) { return hipEventRecord(e, s); }
inline gpuError_t gpuEventSynchronize(gpuEvent_t e) { return hipEventSynchronize(e); }
inline gpuError_t gpuEventElapsedTime(float* ms, gpuEvent_t a, gpuEvent_t b) { return hipEventElapsedTime(ms, a, b); }
inline gpuError_t gpuStreamBeginCapture(gpuStream_t s) {
  return hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal);
}
inline gpuError_t gpuStreamEndCapture(gpuStream_t s, gpuGraph_t* g) { return hipStreamEndCapture(s, g); }
inline gpuError_t gpuGraphInstantiate(gpuGraphExec_t* e, gpuGraph_t g) {
  return hipGraphInstantiate(e, g, nullptr, nullptr, 0);
}
inline gpuError_t gpuGraphLaunch(gpuGraphExec_t e, gpuStream_t s) { return hipGraphLaunch(e, s); }
inline gpuError_t gpuGraphDestroy(gpuGraph_t g) { return hipGraphDestroy(g); }
inline gpuError_t gpuGraphExecDestroy(gpuGraphExec_t e) { return hipGraphExecDestroy(e); }
// Raises a kernel's dynamic shared-memory limit (needed above 48 KB on CUDA; HIP allows up to
// the LDS size without it, the call is kept so the code path is the same).
inline gpuError_t gpuFuncSetMaxDynamicSmem(const void* func, int bytes) {
  return hipFuncSetAttribute(func, hipFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
inline int gpuPropSmemOptin(const gpuDeviceProp& p) { return static_cast<int>(p.sharedMemPerBlock); }
// Blocks of func (threads each, smem dynamic bytes) one multiprocessor holds at once; the
// multiprocessor count of a device (the grid of a persistent kernel is their product).
inline gpuError_t gpuOccupancyMaxBlocks(int* n, const void* func, int threads, size_t smem) {
  return hipOccupancyMaxActiveBlocksPerMultiprocessor(n, func, threads, smem);
}
inline gpuError_t gpuDeviceSmCount(int* n, int d) {
  return hipDeviceGetAttribute(n, hipDeviceAttributeMultiprocessorCount, d);
}
template <class T>
gpuError_t gpuMemcpyFromSymbol(void* dst, const T& symbol, size_t n) {
  return hipMemcpyFromSymbol(dst, HIP_SYMBOL(symbol), n, 0, hipMemcpyDeviceToHost);
}
inline int gpuPropArch(const gpuDeviceProp& p) { return p.major * 10 + p.minor; }
// True when p is device memory (not host memory the device can read through a copy).
inline bool gpuIsDevicePointer(const void* p) {
  hipPointerAttribute_t a{};
  if (hipPointerGetAttributes(&a, p) != hipSuccess) {
    (void)hipGetLastError();  // a plain host pointer: not an error worth keeping
    return false;
  }
  return a.memoryType == hipMemoryTypeDevice;
}

#else  // INFERA_GPU_CUDA
#include <cuda_fp16.h>
#include <cuda_runtime.h>

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuGraph_t = cudaGraph_t;
using gpuGraphExec_t = cudaGraphExec_t;
using gpuDeviceProp = cudaDeviceProp;
inline constexpr gpuError_t gpuSuccess = cudaSuccess;
inline constexpr const char* kGpuVendor = "cuda";

inline const char* gpuGetErrorString(gpuError_t e) { return cudaGetErrorString(e); }
inline gpuError_t gpuGetLastError() { return cudaGetLastError(); }
inline gpuError_t gpuGetDevice(int* d) { return cudaGetDevice(d); }
inline gpuError_t gpuSetDevice(int d) { return cudaSetDevice(d); }
inline gpuError_t gpuGetDeviceCount(int* n) { return cudaGetDeviceCount(n); }
inline gpuError_t gpuDriverGetVersion(int* v) { return cudaDriverGetVersion(v); }
inline gpuError_t gpuDeviceGetPCIBusId(char* id, int len, int d) { return cudaDeviceGetPCIBusId(id, len, d); }
inline gpuError_t gpuRuntimeGetVersion(int* v) { return cudaRuntimeGetVersion(v); }
inline gpuError_t gpuGetDeviceProperties(gpuDeviceProp* p, int d) { return cudaGetDeviceProperties(p, d); }
inline gpuError_t gpuDeviceSynchronize() { return cudaDeviceSynchronize(); }
inline gpuError_t gpuMalloc(void** p, size_t n) { return cudaMalloc(p, n); }
inline gpuError_t gpuFree(void* p) { return cudaFree(p); }
inline gpuError_t gpuMallocHost(void** p, size_t n) { return cudaMallocHost(p, n); }
inline gpuError_t gpuFreeHost(void* p) { return cudaFreeHost(p); }
inline gpuError_t gpuMemcpyHtoD(void* d, const void* s, size_t n) {
  return cudaMemcpy(d, s, n, cudaMemcpyHostToDevice);
}
inline gpuError_t gpuMemcpyDtoH(void* d, const void* s, size_t n) {
  return cudaMemcpy(d, s, n, cudaMemcpyDeviceToHost);
}
inline gpuError_t gpuMemcpyAsync(void* d, const void* s, size_t n, gpuStream_t st) {
  return cudaMemcpyAsync(d, s, n, cudaMemcpyDefault, st);
}
inline gpuError_t gpuMemsetAsync(void* d, int v, size_t n, gpuStream_t st) { return cudaMemsetAsync(d, v, n, st); }
inline gpuError_t gpuStreamCreate(gpuStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
inline gpuError_t gpuStreamDestroy(gpuStream_t s) { return cudaStreamDestroy(s); }
inline gpuError_t gpuStreamSynchronize(gpuStream_t s) { return cudaStreamSynchronize(s); }
inline gpuError_t gpuEventCreate(gpuEvent_t* e) { return cudaEventCreate(e); }
inline gpuError_t gpuEventDestroy(gpuEvent_t e) { return cudaEventDestroy(e); }
inline gpuError_t gpuEventRecord(gpuEvent_t e, gpuStream_t s) { return cudaEventRecord(e, s); }
inline gpuError_t gpuEventSynchronize(gpuEvent_t e) { return cudaEventSynchronize(e); }
inline gpuError_t gpuEventElapsedTime(float* ms, gpuEvent_t a, gpuEvent_t b) { return cudaEventElapsedTime(ms, a, b); }
inline gpuError_t gpuStreamBeginCapture(gpuStream_t s) {
  return cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
}
inline gpuError_t gpuStreamEndCapture(gpuStream_t s, gpuGraph_t* g) { return cudaStreamEndCapture(s, g); }
inline gpuError_t gpuGraphInstantiate(gpuGraphExec_t* e, gpuGraph_t g) { return cudaGraphInstantiate(e, g, 0); }
inline gpuError_t gpuGraphLaunch(gpuGraphExec_t e, gpuStream_t s) { return cudaGraphLaunch(e, s); }
inline gpuError_t gpuGraphDestroy(gpuGraph_t g) { return cudaGraphDestroy(g); }
inline gpuError_t gpuGraphExecDestroy(gpuGraphExec_t e) { return cudaGraphExecDestroy(e); }
inline gpuError_t gpuFuncSetMaxDynamicSmem(const void* func, int bytes) {
  return cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
inline int gpuPropSmemOptin(const gpuDeviceProp& p) { return static_cast<int>(p.sharedMemPerBlockOptin); }
inline gpuError_t gpuOccupancyMaxBlocks(int* n, const void* func, int threads, size_t smem) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, func, threads, smem);
}
inline gpuError_t gpuDeviceSmCount(int* n, int d) {
  return cudaDeviceGetAttribute(n, cudaDevAttrMultiProcessorCount, d);
}
template <class T>
gpuError_t gpuMemcpyFromSymbol(void* dst, const T& symbol, size_t n) {
  return cudaMemcpyFromSymbol(dst, symbol, n);
}
inline int gpuPropArch(const gpuDeviceProp& p) { return p.major * 10 + p.minor; }
// True when p is device memory (not host memory the device can read through a copy).
inline bool gpuIsDevicePointer(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}
#endif

// Makes `device` the calling thread's current device for a scope and restores the previous one
// (library handles bind to the current device when created). ok(): the switch worked.
class GpuDeviceScope {
 public:
  explicit GpuDeviceScope(int device) {
    if (gpuGetDevice(&prev_) == gpuSuccess && prev_ != device)
      ok_ = gpuSetDevice(device) == gpuSuccess;
    else
      prev_ = -1;
  }
  GpuDeviceScope(const GpuDeviceScope&) = delete;
  GpuDeviceScope& operator=(const GpuDeviceScope&) = delete;
  ~GpuDeviceScope() {
    if (prev_ >= 0) (void)gpuSetDevice(prev_);
  }
  bool ok() const { return ok_; }

 private:
  int prev_ = -1;
  bool ok_ = true;
};

// Evaluates a gpu* call; on failure returns a Status carrying the runtime's message (a static
// string owned by the runtime) from the enclosing function.
#define GPU_TRY(expr)                                                                              \
  do {                                                                                             \
    const gpuError_t gpu_try_err_ = (expr);                                                        \
    if (gpu_try_err_ != gpuSuccess) return ::infera::gpu::Status{gpuGetErrorString(gpu_try_err_)}; \
  } while (0)

// After a <<<...>>> launch: the launch's own error (bad configuration, too much shared memory).
#define GPU_LAUNCH_CHECK() GPU_TRY(gpuGetLastError())
