// libgomp's spin-waiting when the machine is oversubscribed, decided while the process runs.
#pragma once

namespace infera::cpu {

// Called before each oneDNN step runs (cheap: a clock read, and /proc/loadavg at most every
// 100 ms). See omp_throttle.cpp.
void omp_throttle_tick();

// Whether the throttle is on now (for tests and INFERA_VERBOSE).
bool omp_throttle_active();

// Parks (true) or releases (false) the extra team now, whatever the load says; the automatic
// decision goes on at the next check. Returns the threads of the parked team (0 when released).
int omp_throttle_set(bool on);

// The automatic decision from load samples (100 ms apart): park after 2 oversubscribed samples in a
// row, release after 10 quiet ones. sample() returns +1 to park, -1 to release, 0 to keep.
struct ThrottleHysteresis {
  int busy = 0, quiet = 0;
  int sample(int runnable, int cpus) {
    if (runnable > cpus) {
      quiet = 0;
      return ++busy >= 2 ? +1 : 0;
    }
    busy = 0;
    return ++quiet >= 10 ? -1 : 0;
  }
};

}  // namespace infera::cpu
