#include "plan/format.h"

#include <cstdint>

namespace infera {

const char* format_name(Format f) {
  switch (f) {
    case Format::kPlain: return "plain";
    case Format::kNhwc: return "nhwc";
    case Format::kNChw8c: return "nChw8c";
    case Format::kNChw16c: return "nChw16c";
    case Format::kNhwcF16: return "nhwc-f16";
    case Format::kPlainF16: return "plain-f16";
    case Format::kCount: break;
  }
  return "?";
}

bool format_applies(Format f, int rank) { return f == Format::kPlain || f == Format::kPlainF16 || rank == 4; }

int format_channel_block(Format f) { return f == Format::kNChw8c ? 8 : f == Format::kNChw16c ? 16 : 1; }

size_t format_bytes(Format f, DataType dtype, const std::vector<int64_t>& dims) {
  const int64_t block = format_channel_block(f);
  unsigned __int128 n = format_is_f16(f) ? 2 : dtype_size(dtype);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i];
    if (d < 0) return 0;
    if (i == 1 && dims.size() == 4 && block > 1) d = (d + block - 1) / block * block;
    n *= static_cast<uint64_t>(d);
    if (n > (static_cast<unsigned __int128>(1) << 62)) return SIZE_MAX;
  }
  return static_cast<size_t>(n);
}

}  // namespace infera
