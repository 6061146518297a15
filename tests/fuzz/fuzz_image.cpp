// libFuzzer target: the bytes are a calibration image (tools/cli/image_decode.cpp: JPEG through
// libjpeg-turbo, PNG through libpng, with our setjmp/longjmp error handlers). decode_image must refuse
// (with a message) or decode without crashing, in bounded time and memory (a 4M-pixel cap here);
// what it decodes has the size it states, in the channels asked for. The first byte picks gray or RGB.
// Build and run: bash tests/fuzz/build.sh, then bash tests/fuzz/run.sh image 600.
#include <cstdint>
#include <string>

#include "image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const infera::cli::ImageColor color = data[0] & 1 ? infera::cli::ImageColor::kGray : infera::cli::ImageColor::kRgb;
  auto r = infera::cli::decode_image(data + 1, size - 1, "fuzz", color, int64_t(1) << 22);
  if (!r.is_ok()) {
    if (r.status().message().empty()) __builtin_trap();
    return 0;
  }
  const infera::cli::Image& im = r.value();
  const int want = color == infera::cli::ImageColor::kGray ? 1 : 3;
  if (im.channels != want || im.width <= 0 || im.height <= 0 || im.width * im.height > (int64_t(1) << 22) ||
      im.pixels.size() != static_cast<size_t>(im.width * im.height * im.channels))
    __builtin_trap();
  return 0;
}
