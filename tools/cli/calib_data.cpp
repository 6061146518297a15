// Calibration inputs and the calibration cache of `infera quantize` / `infera eval`: the options of
// the calibration input (the samples themselves: calib_load.cpp), labels for them, and the cache as
// readable JSON keyed by the model's SHA-256 and the method.
#include <cmath>
#include <cstdlib>

#include "calib.h"
#include "image.h"

namespace infera::cli {

std::string calib_input_options(Args& a, QuantizeRequest& q) {
  q.preprocess = a.get("--calib-preprocess");
  q.max_image_pixels = a.get_size("--max-image-pixels", kMaxImagePixels, 1, kMaxImagePixels);
  q.dump = a.get("--calib-dump");
  if (a.has("--calib-preprocess")) {
    auto spec = parse_preprocess(q.preprocess);
    if (!spec.is_ok()) return spec.message();
  }
  if (a.has("--max-image-pixels") && !a.has("--calib-preprocess"))
    return "--max-image-pixels limits calibration images: give --calib-preprocess SPEC";
  return "";
}

Result<std::vector<int64_t>> read_labels_file(const std::string& path, int64_t n, const std::string& what) {
  auto t = load_tensor_file(path);
  if (!t.is_ok()) return Status::error(what + " " + t.message());
  const Tensor& y = t.value();
  if (y.dims().size() != 1 || y.dims()[0] != n)
    return Status::error(what + " " + path + ": shape " + shape_str(y.dims()) + ", expected [" + std::to_string(n) +
                         "] (one per " + (what == "labels" ? "image" : "calibration sample") + ")");
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    if (y.dtype() == DataType::kInt64)
      out[i] = y.data_as<int64_t>()[i];
    else if (y.dtype() == DataType::kInt32)
      out[i] = y.data_as<int32_t>()[i];
    else if (y.dtype() == DataType::kUInt8)
      out[i] = y.data_as<uint8_t>()[i];
    else
      return Status::error(what + " " + path + ": dtype " + dtype_name(y.dtype()) + ", expected int32 or int64");
  }
  return out;
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
  s += "\n  }";
  if (c.has_mix) {
    char b[64];
    snprintf(b, sizeof b, "%.17g", c.mix_budget);
    s += ",\n  \"mixed\": {\"budget\": " + std::string(b) +
         ", \"layer_precision\": " + json_str(c.mix_layer_precision) +
         (c.mix_measure.empty() ? "" : ", \"measure\": " + json_str(c.mix_measure)) + ", \"float_layers\": [";
    for (size_t i = 0; i < c.mix_float_layers.size(); ++i) s += (i ? ", " : "") + json_str(c.mix_float_layers[i]);
    s += "]}";
  }
  s += "\n}\n";
  AtomicFile f;
  Status st = f.open(path);
  if (st.is_ok()) st = f.write(s);
  if (st.is_ok()) st = f.commit();
  return st;
}

}  // namespace infera::cli
