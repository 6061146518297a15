// Calibration inputs and the calibration cache of `infera quantize` / `infera eval`: samples from an
// .npy array (split into batches along dim 0), a folder of .npy files (one batch, or one sample, each)
// or a folder of images with a preprocessing spec (image_preprocess.cpp), labels for them, and the
// cache as readable JSON keyed by the model's SHA-256 and the method.
#include <cmath>
#include <cstdlib>

#include "calib.h"
#include "image.h"

namespace infera::cli {

Result<std::vector<CalibrationSample>> load_calibration(const std::string& path, size_t input_rank, int64_t batch) {
  std::vector<std::string> files;
  if (is_dir(path)) {
    for (const std::string& f : list_dir(path))
      if (f.size() > 4 && f.substr(f.size() - 4) == ".npy") files.push_back(path + "/" + f);
    if (files.empty()) {
      for (const std::string& f : list_dir(path))
        if (is_image_name(f))
          return Status::error("calibration data " + path + ": the folder holds images (" + f +
                               ") but no .npy files: give --calib-preprocess SPEC to read the images");
      return Status::error("calibration data " + path + ": the folder holds no .npy files");
    }
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

Result<std::vector<CalibrationSample>> load_calibration(const std::string& path, const IoInfo& in, int64_t batch,
                                                        const std::string& preprocess, int64_t max_image_pixels) {
  if (preprocess.empty()) return load_calibration(path, in.dims.size(), batch);
  if (!is_dir(path))
    return Status::error(StatusCode::kInvalidInput, "calibration data " + path + ": " +
                                                        (is_file(path) ? "not a folder" : "not found") +
                                                        "; --calib-preprocess reads a folder of images");
  auto spec = parse_preprocess(preprocess);
  if (!spec.is_ok()) return spec.status();
  return load_calibration_images(path, spec.value(), in, batch, max_image_pixels);
}

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
