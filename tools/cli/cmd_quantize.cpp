// infera quantize: calibrates a float model over sample inputs (or reuses a calibration cache) and
// writes a standard QDQ ONNX model (per-channel int8 weights, int8 per-tensor activations, int32
// biases) that infera runs as int8 and ONNX Runtime runs too.
#include <cstdio>
#include <sstream>

#include "calib.h"

namespace infera::cli {

const CommandSpec& quantize_spec() {
  static const CommandSpec spec = [] {
    CommandSpec c{"quantize",
                  "MODEL --calibration PATH -o OUT [options]",
                  "Post-training int8 quantization. Runs MODEL (float32) over the calibration samples,\n"
                  "keeps one range per activation (inputs and outputs of Conv and residual Add) and\n"
                  "writes OUT: a QDQ ONNX model with symmetric per-channel int8 weights, symmetric int8\n"
                  "per-tensor activations and int32 biases. The ranges go to a calibration cache\n"
                  "(JSON, keyed by the model's SHA-256 and the method): --calib-cache FILE reuses\n"
                  "FILE when it exists (then --calibration is not needed) and writes it otherwise.\n"
                  "Calibration input: an .npy array [N, ...] (batches of --batch), a folder of .npy\n"
                  "files, or a folder of JPEG/PNG images with --calib-preprocess (docs/int8.md).",
                  {}};
    c.options.push_back({"--calibration", "PATH",
                         "an .npy array of samples, a folder of .npy files, or a folder of images\n"
                         "(.jpg/.jpeg/.png, sorted by name; other files skipped) with --calib-preprocess"});
    c.options.push_back({"--calib-preprocess", "SPEC",
                         "images: KEY=VALUE joined by commas, as torchvision's ImageNet transform:\n"
                         "resize=S (shorter side, PIL's antialiased bilinear) or HxW, crop=S|HxW (center),\n"
                         "scale=X (pixel / X, default 255), mean=M[:M:M], std=S[:S:S] (default 0, 1),\n"
                         "layout=nchw|nhwc (default nchw), color=rgb|gray (default rgb; gray images are\n"
                         "repeated to RGB, RGB made gray by luma); the model's input must match"});
    c.options.push_back({"--max-image-pixels", "N",
                         "images: the most pixels (width x height) of one image, checked before\n"
                         "decoding (K/M/G suffixes; default and most 64M)"});
    c.options.push_back(
        {"--calib-dump", "FILE", "also write the loaded calibration samples, concatenated, as FILE (.npy)"});
    c.options.push_back({"--calib-labels", "Y.npy",
                         "mixed: the class of each calibration sample, int32/int64 [N] (images: in\n"
                         "name order); the layers and the mix are then measured as top-1 on them and\n"
                         "--accuracy-budget is in points of top-1"});
    c.options.push_back({"-o", "OUT", "the quantized model to write", "--output"});
    c.options.push_back({"--calib-method", "M",
                         "minmax | percentile[:P] (P in (0,100], default 99.99) | entropy (TensorRT's\n"
                         "KL-divergence calibrator); default minmax"});
    c.options.push_back({"--calib-cache", "FILE",
                         "read the ranges from FILE if it exists, else write them there\n"
                         "(default: OUT.calib.json, written); --precision mixed stores its choice\n"
                         "there too and reuses it for the same budget and --layer-precision"});
    c.options.push_back(
        {"--batch", "N", "samples per calibration run from one .npy array or an image folder, 1..65536\n(default 32)"});
    c.options.push_back({"--precision", "P",
                         "int8 (every quantizable layer) | mixed: the layers most sensitive to int8\n"
                         "stay float until the measured error fits --accuracy-budget (default int8)"});
    c.options.push_back({"--accuracy-budget", "E",
                         "mixed: the largest relative output error ||y - y_fp32|| / ||y_fp32||,\nmean over "
                         "the first 4 calibration batches, 0..1 (default 0.01); with --calib-labels\n"
                         "the most top-1 points lost over all calibration samples, 0..100 (default\n"
                         "0.2; 0 keeps every free layer float)"});
    c.options.push_back({"--layer-precision", "LIST",
                         "mixed: overrides, NAME:int8|fp32 joined by commas; '*' is every other\nlayer "
                         "(trtexec's --layerPrecisions): 'conv1:fp32,*:int8'"});
    c.options.push_back({"--threads", "N", "threads, 1..1024 (default: all cores)"});
    return c;
  }();
  return spec;
}

// The samples concatenated along dim 0 (--calib-dump: what the preprocessing made of the images).
static Status dump_samples(const std::string& path, const std::vector<CalibrationSample>& samples) {
  std::vector<int64_t> d = samples[0].tensor.dims();
  d[0] = 0;
  for (const CalibrationSample& c : samples) {
    if (c.tensor.dtype() != samples[0].tensor.dtype() || c.tensor.dims().size() != d.size())
      return Status::error("--calib-dump: sample " + c.name + " differs in dtype or rank from the first");
    d[0] += c.tensor.dims()[0];
  }
  auto all = Tensor::make(samples[0].tensor.dtype(), d);
  if (!all.is_ok()) return all.status();
  char* p = static_cast<char*>(all.value().data());
  for (const CalibrationSample& c : samples) {
    if (p + c.tensor.nbytes() > static_cast<char*>(all.value().data()) + all.value().nbytes())
      return Status::error("--calib-dump: sample " + c.name + " differs in shape from the first");
    std::memcpy(p, c.tensor.data(), c.tensor.nbytes());
    p += c.tensor.nbytes();
  }
  return save_npy(path, all.value()).prefixed("--calib-dump: ");
}

Status quantize_to_file(const QuantizeRequest& q, std::string* summary) {
  auto hash = sha256_file(q.model);
  if (!hash.is_ok()) return hash.status();
  CalibMethod method;
  double pct;
  Status st = parse_calib_method(q.method, method, pct);
  if (!st.is_ok()) return st;
  const std::string method_name = calib_method_name(method, pct);
  CalibCache cache;
  bool from_cache = false;
  if (!q.cache.empty() && is_file(q.cache)) {
    auto c = read_calib_cache(q.cache);
    if (!c.is_ok()) return c.status();
    if (c.value().model_sha256 != hash.value())
      return Status::error("calibration cache " + q.cache + " was made for another model (sha256 " +
                           c.value().model_sha256.substr(0, 16) + "..., " + q.model + " is " +
                           hash.value().substr(0, 16) + "...)");
    if (c.value().table.method != method_name)
      return Status::error("calibration cache " + q.cache + " was made with method '" + c.value().table.method +
                           "', not '" + method_name + "'");
    cache = c.take();
    from_cache = true;
  }
  // A mix stored with this table for the same budget, overrides and measure is reused as it is.
  std::string measure;
  if (q.mixed && !q.calib_labels.empty()) {
    auto h = sha256_file(q.calib_labels);
    if (!h.is_ok()) return Status::error("calibration labels " + h.message());
    measure = "top1:" + h.value();
  }
  const bool mix_cached = q.mixed && from_cache && cache.has_mix && cache.mix_budget == q.budget &&
                          cache.mix_layer_precision == q.layer_precision && cache.mix_measure == measure;
  bool cache_changed = !from_cache;
  std::vector<CalibrationSample> samples;
  if (!from_cache || (q.mixed && !mix_cached)) {
    if (q.calibration.empty())
      return Status::error(q.mixed
                               ? "mixed precision measures the layers on samples: give --calibration PATH"
                               : "no calibration data: give --calibration PATH (or an existing --calib-cache FILE)");
    auto loaded = load_model_calibration(q.model, q.calibration, q.batch, q.preprocess, q.max_image_pixels);
    if (!loaded.is_ok()) return loaded.status();
    samples = loaded.take();
    if (!q.dump.empty()) {
      st = dump_samples(q.dump, samples);
      if (!st.is_ok()) return st;
    }
  }
  if (!from_cache) {
    CalibrationOptions o;
    o.method = method;
    o.percentile = pct;
    o.num_threads = q.num_threads;
    if (q.progress)
      o.progress = [](size_t done, size_t total) {
        const int w = 30, f = static_cast<int>(w * done / std::max<size_t>(total, 1));
        std::fprintf(stderr, "\rcalibrating [%.*s%*s] %zu/%zu", f, "##############################", w - f, "", done,
                     total);
        if (done == total) std::fputc('\n', stderr);
      };
    auto t = calibrate(q.model, samples, o);
    if (!t.is_ok()) return t.status();
    cache.model_sha256 = hash.value();
    cache.table = t.take();
  }
  std::string mixed_report;
  std::vector<std::string> float_layers;
  if (mix_cached) {
    float_layers = cache.mix_float_layers;
    mixed_report = "mixed: " + std::to_string(float_layers.size()) + " layers fp32 (the choice stored in " + q.cache +
                   " for budget " + std::to_string(q.budget) + (measure.empty() ? "" : " top-1 points") +
                   "; not re-measured)\n";
  } else if (q.mixed) {
    MixedOptions mo;
    mo.budget = q.budget;
    mo.num_threads = q.num_threads;
    if (!q.calib_labels.empty()) {
      int64_t rows = 0;
      for (const CalibrationSample& c : samples) rows += c.tensor.dims().empty() ? 1 : c.tensor.dims()[0];
      auto labels = read_labels_file(q.calib_labels, rows, "calibration labels");
      if (!labels.is_ok()) return labels.status();
      mo.labels = labels.take();
    }
    std::stringstream ss(q.layer_precision);
    std::string item;
    while (std::getline(ss, item, ',')) {
      const size_t c = item.rfind(':');
      const std::string name = c == std::string::npos ? "" : item.substr(0, c),
                        p = c == std::string::npos ? "" : item.substr(c + 1);
      const bool is_float = p == "fp32" || p == "fp16" || p == "float";
      if (name.empty() || (!is_float && p != "int8"))
        return Status::error(
            StatusCode::kInvalidInput,
            "--layer-precision: '" + item + "' is not NAME:int8 or NAME:fp32 ('*' for every other layer)");
      if (name == "*")
        mo.float_by_default = is_float;
      else
        (is_float ? mo.force_float : mo.force_int8).push_back(name);
    }
    if (q.progress)
      mo.progress = [](size_t done, size_t total) {
        std::fprintf(stderr, "\rmeasuring layers %zu/%zu", done, total);
        if (done == total) std::fputc('\n', stderr);
      };
    auto plan = choose_mixed(q.model, cache.table, samples, mo);
    if (!plan.is_ok()) return plan.status();
    float_layers = plan.value().float_layers();
    const MixedPlan& mp = plan.value();
    char line[640];
    if (mp.top1)
      std::snprintf(line, sizeof line,
                    "layer precision (measure: top-1 against --calib-labels on %lld calibration samples, float "
                    "top-1 %.4f; sensitivity = top-1 points lost with the layer alone in int8):\n",
                    static_cast<long long>(mp.rows), mp.float_top1);
    else
      std::snprintf(line, sizeof line,
                    "layer precision (measure: relative output error; sensitivity = that error with the layer alone "
                    "in int8):\n");
    mixed_report = line;
    for (const LayerChoice& l : mp.layers) {
      // Forced layers are not measured; a top-1 sensitivity may be negative (the layer alone gains).
      char sens[32] = "-";
      if (mp.top1 && l.why.rfind("forced", 0) != 0)
        std::snprintf(sens, sizeof sens, "%.3f", l.sensitivity);
      else if (!mp.top1 && l.sensitivity >= 0)
        std::snprintf(sens, sizeof sens, "%s", std::to_string(l.sensitivity).c_str());
      std::snprintf(line, sizeof line, "  %-48s %-5s %10s  %s\n", l.layer.c_str(), l.int8 ? "int8" : "fp32", sens,
                    l.why.c_str());
      mixed_report += line;
    }
    const char* met = mp.measured <= q.budget ? ", met" : ", NOT met with every free layer float";
    if (mp.top1)
      std::snprintf(line, sizeof line,
                    "mixed: %zu of %zu layers int8; top-1 points lost on %lld calibration samples: all int8 %.3f, "
                    "estimated %.3f, measured %.3f (budget %.3f points%s)\n",
                    mp.layers.size() - float_layers.size(), mp.layers.size(), static_cast<long long>(mp.rows),
                    mp.all_int8, mp.estimated, mp.measured, q.budget, met);
    else
      std::snprintf(line, sizeof line,
                    "mixed: %zu of %zu layers int8; relative output error: all int8 %.5f, estimated %.5f, measured "
                    "%.5f (budget %.5f%s)\n",
                    mp.layers.size() - float_layers.size(), mp.layers.size(), mp.all_int8, mp.estimated, mp.measured,
                    q.budget, met);
    mixed_report += line;
    cache.has_mix = true;
    cache.mix_budget = q.budget;
    cache.mix_layer_precision = q.layer_precision;
    cache.mix_float_layers = float_layers;
    cache.mix_measure = measure;
    cache_changed = true;
  }
  st = write_qdq_model(q.model, cache.table, q.out, float_layers);
  if (!st.is_ok()) return st;
  const std::string cache_out = q.cache.empty() ? q.out + ".calib.json" : q.cache;
  if (cache_changed) {
    st = write_calib_cache(cache_out, cache);
    if (!st.is_ok()) return st;
  }
  if (summary)
    *summary = mixed_report + "quantized " + std::to_string(cache.table.amax.size()) + " activations (" + method_name +
               ", " + (from_cache ? "ranges from " + q.cache : "cache written to " + cache_out) +
               (from_cache && cache_changed ? ", mix added to it" : "") + "); wrote " + q.out;
  return Status::ok();
}

int cmd_quantize(int argc, char** argv) {
  const CommandSpec& spec = quantize_spec();
  Args a = parse_args(argc, argv, 2, spec);
  QuantizeRequest q;
  q.batch = a.get_int("--batch", 32, 1, 65536);
  q.num_threads = static_cast<int>(a.get_int("--threads", 0, 1, 1024));
  if (a.positional.size() != 1) a.error("expects one MODEL");
  if (!a.has("-o")) a.error("needs -o OUT (the quantized model to write)");
  const int rc = handle_help_and_usage(spec, a);
  if (rc >= 0) return rc;
  q.model = a.positional[0];
  q.out = a.get("-o");
  q.calibration = a.get("--calibration");
  q.cache = a.get("--calib-cache");
  q.method = a.get("--calib-method", "minmax");
  q.progress = stderr_is_tty();
  const std::string prec = a.get("--precision", "int8");
  if (prec != "int8" && prec != "mixed")
    return usage("quantize", "--precision expects int8 or mixed, got '" + prec + "'");
  q.mixed = prec == "mixed";
  q.calib_labels = a.get("--calib-labels");
  q.budget = q.calib_labels.empty() ? a.get_double("--accuracy-budget", 0.01, 0, 1)
                                    : a.get_double("--accuracy-budget", 0.2, 0, 100);
  q.layer_precision = a.get("--layer-precision");
  if (!q.mixed && (a.has("--accuracy-budget") || a.has("--layer-precision") || a.has("--calib-labels")))
    return usage("quantize",
                 "--accuracy-budget, --layer-precision and --calib-labels choose a mix: give --precision mixed");
  std::string err = calib_input_options(a, q);
  if (!err.empty()) return usage("quantize", err);
  if (!a.usage_error.empty()) return usage("quantize", a.usage_error);
  std::string summary;
  Status s = quantize_to_file(q, &summary);
  if (!s.is_ok()) return fail(s.message());
  printf("%s\n", summary.c_str());
  return kExitOk;
}

}  // namespace infera::cli
