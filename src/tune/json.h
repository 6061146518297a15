// A small strict JSON reader and writer for the files infera keeps (the performance database).
// The reader takes untrusted text: RFC 8259 only (no comments, no trailing commas, no NaN),
// bounded depth, string length and element count, valid UTF-8; one error message naming the
// offset and what was expected. The CLI's report writers do not use it (they print directly).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "infera/infera.h"

namespace infera::json {

struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Value> items;       // kArray: the elements; kObject: the members' values
  std::vector<std::string> keys;  // kObject: the members' names, in file order (duplicates refused)

  bool is(Kind k) const { return kind == k; }
  const Value* get(const std::string& key) const;  // kObject member, or null
};

struct Limits {
  size_t max_bytes = size_t{64} << 20;  // whole text
  size_t max_depth = 16;
  size_t max_string = 4096;       // bytes of one decoded string
  size_t max_elements = 4 << 20;  // values in the whole document
  size_t max_members = 1024;      // members of one object (duplicates are looked for linearly)
};

// Parses the whole text (one value, surrounded only by whitespace).
Result<Value> parse(const std::string& text, const Limits& lim = {});

// Writers: a JSON string literal (invalid UTF-8 bytes become U+FFFD) and a number (finite only;
// enough digits to read back the same double).
std::string quote(const std::string& s);
std::string number(double v);

}  // namespace infera::json
