// infera info: inputs/outputs, op histogram, parameters, FLOPs per sample, passes.
#include "cli.h"

namespace infera::cli {

int cmd_info(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {"--threads"}, {"--passes", "--no-optimize", "--quiet"});
  SessionOptions opts;
  session_options(a, opts);
  if (!a.usage_error.empty()) return usage(a.usage_error);
  if (a.positional.size() != 1) return usage("info takes one MODEL");
  auto sess = Session::load(a.positional[0], opts);
  if (!sess.is_ok()) return fail(sess.message());
  Session& s = *sess.value();
  const ModelSummary& m = s.summary();
  printf("model      %s\n", a.positional[0].c_str());
  printf("producer   %s\n", m.producer.empty() ? "(none)" : m.producer.c_str());
  printf("ir/opset   %lld / %lld\n", (long long)m.ir_version, (long long)m.opset);
  printf("inputs\n");
  for (const IoInfo& io : s.inputs())
    printf("  %-24s %-8s %s\n", io.name.c_str(), dtype_name(io.dtype), io_shape_str(io).c_str());
  printf("outputs\n");
  for (const IoInfo& io : s.outputs())
    printf("  %-24s %-8s %s\n", io.name.c_str(), dtype_name(io.dtype), io_shape_str(io).c_str());
  printf("parameters %lld\n", (long long)m.parameter_count);
  auto shapes = shapes_for_batch(s, 1);
  if (shapes.is_ok()) {
    auto rep = s.prepare(shapes.value());
    if (!rep.is_ok()) return fail(rep.message());
    printf("flops      %.3f GFLOPs per sample (batch 1; Conv/Gemm/MatMul, 2 per multiply-add)\n",
           rep.value().flops / 1e9);
    printf("arena      %.2f MiB at batch 1 (%.2f MiB without reuse); %zu steps, %zu on oneDNN\n",
           rep.value().arena_bytes / 1048576.0, rep.value().naive_bytes / 1048576.0, rep.value().steps,
           rep.value().accelerated_steps);
  } else {
    printf("flops      unknown (%s)\n", shapes.message().c_str());
  }
  printf("nodes      %zu imported, %zu after optimization\n", m.node_count_original, m.node_count);
  printf("ops\n");
  for (auto& [op, n] : m.op_histogram) printf("  %-24s %d\n", op.c_str(), n);
  if (a.has("--passes")) {
    printf("passes (nodes before -> after)\n");
    for (const PassReport& p : m.passes) printf("  %-24s %5zu -> %zu\n", p.name.c_str(), p.nodes_before, p.nodes_after);
  }
  return kExitOk;
}

}  // namespace infera::cli
