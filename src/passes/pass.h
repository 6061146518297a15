// A pass: name() plus run(Graph&). Each lives in its own verb-named file in src/passes/,
// documented in two lines (what it does, what it assumes) and tested alone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "infera/infera.h"

namespace infera {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual const char* name() const = 0;
  // Rewrites g. May mark nodes dead and add nodes; the driver calls g.compact() and
  // infer_graph(g) after each pass, so a pass may leave shapes of new values unset.
  virtual Status run(Graph& g) = 0;
};

// The optimization pipeline in order (src/passes/pipeline.cpp). host: the session runs on the CPU
// (fusions whose op only the CPU backends take run only then).
std::vector<std::unique_ptr<Pass>> default_passes(bool host = true);

// Runs the passes, recording node counts before/after each into reports.
Status run_passes(Graph& g, const std::vector<std::unique_ptr<Pass>>& passes, std::vector<PassReport>* reports);

}  // namespace infera
