// libgomp's spin-waiting when the machine is oversubscribed, decided while the process runs.
#pragma once

namespace infera::cpu {

// Called before each oneDNN step runs (cheap: a clock read, and /proc/loadavg at most every
// 100 ms). See omp_throttle.cpp.
void omp_throttle_tick();

// Whether the throttle is on now (for tests and INFERA_VERBOSE).
bool omp_throttle_active();

}  // namespace infera::cpu
