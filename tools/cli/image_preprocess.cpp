// The --calib-preprocess spec and the folder of calibration images (image.h): torchvision's ImageNet
// transform (Resize(S) on a PIL image, CenterCrop, ToTensor, Normalize) reproduced exactly, so that a
// model trained with it is calibrated on the inputs it was trained on.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "cli.h"
#include "image.h"

namespace infera::cli {

namespace {

Status spec_error(const std::string& text, const std::string& why) {
  return Status::error(StatusCode::kInvalidInput, "--calib-preprocess '" + text + "': " + why);
}

bool parse_int(const std::string& s, int64_t& v) {
  if (s.empty() || s.size() > 6) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  v = std::stoll(s);
  return v >= 1 && v <= 65536;
}

// "S" (one side) or "HxW".
bool parse_size(const std::string& s, int64_t& h, int64_t& w, bool& one) {
  const size_t x = s.find('x');
  one = x == std::string::npos;
  if (one) return parse_int(s, h) && (w = h, true);
  return parse_int(s.substr(0, x), h) && parse_int(s.substr(x + 1), w);
}

bool parse_floats(const std::string& s, std::vector<float>& out) {
  out.clear();
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ':')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end || !std::isfinite(v) || std::fabs(v) > 1e30) return false;
    out.push_back(static_cast<float>(v));
  }
  return !out.empty() && out.size() <= 4 && s.back() != ':';
}

// PIL's precompute_coeffs (Resample.c) for the bilinear filter: per output pixel the first input
// pixel, the count, and the normalized weights as 22-bit fixed point (normalize_coeffs_8bpc).
constexpr int kPrecisionBits = 32 - 8 - 2;
struct Coeffs {
  int64_t ksize = 0;
  std::vector<int64_t> xmin, xcount;
  std::vector<int32_t> k;  // ksize per output pixel
};

Coeffs pil_coeffs(int64_t in_size, int64_t out_size) {
  Coeffs c;
  const float in0 = 0.f, in1 = static_cast<float>(in_size);
  double filterscale, scale;
  filterscale = scale = static_cast<double>(in1 - in0) / static_cast<double>(out_size);
  if (filterscale < 1.0) filterscale = 1.0;
  const double support = 1.0 * filterscale;
  c.ksize = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  c.xmin.resize(out_size);
  c.xcount.resize(out_size);
  c.k.assign(static_cast<size_t>(out_size * c.ksize), 0);
  std::vector<double> kk(static_cast<size_t>(c.ksize));
  for (int64_t xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int64_t xmin = static_cast<int64_t>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int64_t xmax = static_cast<int64_t>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int64_t x = 0; x < xmax; ++x) {
      double t = (x + xmin - center + 0.5) * ss;
      if (t < 0.0) t = -t;
      const double w = t < 1.0 ? 1.0 - t : 0.0;
      kk[x] = w;
      ww += w;
    }
    for (int64_t x = 0; x < xmax; ++x) {
      if (ww != 0.0) kk[x] /= ww;
      const double v = kk[x] * (1 << kPrecisionBits);
      c.k[xx * c.ksize + x] = static_cast<int32_t>(kk[x] < 0 ? -0.5 + v : 0.5 + v);
    }
    c.xmin[xx] = xmin;
    c.xcount[xx] = xmax;
  }
  return c;
}

inline uint8_t clip8(int64_t v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// Round half to even, as Python's round() in torchvision's center_crop.
int64_t crop_offset(int64_t size, int64_t crop) {
  const int64_t d = size - crop;
  if (d % 2 == 0) return d / 2;
  const int64_t k = d / 2;  // d / 2.0 = k + 0.5
  return k % 2 == 0 ? k : k + 1;
}

}  // namespace

Result<PreprocessSpec> parse_preprocess(const std::string& text) {
  PreprocessSpec p;
  p.text = text;
  std::stringstream ss(text);
  std::string item;
  std::vector<std::string> seen;
  const std::string keys =
      "resize=S|HxW, crop=S|HxW, mean=M[:M:M], std=S[:S:S], scale=X, layout=nchw|nhwc, color=rgb|gray";
  while (std::getline(ss, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return spec_error(text, "'" + item + "' is not KEY=VALUE (keys: " + keys + ")");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    for (const std::string& s : seen)
      if (s == k) return spec_error(text, "'" + k + "' is given twice");
    seen.push_back(k);
    bool one = false, good = true;
    if (k == "resize") {
      int64_t h = 0, w = 0;
      good = parse_size(v, h, w, one);
      if (one)
        p.resize_short = h;
      else
        p.resize_h = h, p.resize_w = w;
    } else if (k == "crop") {
      good = parse_size(v, p.crop_h, p.crop_w, one);
    } else if (k == "mean") {
      good = parse_floats(v, p.mean);
    } else if (k == "std") {
      good = parse_floats(v, p.std);
      for (float s : p.std) good = good && s > 0;
    } else if (k == "scale") {
      std::vector<float> s;
      good = parse_floats(v, s) && s.size() == 1 && s[0] > 0;
      if (good) p.scale = s[0];
    } else if (k == "layout") {
      good = v == "nchw" || v == "nhwc";
      p.nhwc = v == "nhwc";
    } else if (k == "color") {
      good = v == "rgb" || v == "gray";
      p.color = v == "gray" ? ImageColor::kGray : ImageColor::kRgb;
    } else {
      return spec_error(text, "unknown key '" + k + "' (keys: " + keys + ")");
    }
    if (!good) {
      const std::string want = k == "resize" || k == "crop" ? "a size S or HxW, each in 1..65536"
                               : k == "mean"                ? "1 to 4 numbers joined by ':'"
                               : k == "std"                 ? "1 to 4 positive numbers joined by ':'"
                               : k == "scale"               ? "a positive number"
                               : k == "layout"              ? "nchw or nhwc"
                                                            : "rgb or gray";
      return spec_error(text, k + "='" + v + "': expected " + want);
    }
  }
  if (seen.empty()) return spec_error(text, "empty (keys: " + keys + ")");
  const size_t ch = p.color == ImageColor::kRgb ? 3 : 1;
  for (const auto* v : {&p.mean, &p.std})
    if (v->size() != 1 && v->size() != ch)
      return spec_error(text, std::string(v == &p.mean ? "mean" : "std") + " has " + std::to_string(v->size()) +
                                  " values; color=" + (ch == 3 ? "rgb" : "gray") + " has " + std::to_string(ch) +
                                  " channel(s): give 1 or " + std::to_string(ch));
  return p;
}

Image resize_bilinear_pil(const Image& in, int64_t out_w, int64_t out_h) {
  const int C = in.channels;
  Image cur = in;
  if (out_w != in.width) {  // horizontal pass (PIL: only when the width changes)
    const Coeffs c = pil_coeffs(in.width, out_w);
    Image t;
    t.width = out_w, t.height = in.height, t.channels = C;
    t.pixels.resize(static_cast<size_t>(out_w * in.height * C));
    for (int64_t y = 0; y < in.height; ++y) {
      const uint8_t* src = &cur.pixels[static_cast<size_t>(y * in.width * C)];
      uint8_t* dst = &t.pixels[static_cast<size_t>(y * out_w * C)];
      for (int64_t x = 0; x < out_w; ++x) {
        const int32_t* k = &c.k[x * c.ksize];
        for (int ch = 0; ch < C; ++ch) {
          int64_t s = int64_t(1) << (kPrecisionBits - 1);
          for (int64_t i = 0; i < c.xcount[x]; ++i) s += int64_t(src[(c.xmin[x] + i) * C + ch]) * k[i];
          dst[x * C + ch] = clip8(s);
        }
      }
    }
    cur = std::move(t);
  }
  if (out_h != in.height) {  // vertical pass
    const Coeffs c = pil_coeffs(in.height, out_h);
    Image t;
    t.width = cur.width, t.height = out_h, t.channels = C;
    t.pixels.resize(static_cast<size_t>(cur.width * out_h * C));
    const int64_t row = cur.width * C;
    for (int64_t y = 0; y < out_h; ++y) {
      const int32_t* k = &c.k[y * c.ksize];
      uint8_t* dst = &t.pixels[static_cast<size_t>(y * row)];
      for (int64_t j = 0; j < row; ++j) {
        int64_t s = int64_t(1) << (kPrecisionBits - 1);
        for (int64_t i = 0; i < c.xcount[y]; ++i) s += int64_t(cur.pixels[(c.xmin[y] + i) * row + j]) * k[i];
        dst[j] = clip8(s);
      }
    }
    cur = std::move(t);
  }
  return cur;
}

Result<std::vector<CalibrationSample>> load_calibration_images(const std::string& dir, const PreprocessSpec& p,
                                                               const IoInfo& in, int64_t batch, int64_t max_pixels) {
  const int C = p.color == ImageColor::kRgb ? 3 : 1;
  const std::string layout = p.nhwc ? "nhwc" : "nchw";
  if (in.dtype != DataType::kFloat32)
    return Status::error(StatusCode::kInvalidInput, "calibration images: the model's input '" + in.name + "' is " +
                                                        dtype_name(in.dtype) + "; images give float32");
  if (!in.rank_known || in.dims.size() != 4)
    return Status::error(StatusCode::kInvalidInput, "calibration images: the model's input '" + in.name + "' is " +
                                                        io_shape_str(in) +
                                                        "; images give a rank-4 tensor (layout=" + layout + ")");
  const IoDim &dc = in.dims[p.nhwc ? 3 : 1], &dh = in.dims[p.nhwc ? 1 : 2], &dw = in.dims[p.nhwc ? 2 : 3];
  // The final size when the spec alone fixes it (a crop, or an exact resize); else from the images.
  int64_t H = p.crop_h ? p.crop_h : p.resize_h, W = p.crop_w ? p.crop_w : p.resize_w;
  auto disagree = [&](const std::string& what) {
    return Status::error(StatusCode::kInvalidInput, "--calib-preprocess '" + p.text + "' gives " + what +
                                                        " (layout=" + layout + "); the model's input '" + in.name +
                                                        "' is " + io_shape_str(in));
  };
  if (dc.value >= 0 && dc.value != C)
    return disagree(std::to_string(C) + " channel(s) (color=" + (C == 3 ? "rgb" : "gray") + ")");
  if (dc.value < 0)
    return disagree(std::to_string(C) + " channel(s), but the channel dim is free: the layout must name a fixed dim");
  if (H && ((dh.value >= 0 && dh.value != H) || (dw.value >= 0 && dw.value != W)))
    return disagree(std::to_string(H) + "x" + std::to_string(W) + " images");
  std::vector<std::string> files;
  for (const std::string& f : list_dir(dir))
    if (f[0] != '.' && is_image_name(f) && is_file(dir + "/" + f)) files.push_back(f);
  if (files.empty())
    return Status::error(StatusCode::kInvalidInput, "calibration data " + dir +
                                                        ": the folder holds no images (.jpg, .jpeg, .png; subfolders "
                                                        "are not searched)");
  std::vector<CalibrationSample> out;
  std::vector<float> data;  // the batch being filled
  int64_t in_batch = 0;
  std::string first;
  auto flush = [&](const std::string& last) {
    std::vector<int64_t> d = p.nhwc ? std::vector<int64_t>{in_batch, H, W, C} : std::vector<int64_t>{in_batch, C, H, W};
    Tensor t = Tensor::make(DataType::kFloat32, d).take();
    std::memcpy(t.data(), data.data(), data.size() * sizeof(float));
    out.push_back({base_name(dir) + "/{" + first + ".." + last + "}", std::move(t)});
    data.clear();
    in_batch = 0;
  };
  for (const std::string& f : files) {
    const std::string path = dir + "/" + f;
    auto dec = decode_image_file(path, p.color, max_pixels);
    if (!dec.is_ok()) return dec.status();
    Image im = dec.take();
    if (p.resize_short) {  // torchvision's _compute_resized_output_size: int(S * long / short)
      const bool wide = im.width > im.height;
      const int64_t sh = wide ? im.height : im.width, lg = wide ? im.width : im.height;
      const int64_t nl = static_cast<int64_t>(static_cast<double>(p.resize_short * lg) / static_cast<double>(sh));
      if (nl < 1 || nl > 65536 * 16 || p.resize_short * nl > max_pixels)
        return Status::error(StatusCode::kInvalidInput,
                             "calibration image " + path + ": " + std::to_string(im.width) + "x" +
                                 std::to_string(im.height) + " resized to shorter side " +
                                 std::to_string(p.resize_short) + " is past the pixel limit (--max-image-pixels)");
      im = resize_bilinear_pil(im, wide ? nl : p.resize_short, wide ? p.resize_short : nl);
    } else if (p.resize_h) {
      if (p.resize_h * p.resize_w > max_pixels)
        return Status::error(StatusCode::kInvalidInput,
                             "calibration image " + path + ": resize=" + std::to_string(p.resize_h) + "x" +
                                 std::to_string(p.resize_w) + " is past the pixel limit (--max-image-pixels)");
      im = resize_bilinear_pil(im, p.resize_w, p.resize_h);
    }
    int64_t top = 0, left = 0, h = im.height, w = im.width;
    if (p.crop_h) {
      if (p.crop_h > im.height || p.crop_w > im.width)
        return Status::error(StatusCode::kInvalidInput, "calibration image " + path + ": " + std::to_string(im.height) +
                                                            "x" + std::to_string(im.width) +
                                                            " (HxW, after the resize) is smaller than crop=" +
                                                            std::to_string(p.crop_h) + "x" + std::to_string(p.crop_w));
      top = crop_offset(im.height, p.crop_h), left = crop_offset(im.width, p.crop_w);
      h = p.crop_h, w = p.crop_w;
    }
    if (!H) {  // the first image fixes the size of free dims
      H = h, W = w;
      if ((dh.value >= 0 && dh.value != H) || (dw.value >= 0 && dw.value != W))
        return disagree(std::to_string(H) + "x" + std::to_string(W) + " images (" + f + ": no crop or resize=HxW)");
    }
    if (h != H || w != W)
      return Status::error(StatusCode::kInvalidInput,
                           "calibration image " + path + ": " + std::to_string(h) + "x" + std::to_string(w) +
                               " (HxW) after the preprocessing, the images before it " + std::to_string(H) + "x" +
                               std::to_string(W) + ": give crop= or resize=HxW for one size");
    if (in_batch == 0) first = f;
    const size_t base = data.size();
    data.resize(base + static_cast<size_t>(C * H * W));
    float* dst = data.data() + base;
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x)
        for (int c = 0; c < C; ++c) {
          const float v = static_cast<float>(im.pixels[static_cast<size_t>(((top + y) * im.width + left + x) * C + c)]);
          // torchvision: ToTensor (x / 255 in float32), then Normalize ((x - mean) / std in float32).
          const float m = p.mean.size() == 1 ? p.mean[0] : p.mean[c], s = p.std.size() == 1 ? p.std[0] : p.std[c];
          const float r = (v / p.scale - m) / s;
          dst[p.nhwc ? (y * W + x) * C + c : (c * H + y) * W + x] = r;
        }
    if (++in_batch == batch) flush(f);
  }
  if (in_batch) flush(files.back());
  return out;
}

}  // namespace infera::cli
