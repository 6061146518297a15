// The CPU-only build (INFERA_GPU=off): no GPU backend, said clearly.
#include "backends/gpu/gpu_backend.h"

namespace infera {

Result<std::shared_ptr<const Backend>> make_gpu_backend(Device device, const BackendOptions&) {
  return Status::error(StatusCode::kUnsupported, "device " + device.str() +
                                                     " is not available: this build has no GPU backend "
                                                     "(configure with -DINFERA_GPU=cuda or -DINFERA_GPU=hip)");
}

std::vector<BackendInfo> gpu_backend_infos() {
  BackendInfo b;
  b.name = "gpu";
  b.device = "gpu";
  b.available = false;
  b.details = "this build has no GPU backend (configure with -DINFERA_GPU=cuda or -DINFERA_GPU=hip)";
  return {b};
}

}  // namespace infera
