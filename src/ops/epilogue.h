// The fused epilogue of com.infera.FusedConv / FusedGemm as a typed list: y = op(x), then each
// step in order (bias per output channel, residual add, activation). Passes build it, the ops'
// reference kernels and every backend read it; nothing re-parses an attribute string.
#pragma once

#include <string>
#include <vector>

#include "ops/activation.h"

namespace infera {

struct EpilogueStep {
  enum class Kind : uint8_t { kBias, kResidualAdd, kActivation };
  Kind kind = Kind::kActivation;
  int input = -1;  // kBias / kResidualAdd: the node input slot read
  Activation act;  // kActivation
};

struct Epilogue {
  std::vector<EpilogueStep> steps;

  // The canonical order: bias (input bias_input, -1 = none), residual (input residual_input),
  // activation (none if identity).
  static Epilogue make(int bias_input, int residual_input, Activation act);
  bool has_bias() const { return find(EpilogueStep::Kind::kBias) != nullptr; }
  bool has_residual() const { return find(EpilogueStep::Kind::kResidualAdd) != nullptr; }
  int residual_input() const;
  Activation activation() const;  // identity when there is none
  const EpilogueStep* find(EpilogueStep::Kind k) const;
  std::string str() const;  // "bias+add+Relu", "" when empty
};

}  // namespace infera
