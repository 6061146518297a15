// A Graph as bytes (little-endian, docs/saved_plans.md "graph section"): values with dtype,
// symbolic shape and constant bytes, nodes with op, domain, value ids and attributes, the graph's
// inputs, outputs and model fields. read_graph takes untrusted bytes: every count, length, id,
// enum and size is checked against the limits and the bytes left before it is used.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "graph/graph.h"
#include "infera/limits.h"

namespace infera {

class ByteWriter {
 public:
  std::string out;
  void u8(uint8_t v) { out.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, 4); }
  void i32(int32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i64(int64_t v) { raw(&v, 8); }
  void f32(float v) { raw(&v, 4); }
  void f64(double v) { raw(&v, 8); }
  void str(const std::string& s) {
    u64(s.size());
    out.append(s);
  }
  void raw(const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }

 private:
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the format is little-endian; so is every target");
};

// Reads from [p, end). The first failure is kept (what(), with the offset); later reads return
// zeros, so a caller may check ok() after a group of reads.
class ByteReader {
 public:
  ByteReader(const char* p, size_t n, size_t base = 0) : begin_(p), p_(p), end_(p + n), base_(base) {}
  bool ok() const { return err_.empty(); }
  const std::string& what() const { return err_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  size_t offset() const { return base_ + static_cast<size_t>(p_ - begin_); }
  void fail(const std::string& why) {
    if (err_.empty()) err_ = "at byte " + std::to_string(offset()) + ": " + why;
    p_ = end_;
  }
  uint8_t u8() { return get<uint8_t>(); }
  uint32_t u32() { return get<uint32_t>(); }
  int32_t i32() { return get<int32_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  int64_t i64() { return get<int64_t>(); }
  float f32() { return get<float>(); }
  double f64() { return get<double>(); }
  // A string of at most max bytes (the length is checked before anything is allocated).
  std::string str(size_t max, const char* what);
  // A count of items of at least min_item_bytes each, at most max: checked against the bytes left.
  size_t count(uint64_t max, size_t min_item_bytes, const char* what);
  // n bytes (checked against the bytes left).
  const char* bytes(uint64_t n, const char* what);

 private:
  template <class T>
  T get() {
    T v{};
    if (left() < sizeof(T)) {
      fail("the file ends inside a field");
      return v;
    }
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  const char *begin_, *p_, *end_;
  size_t base_;
  std::string err_;
};

void write_graph(ByteWriter& w, const Graph& g);
// Rebuilds the graph (values, nodes, ids; no typed ops, no inference). Checks what the importer
// checks of a graph's structure: ids in range, each value produced once, every node input defined
// by an earlier node, a graph input or a constant (the saved order is kept as it is), unique
// value and node names. Errors are plain messages (the caller adds the file name).
Status read_graph(ByteReader& r, const limits::Limits& lim, Graph& g);

// A tensor (dtype, dims, bytes) as write_graph stores constants and tensor attributes.
void write_tensor(ByteWriter& w, const Tensor& t);
Result<Tensor> read_tensor(ByteReader& r, const limits::Limits& lim, const std::string& what);

}  // namespace infera
