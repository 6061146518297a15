// available_backends(): what `infera doctor` and tools show about each backend.
#include "backends/cpu/backend.h"
#include "infera/infera.h"

namespace infera {

std::vector<BackendInfo> available_backends() {
  std::vector<BackendInfo> r;
  BackendInfo dnnl;
  dnnl.name = "dnnl";
  dnnl.device = "cpu";
  dnnl.available = true;
  dnnl.details = dnnl_describe();
  dnnl.version = dnnl.details.substr(0, dnnl.details.find(','));
  r.push_back(dnnl);
  BackendInfo ref;
  ref.name = "ref";
  ref.device = "cpu";
  ref.available = true;
  ref.details = "reference kernels of every op (src/ops)";
  r.push_back(ref);
  return r;
}

}  // namespace infera
