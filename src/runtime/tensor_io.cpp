// .npy (format 1.0-3.0, little-endian, C order) and ONNX TensorProto (.pb) tensor files.

#include "runtime/tensor_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "frontend/onnx/import.h"
#include "infera/limits.h"
#include "runtime/fault.h"

namespace infera {

namespace {

Result<DataType> npy_dtype(const std::string& descr, const std::string& path) {
  static const std::pair<const char*, DataType> table[] = {
      {"<f4", DataType::kFloat32}, {"<f8", DataType::kFloat64}, {"<f2", DataType::kFloat16}, {"|i1", DataType::kInt8},
      {"|u1", DataType::kUInt8},   {"<i2", DataType::kInt16},   {"<u2", DataType::kUInt16},  {"<i4", DataType::kInt32},
      {"<u4", DataType::kUInt32},  {"<i8", DataType::kInt64},   {"<u8", DataType::kUInt64},  {"|b1", DataType::kBool},
  };
  for (auto& [d, t] : table)
    if (descr == d) return t;
  return Status::error(path + ": unsupported .npy dtype '" + descr.substr(0, 32) +
                       "' (expected little-endian numeric or bool)");
}

const char* npy_descr(DataType t) {
  switch (t) {
    case DataType::kFloat32: return "<f4";
    case DataType::kFloat64: return "<f8";
    case DataType::kFloat16: return "<f2";
    case DataType::kInt8: return "|i1";
    case DataType::kUInt8: return "|u1";
    case DataType::kInt16: return "<i2";
    case DataType::kUInt16: return "<u2";
    case DataType::kInt32: return "<i4";
    case DataType::kUInt32: return "<u4";
    case DataType::kInt64: return "<i8";
    case DataType::kUInt64: return "<u8";
    case DataType::kBool: return "|b1";
    default: return nullptr;
  }
}

// A cursor over the header text: the grammar is flat (a dict of three scalars, one of them a
// tuple of ints), so a loop per construct suffices; nothing recurses.
class NpyHeaderParser {
 public:
  explicit NpyHeaderParser(const std::string& s) : s_(s) {}

  Status parse(NpyHeader& out) {
    bool seen_descr = false, seen_order = false, seen_shape = false;
    skip_ws();
    if (!eat('{')) return fail("the header is not a dict literal (expected '{')");
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      std::string key;
      Status st = string_literal(key, "a quoted key");
      if (!st.is_ok()) return st;
      skip_ws();
      if (!eat(':')) return fail("expected ':' after key '" + key + "'");
      skip_ws();
      if (key == "descr") {
        if (seen_descr) return fail("key 'descr' appears twice");
        seen_descr = true;
        st = string_literal(out.descr, "a quoted string for 'descr'");
      } else if (key == "fortran_order") {
        if (seen_order) return fail("key 'fortran_order' appears twice");
        seen_order = true;
        st = boolean(out.fortran_order);
      } else if (key == "shape") {
        if (seen_shape) return fail("key 'shape' appears twice");
        seen_shape = true;
        st = shape(out.shape);
      } else {
        return fail("unexpected key '" + key.substr(0, 32) + "' (a .npy header has 'descr', 'fortran_order', 'shape')");
      }
      if (!st.is_ok()) return st;
      skip_ws();
      if (eat(',')) continue;
      if (eat('}')) break;
      return fail("expected ',' or '}' after the value of '" + key + "'");
    }
    skip_ws();
    if (i_ != s_.size()) return fail("unexpected text after the dict");
    if (!seen_descr) return fail("no 'descr' in the header");
    if (!seen_order) return fail("no 'fortran_order' in the header");
    if (!seen_shape) return fail("no 'shape' in the header");
    return Status::ok();
  }

 private:
  Status fail(const std::string& why) const {
    return Status::error(StatusCode::kInvalidInput, why + " (at byte " + std::to_string(i_) + " of the header)");
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\f'))
      ++i_;
  }
  // 'text' or "text" without escapes (numpy never writes any); printable ASCII only.
  Status string_literal(std::string& out, const char* what) {
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return fail(std::string("expected ") + what);
    const char q = s_[i_++];
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) {
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '\\' || c < 0x20 || c > 0x7e) return fail("unsupported character in a string literal");
      ++i_;
    }
    if (i_ >= s_.size()) return fail("unterminated string literal");
    out = s_.substr(start, i_ - start);
    ++i_;
    return Status::ok();
  }
  bool word(const char* w) {
    const size_t n = std::strlen(w);
    if (s_.compare(i_, n, w) != 0) return false;
    // "Truex" is a name, not True.
    if (i_ + n < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_ + n])) || s_[i_ + n] == '_')) return false;
    i_ += n;
    return true;
  }
  Status boolean(bool& out) {
    if (word("True")) {
      out = true;
      return Status::ok();
    }
    if (word("False")) {
      out = false;
      return Status::ok();
    }
    return fail("'fortran_order' must be True or False");
  }
  // A Python int as numpy writes it: decimal digits, no leading zeros ("0" alone), no sign
  // but a '-' reported as a negative dimension.
  Status dimension(int64_t& out) {
    if (eat('-')) {
      std::string digits;
      while (i_ < s_.size() && digits.size() < 20 && std::isdigit(static_cast<unsigned char>(s_[i_])))
        digits += s_[i_++];
      return fail("negative dimension -" + digits + " in 'shape'");
    }
    if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_])))
      return fail("'shape' must be a tuple of integers");
    if (s_[i_] == '0' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))
      return fail("a dimension in 'shape' has a leading zero");
    int64_t v = 0;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      v = v * 10 + (s_[i_] - '0');
      if (v > limits::kMaxTensorElements) return fail("a dimension in 'shape' is larger than 2^40");
      ++i_;
    }
    if (i_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == '_'))
      return fail("'shape' must be a tuple of integers");
    out = v;
    return Status::ok();
  }
  // "()", "(n,)", "(a, b)", "(a, b,)"; "(n)" is an int in Python, not a tuple.
  Status shape(std::vector<int64_t>& out) {
    out.clear();
    if (!eat('(')) return fail("'shape' must be a tuple");
    bool trailing_comma = false;
    for (;;) {
      skip_ws();
      if (eat(')')) break;
      if (static_cast<int>(out.size()) >= limits::kMaxRank)
        return fail("'shape' has more than " + std::to_string(limits::kMaxRank) + " dimensions");
      int64_t d = 0;
      Status st = dimension(d);
      if (!st.is_ok()) return st;
      out.push_back(d);
      skip_ws();
      trailing_comma = eat(',');
      if (trailing_comma) continue;
      skip_ws();
      if (eat(')')) break;
      return fail("expected ',' or ')' in 'shape'");
    }
    if (out.size() == 1 && !trailing_comma) return fail("'shape' (n) is an int, not a tuple: a 1-D shape is (n,)");
    return Status::ok();
  }

  const std::string& s_;
  size_t i_ = 0;
};

// Writes all of [p, p+n) to fd, retrying short writes; false with errno set on failure.
bool write_all(int fd, const char* p, size_t n) {
  if (n > 0 && fault::hit(fault::Kind::kWrite)) {  // injected: a full disk
    errno = ENOSPC;
    return false;
  }
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

Status parse_npy_header(const std::string& text, NpyHeader& out) {
  out = NpyHeader();
  return NpyHeaderParser(text).parse(out);
}

Result<Tensor> tensor_from_npy_bytes(const std::string& bytes, const std::string& path, const limits::Limits& lim) {
  auto bad = [&](const std::string& why) {
    return Status::error(StatusCode::kInvalidInput, path + ": invalid .npy file: " + why);
  };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) return bad("missing magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t hlen = 0, hstart = 0;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    hstart = 12;
  } else {
    return bad("unsupported version " + std::to_string(major));
  }
  if (hlen > limits::kMaxNpyHeaderBytes) return bad("header of " + std::to_string(hlen) + " bytes is too long");
  if (hstart + hlen > bytes.size())
    return bad("header length " + std::to_string(hlen) + " goes beyond the file of " + std::to_string(bytes.size()) +
               " bytes");
  NpyHeader h;
  Status st = parse_npy_header(bytes.substr(hstart, hlen), h);
  if (!st.is_ok()) return bad("header: " + st.message());
  if (h.fortran_order) return bad("Fortran order is not supported");
  if (h.shape.size() > static_cast<size_t>(lim.max_rank))
    return bad("shape of rank " + std::to_string(h.shape.size()) + " is more than the limit of " +
               std::to_string(lim.max_rank) + limit_name("max_rank"));
  auto dt = npy_dtype(h.descr, path);
  if (!dt.is_ok()) return dt.status();
  int64_t n = 0;
  if (!limits::checked_elements(h.shape.data(), h.shape.size(), n) || n > lim.max_tensor_elements) {
    std::string dims;
    for (int64_t d : h.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    return bad("shape (" + dims + ") has more than " + elements_limit_str(lim) + " elements" +
               limit_name("max_tensor_elements"));
  }
  const size_t need = static_cast<size_t>(n) * dtype_size(dt.value());
  const size_t have = bytes.size() - hstart - hlen;
  if (have != need)
    return bad("header shape needs " + std::to_string(need) + " data bytes but the file holds " + std::to_string(have));
  auto t = Tensor::make(dt.value(), h.shape);
  if (!t.is_ok()) return t.status().prefixed(path + ": ");
  Tensor out = t.take();
  if (need) std::memcpy(out.data(), bytes.data() + hstart + hlen, need);
  // numpy stores bool as one byte and writes 0/1, but any byte may be in a file: kernels
  // assume 0/1 (Not(2) would be 253), so normalize here.
  if (out.dtype() == DataType::kBool) {
    uint8_t* p = out.data_as<uint8_t>();
    for (size_t i = 0; i < need; ++i) p[i] = p[i] != 0;
  }
  return out;
}

Result<Tensor> load_tensor_file_limited(const std::string& path, const limits::Limits& lim) {
  Status s = check_limits(lim);
  if (!s.is_ok()) return s;
  auto read = read_binary_file(path, "input file", lim.max_tensor_file_bytes, "max_tensor_file_bytes");
  if (!read.is_ok()) return read.status();
  const std::string& bytes = read.value();
  if (bytes.size() >= 6 && std::memcmp(bytes.data(), "\x93NUMPY", 6) == 0)
    return tensor_from_npy_bytes(bytes, path, lim);
  if (path.size() >= 4 && path.substr(path.size() - 4) == ".npy") return tensor_from_npy_bytes(bytes, path, lim);
  return tensor_from_pb_bytes(bytes, path, lim);
}

Result<Tensor> load_tensor_file(const std::string& path) { return load_tensor_file_limited(path, limits::Limits()); }

// Written to a new temporary in the same folder (O_EXCL: never through a link planted there),
// then renamed over path: readers see the old file or the whole new one, never half of it, and
// a symlink at path is replaced, not followed.
Status save_npy(const std::string& path, const Tensor& t) {
  const char* descr = npy_descr(t.dtype());
  if (!descr)
    return Status::error(StatusCode::kInvalidInput,
                         path + ": cannot write dtype " + std::string(dtype_name(t.dtype())) + " to .npy");
  if (!t.device().is_cpu() || (!t.data() && t.nbytes()))
    return Status::error(StatusCode::kInvalidInput, path + ": save_npy needs a host tensor with data");
  std::string shape = "(";
  for (size_t i = 0; i < t.dims().size(); ++i)
    shape += std::to_string(t.dims()[i]) + (t.dims().size() == 1 ? "," : i + 1 < t.dims().size() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  const uint16_t hl = static_cast<uint16_t>(header.size());
  std::string prefix("\x93NUMPY\x01\x00", 8);
  prefix += static_cast<char>(hl & 0xff);
  prefix += static_cast<char>(hl >> 8);
  prefix += header;

  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty() || base == "." || base == "..")
    return Status::error(StatusCode::kInvalidInput, path + ": not a file name");
  std::random_device rd;
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(rd()));
    tmp = dir + "/." + base.substr(0, 200) + "." + suffix + ".tmp";
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0)
    return Status::error(StatusCode::kIo, path + ": cannot create a file in '" + dir + "': " + strerror(errno));
  bool ok = write_all(fd, prefix.data(), prefix.size()) &&
            write_all(fd, static_cast<const char*>(t.data()), t.nbytes()) && ::fsync(fd) == 0;
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    return Status::error(StatusCode::kIo, path + ": cannot replace the file: " + strerror(err));
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return Status::error(StatusCode::kIo, path + ": write failed: " + strerror(err));
  }
  return Status::ok();
}

}  // namespace infera
