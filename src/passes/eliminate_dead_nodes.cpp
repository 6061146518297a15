// eliminate_dead_nodes: marks dead every node none of whose outputs reaches a graph output.
// Assumes ops have no side effects (true of every ONNX inference op we run).
#include "passes/passes.h"

namespace infera {
namespace {

class EliminateDeadNodes : public Pass {
 public:
  const char* name() const override { return "eliminate_dead_nodes"; }

  Status run(Graph& g) override {
    // Own producer map: passes may leave Value::producer stale until compact().
    std::vector<int> producer(g.values.size(), -1);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].dead) continue;
      for (int o : g.nodes[i].outputs)
        if (o >= 0) producer[o] = static_cast<int>(i);
    }
    std::vector<char> needed(g.nodes.size(), 0);
    std::vector<int> work;
    auto need = [&](int v) {
      if (v < 0 || producer[v] < 0 || needed[producer[v]]) return;
      needed[producer[v]] = 1;
      work.push_back(producer[v]);
    };
    for (int v : g.outputs) need(v);
    while (!work.empty()) {
      int n = work.back();
      work.pop_back();
      for (int v : g.nodes[n].inputs) need(v);
    }
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (!needed[i]) g.nodes[i].dead = true;
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_eliminate_dead_nodes() { return std::make_unique<EliminateDeadNodes>(); }

}  // namespace infera
