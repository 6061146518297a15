// .npy (format 1.0-3.0, little-endian, C order) and ONNX TensorProto (.pb) tensor files.

#include <cstring>
#include <fstream>
#include <regex>

#include "frontend/onnx/import.h"
#include "infera/infera.h"

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
  return Status::error(path + ": unsupported .npy dtype '" + descr + "' (expected little-endian numeric or bool)");
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

Result<Tensor> load_npy(const std::string& path, const std::string& bytes) {
  auto bad = [&](const std::string& why) { return Status::error(path + ": invalid .npy file: " + why); };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) return bad("missing magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t hlen = 0, hstart = 0;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    hstart = 12;
  } else {
    return bad("unsupported version " + std::to_string(major));
  }
  if (hlen > 65536 || hstart + hlen > bytes.size()) return bad("header length beyond the file");
  std::string header = bytes.substr(hstart, hlen);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']*)'"))) return bad("no 'descr' in header");
  std::string descr = m[1];
  if (!std::regex_search(header, m, std::regex("'fortran_order'\\s*:\\s*(True|False)")))
    return bad("no 'fortran_order' in header");
  if (m[1] == "True") return bad("Fortran order is not supported");
  if (!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)"))) return bad("no 'shape' in header");
  std::vector<int64_t> dims;
  std::string shape_text = m[1];
  std::regex num("\\s*(-?\\d+)\\s*,?");
  for (auto it = std::sregex_iterator(shape_text.begin(), shape_text.end(), num); it != std::sregex_iterator(); ++it) {
    std::string s = (*it)[1];
    if (s.size() > 15) return bad("dimension '" + s + "' too large");
    int64_t d = std::stoll(s);
    if (d < 0) return bad("negative dimension");
    dims.push_back(d);
  }
  auto dt = npy_dtype(descr, path);
  if (!dt.is_ok()) return dt.status();
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d != 0 && n > (int64_t(1) << 40) / d) return bad("shape product overflows");
    n *= d;
  }
  const size_t need = static_cast<size_t>(n) * dtype_size(dt.value());
  const size_t have = bytes.size() - hstart - hlen;
  if (have != need)
    return bad("header shape needs " + std::to_string(need) + " data bytes but the file holds " + std::to_string(have));
  auto t = Tensor::make(dt.value(), dims);
  if (!t.is_ok()) return Status::error(path + ": " + t.message());
  Tensor out = t.take();
  if (need) std::memcpy(out.data(), bytes.data() + hstart + hlen, need);
  return out;
}

}  // namespace

Result<Tensor> load_tensor_file(const std::string& path) {
  auto read = read_binary_file(path, "input file", int64_t(1) << 34);
  if (!read.is_ok()) return read.status();
  const std::string& bytes = read.value();
  if (bytes.size() >= 6 && std::memcmp(bytes.data(), "\x93NUMPY", 6) == 0) return load_npy(path, bytes);
  if (path.size() >= 4 && path.substr(path.size() - 4) == ".npy") return load_npy(path, bytes);
  return tensor_from_pb_bytes(bytes, path);
}

Status save_npy(const std::string& path, const Tensor& t) {
  const char* descr = npy_descr(t.dtype());
  if (!descr) return Status::error(path + ": cannot write dtype " + std::string(dtype_name(t.dtype())) + " to .npy");
  std::string shape = "(";
  for (size_t i = 0; i < t.dims().size(); ++i)
    shape += std::to_string(t.dims()[i]) + (t.dims().size() == 1 ? "," : i + 1 < t.dims().size() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  if (!f) return Status::error(path + ": cannot open for writing");
  const uint16_t hl = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(hl & 0xff));
  f.put(static_cast<char>(hl >> 8));
  f.write(header.data(), header.size());
  f.write(static_cast<const char*>(t.data()), t.nbytes());
  if (!f) return Status::error(path + ": write failed");
  return Status::ok();
}

}  // namespace infera
