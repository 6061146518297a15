// com.infera.ChannelShuffle (ops/tensor_ops.h) in plain layout: each output channel is one plane
// of X (H*W floats), so the step is a list of memcpys read once from X and written once into each
// output (CopyPieces: shared by the threads in pieces of at most 64 KiB). At batch 1 an output may be a dense
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
  CopyPieces pieces;
  int64_t first = 0;
  for (size_t o = 0; o < p.parts.size(); ++o) {
    for (int64_t b = 0; b < p.n; ++b)
      for (int64_t k = 0; k < p.parts[o]; ++k) {
        const int64_t src = b * p.c + ChannelShuffleOp::source_channel(first + k, p.c, p.group);
        pieces.add(0, static_cast<size_t>(src) * p.plane, static_cast<int>(o),
                   static_cast<size_t>(b * p.parts[o] + k) * p.plane, p.plane);
      }
    first += p.parts[o];
  }
  auto k = std::make_unique<DnnlKernel>("infera channel shuffle");
  k->set_impl("copy (group " + std::to_string(p.group) + ", " + std::to_string(p.parts.size()) + " outputs, " +
              std::to_string(pieces.size()) + " pieces)");
  std::move(pieces).attach(*k);
  return k;
}

}  // namespace infera::cpu
