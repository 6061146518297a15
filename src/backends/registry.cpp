// The backends of this build, and the host memory every CPU backend shares. Adding a backend:
// one line in backends() below (and its folder).
#include <cstdlib>
#include <cstring>

#include "backends/backend.h"
#include "backends/cpu/dnnl_backend.h"
#include "backends/gpu/gpu_backend.h"
#include "backends/ref/ref_backend.h"
#include "runtime/fault.h"

namespace infera {

Result<void*> Backend::allocate(size_t bytes) const {
  const size_t a = alignment();
  void* p = fault::hit(fault::Kind::kAlloc) ? nullptr : std::aligned_alloc(a, std::max(a, (bytes + a - 1) / a * a));
  if (!p)
    return Status::error(StatusCode::kOutOfMemory,
                         std::string(name()) + ": out of memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void Backend::deallocate(void* p) const { std::free(p); }

Result<void*> Backend::allocate_host(size_t bytes) const {
  void* p =
      fault::hit(fault::Kind::kAlloc) ? nullptr : std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
  if (!p)
    return Status::error(StatusCode::kOutOfMemory, "out of host memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void Backend::deallocate_host(void* p) const { std::free(p); }

Status Backend::copy(void* dst, const void* src, size_t bytes) const {
  if (bytes) std::memcpy(dst, src, bytes);
  return Status::ok();
}

namespace {

const std::vector<std::shared_ptr<const Backend>>& backends() {
  static const std::vector<std::shared_ptr<const Backend>> all = {
      make_dnnl_backend(),
      make_ref_backend(),
  };
  return all;
}

}  // namespace

Result<std::shared_ptr<const Backend>> find_backend(const std::string& name, Device device,
                                                    const BackendOptions& options) {
  if (device.is_gpu()) {
    if (name != "gpu")
      return Status::error(StatusCode::kInvalidInput,
                           "unknown backend '" + name + "' for device " + device.str() + " (available: gpu)");
    return make_gpu_backend(device, options);  // one per session: it holds the device and precision
  }
  for (const auto& b : backends())
    if (name == b->name() && device.kind == b->device().kind) return b;
  std::string names;
  for (const auto& b : backends())
    if (device.kind == b->device().kind) names += (names.empty() ? "" : ", ") + std::string(b->name());
  return Status::error(StatusCode::kInvalidInput,
                       "unknown backend '" + name + "' for device " + device.str() + " (available: " + names + ")");
}

std::vector<std::string> backend_names() {
  std::vector<std::string> r;
  for (const auto& b : backends()) r.push_back(b->name());
  r.push_back("gpu");
  return r;
}

std::vector<std::string> default_backends(Device device) {
  if (device.is_gpu()) return {"gpu"};  // then the CPU ones: fallbacks with copies between
  std::vector<std::string> r;
  for (const auto& b : backends())
    if (b->device().kind == device.kind) r.push_back(b->name());
  return r;
}

std::vector<BackendInfo> available_backends() {
  std::vector<BackendInfo> r;
  for (const auto& b : backends()) r.push_back(b->info());
  for (BackendInfo& b : gpu_backend_infos()) r.push_back(std::move(b));
  return r;
}

}  // namespace infera
