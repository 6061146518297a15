// The small public-API pieces that belong to no subsystem: version, Status, Device, Precision.
#include <algorithm>
#include <cstdio>

#include "infera/infera.h"

#ifndef INFERA_VERSION_STRING
#error "INFERA_VERSION_STRING comes from CMake (project VERSION)"
#endif

namespace infera {

const char* version() { return INFERA_VERSION_STRING; }

const char* status_code_name(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidModel: return "invalid model";
    case StatusCode::kInvalidInput: return "invalid input";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kOutOfMemory: return "out of memory";
    case StatusCode::kDeviceError: return "device error";
    case StatusCode::kIo: return "i/o error";
    case StatusCode::kInternal: return "internal error";
  }
  return "internal error";
}

namespace {

// Length of the valid UTF-8 sequence at s[i] (2-4), or 0 when it is not one or encodes a C1
// control (U+0080..U+009F, which some terminals obey).
size_t utf8_sequence(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (n == 2 && c == 0xC2 && b(i + 1) < 0xA0) return 0;   // C1 controls
  if (n == 3 && c == 0xE0 && b(i + 1) < 0xA0) return 0;   // overlong
  if (n == 3 && c == 0xED && b(i + 1) >= 0xA0) return 0;  // surrogates
  if (n == 4 && c == 0xF0 && b(i + 1) < 0x90) return 0;   // overlong
  if (n == 4 && c == 0xF4 && b(i + 1) >= 0x90) return 0;  // beyond U+10FFFF
  return n;
}

// One safe line: controls and bytes that are not valid UTF-8 become \xNN; capped in length.
// Idempotent (its output has nothing left to escape), so wrapping a message again is harmless.
std::string one_safe_line(std::string msg) {
  bool clean = msg.size() <= Status::kMaxMessage;
  for (size_t i = 0; clean && i < msg.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(msg[i]);
    clean = c >= 0x20 && c != 0x7F && c < 0x80;
  }
  if (clean) return msg;
  std::string out;
  out.reserve(std::min(msg.size(), Status::kMaxMessage) + 16);
  for (size_t i = 0; i < msg.size() && out.size() < Status::kMaxMessage;) {
    const unsigned char c = static_cast<unsigned char>(msg[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += msg[i++];
    } else if (size_t n = c >= 0x80 ? utf8_sequence(msg, i) : 0) {
      out.append(msg, i, n);
      i += n;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
      ++i;
    }
  }
  if (out.size() >= Status::kMaxMessage || out.size() < msg.size()) {
    // Cut back to a character boundary before the cap, then say how much was dropped.
    if (out.size() > Status::kMaxMessage - 40) {
      size_t cut = Status::kMaxMessage - 40;
      while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
      out.resize(cut);
      out += "... (message truncated)";
    }
  }
  return out;
}

}  // namespace

Status Status::error(StatusCode code, std::string msg) {
  Status s;
  s.code_ = code == StatusCode::kOk ? StatusCode::kInternal : code;
  s.msg_ = one_safe_line(std::move(msg));
  return s;
}

Status Status::error(std::string msg) {
  Status s = error(StatusCode::kInternal, std::move(msg));
  s.code_ = kUnset;
  return s;
}

Status Status::prefixed(const std::string& prefix) const {
  if (is_ok()) return *this;
  Status s = error(StatusCode::kInternal, prefix + msg_);
  s.code_ = code_;
  return s;
}

Status Status::or_code(StatusCode c) const {
  Status s = *this;
  if (s.code_ == kUnset) s.code_ = c;
  return s;
}

std::string Device::str() const { return is_cpu() ? "cpu" : "gpu:" + std::to_string(index); }

Result<Device> Device::parse(const std::string& s) {
  if (s == "cpu") return Device::cpu();
  if (s == "gpu") return Device::gpu(0);
  if (s.rfind("gpu:", 0) == 0 && s.size() > 4 && s.size() <= 7) {
    int idx = 0;
    for (size_t i = 4; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') idx = -1;
      if (idx >= 0) idx = idx * 10 + (s[i] - '0');
    }
    if (idx >= 0) return Device::gpu(idx);
  }
  return Status::error(StatusCode::kInvalidInput, "unknown device '" + s + "' (expected cpu, gpu or gpu:N)");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kFp16: return "fp16";
    case Precision::kInt8: return "int8";
    case Precision::kMixed: return "mixed";
  }
  return "fp32";
}

Result<Precision> parse_precision(const std::string& s) {
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kInt8, Precision::kMixed})
    if (s == precision_name(p)) return p;
  return Status::error(StatusCode::kInvalidInput, "unknown precision '" + s + "' (expected fp32, fp16, int8 or mixed)");
}

}  // namespace infera
