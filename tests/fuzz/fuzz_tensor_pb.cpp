// libFuzzer target: the bytes are a serialized ONNX TensorProto (a .pb tensor file), decoded in
// memory (no model folder, so external data must be refused). A decoded tensor must hold every
// byte it claims, within the limits, with bool bytes 0/1. Build and run: bash tests/fuzz/build.sh,
// then bash tests/fuzz/run.sh tensor_pb 600.
#include <cstdint>
#include <string>

#include "frontend/onnx/import.h"
#include "infera/limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto t = infera::tensor_from_pb_bytes(bytes, "fuzz.pb");
  if (!t.is_ok()) {
    if (t.message().empty()) __builtin_trap();
    return 0;
  }
  const infera::Tensor& x = t.value();
  if (x.rank() > infera::limits::kMaxRank) __builtin_trap();
  const auto* p = static_cast<const uint8_t*>(x.data());
  volatile uint8_t acc = 0;
  for (size_t i = 0; i < x.nbytes(); ++i) acc = acc ^ p[i];  // ASan: every byte is there
  if (x.dtype() == infera::DataType::kBool)
    for (size_t i = 0; i < x.nbytes(); ++i)
      if (p[i] > 1) __builtin_trap();
  return 0;
}
