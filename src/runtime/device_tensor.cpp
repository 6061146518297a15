// Tensors in device memory (Tensor::make_on) and copies between host and devices
// (copy_tensor), through the device's backend: the public API names no vendor.
#include "backends/backend.h"
#include "infera/infera.h"

#include <cstring>

namespace infera {

Result<Tensor> Tensor::make_on(Device device, DataType dtype, std::vector<int64_t> dims) {
  if (device.is_cpu()) return make(dtype, std::move(dims));
  auto b = find_backend("gpu", device);
  if (!b.is_ok()) return b.status();
  Tensor shape_only = view(dtype, dims, nullptr, device);
  if (!dtype_supported(dtype))
    return Status::error(StatusCode::kUnsupported, std::string("dtype ") + dtype_name(dtype));
  for (int64_t d : dims)
    if (d < 0 || (d != 0 && shape_only.numel() / d > (int64_t(1) << 40)))
      return Status::error(StatusCode::kInvalidInput, "make_on: bad dims");
  auto mem = b.value()->allocate(std::max<size_t>(shape_only.nbytes(), 1));
  if (!mem.is_ok()) return mem.status();
  std::shared_ptr<const Backend> owner = b.take();
  Tensor t = view(dtype, std::move(dims), mem.value(), device);
  t.storage_ = std::shared_ptr<void>(mem.value(), [owner](void* p) { owner->deallocate(p); });
  return t;
}

Status copy_tensor(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.dims() != dst.dims())
    return Status::error(StatusCode::kInvalidInput, "copy_tensor: source and destination differ in dtype or dims");
  if (!src.nbytes()) return Status::ok();
  if (!src.data() || !dst.data()) return Status::error(StatusCode::kInvalidInput, "copy_tensor: a tensor has no data");
  const Device d = src.device().is_cpu() ? dst.device() : src.device();
  if (d.is_cpu()) {
    std::memcpy(dst.data(), src.data(), src.nbytes());
    return Status::ok();
  }
  auto b = find_backend("gpu", d);
  if (!b.is_ok()) return b.status();
  return b.value()->copy(dst.data(), src.data(), src.nbytes());
}

}  // namespace infera
