// The QDQ ONNX writer of `infera quantize` and the choice of the tensors it quantizes: every Conv's
// input and output (the output of a Relu that is the conv's only reader instead), and the inputs and
// output of residual Adds (two non-constant inputs; a following sole Relu's output instead). This is the
// pattern the quantize_qdq pass folds into int8 convolutions, and what ONNX Runtime's quantize_static
// writes for a CNN.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "frontend/onnx/import.h"
#include "infera/limits.h"
#include "infera/quantize.h"
#include "quant/qdq_model.h"

namespace infera {
namespace {

struct GraphIndex {
  std::map<std::string, int> producer;                // tensor -> node index
  std::map<std::string, std::vector<int>> consumers;  // tensor -> node indices
  std::map<std::string, const onnx::TensorProto*> init;
  std::set<std::string> outputs;
  explicit GraphIndex(const onnx::GraphProto& g) {
    for (int i = 0; i < g.node_size(); ++i) {
      for (const auto& o : g.node(i).output()) producer[o] = i;
      for (const auto& in : g.node(i).input())
        if (!in.empty()) consumers[in].push_back(i);
    }
    for (const auto& t : g.initializer()) init[t.name()] = &t;
    // An Identity of an initializer is that initializer: PyTorch's exporter (opset 17) shares equal
    // tensors, the zero biases of BatchNorm-folded convs among them, through Identity nodes; seen
    // as computed, those convs stayed float. Nodes are in topological order, so chains resolve.
    for (const auto& n : g.node())
      if (n.op_type() == "Identity" && (n.domain().empty() || n.domain() == "ai.onnx") && n.input_size() == 1 &&
          n.output_size() == 1) {
        auto it = init.find(n.input(0));
        if (it != init.end() && !n.output(0).empty()) init[n.output(0)] = it->second;
      }
    for (const auto& o : g.output()) outputs.insert(o.name());
    // Element types forward through the graph: float32 from float inputs and initializers, kept by
    // the ops that keep their first input's type; shape arithmetic (Shape, Size, Cast to int64,
    // integer Constants) and comparisons are not float. Unknown ops: not float (left alone).
    const int kFloat = onnx::TensorProto::FLOAT;
    for (const auto& in : g.input())
      if (in.type().tensor_type().elem_type() == kFloat) floats.insert(in.name());
    for (const auto& t : g.initializer())
      if (t.data_type() == kFloat) floats.insert(t.name());
    static const std::set<std::string> keeps = {"Conv",
                                                "Relu",
                                                "Add",
                                                "Sub",
                                                "Mul",
                                                "Div",
                                                "Clip",
                                                "MaxPool",
                                                "AveragePool",
                                                "GlobalAveragePool",
                                                "GlobalMaxPool",
                                                "BatchNormalization",
                                                "Concat",
                                                "Reshape",
                                                "Flatten",
                                                "Transpose",
                                                "Split",
                                                "Slice",
                                                "Gemm",
                                                "MatMul",
                                                "Sigmoid",
                                                "HardSigmoid",
                                                "HardSwish",
                                                "Tanh",
                                                "Softmax",
                                                "Identity",
                                                "Dropout",
                                                "Pad",
                                                "Resize",
                                                "Squeeze",
                                                "Unsqueeze",
                                                "ReduceMean",
                                                "Gelu",
                                                "Erf",
                                                "Sqrt",
                                                "Pow",
                                                "LayerNormalization",
                                                "LeakyRelu",
                                                "Mish",
                                                "Softplus",
                                                "Elu",
                                                "Selu",
                                                "PRelu",
                                                "Max",
                                                "Min",
                                                "Sum",
                                                "Mean",
                                                "Expand",
                                                "Gather",
                                                "Tile"};
    for (const auto& n : g.node()) {
      bool f = false;
      if (n.op_type() == "Constant") {
        for (const auto& a : n.attribute())
          if (a.name() == "value" && a.t().data_type() == kFloat) f = true;
      } else if (n.op_type() == "Cast") {
        for (const auto& a : n.attribute())
          if (a.name() == "to" && a.i() == kFloat) f = true;
      } else if (keeps.count(n.op_type()) && n.input_size() > 0) {
        f = floats.count(n.input(0)) != 0;
      }
      if (f)
        for (const auto& o : n.output())
          if (!o.empty()) floats.insert(o);
    }
  }
  bool is_const(const std::string& t) const { return init.count(t) != 0; }
  bool is_float(const std::string& t) const { return floats.count(t) != 0; }
  std::set<std::string> floats;  // tensors known to be float32 (the writer quantizes no other)
  // The Relu that is the only reader of t (t not a graph output), or -1.
  int sole_relu(const onnx::GraphProto& g, const std::string& t) const {
    auto it = consumers.find(t);
    if (it == consumers.end() || it->second.size() != 1 || outputs.count(t)) return -1;
    const auto& n = g.node(it->second[0]);
    return n.op_type() == "Relu" && (n.domain().empty() || n.domain() == "ai.onnx") ? it->second[0] : -1;
  }
};

bool onnx_op(const onnx::NodeProto& n, const char* op) {
  return n.op_type() == op && (n.domain().empty() || n.domain() == "ai.onnx");
}

// A unit of mixed precision: its node name, or its first output for an unnamed node.
std::string layer_id(const onnx::NodeProto& n) { return n.name().empty() ? n.output(0) : n.name(); }

// Convs whose weight is a float initializer of rank 4 (the ones the writer quantizes).
bool quantizable_conv(const onnx::NodeProto& n, const GraphIndex& ix) {
  if (!onnx_op(n, "Conv") || n.input_size() < 2) return false;
  auto it = ix.init.find(n.input(1));
  return it != ix.init.end() && it->second->data_type() == onnx::TensorProto::FLOAT && it->second->dims_size() == 4;
}

// An Add of two computed float tensors (a residual join), the writer's other unit.
bool residual_add(const onnx::NodeProto& n, const GraphIndex& ix) {
  return onnx_op(n, "Add") && n.input_size() == 2 && !ix.is_const(n.input(0)) && !ix.is_const(n.input(1)) &&
         ix.is_float(n.input(0)) && ix.is_float(n.input(1));
}

}  // namespace

Result<std::string> read_model_proto(const std::string& path, onnx::ModelProto& m) {
  auto bytes = read_binary_file(path, "model file", limits::kMaxModelBytes);
  if (!bytes.is_ok()) return bytes.status();
  if (!m.ParseFromString(bytes.value())) return Status::error(path + ": not a valid ONNX model");
  if (!m.has_graph()) return Status::error(path + ": the model has no graph");
  return bytes.take();
}

std::vector<std::string> qdq_tensor_names(const onnx::GraphProto& g, const std::set<std::string>& float_layers) {
  GraphIndex ix(g);
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& t) {
    if (!t.empty() && !ix.is_const(t) && ix.is_float(t) && seen.insert(t).second) out.push_back(t);
  };
  auto add_after_relu = [&](const std::string& t) {
    const int r = ix.sole_relu(g, t);
    add(r >= 0 ? g.node(r).output(0) : t);
  };
  for (const auto& n : g.node()) {
    if (float_layers.count(layer_id(n))) continue;
    if (quantizable_conv(n, ix)) {
      add(n.input(0));
      add_after_relu(n.output(0));
    } else if (residual_add(n, ix)) {
      add(n.input(0));
      add(n.input(1));
      add_after_relu(n.output(0));
    }
  }
  return out;
}

Result<std::vector<std::string>> qdq_tensors(const std::string& model_path) {
  onnx::ModelProto m;
  auto r = read_model_proto(model_path, m);
  if (!r.is_ok()) return r.status();
  return qdq_tensor_names(m.graph(), {});
}

std::vector<std::string> qdq_layer_names(const onnx::GraphProto& g) {
  GraphIndex ix(g);
  std::vector<std::string> out;
  for (const auto& n : g.node())
    if (quantizable_conv(n, ix) || residual_add(n, ix)) out.push_back(layer_id(n));
  return out;
}

Result<std::vector<std::string>> qdq_layers(const std::string& model_path) {
  onnx::ModelProto m;
  auto r = read_model_proto(model_path, m);
  if (!r.is_ok()) return r.status();
  return qdq_layer_names(m.graph());
}

namespace {

float scale_of(float amax) { return amax > 0.f && std::isfinite(amax) ? amax / 127.f : 1.f; }

void add_init(onnx::GraphProto& g, const std::string& name, onnx::TensorProto::DataType dt, std::vector<int64_t> dims,
              const void* data, size_t bytes) {
  onnx::TensorProto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(dt);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(data, bytes);
}

onnx::NodeProto make_node(const char* op, std::vector<std::string> in, std::string out, const std::string& name,
                          int64_t axis = -1) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (auto& s : in) n.add_input(s);
  n.add_output(out);
  if (axis >= 0) {
    auto* a = n.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
  }
  return n;
}

}  // namespace

Status write_qdq_model(const std::string& model_path, const CalibrationTable& table, const std::string& out_path,
                       const std::vector<std::string>& float_layers) {
  onnx::ModelProto m;
  auto r = read_model_proto(model_path, m);
  if (!r.is_ok()) return r.status();
  int64_t opset = 0;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < 13)
    return Status::error(model_path + ": opset " + std::to_string(opset) +
                         ": the QDQ model needs per-channel DequantizeLinear (opset 13 or later); re-export the model "
                         "with opset >= 13");
  onnx::GraphProto& g = *m.mutable_graph();
  const std::string dir = model_path.find('/') == std::string::npos ? "." : model_path.substr(0, model_path.rfind('/'));
  const std::set<std::string> floats(float_layers.begin(), float_layers.end());
  {
    const std::vector<std::string> units = qdq_layer_names(g);
    const std::set<std::string> known(units.begin(), units.end());
    for (const std::string& f : floats)
      if (!known.count(f))
        return Status::error(StatusCode::kInvalidInput, "layer '" + f + "' is not a Conv or residual Add of " +
                                                            model_path + " (layers: quantizable Convs and Adds)");
  }
  const std::vector<std::string> acts = qdq_tensor_names(g, floats);
  std::map<std::string, float> scale;
  for (const std::string& t : acts) {
    auto it = table.amax.find(t);
    if (it == table.amax.end())
      return Status::error("calibration: no range for tensor '" + t + "' (a cache made for another model?)");
    scale[t] = scale_of(it->second);
  }
  // A MaxPool's output takes its input's scale (as ONNX Runtime's quantizer does): its range lies
  // within the input's, and DQ -> MaxPool -> Q of one scale then runs on the int8 values, exactly.
  for (const auto& n : g.node())
    if (onnx_op(n, "MaxPool") && n.input_size() > 0 && n.output_size() == 1 && scale.count(n.input(0)) &&
        scale.count(n.output(0)))
      scale[n.output(0)] = scale[n.input(0)];
  GraphIndex ix(g);
  // Weights and biases: per-channel symmetric int8 weights, int32 biases at x_scale * w_scale.
  std::vector<onnx::NodeProto> pre;                                // DQ nodes of constants, first in the graph
  std::map<int, std::pair<std::string, std::string>> conv_inputs;  // node -> (W dq, B dq)
  std::map<std::string, std::vector<float>> w_scales;              // weight initializer -> its scales
  std::set<std::string> replaced;                                  // float initializers the DQ nodes replace
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (!quantizable_conv(n, ix) || floats.count(layer_id(n))) continue;
    auto wt = tensor_from_proto(*ix.init.at(n.input(1)), dir, "initializer '" + n.input(1) + "'");
    if (!wt.is_ok()) return wt.status();
    const Tensor& w = wt.value();
    const int64_t M = w.dims()[0], per = M > 0 ? w.numel() / M : 0;
    const std::string wn = n.input(1) + "_quantized";
    if (!w_scales.count(n.input(1))) {
      std::vector<float> ws(M);
      std::vector<int8_t> q(w.numel());
      std::vector<int8_t> zp(M, 0);
      for (int64_t c = 0; c < M; ++c) {
        float amax = 0.f;
        for (int64_t k = 0; k < per; ++k) amax = std::max(amax, std::fabs(w.data_as<float>()[c * per + k]));
        ws[c] = scale_of(amax);
        for (int64_t k = 0; k < per; ++k) {
          const float v = std::nearbyint(w.data_as<float>()[c * per + k] / ws[c]);
          q[c * per + k] = static_cast<int8_t>(std::max(-127.f, std::min(127.f, v)));
        }
      }
      std::vector<int64_t> dims(w.dims().begin(), w.dims().end());
      add_init(g, wn, onnx::TensorProto::INT8, dims, q.data(), q.size());
      add_init(g, wn + "_scale", onnx::TensorProto::FLOAT, {M}, ws.data(), ws.size() * 4);
      add_init(g, wn + "_zero_point", onnx::TensorProto::INT8, {M}, zp.data(), zp.size());
      pre.push_back(make_node("DequantizeLinear", {wn, wn + "_scale", wn + "_zero_point"}, wn + "_dq", wn + "_dq", 0));
      w_scales[n.input(1)] = ws;
      replaced.insert(n.input(1));
    }
    std::string bdq;
    if (n.input_size() > 2 && !n.input(2).empty()) {
      auto bi = ix.init.find(n.input(2));
      if (bi == ix.init.end()) continue;  // a computed bias: leave this conv in float
      auto bt = tensor_from_proto(*bi->second, dir, "initializer '" + n.input(2) + "'");
      if (!bt.is_ok()) return bt.status();
      if (bt.value().dtype() != DataType::kFloat32 || bt.value().numel() != M) continue;
      const std::vector<float>& ws = w_scales[n.input(1)];
      const float xs = scale.at(n.input(0));
      std::vector<int32_t> bq(M), bz(M, 0);
      std::vector<float> bs(M);
      for (int64_t c = 0; c < M; ++c) {
        bs[c] = xs * ws[c];
        const double v = std::nearbyint(double(bt.value().data_as<float>()[c]) / bs[c]);
        bq[c] = static_cast<int32_t>(std::max(-2147483647.0, std::min(2147483647.0, v)));
      }
      const std::string bn = n.name().empty() ? n.input(2) + "_q" + std::to_string(i) : n.name() + "_bias_quantized";
      add_init(g, bn, onnx::TensorProto::INT32, {M}, bq.data(), bq.size() * 4);
      add_init(g, bn + "_scale", onnx::TensorProto::FLOAT, {M}, bs.data(), bs.size() * 4);
      add_init(g, bn + "_zero_point", onnx::TensorProto::INT32, {M}, bz.data(), bz.size() * 4);
      pre.push_back(make_node("DequantizeLinear", {bn, bn + "_scale", bn + "_zero_point"}, bn + "_dq", bn + "_dq", 0));
      bdq = bn + "_dq";
      replaced.insert(n.input(2));
    }
    conv_inputs[i] = {wn + "_dq", bdq};
  }
  // Activations: Q -> DQ after the producer (first, for graph inputs); readers read the DQ output. A graph
  // output keeps its name on the DQ output (its producer writes name_float).
  for (const std::string& t : acts) {
    const float s = scale.at(t);
    const int8_t z = 0;
    add_init(g, t + "_scale", onnx::TensorProto::FLOAT, {}, &s, 4);
    add_init(g, t + "_zero_point", onnx::TensorProto::INT8, {}, &z, 1);
  }
  std::vector<onnx::NodeProto> nodes(pre);
  auto emit_qdq = [&](const std::string& t) {
    const bool out = ix.outputs.count(t) != 0;
    const std::string src = out ? t + "_float" : t, dq = out ? t : t + "_dq";
    nodes.push_back(make_node("QuantizeLinear", {src, t + "_scale", t + "_zero_point"}, t + "_q", t + "_q"));
    nodes.push_back(make_node("DequantizeLinear", {t + "_q", t + "_scale", t + "_zero_point"}, dq, t + "_dq"));
  };
  const std::set<std::string> act_set(acts.begin(), acts.end());
  std::set<std::string> graph_inputs;
  for (const auto& in : g.input()) graph_inputs.insert(in.name());
  for (const std::string& t : acts)
    if (graph_inputs.count(t)) emit_qdq(t);
  for (int i = 0; i < g.node_size(); ++i) {
    onnx::NodeProto n = g.node(i);
    for (int k = 0; k < n.input_size(); ++k)
      if (act_set.count(n.input(k)) && !ix.outputs.count(n.input(k))) n.set_input(k, n.input(k) + "_dq");
    auto ci = conv_inputs.find(i);
    if (ci != conv_inputs.end()) {
      n.set_input(1, ci->second.first);
      if (!ci->second.second.empty()) n.set_input(2, ci->second.second);
    }
    std::vector<std::string> produced;
    for (int k = 0; k < n.output_size(); ++k)
      if (act_set.count(n.output(k))) {
        produced.push_back(n.output(k));
        if (ix.outputs.count(n.output(k))) n.set_output(k, n.output(k) + "_float");
      }
    nodes.push_back(n);
    for (const std::string& t : produced) emit_qdq(t);
  }
  g.clear_node();
  for (auto& n : nodes) *g.add_node() = std::move(n);
  // Drop the float weights the DQ nodes replaced (unless something else still reads them).
  std::set<std::string> read;
  for (const auto& n : g.node())
    for (const auto& in : n.input()) read.insert(in);
  auto* inits = g.mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i)
    if (replaced.count(inits->Get(i).name()) && !read.count(inits->Get(i).name())) inits->DeleteSubrange(i, 1);
  std::string bytes;
  if (!m.SerializeToString(&bytes)) return Status::error(out_path + ": could not serialize the quantized model");
  const std::string tmp = out_path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Status::error(out_path + ": cannot write the quantized model");
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) return Status::error(out_path + ": write failed");
  }
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0)
    return Status::error(out_path + ": cannot write the quantized model");
  return Status::ok();
}

}  // namespace infera
