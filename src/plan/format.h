// The one vocabulary of memory formats, shared by every backend and the planner. A format says
// how a value's elements are laid out in its buffer; the device says where the buffer is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "infera/infera.h"

namespace infera {

enum class Format : uint8_t {
  kPlain = 0,  // dense row-major in the ONNX dim order (NCHW for 4-D activations)
  kNhwc,       // 4-D channels-last (the GPU's activation layout)
  kNChw8c,     // oneDNN blocked: channels in blocks of 8, padded with zeros (AVX2)
  kNChw16c,    // oneDNN blocked: channels in blocks of 16, padded with zeros (AVX-512)
  kNhwcF16,    // kNhwc with float16 storage (a float value held at half precision: the GPU's fp16)
  kPlainF16,   // kPlain with float16 storage
  kCount,
};

// A set of formats (bit i = Format i).
using FormatSet = uint32_t;
constexpr FormatSet format_bit(Format f) { return FormatSet(1) << static_cast<unsigned>(f); }
constexpr bool format_in(FormatSet s, Format f) { return (s & format_bit(f)) != 0; }
constexpr FormatSet kPlainOnly = format_bit(Format::kPlain);

const char* format_name(Format f);  // "plain", "nhwc", "nChw8c", "nChw16c", "nhwc-f16", "plain-f16"
// Whether a value of this rank can be held in f (plain: any rank; the others: rank 4).
bool format_applies(Format f, int rank);
// Bytes a value of dtype and dims takes in f (blocked formats pad the channels to the block);
// SIZE_MAX on overflow past 2^62.
size_t format_bytes(Format f, DataType dtype, const std::vector<int64_t>& dims);
// The channel block of a blocked format (8 or 16; 1 for the others).
int format_channel_block(Format f);
// Formats whose storage is float16 whatever the value's dtype (float values only).
inline bool format_is_f16(Format f) { return f == Format::kNhwcF16 || f == Format::kPlainF16; }

}  // namespace infera
