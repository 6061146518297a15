// libgomp's idle OpenMP threads spin for GOMP_SPINCOUNT (300,000 iterations by default) before
// they sleep. On a quiet machine that saves a futex wake per parallel region; on a loaded one a
// spinning thread holds a core that its own team's preempted thread (or another process) needs,
// and a batch-1 run of small steps gets 10-100x slower (MobileNetV2 6 -> 580 ms at load 6 on 2
// cores). The policy is read once, at libgomp's start (OMP_WAIT_POLICY, GOMP_SPINCOUNT), but
// libgomp also documents that "if there are more OpenMP threads than available CPUs", idle
// threads spin only 100 times (OMP_WAIT_POLICY unset): a count it checks at every wait. So when
// /proc/loadavg shows more runnable threads than this process may use CPUs, we park one extra
// OpenMP team (a thread that ran a parallel region and then sleeps on a condition variable):
// libgomp then counts more threads than CPUs and waits almost passively. When the load goes away
// for a second, the parked thread exits, its team goes, and full spinning is back.
// INFERA_OMP_THROTTLE=off keeps libgomp's own behaviour, =on throttles from the first step.
#include "backends/cpu/omp_throttle.h"

#include "backends/cpu/dnnl_internal.h"

#include <omp.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace infera::cpu {

namespace {

enum class Mode { kAuto, kOn, kOff };

Mode mode_from_env() {
  const char* e = std::getenv("INFERA_OMP_THROTTLE");
  if (!e || !*e || std::strcmp(e, "auto") == 0) return Mode::kAuto;
  if (std::strcmp(e, "on") == 0 || std::strcmp(e, "1") == 0) return Mode::kOn;
  if (std::strcmp(e, "off") == 0 || std::strcmp(e, "0") == 0) return Mode::kOff;
  std::fprintf(stderr, "infera: INFERA_OMP_THROTTLE=%s is not auto, on or off; using auto\n", e);
  return Mode::kAuto;
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  const unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

// Runnable threads in the whole system now (4th field of /proc/loadavg, "running/total",
// counting the reading thread), or -1.
int runnable_now() {
  FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return -1;
  double a, b, c;
  int running = -1, total = 0;
  if (std::fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) running = -1;
  std::fclose(f);
  return running;
}

class Throttle {
 public:
  Throttle() : mode_(mode_from_env()), cpus_(usable_cpus()) {}
  ~Throttle() { release(); }

  void tick() {
    if (mode_ == Mode::kOff || cpus_ < 2) return;
    const int64_t now =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    int64_t next = next_check_ms_.load(std::memory_order_relaxed);
    if (now < next || !next_check_ms_.compare_exchange_strong(next, now + 100)) return;  // one checker
    if (mode_ == Mode::kOn) {
      park();
      return;
    }
    const int r = runnable_now();
    if (r < 0) return;
    // Two samples 100 ms apart: not a passing compile; a second without oversubscription to release.
    const int d = hysteresis_.sample(r, cpus_);
    if (d > 0) park();
    if (d < 0) release();
  }

  int set(bool on) {
    if (on) {
      park();
      return team_.load();
    }
    release();
    return 0;
  }

  bool active() const { return parked_.load(); }

 private:
  void park() {
    std::unique_lock<std::mutex> l(m_);
    if (parked_.load()) return;
    stop_ = false;
    ready_ = false;
    const int n = cpus_;
    parker_ = std::thread([this, n] {
      // A team of n on this thread: libgomp now manages more threads than there are CPUs.
      // (An empty region would be compiled away: each thread of the team counts itself.)
      std::atomic<int> joined{0};
#pragma omp parallel num_threads(n)
      joined.fetch_add(1, std::memory_order_relaxed);
      std::unique_lock<std::mutex> pl(m_);
      team_.store(joined.load());
      ready_ = true;
      cv_.notify_all();
      cv_.wait(pl, [this] { return stop_; });
    });
    cv_.wait(l, [this] { return ready_; });  // the team exists when park() returns
    parked_.store(true);
    if (verbose() >= 1)
      std::fprintf(stderr, "infera dnnl: machine oversubscribed (> %d runnable threads): OpenMP waits throttled\n", n);
  }

  void release() {
    std::thread t;
    {
      std::lock_guard<std::mutex> g(m_);
      if (!parked_.load()) return;
      stop_ = true;
      t = std::move(parker_);
      parked_.store(false);
      team_.store(0);
    }
    cv_.notify_all();
    if (t.joinable()) t.join();  // the thread's exit frees its OpenMP team
    if (verbose() >= 1) std::fprintf(stderr, "infera dnnl: machine no longer oversubscribed: OpenMP spins again\n");
  }

  const Mode mode_;
  const int cpus_;
  std::atomic<int64_t> next_check_ms_{0};
  ThrottleHysteresis hysteresis_;  // touched by the one checker of the moment only
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false, ready_ = false;
  std::atomic<bool> parked_{false};
  std::atomic<int> team_{0};  // threads of the parked team (n unless libgomp gave fewer)
  std::thread parker_;
};

Throttle& throttle() {
  static Throttle t;
  return t;
}

}  // namespace

void omp_throttle_tick() { throttle().tick(); }

bool omp_throttle_active() { return throttle().active(); }

int omp_throttle_set(bool on) { return throttle().set(on); }

}  // namespace infera::cpu
