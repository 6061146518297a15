// Output comparison for `infera check`: every dtype the engine produces is compared (floats
// within atol + rtol*|want|, NaN matching NaN; integers and bools exactly); any other dtype is a
// failure, never a pass.
#include <algorithm>
#include <cmath>

#include "compare.h"

namespace infera::cli {

namespace {

enum class Kind { kFloat, kSigned, kUnsigned, kBool, kNone };

Kind kind_of(DataType t) {
  switch (t) {
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kFloat16:
    case DataType::kBFloat16: return Kind::kFloat;
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64: return Kind::kSigned;
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32:
    case DataType::kUInt64: return Kind::kUnsigned;
    case DataType::kBool: return Kind::kBool;
    default: return Kind::kNone;
  }
}

// Integers are read at full width: through a double, int64 values above 2^53 would compare equal.
int64_t signed_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kInt8: return t.data_as<int8_t>()[i];
    case DataType::kInt16: return t.data_as<int16_t>()[i];
    case DataType::kInt32: return t.data_as<int32_t>()[i];
    default: return t.data_as<int64_t>()[i];
  }
}

uint64_t unsigned_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kUInt8: return t.data_as<uint8_t>()[i];
    case DataType::kUInt16: return t.data_as<uint16_t>()[i];
    case DataType::kUInt32: return t.data_as<uint32_t>()[i];
    default: return t.data_as<uint64_t>()[i];
  }
}

std::string index_str(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k] > 0) {
      idx[k] = flat % dims[k];
      flat /= dims[k];
    }
  }
  std::string s = "[";
  for (size_t k = 0; k < idx.size(); ++k) s += (k ? "," : "") + std::to_string(idx[k]);
  return s + "]";
}

std::string num_str(double v) {
  char b[40];
  snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// A tolerance as the user would write it: 1e-5, 1e-3, 0.5 (not 1e-05, 0.001).
std::string short_g(double v) {
  char b[40];
  const bool sci = v != 0 && (std::fabs(v) < 0.01 || std::fabs(v) >= 1e5);
  snprintf(b, sizeof b, sci ? "%.6e" : "%g", v);
  std::string s = b;
  if (!sci) return s;
  size_t e = s.find('e');
  std::string mant = s.substr(0, e), ex = s.substr(e + 1);
  if (mant.find('.') != std::string::npos) {
    mant.erase(mant.find_last_not_of('0') + 1);
    if (mant.back() == '.') mant.pop_back();
  }
  const char sign = ex[0];
  ex = ex.substr(1);
  ex.erase(0, std::min(ex.find_first_not_of('0'), ex.size() - 1));
  return mant + "e" + (sign == '-' ? "-" : "") + ex;
}

}  // namespace

Comparison compare_tensors(const Tensor& got, const Tensor& want, double rtol, double atol) {
  Comparison c;
  c.count = want.numel();
  if (got.dtype() != want.dtype()) {
    c.ok = false;
    c.why = std::string("dtype ") + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
    return c;
  }
  if (got.dims() != want.dims()) {
    c.ok = false;
    c.why = "shape " + shape_str(got.dims()) + ", expected " + shape_str(want.dims());
    return c;
  }
  const Kind kind = kind_of(want.dtype());
  if (kind == Kind::kNone) {
    c.ok = false;
    c.why = std::string("cannot compare dtype ") + dtype_name(want.dtype());
    return c;
  }
  std::string got_first, want_first;
  for (int64_t i = 0; i < c.count; ++i) {
    bool bad = false;
    double diff = 0, wabs = 0;
    std::string gs, ws;
    if (kind == Kind::kFloat) {
      auto g = got.element(i), w = want.element(i);
      if (!g.is_ok() || !w.is_ok()) {
        c.ok = false;
        c.why = (g.is_ok() ? w : g).message();
        return c;
      }
      const double gv = g.value(), wv = w.value();
      if (std::isnan(wv) || std::isnan(gv)) {
        bad = std::isnan(wv) != std::isnan(gv);
      } else if (std::isinf(wv) || std::isinf(gv)) {
        bad = gv != wv;
      } else {
        diff = std::fabs(gv - wv);
        wabs = std::fabs(wv);
        bad = diff > atol + rtol * wabs;
      }
      if (bad) gs = num_str(gv), ws = num_str(wv);
    } else if (kind == Kind::kSigned) {
      const int64_t g = signed_at(got, i), w = signed_at(want, i);
      bad = g != w;
      diff = std::fabs(static_cast<double>(g) - static_cast<double>(w));
      wabs = std::fabs(static_cast<double>(w));
      if (bad) gs = std::to_string(g), ws = std::to_string(w);
    } else if (kind == Kind::kUnsigned) {
      const uint64_t g = unsigned_at(got, i), w = unsigned_at(want, i);
      bad = g != w;
      diff = std::fabs(static_cast<double>(g) - static_cast<double>(w));
      wabs = static_cast<double>(w);
      if (bad) gs = std::to_string(g), ws = std::to_string(w);
    } else {
      const bool g = got.data_as<uint8_t>()[i] != 0, w = want.data_as<uint8_t>()[i] != 0;
      bad = g != w;
      diff = bad ? 1 : 0;
      wabs = w ? 1 : 0;
      if (bad) gs = g ? "true" : "false", ws = w ? "true" : "false";
    }
    c.max_abs = std::max(c.max_abs, diff);
    if (wabs > 0) c.max_rel = std::max(c.max_rel, diff / wabs);
    if (bad) {
      if (c.outside++ == 0) {
        c.first = i;
        got_first = gs;
        want_first = ws;
      }
    }
  }
  if (c.outside) {
    c.ok = false;
    const std::string tol = "outside atol " + short_g(atol) + " + rtol " + short_g(rtol) + "\xc2\xb7|ref|";
    c.why =
        std::to_string(c.outside) + "/" + std::to_string(c.count) + " elements " +
        (kind == Kind::kFloat ? tol : std::string("differ (") + dtype_name(want.dtype()) + " is compared exactly)") +
        "; first at " + index_str(c.first, want.dims()) + ": got " + got_first + ", want " + want_first;
  }
  return c;
}

}  // namespace infera::cli
