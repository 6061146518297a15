// Greedy-by-size offset assignment over value lifetimes (as in TFLite's arena planner):
// the largest buffers are placed first, each at the best-fitting gap (the smallest that holds
// it, lowest offset on ties) between already-placed buffers whose lifetimes intersect its own.
//
// Cost: the lifetime overlaps are found once by a sweep over time (O(n log n + P), P = pairs
// of buffers alive at the same time), and each buffer then looks only at its overlapping,
// already placed neighbours: O(n log n + P log P) in all, linear-ish for the chains and
// blocks of real networks (the old form compared every pair: O(n^2), 23 s for a 200k chain).
// When P is pathological (a graph whose values are nearly all alive at once), the exact greedy
// would be quadratic again: such graphs are planned by a sweep-line best-fit allocator instead,
// O(n log n) whatever the shape, at some cost in arena size.
#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <queue>
#include <set>

#include "plan/plan.h"

namespace infera {

namespace {

// Pairs of overlapping buffers beyond which the exact greedy is not attempted.
size_t pair_budget(size_t n) { return (size_t(1) << 22) + 16 * n; }

// Number of pairs (i, j), i != j, whose [first, last] intervals intersect, counted without
// listing them: a pair is disjoint iff one ends before the other starts.
size_t count_overlap_pairs(const std::vector<size_t>& ids, const std::vector<int>& first,
                           const std::vector<int>& last) {
  std::vector<int> starts, ends;
  for (size_t i : ids) {
    starts.push_back(first[i]);
    ends.push_back(last[i]);
  }
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  // For each buffer: those ending before it starts (the other half of the disjoint pairs is
  // the same set seen from the other side).
  size_t disjoint = 0;
  for (size_t i : ids)
    disjoint += static_cast<size_t>(std::lower_bound(ends.begin(), ends.end(), first[i]) - ends.begin());
  const size_t m = ids.size();
  const size_t all = m * (m - (m > 0 ? 1 : 0)) / 2;
  return all - disjoint;
}

// Exact greedy by size with best fit, looking only at overlapping neighbours.
size_t greedy_by_size(const std::vector<size_t>& ids, const std::vector<size_t>& size, const std::vector<size_t>& len,
                      const std::vector<int>& first, const std::vector<int>& last, std::vector<int64_t>& offsets) {
  const size_t m = ids.size();
  // rank[k]: the position of ids[k] in placing order (size descending, then id ascending, as
  // the stable sort of the quadratic form did).
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  // By the requested size, not the aligned one: ties between sizes that round alike keep this order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return size[ids[a]] > size[ids[b]]; });
  std::vector<size_t> rank(m);
  for (size_t r = 0; r < m; ++r) rank[order[r]] = r;

  // Sweep over time: when a buffer starts, every buffer still alive overlaps it. Each pair is
  // kept once, at the buffer placed later (the earlier one is then already placed). Two passes
  // (count, then fill) build compact neighbour lists.
  std::vector<size_t> by_start(m);
  std::iota(by_start.begin(), by_start.end(), 0);
  std::sort(by_start.begin(), by_start.end(),
            [&](size_t a, size_t b) { return first[ids[a]] != first[ids[b]] ? first[ids[a]] < first[ids[b]] : a < b; });
  std::vector<size_t> deg(m + 1, 0);
  std::vector<uint32_t> nbr;  // ids.size() < 2^32: the node limit is far below
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<size_t> fill(deg.begin(), deg.end() - 1);
    // Alive buffers, and a min-heap of (last, k) to drop the ones that have ended.
    std::vector<size_t> alive;
    std::vector<size_t> pos(m, SIZE_MAX);
    using Item = std::pair<int, size_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ends;
    for (size_t k : by_start) {
      const int f = first[ids[k]];
      while (!ends.empty() && ends.top().first < f) {
        size_t gone = ends.top().second;
        ends.pop();
        size_t p = pos[gone];
        alive[p] = alive.back();
        pos[alive[p]] = p;
        alive.pop_back();
      }
      for (size_t j : alive) {
        const size_t later = rank[j] > rank[k] ? j : k, earlier = later == j ? k : j;
        if (pass == 0)
          deg[later]++;
        else
          nbr[fill[later]++] = static_cast<uint32_t>(earlier);
      }
      pos[k] = alive.size();
      alive.push_back(k);
      ends.emplace(last[ids[k]], k);
    }
    if (pass == 0) {
      size_t total = 0;
      for (size_t k = 0; k <= m; ++k) {
        size_t d = deg[k];
        deg[k] = total;
        total += d;
      }
      nbr.resize(total);
    }
  }

  size_t arena = 0;
  std::vector<std::pair<size_t, size_t>> busy;
  for (size_t k : order) {
    const size_t need = len[k];
    busy.clear();
    for (size_t e = deg[k]; e < deg[k + 1]; ++e) busy.emplace_back(offsets[ids[nbr[e]]], len[nbr[e]]);
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cur = 0;
    for (auto& [off, l] : busy) {
      if (off >= cur + need && off - cur < best_gap) {
        best = cur;
        best_gap = off - cur;
      }
      cur = std::max(cur, off + l);
    }
    if (best == SIZE_MAX) best = cur;
    offsets[ids[k]] = static_cast<int64_t>(best);
    arena = std::max(arena, best + need);
  }
  return arena;
}

// Sweep over time with a best-fit free list (coalescing), larger buffers first at each step:
// O(n log n) for any graph.
size_t sweep_best_fit(const std::vector<size_t>& ids, const std::vector<size_t>& len, const std::vector<int>& first,
                      const std::vector<int>& last, std::vector<int64_t>& offsets) {
  const size_t m = ids.size();
  std::vector<size_t> by_start(m);
  std::iota(by_start.begin(), by_start.end(), 0);
  std::sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) {
    if (first[ids[a]] != first[ids[b]]) return first[ids[a]] < first[ids[b]];
    return len[a] != len[b] ? len[a] > len[b] : a < b;
  });
  std::map<size_t, size_t> free_by_off;        // offset -> length
  std::set<std::pair<size_t, size_t>> by_len;  // (length, offset)
  size_t top = 0, arena = 0;
  auto add_free = [&](size_t off, size_t l) {
    auto next = free_by_off.lower_bound(off);
    if (next != free_by_off.end() && off + l == next->first) {  // merge with the block after
      l += next->second;
      by_len.erase({next->second, next->first});
      next = free_by_off.erase(next);
    }
    if (next != free_by_off.begin()) {  // merge with the block before
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        by_len.erase({prev->second, prev->first});
        off = prev->first;
        l += prev->second;
        free_by_off.erase(prev);
      }
    }
    if (off + l == top) {  // the free end of the arena is not a block: lower the top
      top = off;
      return;
    }
    free_by_off[off] = l;
    by_len.insert({l, off});
  };
  using Item = std::pair<int, size_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ends;
  for (size_t k : by_start) {
    const int f = first[ids[k]];
    while (!ends.empty() && ends.top().first < f) {
      size_t gone = ends.top().second;
      ends.pop();
      add_free(static_cast<size_t>(offsets[ids[gone]]), len[gone]);
    }
    size_t off;
    auto it = by_len.lower_bound({len[k], 0});
    if (it != by_len.end()) {
      off = it->second;
      const size_t l = it->first;
      by_len.erase(it);
      free_by_off.erase(off);
      if (l > len[k]) {
        free_by_off[off + len[k]] = l - len[k];
        by_len.insert({l - len[k], off + len[k]});
      }
    } else {
      off = top;
      top += len[k];
    }
    offsets[ids[k]] = static_cast<int64_t>(off);
    arena = std::max(arena, off + len[k]);
    ends.emplace(last[ids[k]], k);
  }
  return arena;
}

}  // namespace

size_t plan_memory(const std::vector<size_t>& size, const std::vector<int>& first, const std::vector<int>& last,
                   std::vector<int64_t>& offsets, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) alignment = 64;
  const size_t n = size.size();
  offsets.assign(n, -1);
  std::vector<size_t> ids, len;
  std::vector<int> end(last);  // a lifetime that ends before it starts is one step long
  for (size_t i = 0; i < n; ++i) {
    if (size[i] == 0) continue;
    ids.push_back(i);
    len.push_back((size[i] + alignment - 1) / alignment * alignment);
    end[i] = std::max(first[i], last[i]);
  }
  if (count_overlap_pairs(ids, first, end) <= pair_budget(ids.size()))
    return greedy_by_size(ids, size, len, first, end, offsets);
  return sweep_best_fit(ids, len, first, end, offsets);
}

}  // namespace infera
