"""Small ONNX models made with onnx.helper for the Python tests and bench/python (seeded weights)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8


def _model(graph, **meta):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="infera-tests",
                          producer_version="1")
    m.ir_version = IR_VERSION
    m.doc_string = meta.get("doc", "")
    m.domain = meta.get("domain", "")
    m.model_version = meta.get("version", 0)
    for k, v in meta.get("props", {}).items():
        p = m.metadata_props.add()
        p.key, p.value = k, v
    onnx.checker.check_model(m)
    return m


def tiny_convnet(seed=0):
    """[N,3,32,32] -> Conv3x3(8)+Relu -> Conv3x3/2(16)+Relu -> GlobalAveragePool -> Flatten -> Gemm(10):
    the 1x3x32x32 conv net of the overhead benchmark. Input "input" (batch symbolic "N"), output "logits"."""
    rng = np.random.default_rng(seed)
    w = lambda *s: numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32))  # noqa: E731
    inits = [w(8, 3, 3, 3), w(8), w(16, 8, 3, 3), w(16), w(10, 16), w(10)]
    for t, n in zip(inits, ["w1", "b1", "w2", "b2", "wf", "bf"]):
        t.name = n
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], transB=1, name="fc"),
    ]
    g = helper.make_graph(nodes, "tiny_convnet",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 32, 32])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits,
                          doc_string="graph doc")
    return _model(g, doc="a tiny conv net", domain="ai.infera.test", version=7, props={"author": "tests"})


def two_inputs():
    """x [N,4] float, y [N,4] float -> sum = x + y, prod = x * y (two inputs, two outputs)."""
    nodes = [helper.make_node("Add", ["x", "y"], ["sum"], name="add"),
             helper.make_node("Mul", ["x", "y"], ["prod"], name="mul")]
    g = helper.make_graph(nodes, "two_inputs",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("sum", TensorProto.FLOAT, ["N", 4]),
                           helper.make_tensor_value_info("prod", TensorProto.FLOAT, ["N", 4])])
    return _model(g)


def typed_identity(elem_type, shape=("N", 5)):
    """One input "x" of elem_type -> Identity -> "y": dtype round trips."""
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="id")], "identity",
                          [helper.make_tensor_value_info("x", elem_type, list(shape))],
                          [helper.make_tensor_value_info("y", elem_type, list(shape))])
    return _model(g)


def save(model, path):
    onnx.save(model, str(path))
    return str(path)
