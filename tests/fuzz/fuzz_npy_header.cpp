// libFuzzer target: the bytes are the header text of a .npy file (what follows the length field).
// parse_npy_header must refuse or accept without crashing, in time linear in the length; what it
// accepts must be a valid shape, and a whole file made of that header (with the data it asks for,
// when small) must decode to that shape. Build and run: bash tests/fuzz/build.sh, then
// bash tests/fuzz/run.sh npy_header 600.
#include <cstdint>
#include <cstring>
#include <string>

#include "infera/limits.h"
#include "runtime/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  infera::NpyHeader h;
  infera::Status st = infera::parse_npy_header(text, h);
  if (!st.is_ok()) {
    if (st.message().empty()) __builtin_trap();
    return 0;
  }
  if (h.shape.size() > static_cast<size_t>(infera::limits::kMaxRank)) __builtin_trap();
  int64_t n = 1;
  for (int64_t d : h.shape) {
    if (d < 0) __builtin_trap();
    if (d != 0 && n > (int64_t(1) << 20) / d) return 0;  // too large to build a file for
    n *= d;
  }
  if (text.size() > 65535) return 0;
  // The same header inside a v1.0 file with exactly the bytes it asks for (1-byte dtypes only:
  // the dtype decides the size and most descr strings are refused anyway).
  if (h.descr != "|u1" && h.descr != "|i1" && h.descr != "|b1") return 0;
  std::string file("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(text.size() & 0xff);
  file += static_cast<char>(text.size() >> 8);
  file += text;
  file.append(static_cast<size_t>(n), '\x02');
  auto t = infera::tensor_from_npy_bytes(file, "fuzz.npy");
  if (h.fortran_order) {
    if (t.is_ok()) __builtin_trap();  // Fortran order is refused
    return 0;
  }
  if (!t.is_ok() || t.value().dims() != h.shape) __builtin_trap();
  if (h.descr == "|b1")
    for (int64_t i = 0; i < n; ++i)
      if (t.value().data_as<uint8_t>()[i] != 1) __builtin_trap();  // bool bytes read as 0/1
  return 0;
}
