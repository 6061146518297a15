// A vendor-library kernel (cuDNN engine config, cuBLASLt algorithm) offered as one more candidate
// next to ours (kernels.h's Candidate): the backend times it once per layer at plan build and keeps
// the faster. Shared by dnn.h and blas.h; names no vendor API, so it builds everywhere.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace infera::gpu {

struct VendorCandidate {
  std::string name;            // "cudnn_eng<id>..." / "cublaslt_a<id>...": what the plan report shows
  size_t workspace_bytes = 0;  // device scratch its run needs (pass at least this much)
  std::shared_ptr<void> plan;  // opaque: the library's built plan, shared by copies of the candidate
};

// Candidates needing more device scratch than this are not offered (one run context holds the
// largest of its layers' workspaces, and there may be several contexts).
inline constexpr size_t kVendorMaxWorkspace = size_t{64} << 20;

}  // namespace infera::gpu
