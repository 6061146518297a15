// Calibration samples of `infera quantize` / `infera eval` and of infera.quantize in Python: an .npy
// array (split into batches along dim 0), a folder of .npy files (one batch, or one sample, each) or a
// folder of images with a preprocessing spec (image_preprocess.cpp). In the infera_calib_data library
// (CMakeLists.txt) with the image code, which the CLI and the Python extension both link.
#include <cstring>

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

Result<std::vector<CalibrationSample>> load_model_calibration(const std::string& model, const std::string& path,
                                                              int64_t batch, const std::string& preprocess,
                                                              int64_t max_image_pixels) {
  auto s = Session::load(model);
  if (!s.is_ok()) return s.status();
  if (s.value()->inputs().size() != 1)
    return Status::error(model + ": calibration takes models with one input; this one has " +
                         std::to_string(s.value()->inputs().size()));
  // A model that fixes its batch takes batches of that size.
  const IoInfo& in = s.value()->inputs()[0];
  const int64_t b = !in.dims.empty() && in.dims[0].value > 0 ? in.dims[0].value : batch;
  return load_calibration(path, in, b, preprocess, max_image_pixels);
}

}  // namespace infera::cli
