// Fault injection for tests (issue 7): with -DINFERA_FAULT_INJECTION=ON, INFERA_FAULT makes the
// N-th allocation, kernel launch or output write of the process fail, so that each error path can
// be run (under ASan: no leak, no half-written file, the process stays usable). Without the option
// fault.cpp is compiled with the hooks off: hit() returns false (one call per hook site).
//
//   INFERA_FAULT=alloc:N[,launch:M][,write:K]   (1-based; each kind counted separately)
//
// alloc: Backend::allocate / allocate_host, Tensor::make (arenas, scratch, weights, outputs).
// launch: a step's kernel run (the run context), as a failed device launch. write: save_npy's
// write, as a full disk (ENOSPC).
#pragma once

namespace infera::fault {

enum class Kind { kAlloc = 0, kLaunch = 1, kWrite = 2 };

// True when this call of kind k is the one INFERA_FAULT (or arm()) names.
bool hit(Kind k);
// Whether this build has the hooks (INFERA_FAULT_INJECTION).
bool enabled();
// Tests: replaces the spec (same syntax as INFERA_FAULT; "" disarms) and resets the counters.
void arm(const char* spec);

}  // namespace infera::fault
