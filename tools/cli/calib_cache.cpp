// The calibration cache reader of `infera quantize` / `infera eval`: a small strict JSON reader
// of the one shape write_calib_cache (calib_data.cpp) writes. In its own file so that the fuzz
// target (tests/fuzz/fuzz_calib_cache.cpp) links it without the rest of the CLI.
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "calib.h"

namespace infera::cli {

// ------------------------------------------------------------------ cache (a small JSON reader)
namespace {

struct Json {
  const std::string& s;
  size_t i = 0;
  std::string err;
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  }
  bool fail(const std::string& m) {
    if (err.empty()) err = m + " at byte " + std::to_string(i);
    return false;
  }
  bool lit(char c) {
    ws();
    if (i < s.size() && s[i] == c) return ++i, true;
    return fail(std::string("expected '") + c + "'");
  }
  bool str(std::string& out) {
    ws();
    if (i >= s.size() || s[i] != '"') return fail("expected a string");
    ++i;
    out.clear();
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\') {
        if (++i >= s.size()) break;
        const char c = s[i];
        out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
      } else {
        out += s[i];
      }
      ++i;
    }
    if (i >= s.size()) return fail("unterminated string");
    ++i;
    return true;
  }
  bool num(double& v) {
    ws();
    const char* b = s.c_str() + i;
    char* e = nullptr;
    v = std::strtod(b, &e);
    if (e == b) return fail("expected a number");
    i += e - b;
    return true;
  }
  // Calls f() for each element of an array; f reads it.
  template <class F>
  bool array(F f) {
    if (!lit('[')) return false;
    ws();
    if (i < s.size() && s[i] == ']') return ++i, true;
    for (;;) {
      if (!f()) return false;
      ws();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      return lit(']');
    }
  }
  // Calls f(key) for each member of an object; f reads the value.
  template <class F>
  bool object(F f) {
    if (!lit('{')) return false;
    ws();
    if (i < s.size() && s[i] == '}') return ++i, true;
    for (;;) {
      std::string k;
      if (!str(k) || !lit(':') || !f(k)) return false;
      ws();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      return lit('}');
    }
  }
};

}  // namespace

Result<CalibCache> read_calib_cache(const std::string& path) {
  std::string text;
  {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return Status::error("calibration cache " + path + ": cannot be read");
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() < (size_t(256) << 20)) text.append(buf, n);
    std::fclose(f);
  }
  return parse_calib_cache(text, path);
}

Result<CalibCache> parse_calib_cache(const std::string& text, const std::string& path) {
  CalibCache c;
  Json j{text};
  std::string format;
  bool ok = j.object([&](const std::string& k) {
    if (k == "format") return j.str(format);
    if (k == "model_sha256") return j.str(c.model_sha256);
    if (k == "method") return j.str(c.table.method);
    if (k == "tensors")
      return j.object([&](const std::string& name) {
        double amax = NAN;
        bool got = false;
        bool r = j.object([&](const std::string& f) {
          double v;
          if (!j.num(v)) return false;
          if (f == "amax") amax = v, got = true;
          return true;
        });
        // A double past FLT_MAX is finite here but Inf as the table's float (fuzz_calib_cache:
        // amax 1.1e72 gave an Inf scale).
        if (r && (!got || !std::isfinite(amax) || amax < 0 || amax > FLT_MAX))
          return j.fail("tensor '" + name + "' needs a finite, non-negative \"amax\" of at most 3.4e38");
        c.table.amax[name] = static_cast<float>(amax);
        return r;
      });
    if (k == "mixed") {
      c.has_mix = true;
      bool got_budget = false;
      return j.object([&](const std::string& f) {
        if (f == "budget") return got_budget = j.num(c.mix_budget);
        if (f == "layer_precision") return j.str(c.mix_layer_precision);
        if (f == "measure") return j.str(c.mix_measure);
        if (f == "float_layers")
          return j.array([&] {
            std::string l;
            if (!j.str(l)) return false;
            c.mix_float_layers.push_back(l);
            return true;
          });
        return j.fail("unknown member '" + f + "' of \"mixed\"");
      }) && (got_budget || j.fail("\"mixed\" needs a \"budget\""));
    }
    std::string skip;
    double d;
    j.ws();
    return j.i < text.size() && text[j.i] == '"' ? j.str(skip) : j.num(d);
  });
  if (!ok) return Status::error("calibration cache " + path + ": not a valid cache (" + j.err + ")");
  if (format != kCalibCacheFormat)
    return Status::error("calibration cache " + path + ": format '" + format + "', expected '" + kCalibCacheFormat +
                         "'");
  if (c.model_sha256.empty() || c.table.method.empty() || c.table.amax.empty())
    return Status::error("calibration cache " + path + ": needs model_sha256, method and tensors");
  return c;
}

}  // namespace infera::cli
