// Small ONNX models built in code, shared by the unit tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <random>
#include <vector>

namespace infera::test {

// A residual CNN block with a symbolic batch: conv3x3 16->32 + relu, conv3x3 32->32 + the first
// conv's output + relu (Winograd-sized: 16x16), global average pool, flatten, gemm 32->10.
inline onnx::ModelProto cnn_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("cnn");
  auto tensor_io = [](onnx::ValueInfoProto* v, const char* name, std::vector<int64_t> dims, bool sym_batch) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = t->mutable_shape()->add_dim();
      if (i == 0 && sym_batch)
        d->set_dim_param("N");
      else
        d->set_dim_value(dims[i]);
    }
  };
  tensor_io(g->add_input(), "x", {0, 16, 16, 16}, true);
  tensor_io(g->add_output(), "y", {0, 10}, true);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.2f, 0.2f);
  auto weight = [&](const char* name, std::vector<int64_t> dims) {
    auto* w = g->add_initializer();
    w->set_name(name);
    w->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) w->add_dims(d), n *= d;
    for (int64_t i = 0; i < n; ++i) w->add_float_data(u(rng));
  };
  weight("w1", {32, 16, 3, 3});
  weight("b1", {32});
  weight("w2", {32, 32, 3, 3});
  weight("fc", {10, 32});
  weight("fcb", {10});
  auto node = [&](const char* op, std::vector<const char*> in, const char* out, bool pads = false) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const char* i : in) n->add_input(i);
    n->add_output(out);
    if (pads) {
      auto* a = n->add_attribute();
      a->set_name("pads");
      a->set_type(onnx::AttributeProto::INTS);
      for (int i = 0; i < 4; ++i) a->add_ints(1);
    }
    return n;
  };
  node("Conv", {"x", "w1", "b1"}, "c1", true);
  node("Relu", {"c1"}, "r1");
  node("Conv", {"r1", "w2"}, "c2", true);
  node("Add", {"c2", "r1"}, "a2");
  node("Relu", {"a2"}, "r2");
  node("GlobalAveragePool", {"r2"}, "p");
  node("Flatten", {"p"}, "f");
  auto* gemm = node("Gemm", {"f", "fc", "fcb"}, "y");
  auto* tb = gemm->add_attribute();
  tb->set_name("transB");
  tb->set_type(onnx::AttributeProto::INT);
  tb->set_i(1);
  return m;
}

// x [N, 8] -> op -> y [N, 8]: a graph whose one node decides whether samples are independent.
inline onnx::ModelProto one_node(const char* op, int64_t axis) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("one");
  for (auto [v, name] : {std::pair{g->add_input(), "x"}, std::pair{g->add_output(), "y"}}) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("N");
    t->mutable_shape()->add_dim()->set_dim_value(8);
  }
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("mixer");
  n->add_input("x");
  n->add_output("y");
  auto* a = n->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(axis);
  return m;
}

}  // namespace infera::test
