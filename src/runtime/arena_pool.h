// The session's arena blocks (SessionOptions::arena_extend): run contexts take their arenas and
// scratch from here and give them back when they are freed (a plan evicted from the cache, a
// context past max_run_contexts), so that the next plan of another batch size reuses memory
// instead of allocating and freeing device memory at every shape change.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.h"
#include "infera/infera.h"

namespace infera {

class ArenaPool {
 public:
  struct Block {
    void* data = nullptr;
    size_t bytes = 0;                // the block's size (>= what was asked)
    const Backend* owner = nullptr;  // whose memory
    bool pinned = false;             // host memory pinned by owner (allocate_host)
  };
  struct Stats {
    size_t allocations = 0;  // blocks allocated from the backends
    size_t reuses = 0;       // takes served by an idle block
    size_t held_bytes = 0;   // every block alive, idle or taken
    size_t idle_bytes = 0;
  };

  explicit ArenaPool(SessionOptions::ArenaExtend policy) : policy_(policy) {}
  ~ArenaPool();
  ArenaPool(const ArenaPool&) = delete;
  ArenaPool& operator=(const ArenaPool&) = delete;

  // A block of at least `bytes` (> 0) of owner's memory: the smallest idle one that is not more
  // than twice the size the policy gives for `bytes`, else a new one of that size. When the
  // backend is out of memory, idle blocks are freed and the allocation tried once more.
  Result<Block> take(const Backend* owner, bool pinned, size_t bytes);
  // Back to the idle list. Idle blocks are kept up to the size of the largest block taken
  // (at most one spare arena's worth); the oldest beyond that are freed.
  void give(Block b);
  Stats stats() const;
  // The size the policy allocates for a request of `bytes`.
  size_t block_size(size_t bytes) const;

 private:
  void free_block(const Block& b);
  SessionOptions::ArenaExtend policy_;
  mutable std::mutex mu_;
  std::vector<Block> idle_;  // oldest first
  size_t largest_ = 0;
  Stats stats_;
};

}  // namespace infera
