// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7: scales attribute; 9: scales input).
// The output is a sum over per-axis taps (index, weight), computed per axis from the
// coordinate transformation and the interpolation kernel, following the ONNX reference.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/tensor_ops.h"

namespace infera {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
// kSimple: Resize-10/Upsample nearest (floor when upsampling, ceil when downsampling).
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };
enum class Keep { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttrs {
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;
  bool has_axes = false;
  std::vector<int64_t> axes;
  Keep keep = Keep::kStretch;
};

// roi, scales and sizes as given (empty tensors count as absent).
struct ResizeParams {
  std::vector<double> roi, scales;
  std::vector<int64_t> sizes;
};

// Taps of one axis: output coordinate o uses idx/w[begin[o], begin[o+1]); out-of-range
// coordinates of tf_crop_and_resize are flagged in extrap.
struct AxisTaps {
  std::vector<int64_t> begin, idx;
  std::vector<double> w;
  std::vector<char> extrap;
};

double cubic_weight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

class ResizeKernel : public OpKernel {
 public:
  ResizeKernel(const Node& n, int64_t opset, bool upsample) : opset_(opset), upsample_(upsample) {
    auto fail = [&](const std::string& m) {
      if (bad_.is_ok()) bad_ = Status::error(n.label() + ": " + m);
    };
    const bool v11 = !upsample && opset >= 11;
    const std::string mode = n.attr_string("mode", "nearest");
    if (mode == "nearest")
      a_.mode = Mode::kNearest;
    else if (mode == "linear" || (upsample && mode == "bilinear"))
      a_.mode = Mode::kLinear;
    else if (mode == "cubic" && v11)
      a_.mode = Mode::kCubic;
    else
      fail("attribute 'mode' must be nearest, linear" + std::string(v11 ? " or cubic" : "") + ", found '" + mode + "'");
    if (!v11) {
      // Resize-10 and Upsample: asymmetric coordinates, nearest rounds down when upsampling.
      a_.coord = Coord::kAsymmetric;
      a_.nearest = Nearest::kSimple;
      if (upsample && opset < 9) {
        if (!n.has_attr("scales")) fail("attribute 'scales' is required");
        for (float s : n.attr_floats("scales")) attr_scales_.push_back(s);
      }
      scales_in_ = (upsample && opset < 9) ? -1 : 1;
      return;
    }
    roi_in_ = 1;
    scales_in_ = 2;
    sizes_in_ = 3;
    const std::string ct = n.attr_string("coordinate_transformation_mode", "half_pixel");
    if (ct == "half_pixel")
      a_.coord = Coord::kHalfPixel;
    else if (ct == "half_pixel_symmetric" && opset >= 19)
      a_.coord = Coord::kHalfPixelSymmetric;
    else if (ct == "pytorch_half_pixel")
      a_.coord = Coord::kPytorchHalfPixel;
    else if (ct == "align_corners")
      a_.coord = Coord::kAlignCorners;
    else if (ct == "asymmetric")
      a_.coord = Coord::kAsymmetric;
    else if (ct == "tf_half_pixel_for_nn")
      a_.coord = Coord::kTfHalfPixelForNn;
    else if (ct == "tf_crop_and_resize")
      a_.coord = Coord::kTfCropAndResize;
    else
      fail("attribute 'coordinate_transformation_mode' value '" + ct + "' is not supported at opset " +
           std::to_string(opset));
    const std::string nm = n.attr_string("nearest_mode", "round_prefer_floor");
    if (nm == "round_prefer_floor")
      a_.nearest = Nearest::kRoundPreferFloor;
    else if (nm == "round_prefer_ceil")
      a_.nearest = Nearest::kRoundPreferCeil;
    else if (nm == "floor")
      a_.nearest = Nearest::kFloor;
    else if (nm == "ceil")
      a_.nearest = Nearest::kCeil;
    else
      fail("attribute 'nearest_mode' must be round_prefer_floor, round_prefer_ceil, floor or ceil, found '" + nm + "'");
    a_.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
    a_.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
    a_.extrapolation = n.attr_float("extrapolation_value", 0.f);
    if (opset >= 18) {
      a_.antialias = n.attr_int("antialias", 0) != 0;
      a_.has_axes = n.has_attr("axes");
      a_.axes = n.attr_ints("axes");
      const std::string kp = n.attr_string("keep_aspect_ratio_policy", "stretch");
      if (kp == "stretch")
        a_.keep = Keep::kStretch;
      else if (kp == "not_larger")
        a_.keep = Keep::kNotLarger;
      else if (kp == "not_smaller")
        a_.keep = Keep::kNotSmaller;
      else
        fail("attribute 'keep_aspect_ratio_policy' must be stretch, not_larger or not_smaller, found '" + kp + "'");
      if (a_.antialias && a_.mode == Mode::kNearest) fail("attribute 'antialias' is not defined for mode 'nearest'");
    }
  }
  Status init() { return bad_; }

  // Gathers roi/scales/sizes from values (infer) or tensors (compute). False when unknown.
  template <class Get>
  bool params_of(Get get, ResizeParams& p, bool& have_scales, bool& have_sizes) const {
    have_scales = have_sizes = false;
    if (scales_in_ < 0) {
      p.scales = attr_scales_;
      have_scales = true;
      return true;
    }
    bool known = true;
    auto floats = [&](int i, std::vector<double>& out, bool& have) {
      if (i < 0) return;
      const TensorRef* t = nullptr;
      int64_t numel = -1;
      if (!get(i, t, numel)) return;  // input absent
      if (numel == 0) return;         // an empty tensor means "not given"
      have = true;
      if (!t || !read_floats(*t, out)) known = false;
    };
    bool have_roi = false;
    floats(roi_in_, p.roi, have_roi);
    floats(scales_in_, p.scales, have_scales);
    if (sizes_in_ >= 0) {
      const TensorRef* t = nullptr;
      int64_t numel = -1;
      if (get(sizes_in_, t, numel) && numel != 0) {
        have_sizes = true;
        if (!t || !read_ints(*t, p.sizes)) known = false;
      }
    }
    return known;
  }

  // Output dims and per-dim scales for input dims `in` (unknown dims allowed in inference).
  template <class Ctx>
  Status plan(const Ctx& ctx, const std::vector<Dim>& in, const ResizeParams& p, bool have_scales, bool have_sizes,
              std::vector<Dim>& out, std::vector<double>& scales, std::vector<double>& roi) const {
    const int64_t r = static_cast<int64_t>(in.size());
    std::vector<int64_t> axes;
    if (a_.has_axes) {
      for (int64_t a : a_.axes) {
        int64_t b = a;
        if (!normalize_axis(b, r) || std::find(axes.begin(), axes.end(), b) != axes.end())
          return ctx.error("attribute 'axes' %s is out of range or repeats an axis for input rank %lld",
                           ints_str(a_.axes).c_str(), (long long)r);
        axes.push_back(b);
      }
    } else {
      for (int64_t i = 0; i < r; ++i) axes.push_back(i);
    }
    const size_t na = axes.size();
    if (have_scales && have_sizes) return ctx.error("only one of 'scales' and 'sizes' may be given, found both");
    if (!have_scales && !have_sizes) return ctx.error("one of 'scales' and 'sizes' is required");
    out = in;
    scales.assign(r, 1.0);
    roi.clear();
    for (int64_t i = 0; i < r; ++i) roi.push_back(0);
    for (int64_t i = 0; i < r; ++i) roi.push_back(1);
    if (a_.coord == Coord::kTfCropAndResize) {
      if (p.roi.size() != 2 * na)
        return ctx.error("input 'roi' must have %zu values for tf_crop_and_resize, found %zu", 2 * na, p.roi.size());
      for (size_t i = 0; i < na; ++i) {
        roi[axes[i]] = p.roi[i];
        roi[r + axes[i]] = p.roi[na + i];
      }
    }
    if (have_scales) {
      if (p.scales.size() != na)
        return ctx.error("'scales' must have %zu values (one per resized axis), found %zu", na, p.scales.size());
      for (size_t i = 0; i < na; ++i) {
        const double s = p.scales[i];
        if (!(s > 0) || !std::isfinite(s) || s > 1e9)
          return ctx.error("'scales' values must be positive and finite, found %g", s);
        if (upsample_ && s < 1) return ctx.error("Upsample 'scales' values must be >= 1, found %g", s);
        const int64_t d = axes[i];
        scales[d] = s;
        if (in[d].known())
          out[d] = Dim(static_cast<int64_t>(std::floor(s * static_cast<double>(in[d].value))));
        else if (s != 1)
          out[d] = Dim();
      }
    } else {
      if (p.sizes.size() != na)
        return ctx.error("'sizes' must have %zu values (one per resized axis), found %zu", na, p.sizes.size());
      for (size_t i = 0; i < na; ++i)
        if (p.sizes[i] < 0 || p.sizes[i] > (int64_t(1) << 40))
          return ctx.error("'sizes' %s has an invalid value", ints_str(p.sizes).c_str());
      if (a_.keep != Keep::kStretch) {
        double s = a_.keep == Keep::kNotLarger ? 1e300 : 0;
        for (size_t i = 0; i < na; ++i) {
          const Dim& d = in[axes[i]];
          if (!d.known()) {
            for (int64_t a : axes) out[a] = Dim();
            return Status::ok();
          }
          if (d.value == 0) return ctx.error("cannot keep the aspect ratio of an empty axis");
          const double si = static_cast<double>(p.sizes[i]) / static_cast<double>(d.value);
          s = a_.keep == Keep::kNotLarger ? std::min(s, si) : std::max(s, si);
        }
        for (int64_t a : axes) {
          scales[a] = s;
          out[a] = Dim(static_cast<int64_t>(s * static_cast<double>(in[a].value) + 0.5));
        }
      } else {
        for (size_t i = 0; i < na; ++i) {
          const int64_t d = axes[i];
          out[d] = Dim(p.sizes[i]);
          if (in[d].known()) {
            if (in[d].value == 0 && p.sizes[i] != 0)
              return ctx.error("cannot resize an empty axis to %lld", (long long)p.sizes[i]);
            scales[d] = in[d].value ? static_cast<double>(p.sizes[i]) / static_cast<double>(in[d].value) : 1.0;
          }
        }
      }
    }
    std::vector<int64_t> known;
    for (const Dim& d : out)
      if (d.known()) known.push_back(d.value);
    int64_t n;
    if (!checked_numel(known, n) || n > (int64_t(1) << 40)) return ctx.error("output is too large");
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    const ValueInfo& x = ctx.in(0);
    if (x.dtype != DataType::kUndefined && !is_float(x.dtype) && !is_integer(x.dtype))
      return ctx.error("input 'X' must be numeric, found %s", dtype_name(x.dtype));
    if (sizes_in_ >= 0 && ctx.has_input(sizes_in_)) {
      Status s = expect_dtype(ctx, sizes_in_, "sizes", {DataType::kInt64});
      if (!s.is_ok()) return s;
    }
    if (scales_in_ >= 0 && ctx.has_input(scales_in_)) {
      Status s = expect_dtype(ctx, scales_in_, "scales", {DataType::kFloat32, DataType::kFloat64});
      if (!s.is_ok()) return s;
    }
    std::vector<TensorRef> refs(ctx.num_inputs());
    auto get = [&](int i, const TensorRef*& t, int64_t& numel) {
      if (!ctx.has_input(i)) return false;
      const Shape& s = ctx.in(i).shape;
      numel = s.numel();
      if (const Tensor* v = ctx.value(i)) {
        refs[i] = TensorRef::of(*v);
        t = &refs[i];
        numel = v->numel();
      }
      return true;
    };
    ResizeParams p;
    bool have_scales, have_sizes;
    const bool known = params_of(get, p, have_scales, have_sizes);
    if (!x.shape.rank_known) {
      ctx.set_output(0, x.dtype, Shape());
      return Status::ok();
    }
    if (!known) {
      std::vector<Dim> out(x.shape.rank());
      if (a_.has_axes) {
        out = x.shape.dims;
        for (int64_t a : a_.axes)
          if (normalize_axis(a, x.shape.rank())) out[a] = Dim();
      }
      ctx.set_output(0, x.dtype, Shape(std::move(out)));
      return Status::ok();
    }
    std::vector<Dim> out;
    std::vector<double> scales, roi;
    Status s = plan(ctx, x.shape.dims, p, have_scales, have_sizes, out, scales, roi);
    if (!s.is_ok()) return s;
    ctx.set_output(0, x.dtype, Shape(std::move(out)));
    return Status::ok();
  }

  // Source coordinate of output coordinate o on an axis of n_in -> n_out with scale s.
  double source_coord(int64_t o, int64_t n_in, int64_t n_out, double s, double roi_b, double roi_e) const {
    const double x = static_cast<double>(o), in = static_cast<double>(n_in), out_w = s * in;
    switch (a_.coord) {
      case Coord::kHalfPixel: return (x + 0.5) / s - 0.5;
      case Coord::kHalfPixelSymmetric: {
        const double adj = static_cast<double>(n_out) / out_w, center = in / 2;
        return center * (1 - adj) + (x + 0.5) / s - 0.5;
      }
      case Coord::kPytorchHalfPixel: return n_out > 1 ? (x + 0.5) / s - 0.5 : 0.0;
      case Coord::kAlignCorners: return out_w == 1 ? 0.0 : x * (in - 1) / (out_w - 1);
      case Coord::kAsymmetric: return x / s;
      case Coord::kTfHalfPixelForNn: return (x + 0.5) / s;
      case Coord::kTfCropAndResize:
        return (out_w == 1 ? (roi_e - roi_b) * (in - 1) / 2 : x * (roi_e - roi_b) * (in - 1) / (out_w - 1)) +
               roi_b * (in - 1);
    }
    return 0;
  }

  Status axis_taps(const ComputeContext& ctx, int64_t n_in, int64_t n_out, double s, double roi_b, double roi_e,
                   AxisTaps& t) const {
    t.begin.assign(1, 0);
    t.extrap.assign(n_out, 0);
    const bool identity =
        n_in == n_out && s == 1.0 && (a_.coord != Coord::kTfCropAndResize || (roi_b == 0 && roi_e == 1));
    // Kernel window: taps at floor'(x) + i for i in [start, start + n).
    int64_t start = 0, n = 2;
    const double sa = std::min(s, 1.0);
    if (a_.mode == Mode::kCubic) start = -1, n = 4;
    if (a_.antialias && a_.mode != Mode::kNearest && s < 1) {
      start = static_cast<int64_t>(std::floor((a_.mode == Mode::kCubic ? -2.0 : -1.0) / sa) + 1);
      n = 2 - 2 * start;
      if (n > (int64_t(1) << 22)) return ctx.error("antialias kernel of %lld taps is too large", (long long)n);
    }
    std::vector<double> w(n);
    for (int64_t o = 0; o < n_out; ++o) {
      if (identity || n_in == 0) {
        t.idx.push_back(std::min(o, std::max<int64_t>(n_in - 1, 0)));
        t.w.push_back(1.0);
        t.begin.push_back(static_cast<int64_t>(t.idx.size()));
        continue;
      }
      double x = source_coord(o, n_in, n_out, s, roi_b, roi_e);
      if (a_.coord == Coord::kTfCropAndResize && (x < 0 || x > static_cast<double>(n_in - 1))) t.extrap[o] = 1;
      x = std::clamp(x, -1e12, 1e12);
      // The reference prefers the left neighbour: ratio in (0, 1].
      double x0 = std::floor(x), ratio = x - x0;
      if (ratio == 0) {
        x0 -= 1;
        ratio = 1;
      }
      const int64_t base = static_cast<int64_t>(x0);
      if (a_.mode == Mode::kNearest) {
        bool right;
        switch (a_.nearest) {
          case Nearest::kRoundPreferFloor: right = ratio > 0.5; break;
          case Nearest::kRoundPreferCeil: right = ratio >= 0.5; break;
          case Nearest::kFloor: right = ratio == 1; break;
          case Nearest::kCeil: right = true; break;
          default: right = ratio == 1 || s < 1; break;  // kSimple
        }
        t.idx.push_back(std::clamp<int64_t>(base + (right ? 1 : 0), 0, n_in - 1));
        t.w.push_back(1.0);
        t.begin.push_back(static_cast<int64_t>(t.idx.size()));
        continue;
      }
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double arg = static_cast<double>(start + i) - ratio;
        if (a_.antialias && s < 1) {
          w[i] = a_.mode == Mode::kCubic ? cubic_weight(arg * sa, a_.cubic_a) : std::max(0.0, 1 - std::fabs(arg * sa));
        } else {
          w[i] = a_.mode == Mode::kCubic ? cubic_weight(arg, a_.cubic_a) : (i == 0 ? 1 - ratio : ratio);
        }
        sum += w[i];
      }
      if (a_.antialias && s < 1 && sum != 0)
        for (double& v : w) v /= sum;
      if (a_.exclude_outside) {
        sum = 0;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t j = base + start + i;
          if (j < 0 || j >= n_in) w[i] = 0;
          sum += w[i];
        }
        if (sum == 0) sum = 1;
        for (double& v : w) v /= sum;
      }
      for (int64_t i = 0; i < n; ++i) {
        if (w[i] == 0) continue;
        t.idx.push_back(std::clamp<int64_t>(base + start + i, 0, n_in - 1));
        t.w.push_back(w[i]);
      }
      t.begin.push_back(static_cast<int64_t>(t.idx.size()));
    }
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    auto get = [&](int i, const TensorRef*& t, int64_t& numel) {
      if (!ctx.has_input(i)) return false;
      t = &ctx.in(i);
      numel = t->numel();
      return true;
    };
    ResizeParams p;
    bool have_scales, have_sizes;
    if (!params_of(get, p, have_scales, have_sizes))
      return ctx.error("'roi'/'scales' must be float32 or float64 and 'sizes' int64");
    std::vector<Dim> in_dims(x.dims.begin(), x.dims.end()), out;
    std::vector<double> scales, roi;
    Status s = plan(ctx, in_dims, p, have_scales, have_sizes, out, scales, roi);
    if (!s.is_ok()) return s;
    const int r = x.rank();
    for (int k = 0; k < r; ++k)
      if (out[k].value != y.dims[k])
        return ctx.error("output shape %s differs from the resize's", ints_str(y.dims).c_str());
    if (y.numel() == 0) return Status::ok();
    for (int k = 0; k < r; ++k)
      if (x.dims[k] == 0) return ctx.error("cannot resize an empty input of shape %s", ints_str(x.dims).c_str());
    if (r == 0) {
      std::memcpy(y.data, x.data, dtype_size(x.dtype));
      return Status::ok();
    }
    std::vector<AxisTaps> taps(r);
    for (int k = 0; k < r; ++k) {
      s = axis_taps(ctx, x.dims[k], y.dims[k], scales[k], roi[k], roi[r + k], taps[k]);
      if (!s.is_ok()) return s;
    }
    if (a_.mode == Mode::kNearest) return run_nearest(ctx, taps);
    bool ok = dispatch(x.dtype, TypeSet::kNumeric, [&](auto tag) {
      using T = typename decltype(tag)::type;
      run_interp<T>(ctx, taps);
    });
    if (!ok) return ctx.error("mode linear/cubic does not support dtype %s", dtype_name(x.dtype));
    return Status::ok();
  }

  Status run_nearest(ComputeContext& ctx, const std::vector<AxisTaps>& taps) const {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    const size_t es = dtype_size(x.dtype);
    alignas(8) uint8_t fill[8] = {0};
    if (a_.extrapolation != 0 && !dispatch(x.dtype, TypeSet::kAll, [&](auto tag) {
          using T = typename decltype(tag)::type;
          T v = static_cast<T>(a_.extrapolation);
          std::memcpy(fill, &v, sizeof(T));
        }))
      return ctx.error("extrapolation_value is not supported for dtype %s", dtype_name(x.dtype));
    const int r = x.rank();
    const std::vector<int64_t> st = strides_of(x.dims);
    const int64_t n = y.dims[r - 1], rows = y.numel() / n;
    dispatch_by_size(es, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T fv;
      std::memcpy(&fv, fill, sizeof(T));
      const T* src = static_cast<const T*>(x.data);
      T* dst = static_cast<T*>(y.data);
      const AxisTaps& last = taps[r - 1];
      parallel_for(rows, y.numel() >= (1 << 16) ? ctx.num_threads : 1, [&](int64_t rb, int64_t re) {
        for (int64_t row = rb; row < re; ++row) {
          int64_t rem = row, off = 0;
          bool ex = false;
          for (int k = r - 2; k >= 0; --k) {
            const int64_t o = rem % y.dims[k];
            rem /= y.dims[k];
            off += taps[k].idx[taps[k].begin[o]] * st[k];
            ex = ex || taps[k].extrap[o];
          }
          T* out = dst + row * n;
          for (int64_t j = 0; j < n; ++j) out[j] = (ex || last.extrap[j]) ? fv : src[off + last.idx[last.begin[j]]];
        }
      });
    });
    return Status::ok();
  }

  template <class T>
  static T cast_out(double v) {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(v);
    } else {
      v = std::nearbyint(v);
      v = std::clamp(v, static_cast<double>(std::numeric_limits<T>::lowest()),
                     static_cast<double>(std::numeric_limits<T>::max()));
      return static_cast<T>(v);
    }
  }

  template <class T>
  void run_interp(ComputeContext& ctx, const std::vector<AxisTaps>& taps) const {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    const int r = x.rank();
    const std::vector<int64_t> st = strides_of(x.dims);
    const int64_t n = y.dims[r - 1], rows = y.numel() / n;
    const T* src = x.ptr<T>();
    T* dst = y.ptr<T>();
    const T fv = cast_out<T>(a_.extrapolation);
    const AxisTaps& last = taps[r - 1];
    parallel_for(rows, y.numel() >= (1 << 14) ? ctx.num_threads : 1, [&](int64_t rb, int64_t re) {
      std::vector<int64_t> coord(r, 0), offs, offs2;
      std::vector<double> ws, ws2;
      for (int64_t row = rb; row < re; ++row) {
        int64_t rem = row;
        bool ex = false;
        for (int k = r - 2; k >= 0; --k) {
          coord[k] = rem % y.dims[k];
          rem /= y.dims[k];
          ex = ex || taps[k].extrap[coord[k]];
        }
        T* out = dst + row * n;
        if (ex) {
          for (int64_t j = 0; j < n; ++j) out[j] = fv;
          continue;
        }
        // Combine the taps of the outer axes into (offset, weight) pairs.
        offs.assign(1, 0);
        ws.assign(1, 1.0);
        for (int k = 0; k < r - 1; ++k) {
          const AxisTaps& t = taps[k];
          offs2.clear();
          ws2.clear();
          for (size_t c = 0; c < offs.size(); ++c)
            for (int64_t q = t.begin[coord[k]]; q < t.begin[coord[k] + 1]; ++q) {
              offs2.push_back(offs[c] + t.idx[q] * st[k]);
              ws2.push_back(ws[c] * t.w[q]);
            }
          offs.swap(offs2);
          ws.swap(ws2);
        }
        for (int64_t j = 0; j < n; ++j) {
          if (last.extrap[j]) {
            out[j] = fv;
            continue;
          }
          double acc = 0;
          for (size_t c = 0; c < offs.size(); ++c) {
            const T* p = src + offs[c];
            double a = 0;
            for (int64_t q = last.begin[j]; q < last.begin[j + 1]; ++q)
              a += static_cast<double>(p[last.idx[q]]) * last.w[q];
            acc += a * ws[c];
          }
          out[j] = cast_out<T>(acc);
        }
      }
    });
  }

 private:
  int64_t opset_;
  bool upsample_;
  ResizeAttrs a_;
  std::vector<double> attr_scales_;
  int roi_in_ = -1, scales_in_ = -1, sizes_in_ = -1;
  Status bad_;
};

struct ResizeOp : ResizeKernel {
  ResizeOp(const Node& n, int64_t opset) : ResizeKernel(n, opset, false) {}
};
struct UpsampleOp : ResizeKernel {
  UpsampleOp(const Node& n, int64_t opset) : ResizeKernel(n, opset, true) {}
};

}  // namespace

void register_resize_ops(OpRegistry& r) {
  r.add("Resize", factory_of<ResizeOp>());
  r.add("Upsample", factory_of<UpsampleOp>());
}

}  // namespace infera
