// com.infera.ChannelShuffle (ops/tensor_ops.h) in plain layout: each output channel is one plane
// of X (H*W floats), so the step is a list of memcpys read once from X and written once into each
// output, shared by the threads in pieces of at most 64 KiB. At batch 1 an output may be a dense
// slice of the next Concat's output (planner: Concat in place): the copy lands there directly.
#include <algorithm>
#include <cstring>

#include "backends/cpu/dnnl_internal.h"
#include "ops/tensor_ops.h"

namespace infera::cpu {
namespace {

struct ShufflePlan {
  int64_t n = 0, c = 0, group = 1;
  size_t plane = 0;            // bytes per channel plane
  std::vector<int64_t> parts;  // channels per output
};

bool plan_shuffle(const StepRequest& req, ShufflePlan& p) {
  const auto* op = dynamic_cast<const ChannelShuffleOp*>(req.op);
  if (!op || req.inputs.size() != 1 || !req.has_in(0)) return false;
  const Dims x = req.in_dims(0);
  if (x.size() < 2) return false;
  p.n = x[0], p.c = x[1], p.group = op->group();
  if (p.c <= 0 || p.group <= 0 || p.c % p.group != 0) return false;
  int64_t inner = 1;
  for (size_t i = 2; i < x.size(); ++i) inner *= x[i];
  p.plane = static_cast<size_t>(inner) * sizeof(float);
  p.parts = op->split().empty() ? std::vector<int64_t>{p.c} : op->split();
  if (p.parts.size() != req.outputs.size()) return false;
  int64_t sum = 0;
  for (size_t o = 0; o < p.parts.size(); ++o) {
    if (!req.has_out(o)) return false;
    Dims want = x;
    want[1] = p.parts[o];
    if (req.out_dims(o) != want) return false;
    sum += p.parts[o];
  }
  return sum == p.c;
}

}  // namespace

Support shuffle_query(const StepRequest& req) {
  ShufflePlan p;
  if (!plan_shuffle(req, p)) return Support::no("a ChannelShuffle whose outputs do not match its split");
  return Support::plain(req.inputs.size(), req.outputs.size());
}

std::unique_ptr<DnnlKernel> shuffle_create(const StepRequest& req) {
  ShufflePlan p;
  if (!plan_shuffle(req, p) || req.in_format(0) != Format::kPlain) return nullptr;
  for (size_t o = 0; o < req.outputs.size(); ++o)
    if (req.out_format(o) != Format::kPlain || req.slice_of(o).sliced()) return nullptr;
  struct Piece {
    int out;
    size_t src, dst, bytes;
  };
  constexpr size_t kPiece = 64 << 10;
  std::vector<Piece> pieces;
  int64_t first = 0;
  for (size_t o = 0; o < p.parts.size(); ++o) {
    for (int64_t b = 0; b < p.n; ++b)
      for (int64_t k = 0; k < p.parts[o]; ++k) {
        const size_t src = static_cast<size_t>(b * p.c + ChannelShuffleOp::source_channel(first + k, p.c, p.group)) *
                           p.plane,
                     dst = static_cast<size_t>(b * p.parts[o] + k) * p.plane;
        for (size_t at = 0; at < p.plane; at += kPiece)
          pieces.push_back({static_cast<int>(o), src + at, dst + at, std::min(kPiece, p.plane - at)});
      }
    first += p.parts[o];
  }
  const size_t total = static_cast<size_t>(p.n * p.c) * p.plane;
  auto k = std::make_unique<DnnlKernel>("infera channel shuffle");
  k->set_impl("copy (group " + std::to_string(p.group) + ", " + std::to_string(p.parts.size()) + " outputs, " +
              std::to_string(pieces.size()) + " pieces)");
  k->set_after([pieces, total](ComputeContext& ctx) {
    const char* x = static_cast<const char*>(ctx.in(0).data);
    const int n = static_cast<int>(pieces.size());
    // Threads only where the copy outweighs waking them (~0.25 MiB), as the Concat's copy.
#pragma omp parallel for schedule(static) num_threads(std::max(1, ctx.num_threads)) if (total >= (256u << 10) && n > 1)
    for (int j = 0; j < n; ++j) {
      const Piece& q = pieces[static_cast<size_t>(j)];
      std::memcpy(static_cast<char*>(ctx.out(q.out).data) + q.dst, x + q.src, q.bytes);
    }
  });
  return k;
}

}  // namespace infera::cpu
