// infera build: optimizes MODEL, plans it for each batch size (timing what the performance
// database does not know yet) and writes a saved plan (docs/saved_plans.md) that `infera run`,
// `bench`, `info` and Session::load take without optimizing or searching again.
#include <sys/stat.h>

#include "cli.h"

namespace infera::cli {

const CommandSpec& build_spec() {
  static const CommandSpec spec = [] {
    CommandSpec c{"build",
                  "MODEL -o FILE [options]",
                  "Writes a saved plan of MODEL: the optimized graph with its weights, the algorithm\n"
                  "choices of the plans for each --batch size and a header naming this device, its\n"
                  "architecture and the library versions. Loading it (any command that takes a MODEL)\n"
                  "skips the graph passes and the algorithm search and prepares the saved batch sizes;\n"
                  "a plan made for another device, architecture or library version is refused.\n"
                  "Backend weight reorders are redone at load.",
                  {}};
    c.options.push_back({"-o", "FILE", "the saved plan to write (.iplan by convention)", "--output"});
    c.options.push_back({"--batch", "LIST", "batch sizes to plan, comma-separated, each 1..1048576 (default 1)"});
    for (auto& o : shape_opt_specs()) c.options.push_back(o);
    for (auto& o : session_opt_specs()) c.options.push_back(o);
    c.options.push_back(verbose_opt_spec());
    return c;
  }();
  return spec;
}

int cmd_build(int argc, char** argv) {
  const CommandSpec& spec = build_spec();
  Args a = parse_args(argc, argv, 2, spec);
  SessionOptions opts;
  session_options(a, opts);
  std::vector<int64_t> batches = parse_batch_list(a);
  std::vector<ShapeSpec> shape_specs = parse_shape_specs(a);
  if (a.positional.size() != 1 && a.usage_error.empty())
    a.error(a.positional.empty() ? "build needs a MODEL"
                                 : "build takes one MODEL, got " + std::to_string(a.positional.size()) + " arguments");
  if (!a.has("-o") && a.usage_error.empty()) a.error("build needs -o FILE (the saved plan to write)");
  if (int rc = handle_help_and_usage(spec, a); rc >= 0) return rc;
  const std::string out = a.get("-o");
  if (out == a.positional[0]) return fail("-o " + out + " is the model itself; write the plan to another file");

  auto sess = Session::load(a.positional[0], opts);
  if (!sess.is_ok()) return fail(sess.message());
  Session& s = *sess.value();
  std::vector<std::map<std::string, std::vector<int64_t>>> shapes;  // every batch checked first
  for (int64_t b : batches) {
    auto r = resolve_shapes(s, ShapeRequest{shape_specs, b, nullptr});
    if (!r.is_ok()) return fail(r.message());
    if (!r.value().has_batch && batches.size() > 1)
      return fail("--batch " + a.get("--batch") + ": the model has no free batch dim, so one plan is all it has");
    shapes.push_back(r.value().dims);
  }
  printf("build      %s -> %s on %s, %s\n", safe_line(a.positional[0]).c_str(), safe_line(out).c_str(),
         opts.device.str().c_str(), precision_name(opts.precision));
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto rep = s.prepare(shapes[i]);
    if (!rep.is_ok()) return fail("batch " + std::to_string(batches[i]) + ": " + rep.message());
    const PlanReport& r = rep.value();
    printf("batch %-5lld plan %.2f s, %zu steps; algorithm choices: %zu timed, %zu from the perf db\n",
           static_cast<long long>(batches[i]), r.build_ms / 1000.0, r.steps, r.perf_db_timed, r.perf_db_found);
  }
  Status st = s.save_plan(out, shapes);
  if (!st.is_ok()) return fail(st.message());
  struct stat sb {};
  const size_t bytes = ::stat(out.c_str(), &sb) == 0 ? static_cast<size_t>(sb.st_size) : 0;
  printf("wrote      %s (%s): %zu batch size%s; `infera run %s` loads it without passes or search\n",
         safe_line(out).c_str(), bytes_str(bytes).c_str(), shapes.size(), shapes.size() == 1 ? "" : "s",
         safe_line(out).c_str());
  return kExitOk;
}

}  // namespace infera::cli
