// Calibration inputs and the calibration cache of `infera quantize` / `infera eval`: samples from an
// .npy array (split into batches along dim 0) or a folder of .npy files (one batch, or one sample, each),
// and the cache as readable JSON keyed by the model's SHA-256 and the method.
#include <cmath>
#include <cstdlib>

#include "calib.h"

namespace infera::cli {

Result<std::vector<CalibrationSample>> load_calibration(const std::string& path, size_t input_rank, int64_t batch) {
  std::vector<std::string> files;
  if (is_dir(path)) {
    for (const std::string& f : list_dir(path))
      if (f.size() > 4 && f.substr(f.size() - 4) == ".npy") files.push_back(path + "/" + f);
    if (files.empty()) return Status::error("calibration data " + path + ": the folder holds no .npy files");
  } else if (is_file(path)) {
    files.push_back(path);
  } else {
    return Status::error("calibration data " + path + ": not found");
  }
  std::vector<CalibrationSample> out;
  for (const std::string& f : files) {
    auto t = load_tensor_file(f);
    if (!t.is_ok()) return Status::error("calibration data " + t.message());
    Tensor x = t.take();
    if (x.dims().size() + 1 == input_rank) {  // one sample: add the batch dim
      std::vector<int64_t> d = x.dims();
      d.insert(d.begin(), 1);
      Tensor y = Tensor::make(x.dtype(), d).take();
      std::memcpy(y.data(), x.data(), x.nbytes());
      x = y;
    }
    if (x.dims().size() != input_rank)
      return Status::error("calibration data " + f + ": shape " + shape_str(x.dims()) + " has rank " +
                           std::to_string(x.dims().size()) + "; the model's input has rank " +
                           std::to_string(input_rank));
    const int64_t n = x.dims()[0];
    if (n == 0) continue;
    const int64_t per = x.numel() / n, step = files.size() == 1 ? batch : n;
    for (int64_t b = 0; b < n; b += step) {
      const int64_t e = std::min(n, b + step);
      std::vector<int64_t> d = x.dims();
      d[0] = e - b;
      Tensor part = Tensor::make(x.dtype(), d).take();
      std::memcpy(part.data(), static_cast<const char*>(x.data()) + b * per * dtype_size(x.dtype()), part.nbytes());
      out.push_back({base_name(f) + "[" + std::to_string(b) + ":" + std::to_string(e) + "]", std::move(part)});
    }
  }
  if (out.empty()) return Status::error("calibration data " + path + ": the set is empty (0 samples)");
  return out;
}

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
        if (r && (!got || !std::isfinite(amax) || amax < 0))
          return j.fail("tensor '" + name + "' needs a finite, non-negative \"amax\"");
        c.table.amax[name] = static_cast<float>(amax);
        return r;
      });
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

Status write_calib_cache(const std::string& path, const CalibCache& c) {
  std::string s = "{\n  \"format\": " + json_str(kCalibCacheFormat) +
                  ",\n  \"model_sha256\": " + json_str(c.model_sha256) +
                  ",\n  \"method\": " + json_str(c.table.method) + ",\n  \"tensors\": {";
  bool first = true;
  for (const auto& [name, amax] : c.table.amax) {
    char b[96];
    const float scale = amax > 0 ? amax / 127.f : 1.f;
    snprintf(b, sizeof b, ": {\"amax\": %.9g, \"scale\": %.9g}", amax, scale);
    s += std::string(first ? "\n    " : ",\n    ") + json_str(name) + b;
    first = false;
  }
  s += "\n  }\n}\n";
  AtomicFile f;
  Status st = f.open(path);
  if (st.is_ok()) st = f.write(s);
  if (st.is_ok()) st = f.commit();
  return st;
}

}  // namespace infera::cli
