// Builds a Graph by hand for the pass tests: inputs, constants, nodes with fresh output values,
// graph outputs. The graph is what the importer would give before shape inference.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace infera::test {

struct GraphBuilder {
  Graph g;
  int count = 0;
  explicit GraphBuilder(int64_t opset) {
    g.opset = opset;
    g.ir_version = 8;
    g.source = "test";
  }
  int input(const std::string& name, Shape s, DataType dt = DataType::kFloat32) {
    int v = g.add_value(name, dt, std::move(s));
    g.inputs.push_back(v);
    return v;
  }
  int input(const std::string& name, std::vector<int64_t> dims) { return input(name, Shape::of(dims)); }
  int constant(const std::string& name, Tensor t) {
    int v = g.add_value(name, t.dtype(), Shape::of(t.dims()));
    g.values[v].constant = std::make_shared<const Tensor>(std::move(t));
    return v;
  }
  std::vector<int> node_n(const std::string& op, std::vector<int> ins, int nout,
                          std::map<std::string, Attribute> attrs = {}, const std::string& domain = "") {
    Node n;
    n.name = op + "_" + std::to_string(count++);
    n.op_type = op;
    n.domain = domain;
    n.inputs = std::move(ins);
    n.attrs = std::move(attrs);
    for (int o = 0; o < nout; ++o) n.outputs.push_back(g.add_value(n.name + "_out" + std::to_string(o)));
    std::vector<int> outs = n.outputs;
    g.add_node(std::move(n));
    return outs;
  }
  int node(const std::string& op, std::vector<int> ins, std::map<std::string, Attribute> attrs = {}) {
    return node_n(op, std::move(ins), 1, std::move(attrs))[0];
  }
  // Names the value as a graph output (renaming it so tests can read outputs by name).
  void output(int v) { g.outputs.push_back(v); }
};

}  // namespace infera::test
