// infera run: one inference with inputs from files (or seeded random data), outputs to .npy.
#include "cli.h"

namespace infera::cli {

const CommandSpec& run_spec() {
  static const CommandSpec spec = [] {
    CommandSpec c{"run",
                  "MODEL [options]",
                  "Runs MODEL once and writes each output to DIR/<output name>.npy (characters\n"
                  "other than [A-Za-z0-9._-] become _; names that then collide are an error).\n"
                  "Inputs come from files, or are seeded random data: floats U[-1,1), integers\n"
                  "in [0,10), bools in {0,1}; input k uses seed --seed + k.",
                  {}};
    c.options = {
        {"--input", "NAME=PATH",
         "an input from a .npy or ONNX TensorProto .pb file (repeatable);\na single-input model also takes PATH alone "
         "(default: random data)",
         "", true},
    };
    for (auto& o : shape_opt_specs()) c.options.push_back(o);
    c.options.push_back({"--batch", "N",
                         "the batch: the first dim of each input whose first dim is free,\n1..1048576 (default 1, or "
                         "the batch of the --input files)"});
    c.options.push_back({"--seed", "N", "seed of the random inputs, 0..4294967295 (default 0)"});
    c.options.push_back({"--output-dir", "DIR", "where the .npy files go, created if missing (default .)"});
    for (auto& o : session_opt_specs()) c.options.push_back(o);
    c.options.push_back({"--multi", "MODE",
                         "with a device list: latency (default: the batch split across the\ndevices, outputs joined "
                         "in order) | throughput (the run goes whole to one)"});
    c.options.push_back(verbose_opt_spec());
    c.options.push_back({"--quiet", "", "print nothing on success"});
    return c;
  }();
  return spec;
}

// A file name for an output: no path separators, never "." or "..".
static std::string sanitize(const std::string& name) {
  std::string s = name.empty() ? "output" : name;
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  if (s.find_first_not_of('.') == std::string::npos) s = std::string(s.size(), '_');
  return s;
}

// A name quoted in a message, cut to 200 bytes so that a message quoting two still names both.
static std::string quoted(const std::string& name) {
  return "'" + (name.size() <= 200 ? name : name.substr(0, 200) + "...(" + std::to_string(name.size()) + " bytes)") +
         "'";
}

int cmd_run(int argc, char** argv) {
  const CommandSpec& spec = run_spec();
  Args a = parse_args(argc, argv, 2, spec);
  SessionOptions opts;
  std::vector<Device> devices;
  session_options(a, opts, &devices);
  MultiDeviceOptions multi;
  multi.devices = devices;
  multi.mode = multi_mode(a, devices.size());
  std::optional<int64_t> batch;
  if (a.has("--batch")) batch = a.get_int("--batch", 1, 1, 1 << 20);
  const uint32_t seed = static_cast<uint32_t>(a.get_int("--seed", 0, 0, 4294967295ll));
  std::vector<ShapeSpec> shape_specs = parse_shape_specs(a);
  if (a.positional.size() != 1 && a.usage_error.empty())
    a.error(a.positional.empty() ? "run needs a MODEL"
                                 : "run takes one MODEL, got " + std::to_string(a.positional.size()) + " arguments");
  if (int rc = handle_help_and_usage(spec, a); rc >= 0) return rc;

  const bool quiet = a.has("--quiet");
  const bool progress = !quiet && stderr_is_tty();
  if (progress) fprintf(stderr, "loading %s...\r", safe_line(a.positional[0]).c_str());
  // Several devices: a MultiDeviceSession; its first device's session answers the questions about
  // inputs and shapes.
  std::unique_ptr<Session> one;
  std::unique_ptr<MultiDeviceSession> many;
  Status loaded = Status::ok();
  if (devices.size() > 1) {
    auto m = MultiDeviceSession::load(a.positional[0], opts, multi);
    if (m.is_ok())
      many = m.take();
    else
      loaded = m.status();
  } else {
    auto m = Session::load(a.positional[0], opts);
    if (m.is_ok())
      one = m.take();
    else
      loaded = m.status();
  }
  if (progress) fprintf(stderr, "\033[K");
  if (!loaded.is_ok()) return fail(loaded.message());
  Session& s = many ? many->session(0) : *one;

  // Output names first: a collision is known before anything runs.
  const std::string dir = a.get("--output-dir", ".");
  std::map<std::string, std::string> file_of;  // sanitized file name -> output name
  std::vector<std::string> paths;
  for (const IoInfo& io : s.outputs()) {
    std::string f = sanitize(io.name) + ".npy";
    auto [it, fresh] = file_of.emplace(f, io.name);
    if (!fresh)
      return fail("outputs " + quoted(it->second) + " and " + quoted(io.name) + " would both be written to " +
                  quoted(dir + "/" + f));
    paths.push_back(dir + "/" + f);
  }

  auto files = load_file_inputs(s, a.all("--input"));
  if (!files.is_ok()) return fail(files.message());
  auto shapes = resolve_shapes(s, ShapeRequest{shape_specs, batch, &files.value()});
  if (!shapes.is_ok()) return fail(shapes.message());
  auto inputs = make_inputs(s, shapes.value(), files.value(), seed);
  if (!inputs.is_ok()) return fail(inputs.message());
  Status st = make_dirs(dir);
  if (!st.is_ok()) return fail(st.message());

  auto outs = many ? many->run(inputs.value()) : s.run(inputs.value());
  if (!outs.is_ok()) return fail(outs.message());
  for (size_t i = 0; i < outs.value().size(); ++i) {
    const Tensor& t = outs.value()[i];
    AtomicFile f;
    st = f.open(paths[i]);
    if (st.is_ok()) st = save_npy(f.temp_path(), t).prefixed(paths[i] + ": ");
    if (st.is_ok()) st = f.commit();
    if (!st.is_ok()) return fail(st.message());
    if (!quiet)
      printf("%s %s %s -> %s\n", safe_line(s.outputs()[i].name).c_str(), dtype_name(t.dtype()),
             shape_str(t.dims()).c_str(), safe_line(paths[i]).c_str());
  }
  return kExitOk;
}

}  // namespace infera::cli
