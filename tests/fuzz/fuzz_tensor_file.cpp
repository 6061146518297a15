// libFuzzer target: the bytes are a tensor file (.npy when they start with the npy magic, else an
// ONNX TensorProto .pb), written to a temp file and read with load_tensor_file.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "infera/infera.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/infera_fuzz_XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d ? d : "/tmp");
  }();
  const bool npy = size >= 6 && std::memcmp(data, "\x93NUMPY", 6) == 0;
  const std::string path = dir + (npy ? "/t.npy" : "/t.pb");
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  auto t = infera::load_tensor_file(path);
  if (t.is_ok()) {
    // Touch every byte: a tensor that says it holds N bytes must hold them.
    const auto* p = static_cast<const uint8_t*>(t.value().data());
    volatile uint8_t acc = 0;
    for (size_t i = 0; i < t.value().nbytes(); ++i) acc = acc ^ p[i];
  } else if (t.message().empty()) {
    __builtin_trap();
  }
  std::remove(path.c_str());
  return 0;
}
