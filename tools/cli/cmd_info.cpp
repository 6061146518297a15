// infera info: inputs/outputs, op histogram before and after the passes, parameters, and for
// concrete shapes the output shapes, FLOPs per sample, planned memory and the plan's steps.
#include <set>

#include "cli.h"

namespace infera::cli {

const CommandSpec& info_spec() {
  static const CommandSpec spec = [] {
    CommandSpec c{"info",
                  "MODEL [options]",
                  "Shows MODEL's inputs and outputs, parameters and op histogram (as imported and\n"
                  "after the graph passes) and, for concrete input shapes, the output shapes, FLOPs\n"
                  "per sample, planned memory and steps. A free first dim takes the --batch value\n"
                  "(default 1); any other free dim must be given with --shape.",
                  {}};
    for (auto& o : shape_opt_specs()) c.options.push_back(o);
    c.options.push_back({"--batch", "N", "the batch for the concrete figures, 1..1048576 (default 1)"});
    c.options.push_back({"--passes", "", "the node count before and after each graph pass"});
    c.options.push_back({"--plan", "", "every step of the plan: node, op, backend, formats, bytes"});
    for (auto& o : session_opt_specs())
      if (o.name != "--threads") c.options.push_back(o);  // nothing info prints depends on it
    c.options.push_back(verbose_opt_spec());
    return c;
  }();
  return spec;
}

static std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
  return s.empty() ? "-" : s;
}

static double mib(size_t bytes) { return static_cast<double>(bytes) / 1048576.0; }

static void print_plan(const PlanReport& rep) {
  printf("\nplan steps\n");
  if (rep.step_list.empty()) {
    printf("  not available in this build (the planner does not list its steps yet)\n");
    return;
  }
  printf("  %4s  %-36s %-24s %-6s %-24s %s\n", "#", "node", "op", "backend", "formats in -> out", "bytes out");
  for (size_t i = 0; i < rep.step_list.size(); ++i) {
    const PlanStepInfo& p = rep.step_list[i];
    std::string formats = join(p.input_formats) + " -> " + join(p.output_formats);
    printf("  %4zu  %-36s %-24s %-6s %-24s %zu%s%s%s\n", i, p.node.empty() ? "(inserted)" : p.node.c_str(),
           p.op.c_str(), p.backend.c_str(), formats.c_str(), p.output_bytes, p.impl.empty() ? "" : "  ", p.impl.c_str(),
           p.dynamic ? "  (shape known at run time)" : "");
  }
}

int cmd_info(int argc, char** argv) {
  const CommandSpec& spec = info_spec();
  Args a = parse_args(argc, argv, 2, spec);
  SessionOptions opts;
  session_options(a, opts);
  std::optional<int64_t> batch;
  if (a.has("--batch")) batch = a.get_int("--batch", 1, 1, 1 << 20);
  std::vector<ShapeSpec> shape_specs = parse_shape_specs(a);
  if (a.positional.size() != 1)
    a.error(a.positional.empty() ? "info needs a MODEL"
                                 : "info takes one MODEL, got " + std::to_string(a.positional.size()) + " arguments");
  if (int rc = handle_help_and_usage(spec, a); rc >= 0) return rc;

  auto sess = Session::load(a.positional[0], opts);
  if (!sess.is_ok()) return fail(sess.message());
  Session& s = *sess.value();
  const ModelSummary& m = s.summary();
  printf("model        %s\n", a.positional[0].c_str());
  const auto& props = m.metadata.metadata_props;
  if (props.count("infera.plan.format")) {  // a saved plan (infera build): its header
    auto prop = [&](const char* k) {
      auto it = props.find(std::string("infera.plan.") + k);
      return it == props.end() || it->second.empty() ? std::string("-") : safe_line(it->second);
    };
    printf("saved plan   format %s, infera %s, built from %s\n", prop("format").c_str(), prop("infera").c_str(),
           prop("model").c_str());
    printf("  device     %s\n", prop("device").c_str());
    printf("  arch       %s\n", prop("arch").c_str());
    printf("  cpu        %s\n", prop("cpu").c_str());
    printf("  libraries  %s\n", prop("libraries").c_str());
    printf("  options    %s\n", prop("options").c_str());
    printf("  shapes     %s (prepared at load)\n", prop("shapes").c_str());
    printf("  choices    %s algorithm choices embedded (nothing is timed for the saved shapes)\n",
           prop("choices").c_str());
    printf("  packed     %s weights in backend formats (adopted at load, not converted again)\n",
           prop("packed").c_str());
  }
  printf("producer     %s\n", m.producer.empty() ? "(none)" : m.producer.c_str());
  printf("ir / opset   %lld / %lld\n", static_cast<long long>(m.ir_version), static_cast<long long>(m.opset));
  printf("inputs\n");
  for (const IoInfo& io : s.inputs())
    printf("  %-26s %-8s %s\n", io.name.c_str(), dtype_name(io.dtype), io_shape_str(io).c_str());
  printf("outputs\n");
  for (const IoInfo& io : s.outputs())
    printf("  %-26s %-8s %s\n", io.name.c_str(), dtype_name(io.dtype), io_shape_str(io).c_str());
  printf("parameters   %s (%lld elements of float initializers)\n",
         count_str(static_cast<double>(m.parameter_count)).c_str(), static_cast<long long>(m.parameter_count));
  printf("nodes        %zu imported, %zu after optimization%s\n", m.node_count_original, m.node_count,
         opts.optimize ? "" : " (--no-optimize)");

  // Concrete figures need concrete shapes. Asked for them (--shape/--batch): a failure is an
  // error. Not asked: say what is missing, since info is how one learns what to give.
  const bool asked = batch || !shape_specs.empty();
  auto shapes = resolve_shapes(s, ShapeRequest{shape_specs, batch, nullptr});
  std::optional<PlanReport> rep;
  if (!shapes.is_ok()) {
    if (asked) return fail(shapes.message());
    printf("\nconcrete figures need concrete shapes: %s\n", shapes.message().c_str());
  } else {
    auto r = s.prepare(shapes.value().dims);
    if (!r.is_ok()) return fail(r.message());
    rep = r.take();
    const int64_t b = shapes.value().batch;
    std::string line;
    for (auto& [n, d] : shapes.value().dims) line += (line.empty() ? "" : ", ") + n + " " + shape_str(d);
    printf("\nfor shapes   %s%s\n", line.c_str(), b > 0 ? (" (batch " + std::to_string(b) + ")").c_str() : "");
    printf("outputs\n");
    for (size_t i = 0; i < s.outputs().size(); ++i)
      printf("  %-26s %-8s %s\n", s.outputs()[i].name.c_str(), dtype_name(s.outputs()[i].dtype),
             i < rep->output_dims.size() ? shape_str(rep->output_dims[i]).c_str() : "?");
    if (b > 0)
      printf(
          "flops        %.3f GFLOPs per sample (%.3f G per run of batch %lld; Conv/Gemm/MatMul, 2 per "
          "multiply-add)\n",
          rep->flops / 1e9 / static_cast<double>(b), rep->flops / 1e9, static_cast<long long>(b));
    else
      printf("flops        %.3f GFLOPs per run (Conv/Gemm/MatMul, 2 per multiply-add)\n", rep->flops / 1e9);
    printf(
        "memory       activations %.2f MiB (%.2f MiB without reuse), weights %.2f MiB, scratch %.2f MiB "
        "(planned)\n",
        mib(rep->arena_bytes), mib(rep->naive_bytes), mib(rep->weight_bytes), mib(rep->scratch_bytes));
    std::set<std::string> devs;
    for (auto* m : {&rep->arena_bytes_per_device, &rep->weight_bytes_per_device, &rep->scratch_bytes_per_device})
      for (auto& [d, n] : *m) devs.insert(d);
    auto at = [](const std::map<std::string, size_t>& m, const std::string& d) {
      auto it = m.find(d);
      return it == m.end() ? size_t(0) : it->second;
    };
    for (const std::string& d : devs)
      printf("  on %-9s arena %.2f MiB, weights held by kernels %.2f MiB, scratch %.2f MiB\n", d.c_str(),
             mib(at(rep->arena_bytes_per_device, d)), mib(at(rep->weight_bytes_per_device, d)),
             mib(at(rep->scratch_bytes_per_device, d)));
    printf("  one run    %.2f MiB on %s (weights + arena + scratch: what --memory-budget bounds)", mib(rep->peak_bytes),
           s.options().device.str().c_str());
    if (rep->chunks)
      printf("; runs in %lld chunks of at most %lld", static_cast<long long>(rep->chunks),
             static_cast<long long>(rep->chunk_batch));
    printf("\n");
    std::string per;
    for (auto& [bk, n] : rep->steps_per_backend) per += (per.empty() ? "" : ", ") + bk + " " + std::to_string(n);
    printf("steps        %zu per run (%s), %zu inserted; plan built in %.1f ms\n", rep->steps,
           per.empty() ? "-" : per.c_str(), rep->inserted_steps, rep->build_ms);
    printf("  weights    %zu converted into backend formats, %zu reused (saved plan or another plan)\n",
           rep->weights_converted, rep->weights_reused);
  }

  printf("\nops          imported -> optimized\n");
  std::set<std::string> ops;
  for (auto& [op, n] : m.op_histogram) ops.insert(op);
  for (auto& [op, n] : m.op_histogram_optimized) ops.insert(op);
  for (const std::string& op : ops) {
    auto b = m.op_histogram.find(op);
    auto o = m.op_histogram_optimized.find(op);
    printf("  %-30s %6d -> %d\n", op.c_str(), b == m.op_histogram.end() ? 0 : b->second,
           o == m.op_histogram_optimized.end() ? 0 : o->second);
  }
  if (a.has("--passes")) {
    printf("\npasses       nodes before -> after\n");
    for (const PassReport& p : m.passes) printf("  %-30s %6zu -> %zu\n", p.name.c_str(), p.nodes_before, p.nodes_after);
    if (m.passes.empty()) printf("  none ran%s\n", opts.optimize ? "" : " (--no-optimize)");
  }
  if (a.has("--plan")) {
    if (!rep) return fail("--plan needs concrete shapes: " + shapes.message());
    print_plan(*rep);
  }
  return kExitOk;
}

}  // namespace infera::cli
