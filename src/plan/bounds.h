// Magnitude bounds through a run (RunResources::bounds, ops/op.h). A kernel that proves a bound for
// its output sets it (the oneDNN convs' NaN guard, the BatchNorm loop); the ops whose output
// magnitude follows from their inputs' alone (data movement, pools, Concat, Add, Mul, activations)
// get a rule here, applied by the executor after the step, so that a bound proved once travels
// along the graph. A guarded conv that finds a bound for its input below its threshold reads
// nothing (dnnl_conv.cpp): squeeze-excitation gates, pools, residual sums and concatenations no
// longer cost the conv after them a read of its input.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/activation.h"

namespace infera {

struct Plan;

// out = act-bound(max(combine(bounds of slots) * scale, floor)), for every float32 output of
// `outputs` slots; nothing when a slot's bound is unknown.
struct BoundRule {
  enum class Kind : uint8_t {
    kNone,     // no rule
    kMax,      // the largest of the slots' bounds (data movement, max pools, Concat, Max, Min)
    kSum,      // their sum (Add, Sub, Sum)
    kProduct,  // their product (Mul)
  };
  Kind kind = Kind::kNone;
  std::vector<int> slots;  // input slots combined (an absent optional one counts as 0)
  float scale = 1.f;       // rounding margin: sums and averages
  float floor = 0.f;       // at least this (Pad's constant value attribute)
  Activation act;          // then activation_bound (ops/activation.h) where not identity
  int outputs = 1;         // output slots [0, outputs) get it (Split: every one)
};

// Per step of p: its rule, and per value the bound every run starts with (float32 constants that
// a rule reads: their max |x|, +Inf when one is not finite; everything else +Inf).
void make_bound_rules(Plan& p);

// Applies step s's rule to bounds (per plan value of p): sets the outputs a kernel left unknown.
void apply_bound_rule(const Plan& p, size_t s, float* bounds);

}  // namespace infera
