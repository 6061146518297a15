// Runs a plan: binds inputs, constants, folded values and arena slices to each step,
// allocates outputs of data-dependent steps at run time, and copies out the graph outputs.
#pragma once

#include <vector>

#include "plan/plan.h"

namespace infera {

Result<std::vector<Tensor>> execute_plan(const Graph& g, Plan& plan, const std::vector<const Tensor*>& inputs,
                                         int num_threads, std::vector<StepTiming>* timings = nullptr);

}  // namespace infera
