// pipeline: the default pass order, and the driver that runs passes with compact() and
// infer_graph() after each one. Assumes g was imported and inferred (shapes known where they can be).
#include "ops/infer.h"
#include "passes/passes.h"

namespace infera {

std::vector<std::unique_ptr<Pass>> default_passes(bool host) {
  std::vector<std::unique_ptr<Pass>> p;
  p.push_back(make_eliminate_identity());
  p.push_back(make_quantize_qdq());  // before fold_constants turns the weights' DequantizeLinear into floats
  p.push_back(make_fold_constants());
  p.push_back(make_eliminate_noops());
  p.push_back(make_eliminate_dead_nodes());
  p.push_back(make_fold_batchnorm());
  p.push_back(make_pool_before_pointwise_conv());  // after a BatchNorm folds into the conv, before fusions
  p.push_back(make_fuse_matmul_add());
  p.push_back(make_fuse_conv_activation());
  p.push_back(make_fuse_layer_norm());
  p.push_back(make_fuse_gelu());
  p.push_back(make_fuse_channel_shuffle());
  if (host) p.push_back(make_fuse_squeeze_excite());     // its fused op has a host kernel only
  if (host) p.push_back(make_fuse_concat_batchnorm());   // likewise
  if (host) p.push_back(make_fuse_inverted_residual());  // likewise
  p.push_back(make_eliminate_dead_nodes());
  return p;
}

Status run_passes(Graph& g, const std::vector<std::unique_ptr<Pass>>& passes, std::vector<PassReport>* reports) {
  for (const auto& pass : passes) {
    PassReport r;
    r.name = pass->name();
    r.nodes_before = g.live_node_count();
    Status s = pass->run(g);
    if (s.is_ok()) s = g.compact();
    if (s.is_ok()) s = infer_graph(g);
    if (!s.is_ok()) return Status::error("pass " + r.name + ": " + s.message());
    r.nodes_after = g.live_node_count();
    if (reports) reports->push_back(r);
  }
  return Status::ok();
}

}  // namespace infera
