// A small ONNX model builder for tests that need a ModelProto (hardening, limits): inputs,
// nodes, initializers and attributes, loaded through Session::load_from_memory.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "infera/infera.h"

namespace infera::test {

struct ModelBuilder {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  explicit ModelBuilder(int64_t opset = 13) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    g = m.mutable_graph();
    g->set_name("hardening");
  }
  void input(const std::string& name, std::vector<int64_t> dims, int elem = onnx::TensorProto::FLOAT) {
    auto* in = g->add_input();
    in->set_name(name);
    in->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    auto* s = in->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int64_t d : dims) s->add_dim()->set_dim_value(d);
  }
  void output(const std::string& name) { g->add_output()->set_name(name); }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                        const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + std::to_string(g->node_size()) : name);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return n;
  }
  void floats(const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float f : v) t->add_float_data(f);
  }
  void ints(const std::string& name, std::vector<int64_t> v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t i : v) t->add_int64_data(i);
  }
  Result<std::unique_ptr<Session>> load(bool optimize = true, bool dnnl = true, SessionOptions o = {}) const {
    o.optimize = optimize;
    if (!dnnl) o.backends = {"ref"};
    o.num_threads = 1;
    return Session::load_from_memory(m.SerializeAsString(), "", o);
  }
};

// Steps of op `op` in s's plan for these input shapes; *first: the first of them.
inline int plan_steps(Session& s, const std::map<std::string, std::vector<int64_t>>& shapes, const std::string& op,
                      PlanStepInfo* first = nullptr) {
  auto rep = s.prepare(shapes);
  EXPECT_TRUE(rep.is_ok()) << rep.message();
  if (!rep.is_ok()) return -1;
  int k = 0;
  for (const auto& st : rep.value().step_list)
    if (st.op == op && k++ == 0 && first) *first = st;
  return k;
}

inline void set_int(onnx::NodeProto* n, const std::string& k, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void set_ints(onnx::NodeProto* n, const std::string& k, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t i : v) a->add_ints(i);
}

}  // namespace infera::test
