// The strict JSON reader/writer of json.h. Recursive descent with an explicit depth bound; every
// error says where (byte offset) and what was expected.
#include "tune/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace infera::json {

const Value* Value::get(const std::string& key) const {
  if (kind != Kind::kObject) return nullptr;
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return &items[i];
  return nullptr;
}

namespace {

// The length of the valid UTF-8 sequence at s[i], or 0 (overlong, surrogate, > U+10FFFF).
size_t utf8_len(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  const auto c1 = static_cast<unsigned char>(s[i + 1]);
  if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90))
    return 0;
  return n;
}

void put_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

class Parser {
 public:
  Parser(const std::string& t, const Limits& l) : t_(t), lim_(l) {}

  Status document(Value& v) {
    ws();
    Status s = value(v, 0);
    if (!s.is_ok()) return s;
    ws();
    if (i_ != t_.size()) return err("end of the document");
    return Status::ok();
  }

 private:
  Status err(const char* expected) const {
    char b[160];
    if (i_ < t_.size()) {
      const auto c = static_cast<unsigned char>(t_[i_]);
      if (c >= 0x20 && c < 0x7f)
        std::snprintf(b, sizeof b, "JSON: expected %s at byte %zu, found '%c'", expected, i_, c);
      else
        std::snprintf(b, sizeof b, "JSON: expected %s at byte %zu, found byte 0x%02x", expected, i_, c);
    } else {
      std::snprintf(b, sizeof b, "JSON: expected %s at byte %zu, found the end of the text", expected, i_);
    }
    return Status::error(StatusCode::kInvalidInput, b);
  }
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool lit(const char* w) {
    const size_t n = std::strlen(w);
    if (t_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }

  Status value(Value& v, size_t depth) {
    if (++count_ > lim_.max_elements) return Status::error(StatusCode::kInvalidInput, "JSON: too many values");
    if (i_ >= t_.size()) return err("a value");
    const char c = t_[i_];
    if (c == '{' || c == '[') {
      if (depth >= lim_.max_depth) return err("less nesting (depth limit)");
      return c == '{' ? object(v, depth) : array(v, depth);
    }
    if (c == '"') {
      v.kind = Value::Kind::kString;
      return string(v.str);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return num(v);
    if (lit("true")) {
      v.kind = Value::Kind::kBool, v.b = true;
      return Status::ok();
    }
    if (lit("false")) {
      v.kind = Value::Kind::kBool, v.b = false;
      return Status::ok();
    }
    if (lit("null")) {
      v.kind = Value::Kind::kNull;
      return Status::ok();
    }
    return err("a value");
  }

  Status object(Value& v, size_t depth) {
    v.kind = Value::Kind::kObject;
    ++i_;
    ws();
    if (i_ < t_.size() && t_[i_] == '}') return ++i_, Status::ok();
    for (;;) {
      ws();
      if (i_ >= t_.size() || t_[i_] != '"') return err("a member name (string)");
      std::string k;
      Status s = string(k);
      if (!s.is_ok()) return s;
      if (v.keys.size() >= lim_.max_members) return err("fewer members (object size limit)");
      if (v.get(k)) return Status::error(StatusCode::kInvalidInput, "JSON: duplicate member '" + k + "'");
      ws();
      if (i_ >= t_.size() || t_[i_] != ':') return err("':'");
      ++i_;
      ws();
      v.keys.push_back(std::move(k));
      v.items.emplace_back();
      s = value(v.items.back(), depth + 1);
      if (!s.is_ok()) return s;
      ws();
      if (i_ < t_.size() && t_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < t_.size() && t_[i_] == '}') return ++i_, Status::ok();
      return err("',' or '}'");
    }
  }

  Status array(Value& v, size_t depth) {
    v.kind = Value::Kind::kArray;
    ++i_;
    ws();
    if (i_ < t_.size() && t_[i_] == ']') return ++i_, Status::ok();
    for (;;) {
      ws();
      v.items.emplace_back();
      Status s = value(v.items.back(), depth + 1);
      if (!s.is_ok()) return s;
      ws();
      if (i_ < t_.size() && t_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < t_.size() && t_[i_] == ']') return ++i_, Status::ok();
      return err("',' or ']'");
    }
  }

  Status hex4(unsigned& cp) {
    cp = 0;
    for (int k = 0; k < 4; ++k, ++i_) {
      if (i_ >= t_.size()) return err("4 hex digits");
      const char h = t_[i_];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) return err("a hex digit");
      cp = cp * 16 + static_cast<unsigned>(d);
    }
    return Status::ok();
  }

  Status string(std::string& out) {
    ++i_;  // the opening quote
    for (;;) {
      if (out.size() > lim_.max_string) return err("a shorter string (length limit)");
      if (i_ >= t_.size()) return err("'\"' closing the string");
      const auto c = static_cast<unsigned char>(t_[i_]);
      if (c == '"') return ++i_, Status::ok();
      if (c < 0x20) return err("no control character inside a string");
      if (c >= 0x80) {
        const size_t n = utf8_len(t_, i_);
        if (!n) return err("valid UTF-8");
        out.append(t_, i_, n);
        i_ += n;
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++i_;
        continue;
      }
      if (++i_ >= t_.size()) return err("an escape");
      const char e = t_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = 0;
          Status s = hex4(cp);
          if (!s.is_ok()) return s;
          if (cp >= 0xdc00 && cp <= 0xdfff) return err("no lone low surrogate");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            unsigned lo = 0;
            if (!lit("\\u")) return err("a low surrogate after a high one");
            s = hex4(lo);
            if (!s.is_ok()) return s;
            if (lo < 0xdc00 || lo > 0xdfff) return err("a low surrogate after a high one");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          put_utf8(out, cp);
          break;
        }
        default: --i_; return err("a valid escape");
      }
    }
  }

  Status num(Value& v) {
    const size_t start = i_;
    if (t_[i_] == '-') ++i_;
    auto digits = [&] {
      size_t n = 0;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_, ++n;
      return n;
    };
    if (i_ < t_.size() && t_[i_] == '0') {
      ++i_;
    } else if (!digits()) {
      return err("a digit");
    }
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      if (!digits()) return err("a digit after '.'");
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (!digits()) return err("a digit in the exponent");
    }
    if (i_ - start > 64) return Status::error(StatusCode::kInvalidInput, "JSON: number too long");
    const std::string s = t_.substr(start, i_ - start);
    v.kind = Value::Kind::kNumber;
    v.num = std::strtod(s.c_str(), nullptr);
    if (!std::isfinite(v.num)) return Status::error(StatusCode::kInvalidInput, "JSON: number out of range: " + s);
    return Status::ok();
  }

  const std::string& t_;
  const Limits& lim_;
  size_t i_ = 0, count_ = 0;
};

}  // namespace

Result<Value> parse(const std::string& text, const Limits& lim) {
  if (text.size() > lim.max_bytes)
    return Status::error(StatusCode::kInvalidInput, "JSON: text of " + std::to_string(text.size()) +
                                                        " bytes is over the limit of " + std::to_string(lim.max_bytes));
  Value v;
  Parser p(text, lim);
  Status s = p.document(v);
  if (!s.is_ok()) return s;
  return v;
}

std::string quote(const std::string& s) {
  std::string r = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      r += '\\';
      r += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      r += b;
    } else if (c < 0x80) {
      r += static_cast<char>(c);
    } else if (size_t n = utf8_len(s, i)) {
      r.append(s, i, n);
      i += n - 1;
    } else {
      r += "\\ufffd";
    }
  }
  return r + "\"";
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char b[40];
  std::snprintf(b, sizeof b, "%.15g", v);  // the shortest that reads back the same double
  if (std::strtod(b, nullptr) != v) std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

}  // namespace infera::json
