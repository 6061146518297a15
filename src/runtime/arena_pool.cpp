#include "runtime/arena_pool.h"

#include <algorithm>

namespace infera {

ArenaPool::~ArenaPool() {
  for (const Block& b : idle_) free_block(b);
}

size_t ArenaPool::block_size(size_t bytes) const {
  if (policy_ != SessionOptions::ArenaExtend::kNextPowerOfTwo || bytes <= 1) return std::max<size_t>(bytes, 1);
  size_t p = 1;
  while (p < bytes && p <= (SIZE_MAX >> 1)) p <<= 1;
  return p < bytes ? bytes : p;
}

void ArenaPool::free_block(const Block& b) {
  if (b.pinned)
    b.owner->deallocate_host(b.data);
  else
    b.owner->deallocate(b.data);
}

Result<ArenaPool::Block> ArenaPool::take(const Backend* owner, bool pinned, size_t bytes) {
  const size_t want = block_size(bytes);
  std::vector<Block> spare;  // freed outside the lock
  {
    std::lock_guard<std::mutex> l(mu_);
    size_t best = idle_.size();
    for (size_t i = 0; i < idle_.size(); ++i) {
      const Block& b = idle_[i];
      if (b.owner != owner || b.pinned != pinned || b.bytes < bytes || b.bytes / 2 > want) continue;
      if (best == idle_.size() || b.bytes < idle_[best].bytes) best = i;
    }
    if (best < idle_.size()) {
      Block b = idle_[best];
      idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(best));
      stats_.idle_bytes -= b.bytes;
      ++stats_.reuses;
      largest_ = std::max(largest_, b.bytes);
      return b;
    }
  }
  auto alloc = [&]() { return pinned ? owner->allocate_host(want) : owner->allocate(want); };
  auto mem = alloc();
  if (!mem.is_ok() && mem.status().code() == StatusCode::kOutOfMemory) {
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto it = idle_.begin(); it != idle_.end();)
        if (it->owner == owner && it->pinned == pinned) {
          stats_.idle_bytes -= it->bytes;
          stats_.held_bytes -= it->bytes;
          spare.push_back(*it);
          it = idle_.erase(it);
        } else {
          ++it;
        }
    }
    for (const Block& b : spare) free_block(b);
    if (!spare.empty()) mem = alloc();
  }
  if (!mem.is_ok()) return mem.status();
  std::lock_guard<std::mutex> l(mu_);
  ++stats_.allocations;
  stats_.held_bytes += want;
  largest_ = std::max(largest_, want);
  return Block{mem.value(), want, owner, pinned};
}

void ArenaPool::give(Block b) {
  if (!b.data) return;
  std::vector<Block> spare;
  {
    std::lock_guard<std::mutex> l(mu_);
    idle_.push_back(b);
    stats_.idle_bytes += b.bytes;
    while (stats_.idle_bytes > largest_ && idle_.size() > 1) {
      spare.push_back(idle_.front());
      stats_.idle_bytes -= idle_.front().bytes;
      stats_.held_bytes -= idle_.front().bytes;
      idle_.erase(idle_.begin());
    }
  }
  for (const Block& s : spare) free_block(s);
}

ArenaPool::Stats ArenaPool::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

}  // namespace infera
