// The IR: values (tensors with dtype, symbolic shape, optional constant) and nodes
// (op, attributes, value ids). Passes edit it; the planner specializes it per input shape.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "infera/infera.h"

namespace infera {

class OpKernel;  // src/ops/op.h: the node's typed op (attributes parsed once, infer, reference)

// A dim is known (value >= 0), symbolic (value -1, named) or unknown (value -1, no name).
struct Dim {
  int64_t value = -1;
  std::string symbol;

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: dims are numbers most of the time
  static Dim sym(std::string s) {
    Dim d;
    d.symbol = std::move(s);
    return d;
  }
  bool known() const { return value >= 0; }
  bool operator==(const Dim& o) const { return known() ? value == o.value : (!symbol.empty() && symbol == o.symbol); }
  std::string str() const;
};

struct Shape {
  bool rank_known = false;
  std::vector<Dim> dims;

  Shape() = default;
  static Shape unknown() { return Shape(); }
  static Shape of(const std::vector<int64_t>& d);
  static Shape of_rank(size_t rank);  // known rank, unknown dims
  explicit Shape(std::vector<Dim> d) : rank_known(true), dims(std::move(d)) {}

  int rank() const { return static_cast<int>(dims.size()); }
  bool fully_known() const;
  std::vector<int64_t> concrete() const;  // requires fully_known()
  int64_t numel() const;                  // -1 unless fully known
  std::string str() const;                // "[batch,3,224,224]", "[?]" for unknown rank
};

struct Attribute {
  enum Kind { kUndefined, kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings, kGraph };
  Kind kind = kUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<const Tensor> t;
};

struct Value {
  std::string name;
  DataType dtype = DataType::kUndefined;
  Shape shape;
  std::shared_ptr<const Tensor> constant;  // initializer or folded constant
  int producer = -1;                       // node index, -1 for graph inputs and constants
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;        // "" is the default ONNX domain; "com.infera" holds fused ops
  std::vector<int> inputs;   // value ids; -1 = optional input left out
  std::vector<int> outputs;  // value ids; -1 = optional output not produced
  std::map<std::string, Attribute> attrs;
  // The typed op made from op_type/domain/attrs (src/ops/infer.h: attach_ops). Whoever changes a
  // node's op_type, domain or attrs resets it; a pass may set it directly (typed fused epilogues).
  std::shared_ptr<const OpKernel> op;
  bool dead = false;  // removed by a pass; dropped by Graph::compact()

  bool has_attr(const std::string& k) const { return attrs.count(k) != 0; }
  int64_t attr_int(const std::string& k, int64_t dflt) const;
  float attr_float(const std::string& k, float dflt) const;
  std::string attr_string(const std::string& k, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& k, const std::vector<int64_t>& dflt = {}) const;
  std::vector<float> attr_floats(const std::string& k, const std::vector<float>& dflt = {}) const;
  // True for op `op` of the default ONNX domain ("" or "ai.onnx").
  bool is_onnx(const char* op) const { return op_type == op && (domain.empty() || domain == "ai.onnx"); }
  // "node 'conv1' (Conv)" for messages.
  std::string label() const;
  size_t num_inputs() const { return inputs.size(); }
};

class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;  // topologically sorted after import and after compact()
  std::vector<int> inputs;  // graph inputs that are not initializers
  std::vector<int> outputs;
  int64_t ir_version = 0;
  int64_t opset = 0;  // default-domain opset
  std::string producer;
  ModelMetadata metadata;
  std::string source;  // file name for messages

  int add_value(const std::string& name, DataType dtype = DataType::kUndefined, Shape shape = {});
  int find_value(const std::string& name) const;  // -1 if none
  std::string unique_name(const std::string& base);
  int add_node(Node n);  // sets producers; caller keeps topological order
  // Consumers of each value (node ids), recomputed on call.
  std::vector<std::vector<int>> consumers() const;
  bool is_graph_output(int v) const;
  // Drops dead nodes and unused values, re-sorts topologically, renumbers ids.
  Status compact();
  size_t live_node_count() const;

 private:
  std::map<std::string, int> by_name_;
};

// Checks that nodes can be ordered (no cycles), every input is defined, names are unique.
Status topo_sort(Graph& g);

}  // namespace infera
