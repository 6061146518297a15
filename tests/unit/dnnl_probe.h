// What oneDNN offers on the CPU the tests run on: the perf-db tests expect a search only where there
// are two algorithms to choose from (oneDNN 2.6 has Winograd on AVX-512 only, not on AVX2).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backend_harness.h"
#include "backends/cpu/dnnl_backend.h"
#include "backends/cpu/dnnl_internal.h"
#include "ops/infer.h"
#include "ops/op.h"

namespace infera::test {

inline bool onednn_has_winograd() { return cpu::has_winograd(); }

// The implementation name of the dnnl kernel made for case c with every 4-D non-constant value in
// format f (where the backend takes it), or "declined: why".
inline std::string impl_of(const OpCase& c, Format f) {
  auto be = find_backend("dnnl", Device::cpu());
  if (!be.is_ok()) return "no dnnl backend";
  Node n;
  n.name = "probe";
  n.op_type = c.op;
  n.domain = c.domain;
  n.attrs = c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) n.inputs.push_back(c.inputs[i].empty() ? -1 : static_cast<int>(i));
  n.outputs = {static_cast<int>(c.inputs.size())};
  auto op = make_kernel(n, c.opset);
  if (!op.is_ok()) return "declined: " + op.message();
  std::vector<ValueInfo> in(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].empty()) continue;
    in[i].dtype = c.inputs[i].dtype();
    in[i].shape = Shape::of(c.inputs[i].dims());
    if (std::find(c.const_inputs.begin(), c.const_inputs.end(), static_cast<int>(i)) != c.const_inputs.end())
      in[i].value = std::make_shared<Tensor>(c.inputs[i].clone());
  }
  std::vector<const ValueInfo*> ins;
  for (size_t i = 0; i < in.size(); ++i) ins.push_back(c.inputs[i].empty() ? nullptr : &in[i]);
  InferContext ictx(n, c.opset, ins);
  Status s = op.value()->infer(ictx);
  if (!s.is_ok()) return "declined: " + s.message();
  ValueInfo y = ictx.outputs()[0];
  StepRequest req;
  req.node = &n;
  req.op = op.value().get();
  req.opset = c.opset;
  req.inputs = ins;
  req.outputs = {&y};
  req.num_threads = 2;
  Support sup = be.value()->supports(req);
  if (!sup.ok) return "declined: " + sup.reason;
  for (size_t i = 0; i < ins.size(); ++i)
    req.input_formats.push_back(
        ins[i] && !ins[i]->value && ins[i]->shape.rank() == 4 && format_in(sup.input_formats[i], f) ? f
                                                                                                    : Format::kPlain);
  req.output_formats = {format_in(sup.output_formats[0], f) ? f : Format::kPlain};
  auto k = be.value()->create(req);
  if (!k.is_ok() || !k.value()) return "declined at creation";
  return k.value()->impl_name();
}

}  // namespace infera::test
