// The kernel library's result: nullptr on success, else a static one-line message (a literal of
// this library or the GPU runtime's own error string), so no call allocates or can fail to report.
#pragma once

namespace infera::gpu {

struct Status {
  const char* error = nullptr;
  bool ok() const { return error == nullptr; }
  static Status success() { return {}; }
};

}  // namespace infera::gpu
