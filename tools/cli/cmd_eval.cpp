// infera eval: top-1 / top-5 accuracy of a classifier over labelled images (.npy), in fp32 or int8
// (quantized first, from --calibration samples or a --calib-cache). The last line holds top1=0.xxxx.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "calib.h"

namespace infera::cli {

const CommandSpec& eval_spec() {
  static const CommandSpec spec = [] {
    CommandSpec c{"eval",
                  "MODEL --images X.npy --labels Y.npy [options]",
                  "Classification accuracy: runs MODEL over the images X [N, ...] in batches and compares\n"
                  "the top-1 and top-5 classes of its first output [N, classes] with the labels Y [N]\n"
                  "(integers in [0, classes)). --precision int8 quantizes MODEL first (as `infera\n"
                  "quantize`, into a temporary file) from --calibration or --calib-cache. The last line\n"
                  "reads 'top1=0.xxxx top5=0.xxxx n=N precision=P'.",
                  {}};
    c.options.push_back({"--images", "X.npy", "the images, float32 [N, ...] as the model's input takes them"});
    c.options.push_back({"--labels", "Y.npy", "the labels, int32/int64 [N]"});
    c.options.push_back({"--precision", "P",
                         "fp32 | fp16 (a GPU) | int8 | mixed (int8 where the accuracy budget allows, as\n`infera "
                         "quantize --precision mixed`; default fp32)"});
    c.options.push_back({"--device", "D",
                         "cpu (default) or gpu[:N]; on a GPU the float layers of an int8 or mixed model\nrun in fp16 "
                         "(TensorRT's int8 + fp16)"});
    c.options.push_back({"--accuracy-budget", "E",
                         "mixed: relative output error allowed, 0..1 (default 0.01); with\n--calib-labels the "
                         "top-1 points allowed to be lost on the calibration samples, 0..100\n(default 0.2)"});
    c.options.push_back({"--calib-labels", "Y.npy",
                         "mixed: the class of each calibration sample, int32/int64 [N]: the mix is\nmeasured as "
                         "top-1 on them (as `infera quantize --calib-labels`)"});
    c.options.push_back({"--layer-precision", "LIST", "mixed: overrides, 'conv1:fp32,*:int8'"});
    c.options.push_back({"--calibration", "PATH",
                         "int8: calibration samples (.npy array, folder of .npy, or folder of images\nwith "
                         "--calib-preprocess)"});
    c.options.push_back({"--calib-preprocess", "SPEC",
                         "int8: --calibration is a folder of images preprocessed by SPEC (as `infera\nquantize "
                         "--calib-preprocess`: resize=,crop=,scale=,mean=,std=,layout=,color=)"});
    c.options.push_back(
        {"--max-image-pixels", "N", "int8: most pixels of one calibration image (default and most 64M)"});
    c.options.push_back({"--calib-method", "M", "int8: minmax | percentile[:P] | entropy (default minmax)"});
    c.options.push_back({"--calib-cache", "FILE", "int8: reuse the ranges in FILE if it exists, else write them"});
    c.options.push_back({"--batch", "N", "images per run, 1..65536 (default 32)"});
    c.options.push_back({"--threads", "N", "threads, 1..1024 (default: all cores)"});
    return c;
  }();
  return spec;
}

int cmd_eval(int argc, char** argv) {
  const CommandSpec& spec = eval_spec();
  Args a = parse_args(argc, argv, 2, spec);
  const int64_t batch = a.get_int("--batch", 32, 1, 65536);
  const bool top1_budget = a.has("--calib-labels");
  const double budget =
      top1_budget ? a.get_double("--accuracy-budget", 0.2, 0, 100) : a.get_double("--accuracy-budget", 0.01, 0, 1);
  const int threads = static_cast<int>(a.get_int("--threads", 0, 1, 1024));
  if (a.positional.size() != 1) a.error("expects one MODEL");
  if (!a.has("--images") || !a.has("--labels")) a.error("needs --images X.npy and --labels Y.npy");
  const std::string prec = a.get("--precision", "fp32");
  if (prec != "fp32" && prec != "fp16" && prec != "int8" && prec != "mixed")
    a.error("--precision '" + prec + "': fp32, fp16, int8 or mixed");
  auto parsed = Device::parse(a.get("--device", "cpu"));
  if (!parsed.is_ok()) a.error("--device: " + parsed.message());
  const Device device = parsed.is_ok() ? parsed.value() : Device::cpu();
  if (prec == "fp16" && !device.is_gpu()) a.error("--precision fp16 runs on a GPU: give --device gpu");
  if (prec == "int8" && !a.has("--calibration") && !a.has("--calib-cache"))
    a.error("--precision int8 needs --calibration PATH or --calib-cache FILE");
  if (prec == "mixed" && !a.has("--calibration"))
    a.error("--precision mixed needs --calibration PATH (the layers are measured on it)");
  if (prec != "mixed" && (a.has("--accuracy-budget") || a.has("--layer-precision") || a.has("--calib-labels")))
    a.error("--accuracy-budget, --layer-precision and --calib-labels choose a mix: give --precision mixed");
  QuantizeRequest q;
  const std::string calib_err = calib_input_options(a, q);
  if (!calib_err.empty()) a.error(calib_err);
  const int rc = handle_help_and_usage(spec, a);
  if (rc >= 0) return rc;
  std::string model = a.positional[0], tmp_model;
  auto images = load_tensor_file(a.get("--images"));
  if (!images.is_ok()) return fail("images " + images.message());
  const Tensor& X = images.value();
  if (X.dtype() != DataType::kFloat32 || X.dims().empty() || X.dims()[0] == 0)
    return fail("images " + a.get("--images") + ": " + dtype_name(X.dtype()) + " " + shape_str(X.dims()) +
                ", expected float32 [N, ...] with N > 0");
  const int64_t N = X.dims()[0];
  auto labels = read_labels_file(a.get("--labels"), N, "labels");
  if (!labels.is_ok()) return fail(labels.message());
  if (prec == "int8" || prec == "mixed") {
    char tmpl[] = "/tmp/infera-eval-XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd < 0) return fail("cannot create a temporary file for the quantized model");
    close(fd);
    tmp_model = tmpl;
    q.calib_labels = a.get("--calib-labels");
    q.model = model;
    q.out = tmp_model;
    q.calibration = a.get("--calibration");
    q.cache = a.get("--calib-cache");
    if (q.cache.empty()) q.cache = tmp_model + ".calib.json";
    q.method = a.get("--calib-method", "minmax");
    q.batch = batch;
    q.num_threads = threads;
    q.progress = stderr_is_tty();
    q.mixed = prec == "mixed";
    q.budget = budget;
    q.layer_precision = a.get("--layer-precision");
    std::string summary;
    Status s = quantize_to_file(q, &summary);
    if (!a.has("--calib-cache")) std::remove(q.cache.c_str());
    if (!s.is_ok()) {
      std::remove(tmp_model.c_str());
      return fail(s.message());
    }
    printf("%s\n", summary.c_str());
    model = tmp_model;
  }
  SessionOptions so;
  so.num_threads = threads;
  so.device = device;
  if (so.device.is_gpu() && prec != "fp32") so.precision = Precision::kFp16;
  auto sess = Session::load(model, so);
  if (!tmp_model.empty()) std::remove(tmp_model.c_str());
  if (!sess.is_ok()) return fail(sess.message());
  Session& s = *sess.value();
  if (s.inputs().size() != 1) return fail(model + ": eval takes models with one input");
  const int64_t per = X.numel() / N;
  int64_t top1 = 0, top5 = 0;
  for (int64_t b = 0; b < N; b += batch) {
    const int64_t e = std::min(N, b + batch);
    std::vector<int64_t> d = X.dims();
    d[0] = e - b;
    Tensor part = Tensor::make(DataType::kFloat32, d).take();
    std::memcpy(part.data(), X.data_as<float>() + b * per, part.nbytes());
    auto r = s.run({{s.inputs()[0].name, part}});
    if (!r.is_ok()) return fail("images [" + std::to_string(b) + ":" + std::to_string(e) + "]: " + r.message());
    const Tensor& y = r.value()[0];
    if (y.dtype() != DataType::kFloat32 || y.dims().size() != 2 || y.dims()[0] != e - b)
      return fail("the model's first output is " + std::string(dtype_name(y.dtype())) + " " + shape_str(y.dims()) +
                  ", expected float32 [batch, classes]");
    const int64_t C = y.dims()[1];
    for (int64_t i = 0; i < e - b; ++i) {
      const int64_t lab = labels.value()[b + i];
      if (lab < 0 || lab >= C)
        return fail("labels: label " + std::to_string(lab) + " of image " + std::to_string(b + i) + " is outside [0, " +
                    std::to_string(C) + ")");
      const float* row = y.data_as<float>() + i * C;
      int64_t rank = 0;  // classes scoring above the label's (ties count for the label)
      for (int64_t c = 0; c < C; ++c) rank += row[c] > row[lab];
      top1 += rank == 0;
      top5 += rank < 5;
    }
  }
  printf("images %lld, batch %lld, precision %s, device %s%s\n", (long long)N, (long long)batch, prec.c_str(),
         so.device.str().c_str(), so.device.is_gpu() && prec != "fp32" ? " (float layers in fp16)" : "");
  printf("top-1 %.4f (%lld/%lld)\ntop-5 %.4f (%lld/%lld)\n", double(top1) / N, (long long)top1, (long long)N,
         double(top5) / N, (long long)top5, (long long)N);
  printf("top1=%.4f top5=%.4f n=%lld precision=%s\n", double(top1) / N, double(top5) / N, (long long)N, prec.c_str());
  return kExitOk;
}

}  // namespace infera::cli
