// infera run: one inference with inputs from files (or seeded random data), outputs to .npy.
#include <sys/stat.h>

#include "cli.h"

namespace infera::cli {

static std::string sanitize(const std::string& name) {
  std::string s = name.empty() ? "output" : name;
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  if (s == "." || s == "..") s = "_";
  return s;
}

int cmd_run(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2,
                      {"--input", "--output-dir", "--device", "--precision", "--batch", "--threads", "--seed"},
                      {"--quiet", "--no-optimize", "--no-dnnl"});
  SessionOptions opts;
  session_options(a, opts);
  int64_t batch = a.get_int("--batch", 1, 1, 1 << 20);
  uint32_t seed = static_cast<uint32_t>(a.get_int("--seed", 0, 0, 1ll << 31));
  if (!a.usage_error.empty()) return usage(a.usage_error);
  if (a.positional.size() != 1) return usage("run takes one MODEL");
  const bool quiet = a.has("--quiet");
  const bool progress = !quiet && stderr_is_tty();
  if (progress) fprintf(stderr, "loading %s...\r", a.positional[0].c_str());
  auto sess = Session::load(a.positional[0], opts);
  if (progress) fprintf(stderr, "\033[K");
  if (!sess.is_ok()) return fail(sess.message());
  Session& s = *sess.value();

  std::map<std::string, Tensor> inputs;
  for (const std::string& spec : a.all("--input")) {
    std::string name, path = spec;
    size_t eq = spec.find('=');
    if (eq != std::string::npos) {
      std::string n = spec.substr(0, eq);
      for (const IoInfo& io : s.inputs())
        if (io.name == n) name = n;
      if (name.empty()) {
        struct stat st;
        if (stat(spec.c_str(), &st) != 0) return fail("--input " + spec + ": the model has no input named '" + n + "'");
      } else {
        path = spec.substr(eq + 1);
      }
    }
    if (name.empty()) {
      if (s.inputs().size() != 1)
        return usage("--input PATH without NAME= needs a single-input model; this one has " +
                     std::to_string(s.inputs().size()));
      name = s.inputs()[0].name;
    }
    auto t = load_tensor_file(path);
    if (!t.is_ok()) return fail(t.message());
    inputs[name] = t.take();
  }
  if (inputs.empty()) {
    auto shapes = shapes_for_batch(s, batch);
    if (!shapes.is_ok()) return fail(shapes.message());
    uint32_t k = 0;
    for (const IoInfo& io : s.inputs()) {
      auto t = random_input(io, shapes.value()[io.name], seed + k++);
      if (!t.is_ok()) return fail(t.message());
      inputs[io.name] = t.take();
    }
  }
  auto outs = s.run(inputs);
  if (!outs.is_ok()) return fail(outs.message());
  std::string dir = a.get("--output-dir", ".");
  mkdir(dir.c_str(), 0755);
  for (size_t i = 0; i < outs.value().size(); ++i) {
    const Tensor& t = outs.value()[i];
    std::string path = dir + "/" + sanitize(s.outputs()[i].name) + ".npy";
    Status st = save_npy(path, t);
    if (!st.is_ok()) return fail(st.message());
    if (!quiet)
      printf("%s %s %s -> %s\n", s.outputs()[i].name.c_str(), dtype_name(t.dtype()), shape_str(t.dims()).c_str(),
             path.c_str());
  }
  return kExitOk;
}

}  // namespace infera::cli
