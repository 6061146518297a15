// Shared pieces of the GPU backend (gpu_backend.cpp, gpu_conv.cpp, gpu_ops.cpp): device handles,
// device buffers, the formats of GPU values, errors, and the op families' query/create hooks.
// Vendor names come only through vendor.h (gpu*).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/gpu/gpu_backend.h"
#include "backends/gpu/kernels.h"
#include "backends/packed_weights.h"

namespace infera::gpu_backend {

using Dims = std::vector<int64_t>;

// The device a backend instance drives, queried once.
struct GpuDevice {
  int index = 0;
  gpu::DeviceInfo info;
  std::string name;
  size_t total_memory = 0;
};

// kDeviceError naming what failed and the runtime's message.
Status device_error(const std::string& what, gpu::Status s);
#define INFERA_GPU_OK(what, expr)                              \
  do {                                                         \
    const ::infera::gpu::Status gpu_ok_s_ = (expr);            \
    if (!gpu_ok_s_.ok()) return device_error(what, gpu_ok_s_); \
  } while (0)

// Device memory of `bytes` (kOutOfMemory, the device still usable, when there is not enough).
Result<void*> device_malloc(int device, size_t bytes);

// Device memory owned by a kernel (weights, biases, tables), freed with it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_), device_(o.device_) { o.p_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    std::swap(device_, o.device_);
    return *this;
  }
  ~DeviceBuffer();
  static Result<DeviceBuffer> make(int device, size_t bytes);
  static Result<DeviceBuffer> upload(int device, const void* host, size_t bytes);
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
  int device_ = 0;
};

// What a step of this backend runs in.
struct GpuConfig {
  GpuDevice dev;
  Precision precision = Precision::kFp32;
  bool tf32 = false;
  bool vendor_libs = true;
  int verbose = 0;
  bool f16() const { return precision == Precision::kFp16; }
  gpu::DType dtype() const { return f16() ? gpu::DType::kF16 : gpu::DType::kF32; }
  // The format a float value of this rank takes on this device.
  Format act_format(int rank) const {
    return rank == 4 ? (f16() ? Format::kNhwcF16 : Format::kNhwc) : (f16() ? Format::kPlainF16 : Format::kPlain);
  }
  Format plain_format() const { return f16() ? Format::kPlainF16 : Format::kPlain; }
};

inline gpu::DType dtype_of(Format f) { return format_is_f16(f) ? gpu::DType::kF16 : gpu::DType::kF32; }
inline bool is_nhwc(Format f) { return f == Format::kNhwc || f == Format::kNhwcF16; }

// A constant of a step in device memory (weights, biases, per-channel tables), shared by every
// plan of the session through its packed store (backends/packed_weights.h). The entry's key names
// the node (its constant input `input`, its first output, its name) and `what` the kernel made of
// it ("conv-w"); `layout` is everything else the bytes depend on (storage type, order, shape). The
// first plan that asks uploads the `bytes` host bytes `make` returns; later plans of the session
// (other batch sizes, chunk plans, a plan rebuilt after eviction) take the same device copy. Without
// a store (a kernel made outside a session) the copy is the kernel's own. Device entries never go
// into saved plans: transposing and converting them again costs less than reading them back.
using DeviceConst = std::shared_ptr<const PackedBlob>;
Result<DeviceConst> device_const(const GpuConfig& c, const StepRequest& req, int input, const std::string& what,
                                 const std::string& layout, size_t bytes,
                                 const std::function<std::vector<uint8_t>()>& make);
inline const void* data_of(const DeviceConst& d) { return d ? d->data() : nullptr; }
// Host float32 values as the bytes of the device's storage type (fp16 or fp32).
std::vector<uint8_t> float_bytes(const float* v, size_t n, bool as_f16);
template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  const auto* b = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(b, b + v.size() * sizeof(T));
}
// "f16:64x3x3x64": a layout's storage type and dims.
std::string layout_of(const char* dtype, const std::vector<int64_t>& dims);

// The kernel every family builds: a device step with the config it was made for.
class GpuKernel : public StepKernel {
 public:
  GpuKernel(const GpuConfig& c, std::string impl) : cfg_(c), impl_(std::move(impl)) {}
  std::string impl_name() const override { return impl_; }
  size_t weight_bytes() const override { return weight_bytes_; }

 protected:
  gpuStream_t stream(const ComputeContext& ctx) const { return static_cast<gpuStream_t>(ctx.res.stream); }
  GpuConfig cfg_;
  std::string impl_;
  size_t weight_bytes_ = 0;
};

// Op families of the GPU backend: cheap support answer and kernel creation.
using Query = Support (*)(const GpuConfig&, const StepRequest&);
using Create = Result<std::unique_ptr<StepKernel>> (*)(const GpuConfig&, const StepRequest&);
struct Family {
  Query query;
  Create create;
  bool int8 = false;  // takes int8 / uint8 values (QConv, QuantizeLinear, DequantizeLinear): checks dtypes itself
};
const Family* conv_family(const StepRequest& req);    // gpu_conv.cpp: Conv, FusedConv, QConv, Gemm, MatMul
const Family* ops_family(const StepRequest& req);     // gpu_ops.cpp: pooling, norms, pointwise, Q/DQ, ...
const Family* memops_family(const StepRequest& req);  // gpu_memops.cpp: copies, LayerNorm, reductions

// Support with every present slot in `fmt` (constants: plain, the host format they stay in).
Support support_all(const StepRequest& req, const std::vector<FormatSet>& in, const std::vector<FormatSet>& out);

}  // namespace infera::gpu_backend
