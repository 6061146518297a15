// The OpenMP throttle (src/backends/cpu/omp_throttle.cpp): parking makes libgomp manage more
// threads than there are CPUs (a real extra team), releasing frees it, the load samples decide
// with hysteresis. (That libgomp then spins less is measured in bench/results/*cpu-families*.)
#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <thread>

#include "backends/cpu/omp_throttle.h"

namespace infera {
namespace {

int threads_now() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// The thread count once it settles at `want` (within 5 s): a released team's libgomp workers exit
// after the parking thread does, not with it.
int threads_settled(int want) {
  int n = threads_now();
  for (int i = 0; i < 500 && n != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    n = threads_now();
  }
  return n;
}

// The thread count once it stops changing (10 equal samples 10 ms apart, within 5 s): in one
// process with the other tests, their teams' workers may still be starting or exiting.
int threads_stable() {
  int n = threads_now(), same = 0;
  for (int i = 0; i < 500 && same < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const int m = threads_now();
    same = m == n ? same + 1 : 0;
    n = m;
  }
  return n;
}

int usable() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

TEST(OmpThrottle, ParkingAddsATeamAndReleasingFreesIt) {
  cpu::omp_throttle_set(false);
  const int before = threads_stable();
  ASSERT_GT(before, 0);
  const int team = cpu::omp_throttle_set(true);
  EXPECT_TRUE(cpu::omp_throttle_active());
  EXPECT_EQ(team, usable());
  // The parking thread and its team's workers: more threads than CPUs for libgomp.
  EXPECT_EQ(threads_settled(before + team), before + team);
  EXPECT_EQ(cpu::omp_throttle_set(true), team);  // parking twice keeps one team
  EXPECT_EQ(threads_settled(before + team), before + team);
  cpu::omp_throttle_set(false);
  EXPECT_FALSE(cpu::omp_throttle_active());
  EXPECT_EQ(threads_settled(before), before);
}

TEST(OmpThrottle, HysteresisParksAfterTwoBusySamplesAndReleasesAfterTenQuiet) {
  cpu::ThrottleHysteresis h;
  EXPECT_EQ(h.sample(3, 2), 0);  // one busy sample: a passing compile
  EXPECT_EQ(h.sample(2, 2), 0);  // quiet again: the busy count restarts
  EXPECT_EQ(h.sample(3, 2), 0);
  EXPECT_EQ(h.sample(5, 2), +1);
  EXPECT_EQ(h.sample(9, 2), +1);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(h.sample(2, 2), 0) << i;
  EXPECT_EQ(h.sample(1, 2), -1);
  EXPECT_EQ(h.sample(3, 2), 0);  // a busy sample restarts the quiet count
  for (int i = 0; i < 9; ++i) EXPECT_EQ(h.sample(2, 2), 0) << i;
  EXPECT_EQ(h.sample(2, 2), -1);
}

}  // namespace
}  // namespace infera
