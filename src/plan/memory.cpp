// Greedy-by-size offset assignment over value lifetimes (as in TFLite's arena planner):
// the largest buffers are placed first, each at the lowest offset that does not overlap
// an already-placed buffer whose lifetime intersects its own.
#include <algorithm>
#include <numeric>

#include "plan/plan.h"

namespace infera {

size_t plan_memory(const std::vector<size_t>& size, const std::vector<int>& first, const std::vector<int>& last,
                   std::vector<int64_t>& offsets, size_t alignment) {
  const size_t a = alignment < 1 ? 1 : alignment;
  const size_t n = size.size();
  offsets.assign(n, -1);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return size[a] > size[b]; });
  std::vector<size_t> placed;
  size_t arena = 0;
  for (size_t i : order) {
    if (size[i] == 0) continue;
    const size_t need = (size[i] + a - 1) / a * a;
    // Intervals [off, off+len) of placed buffers alive at the same time, by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed)
      if (first[j] <= last[i] && first[i] <= last[j]) busy.emplace_back(offsets[j], (size[j] + a - 1) / a * a);
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cur = 0;
    for (auto& [off, len] : busy) {
      if (off >= cur + need && off - cur < best_gap) {
        best = cur;
        best_gap = off - cur;
      }
      cur = std::max(cur, off + len);
    }
    if (best == SIZE_MAX) best = cur;
    offsets[i] = static_cast<int64_t>(best);
    arena = std::max(arena, best + need);
    placed.push_back(i);
  }
  return arena;
}

}  // namespace infera
