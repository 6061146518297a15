// JPEG and PNG decoding for calibration images (image.h). Both libraries report errors by calling a
// handler that must not return (libjpeg's default prints and calls exit()): ours copy the message and
// longjmp back to the decode function, which holds only C objects between setjmp and the jump (no
// destructor is skipped) and frees the library's state there.
#include <setjmp.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

#include "cli.h"
#include "image.h"

namespace infera::cli {

namespace {

constexpr size_t kMsgBytes = 256;

// ------------------------------------------------------------------ JPEG
struct JpegError {
  jpeg_error_mgr mgr;  // first: libjpeg hands back a pointer to it
  jmp_buf jump;
  char msg[kMsgBytes];
};

[[noreturn]] void jpeg_fail(j_common_ptr c) {
  JpegError* e = reinterpret_cast<JpegError*>(c->err);
  char text[JMSG_LENGTH_MAX];
  (*c->err->format_message)(c, text);
  std::snprintf(e->msg, sizeof e->msg, "corrupt or unsupported JPEG (libjpeg: %s)", text);
  longjmp(e->jump, 1);
}

// Warnings are ignored (as PIL does: "extraneous bytes before marker" and the like), except the end
// of the data before the image's end: a truncated file, which libjpeg would fill with gray.
void jpeg_message(j_common_ptr c, int level) {
  if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) {
    JpegError* e = reinterpret_cast<JpegError*>(c->err);
    std::snprintf(e->msg, sizeof e->msg, "truncated JPEG (the data ends before the image does)");
    longjmp(e->jump, 1);
  }
}

void jpeg_quiet(j_common_ptr) {}

void jpeg_scan_limit(j_common_ptr c) {
  const j_decompress_ptr d = reinterpret_cast<j_decompress_ptr>(c);
  if (d->input_scan_number > kMaxJpegScans) {
    JpegError* e = reinterpret_cast<JpegError*>(c->err);
    std::snprintf(e->msg, sizeof e->msg, "progressive JPEG with more than %d scans", kMaxJpegScans);
    longjmp(e->jump, 1);
  }
}

// Returns false with the reason in msg. Only C objects live in this frame (see the file's comment);
// `out` belongs to the caller.
bool decode_jpeg(const uint8_t* data, size_t size, int64_t max_pixels, Image& out, char* msg) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  jpeg_progress_mgr progress;
  std::memset(&cinfo, 0, sizeof cinfo);
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_message;
  err.mgr.output_message = jpeg_quiet;
  err.msg[0] = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    std::snprintf(msg, kMsgBytes, "%s", err.msg);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  progress.progress_monitor = jpeg_scan_limit;
  cinfo.progress = &progress;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.out_color_space != JCS_RGB && cinfo.out_color_space != JCS_GRAYSCALE) {
    std::snprintf(msg, kMsgBytes,
                  "a %s JPEG (%d components): only gray and RGB/YCbCr JPEGs are read; convert it to RGB",
                  cinfo.jpeg_color_space == JCS_CMYK   ? "CMYK"
                  : cinfo.jpeg_color_space == JCS_YCCK ? "YCCK"
                                                       : "non-RGB",
                  cinfo.num_components);
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  const int64_t w = cinfo.image_width, h = cinfo.image_height;
  if (w <= 0 || h <= 0 || w > max_pixels / h) {
    std::snprintf(msg, kMsgBytes, "%lld x %lld pixels, more than the limit of %lld (--max-image-pixels)",
                  static_cast<long long>(w), static_cast<long long>(h), static_cast<long long>(max_pixels));
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_start_decompress(&cinfo);
  out.width = cinfo.output_width;
  out.height = cinfo.output_height;
  out.channels = cinfo.output_components;
  try {
    out.pixels.assign(static_cast<size_t>(out.width * out.height * out.channels), 0);
  } catch (...) {
    std::snprintf(msg, kMsgBytes, "out of memory for %lld x %lld pixels", static_cast<long long>(out.width),
                  static_cast<long long>(out.height));
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out.pixels.data() + static_cast<size_t>(cinfo.output_scanline) * out.width * out.channels;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

// ------------------------------------------------------------------ PNG
struct PngState {
  jmp_buf jump;
  char msg[kMsgBytes];
  const uint8_t* data;
  size_t size, pos;
};

[[noreturn]] void png_fail(png_structp p, png_const_charp m) {
  PngState* s = static_cast<PngState*>(png_get_error_ptr(p));
  std::snprintf(s->msg, sizeof s->msg, "corrupt or unsupported PNG (libpng: %s)", m);
  longjmp(s->jump, 1);
}

void png_quiet(png_structp, png_const_charp) {}  // warnings (a wrong sRGB profile, ...) are ignored

void png_read_mem(png_structp p, png_bytep dst, png_size_t n) {
  PngState* s = static_cast<PngState*>(png_get_io_ptr(p));
  if (n > s->size - s->pos) {
    std::snprintf(s->msg, sizeof s->msg, "truncated PNG (the data ends before the image does)");
    longjmp(s->jump, 1);
  }
  std::memcpy(dst, s->data + s->pos, n);
  s->pos += n;
}

bool decode_png(const uint8_t* data, size_t size, int64_t max_pixels, Image& out, char* msg) {
  PngState st;
  st.msg[0] = 0;
  st.data = data;
  st.size = size;
  st.pos = 0;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &st, png_fail, png_quiet);
  if (!png) return std::snprintf(msg, kMsgBytes, "libpng could not start (out of memory)"), false;
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return std::snprintf(msg, kMsgBytes, "libpng could not start (out of memory)"), false;
  }
  if (setjmp(st.jump)) {
    png_destroy_read_struct(&png, &info, nullptr);
    std::snprintf(msg, kMsgBytes, "%s", st.msg);
    return false;
  }
  png_set_read_fn(png, &st, png_read_mem);
  const png_uint_32 side = static_cast<png_uint_32>(std::min<int64_t>(max_pixels, PNG_UINT_31_MAX));
  png_set_user_limits(png, side, side);
  png_read_info(png, info);
  const int64_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  if (w <= 0 || h <= 0 || w > max_pixels / h) {
    std::snprintf(msg, kMsgBytes, "%lld x %lld pixels, more than the limit of %lld (--max-image-pixels)",
                  static_cast<long long>(w), static_cast<long long>(h), static_cast<long long>(max_pixels));
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  const int type = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_scale_16(png);
  // Alpha, and the alpha a tRNS chunk would give, is dropped (PIL's convert("RGB") / ("L")).
  png_set_strip_alpha(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out.width = w;
  out.height = h;
  out.channels = png_get_channels(png, info);
  if ((out.channels != 1 && out.channels != 3) || png_get_bit_depth(png, info) != 8 ||
      png_get_rowbytes(png, info) != static_cast<size_t>(w * out.channels)) {
    std::snprintf(msg, kMsgBytes, "PNG color type %d, bit depth %d: not reducible to 8-bit gray or RGB", type, depth);
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  try {
    out.pixels.assign(static_cast<size_t>(w * h * out.channels), 0);
  } catch (...) {
    std::snprintf(msg, kMsgBytes, "out of memory for %lld x %lld pixels", static_cast<long long>(w),
                  static_cast<long long>(h));
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  // Row by row, every pass: libpng combines the passes of an interlaced image in the rows.
  for (int p = 0; p < passes; ++p)
    for (int64_t y = 0; y < h; ++y)
      png_read_row(png, out.pixels.data() + static_cast<size_t>(y * w * out.channels), nullptr);
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

// PIL's convert(): L -> RGB repeats, RGB -> L is its integer ITU-R 601-2 luma.
void convert_color(Image& im, ImageColor color) {
  const int want = color == ImageColor::kRgb ? 3 : 1;
  if (im.channels == want) return;
  const size_t n = static_cast<size_t>(im.width * im.height);
  std::vector<uint8_t> px(n * want);
  if (want == 3) {
    for (size_t i = 0; i < n; ++i) px[3 * i] = px[3 * i + 1] = px[3 * i + 2] = im.pixels[i];
  } else {
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* p = &im.pixels[3 * i];
      px[i] = static_cast<uint8_t>((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
    }
  }
  im.pixels.swap(px);
  im.channels = want;
}

}  // namespace

bool is_image_name(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0) return false;
  std::string ext = name.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "jpg" || ext == "jpeg" || ext == "png";
}

Result<Image> decode_image(const uint8_t* data, size_t size, const std::string& name, ImageColor color,
                           int64_t max_pixels) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  char msg[kMsgBytes] = {0};
  Image im;
  bool ok;
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0)
    ok = decode_png(data, size, max_pixels, im, msg);
  else if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff)
    ok = decode_jpeg(data, size, max_pixels, im, msg);
  else
    return Status::error(StatusCode::kInvalidInput,
                         "calibration image " + name + ": not a JPEG or PNG file (" + std::to_string(size) + " bytes)");
  if (!ok) return Status::error(StatusCode::kInvalidInput, "calibration image " + name + ": " + msg);
  convert_color(im, color);
  return im;
}

Result<Image> decode_image_file(const std::string& path, ImageColor color, int64_t max_pixels) {
  struct stat sb;
  if (stat(path.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode))
    return Status::error(StatusCode::kIo, "calibration image " + path + ": cannot be read");
  if (sb.st_size > kMaxImageFileBytes)
    return Status::error(StatusCode::kInvalidInput, "calibration image " + path + ": " + std::to_string(sb.st_size) +
                                                        " bytes, more than the limit of " +
                                                        std::to_string(kMaxImageFileBytes));
  std::vector<uint8_t> bytes(static_cast<size_t>(sb.st_size));
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::error(StatusCode::kIo, "calibration image " + path + ": cannot be read");
  const size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  if (got != bytes.size()) return Status::error(StatusCode::kIo, "calibration image " + path + ": read failed");
  return decode_image(bytes.data(), bytes.size(), path, color, max_pixels);
}

}  // namespace infera::cli
