// Calibration images (issue 11): JPEG (libjpeg-turbo) and PNG (libpng) files decoded to 8-bit gray or
// RGB (image_decode.cpp), and the preprocessing spec of --calib-preprocess that turns a folder of them
// into calibration samples as torchvision's ImageNet transform does (image_preprocess.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "infera/quantize.h"

namespace infera::cli {

// Pixels (width * height) of one image, checked from the file's header before anything is decoded;
// --max-image-pixels lowers it. 8192 x 8192: a 192 MiB RGB buffer, far past calibration images.
constexpr int64_t kMaxImagePixels = int64_t(1) << 26;
// Bytes of one image file (read whole before decoding).
constexpr int64_t kMaxImageFileBytes = int64_t(256) << 20;
// Scans of a progressive JPEG (each one a pass over the whole image; thousands are a known denial of
// service, libjpeg-turbo's TurboJPEG API has the same kind of limit).
constexpr int kMaxJpegScans = 500;

enum class ImageColor { kRgb, kGray };

// Row-major HWC, 8 bits per channel, channels 1 (gray) or 3 (RGB).
struct Image {
  int64_t width = 0, height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;
};

// Decodes a JPEG or PNG (told by its first bytes, not its name) to `color`, as PIL's
// Image.open(f).convert("RGB" or "L"): gray is repeated to RGB, RGB becomes gray by PIL's integer
// ITU-R 601-2 luma ((19595 R + 38470 G + 7471 B + 32768) >> 16), alpha is dropped (not composited),
// a palette is expanded. 16-bit PNG samples are scaled to 8 bits with rounding (libpng's
// png_set_scale_16; PIL differs there: it keeps the high byte of RGB and clips 16-bit gray at 255).
// A CMYK / YCCK JPEG, a truncated or corrupt file, or more than max_pixels are one error naming
// `name`; libjpeg's and libpng's own handlers (which would print and exit) are never reached.
Result<Image> decode_image(const uint8_t* data, size_t size, const std::string& name, ImageColor color,
                           int64_t max_pixels);
Result<Image> decode_image_file(const std::string& path, ImageColor color, int64_t max_pixels);

// .jpg, .jpeg, .png in any case (the files of a folder that are read as images).
bool is_image_name(const std::string& name);

// --calib-preprocess 'resize=256,crop=224,mean=0.485:0.456:0.406,std=0.229:0.224:0.225,layout=nchw'
struct PreprocessSpec {
  // resize=S: the shorter side to S, the longer to int(S * long / short) (torchvision's Resize(S));
  // resize=HxW: exactly H x W. 0: no resize.
  int64_t resize_short = 0, resize_h = 0, resize_w = 0;
  int64_t crop_h = 0, crop_w = 0;          // crop=S or HxW: the center crop (torchvision's CenterCrop); 0: none
  std::vector<float> mean{0.f}, std{1.f};  // one value or one per channel
  float scale = 255.f;                     // x = (pixel / scale - mean) / std
  bool nhwc = false;                       // layout=nchw (default) | nhwc
  ImageColor color = ImageColor::kRgb;     // color=rgb (3 channels, default) | gray (1)
  std::string text;                        // as given, for messages
};
Result<PreprocessSpec> parse_preprocess(const std::string& text);

// PIL's Image.resize((w, h), Image.BILINEAR) bit for bit: the antialiased triangle filter (support
// scaled by the downscaling factor), horizontal pass then vertical, 22-bit fixed-point coefficients,
// each pass rounded and clipped to 8 bits (PIL 9's Resample.c).
Image resize_bilinear_pil(const Image& in, int64_t out_w, int64_t out_h);

// The images of a folder (is_image_name, sorted by name; other files and subfolders are skipped) as
// calibration samples for the model input `in`, batches of `batch` images (the last one smaller).
// The spec must give the input's channels (color) and, where the input fixes them, its height and
// width; a disagreement is one error naming both. Images of different final sizes for free dims are
// refused, naming the file.
Result<std::vector<CalibrationSample>> load_calibration_images(const std::string& dir, const PreprocessSpec& spec,
                                                               const IoInfo& in, int64_t batch, int64_t max_pixels);

}  // namespace infera::cli
