// The CPU acceleration backend (oneDNN). The planner offers it every node with concrete
// shapes; nodes it declines run the reference kernel from src/ops/.
//
// Layout: a 4-D float32 value may live in oneDNN's blocked layout (nChw16c on AVX-512,
// nChw8c otherwise: blocked_channel_block()) between accelerated nodes that accept it.
// The planner keeps a value blocked iff its producer can write it blocked, every consumer
// can read it blocked and it is not a graph output; reference kernels only see plain data. A
// follows_input producer's output stays plain unless one of its full-size inputs is blocked.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/op.h"

namespace infera {

enum class Layout { kPlain, kBlocked };

// What the backend can do for a node with these concrete inputs/outputs.
struct AccelSupport {
  bool supported = false;
  std::vector<bool> input_blocked_ok;   // per input slot: may this input arrive blocked?
  std::vector<bool> output_blocked_ok;  // per output slot: may this output be written blocked?
  // Elementwise ops: blocking the output only pays when a full-size (output-shaped) input is
  // blocked too; otherwise it just moves a reorder (e.g. NHWC tensors after a Transpose).
  bool follows_input = false;
};

class AccelKernel {
 public:
  virtual ~AccelKernel() = default;
  // Same contract as OpKernel::compute, with inputs/outputs in the layouts given at creation
  // (blocked buffers hold padded channels: size from blocked_bytes()).
  virtual Status run(ComputeContext& ctx) = 0;
  virtual size_t weight_bytes() const { return 0; }  // reordered weights it holds
  virtual std::string impl_name() const = 0;         // e.g. "dnnl conv brgconv:avx512_core"
};

struct AccelRequest {
  const Node* node = nullptr;
  const OpKernel* op = nullptr;  // the reference kernel (fallback, attrs)
  int64_t opset = 0;
  std::vector<const ValueInfo*> inputs;   // concrete shapes; .value set for constants
  std::vector<const ValueInfo*> outputs;  // concrete shapes
  std::vector<Layout> input_layouts;      // decided by the planner
  std::vector<Layout> output_layouts;
  int num_threads = 1;
};

// Cheap query: no primitive is made.
AccelSupport dnnl_query(const AccelRequest& req);
// Makes the kernel (primitive creation, weight reorder). nullptr result = declined.
Result<std::unique_ptr<AccelKernel>> dnnl_create(const AccelRequest& req);

// Channel block of the blocked layout on this CPU (16 with AVX-512, else 8).
int blocked_channel_block();
// Bytes a 4-D float32 value takes in the blocked layout (channels padded to the block).
size_t blocked_bytes(const std::vector<int64_t>& dims);
// Converts between plain NCHW and blocked layouts (for graph outputs / reference consumers).
Status reorder_to_plain(const TensorRef& blocked, TensorRef& plain);
Status reorder_to_blocked(const TensorRef& plain, TensorRef& blocked);

// For `infera doctor`: oneDNN version, ISA, and the implementation picked for a probe conv.
std::string dnnl_describe();
void dnnl_set_threads(int n);

}  // namespace infera
