// infera tune: builds MODEL's plan for each batch size so that every algorithm choice is timed
// once and kept in the performance database; a later run, bench or profile finds them all.
#include "cli.h"

namespace infera::cli {

const CommandSpec& tune_spec() {
  static const CommandSpec spec = [] {
    CommandSpec c{"tune",
                  "MODEL [options]",
                  "Times the algorithm candidates of every Conv (and, on a GPU, Gemm) of MODEL for each\n"
                  "batch size and keeps the winners in the performance database (--perf-db), so that\n"
                  "later builds of the same layers time nothing. Prints, per batch, the choices timed\n"
                  "now (entries added) and found in the database.",
                  {}};
    c.options.push_back({"--batch", "LIST", "batch sizes, comma-separated, each 1..1048576 (default 1)"});
    for (auto& o : shape_opt_specs()) c.options.push_back(o);
    for (auto& o : session_opt_specs())
      if (o.name != "--no-perf-db") c.options.push_back(o);  // tuning without a database keeps nothing
    c.options.push_back({"--progress", "", "show the progress bar on stderr even when it is not a terminal"});
    c.options.push_back(verbose_opt_spec());
    return c;
  }();
  return spec;
}

// "[=====>    ] 2/3 batch 32" on one stderr line.
static void progress_bar(size_t done, size_t total, const std::string& what) {
  const int width = 30;
  const int fill = total ? static_cast<int>(width * done / total) : width;
  std::string bar(static_cast<size_t>(fill), '=');
  if (fill < width) bar += '>';
  bar.resize(width, ' ');
  fprintf(stderr, "\r[%s] %zu/%zu %s\033[K", bar.c_str(), done, total, what.c_str());
  if (done == total) fprintf(stderr, "\n");
  fflush(stderr);
}

int cmd_tune(int argc, char** argv) {
  const CommandSpec& spec = tune_spec();
  Args a = parse_args(argc, argv, 2, spec);
  SessionOptions opts;
  session_options(a, opts);
  opts.max_cached_plans = 1;  // each batch's plan is made for its choices, then dropped
  if (opts.search == SessionOptions::SearchMode::kOff) a.error("tune with --search off would time nothing");
  std::vector<int64_t> batches = parse_batch_list(a);
  std::vector<ShapeSpec> shape_specs = parse_shape_specs(a);
  if (a.positional.size() != 1 && a.usage_error.empty())
    a.error(a.positional.empty() ? "tune needs a MODEL"
                                 : "tune takes one MODEL, got " + std::to_string(a.positional.size()) + " arguments");
  if (int rc = handle_help_and_usage(spec, a); rc >= 0) return rc;

  const bool progress = a.has("--progress") || stderr_is_tty();
  auto sess = Session::load(a.positional[0], opts);
  if (!sess.is_ok()) return fail(sess.message());
  Session& s = *sess.value();
  std::vector<ResolvedShapes> shapes;  // every batch checked before the first is tuned
  for (int64_t b : batches) {
    auto r = resolve_shapes(s, ShapeRequest{shape_specs, b, nullptr});
    if (!r.is_ok()) return fail(r.message());
    shapes.push_back(r.take());
  }
  const PerfDbInfo before = perf_db_info(opts.perf_db);
  printf("tune       %s on %s, %s, search %s\n", a.positional[0].c_str(), opts.device.str().c_str(),
         precision_name(opts.precision),
         opts.search == SessionOptions::SearchMode::kExhaustive ? "exhaustive" : "fast");
  printf("perf db    %s (%zu entries before)\n", before.path.c_str(), before.entries);
  size_t added = 0, found = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string what = "batch " + std::to_string(batches[i]);
    if (progress) progress_bar(i, shapes.size(), what + ": timing");
    auto rep = s.prepare(shapes[i].dims);
    if (progress) progress_bar(i + 1, shapes.size(), what + " done");
    if (!rep.is_ok()) return fail(what + ": " + rep.message());
    const PlanReport& r = rep.value();
    added += r.perf_db_timed;
    found += r.perf_db_found;
    printf("batch %-5lld %zu choices: %zu timed (added), %zu found in the database; plan %.2f s\n",
           static_cast<long long>(batches[i]), r.perf_db_timed + r.perf_db_found, r.perf_db_timed, r.perf_db_found,
           r.build_ms / 1000.0);
  }
  const PerfDbInfo after = perf_db_info(opts.perf_db);
  if (!after.warning.empty()) return fail("perf db " + after.path + ": " + after.warning);
  printf("total      %zu entries added, %zu found; the database has %zu entries (%s)\n", added, found, after.entries,
         bytes_str(after.file_bytes).c_str());
  return kExitOk;
}

}  // namespace infera::cli
