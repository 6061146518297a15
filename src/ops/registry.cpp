#include <cstdio>

#include "ops/inverted_residual.h"
#include "ops/op.h"
#include "ops/squeeze_excite.h"

namespace infera {

static std::string vformat(const char* fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof buf, fmt, ap);
  return buf;
}

std::string node_message(const Node& n, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string m = vformat(fmt, ap);
  va_end(ap);
  return n.label() + ": " + m;
}

Status InferContext::error(const char* fmt, ...) const {
  va_list ap;
  va_start(ap, fmt);
  std::string m = vformat(fmt, ap);
  va_end(ap);
  return Status::error(node.label() + ": " + m);
}

Status ComputeContext::error(const char* fmt, ...) const {
  va_list ap;
  va_start(ap, fmt);
  std::string m = vformat(fmt, ap);
  va_end(ap);
  return Status::error(node.label() + ": " + m);
}

OpRegistry::OpRegistry() {
  // One line per op family file.
  register_elementwise_ops(*this);
  register_conv_ops(*this);
  register_squeeze_excite_ops(*this);
  register_inverted_residual_ops(*this);
  register_pool_norm_ops(*this);
  register_tensor_ops(*this);
  register_reduce_ops(*this);
  register_matmul_ops(*this);
  register_misc_ops(*this);
  register_quant_ops(*this);
}

OpRegistry& OpRegistry::get() {
  static OpRegistry r;
  return r;
}

static std::string key_of(const std::string& op, const std::string& domain) {
  std::string d = (domain == "ai.onnx") ? "" : domain;
  return d.empty() ? op : d + "." + op;
}

void OpRegistry::add(const std::string& op_type, OpFactory factory, const std::string& domain) {
  ops_[key_of(op_type, domain)] = std::move(factory);
}

const OpFactory* OpRegistry::find(const std::string& op_type, const std::string& domain) const {
  auto it = ops_.find(key_of(op_type, domain));
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> n;
  for (auto& [k, v] : ops_) n.push_back(k);
  return n;
}

Result<std::unique_ptr<OpKernel>> make_kernel(const Node& node, int64_t opset) {
  const OpFactory* f = OpRegistry::get().find(node.op_type, node.domain);
  if (!f) {
    if (!node.domain.empty() && node.domain != "ai.onnx" && node.domain != "com.infera")
      return Status::error(node.label() + ": unsupported operator domain '" + node.domain + "'");
    return Status::error(node.label() + ": unsupported operator '" + node.op_type + "'");
  }
  return (*f)(node, opset);
}

}  // namespace infera
