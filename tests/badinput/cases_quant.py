"""Bad-input cases of the quantization operators (issue 11), added to make_bad_inputs.py's list:
QDQ models with zero, negative or NaN scales, an int32 zero point that is not 0, a zero point of
another dtype than its tensor, per-axis scales of the wrong length. Each names the node and the
parameter; a valid QDQ model is the positive control.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


def qdq_model(scale=0.05, zp=0, zp_type=np.uint8, w_scale=None, bias_zp=None, dq_zp_type=None):
    """input [1,3,8,8] -> Q -> DQ -> Conv(W as int8 per-channel DQ, bias int32 DQ) -> output."""
    rng = np.random.default_rng(1)
    w = rng.integers(-100, 100, (4, 3, 3, 3)).astype(np.int8)
    ws = np.full(4, 0.01, np.float32) if w_scale is None else np.asarray(w_scale, np.float32)
    b = rng.integers(-500, 500, 4).astype(np.int32)
    inits = [numpy_helper.from_array(np.array(scale, np.float32), "x_scale"),
             numpy_helper.from_array(np.array(zp, zp_type), "x_zp"),
             numpy_helper.from_array(w, "w_q"),
             numpy_helper.from_array(ws, "w_scale"),
             numpy_helper.from_array(np.zeros(len(ws), np.int8), "w_zp"),
             numpy_helper.from_array(b, "b_q"),
             numpy_helper.from_array(np.full(4, 0.0005, np.float32), "b_scale")]
    b_in = ["b_q", "b_scale"]
    if bias_zp is not None:
        inits.append(numpy_helper.from_array(np.array([0, 0, bias_zp, 0], np.int32), "b_zp"))
        b_in.append("b_zp")
    dq_zp = "x_zp"
    if dq_zp_type is not None:
        inits.append(numpy_helper.from_array(np.array(zp, dq_zp_type), "dq_zp"))
        dq_zp = "dq_zp"
    nodes = [helper.make_node("QuantizeLinear", ["input", "x_scale", "x_zp"], ["xq"], name="q_in"),
             helper.make_node("DequantizeLinear", ["xq", "x_scale", dq_zp], ["xd"], name="dq_in"),
             helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["wd"], name="dq_w", axis=0),
             helper.make_node("DequantizeLinear", b_in, ["bd"], name="dq_b", axis=0),
             helper.make_node("Conv", ["xd", "wd", "bd"], ["output"], name="conv0", pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_operatorsetid("", OPSET)], producer_name="infera-badinput")
    m.ir_version = 8
    return m


def build(root, Case):
    c = Case(root, "control_valid_qdq_model")
    c.run("valid QDQ conv model (per-channel int8 weights, int32 bias)", c.save(qdq_model()), expect=0)
    c = Case(root, "quant_zero_scale", says=["q_in", "y_scale", "= 0", "positive"])
    c.run("QuantizeLinear with scale 0", c.save(qdq_model(scale=0.0)))
    c = Case(root, "quant_negative_scale", says=["q_in", "y_scale", "-0.05", "positive"])
    c.run("QuantizeLinear with scale -0.05", c.save(qdq_model(scale=-0.05)))
    c = Case(root, "quant_nan_scale", says=["q_in", "y_scale", "nan"])
    c.run("QuantizeLinear with a NaN scale", c.save(qdq_model(scale=float("nan"))))
    c = Case(root, "quant_per_channel_scale_wrong_length", says=["dq_w", "x_scale [3]", "4 values"])
    c.run("per-axis weight scales: 3 for 4 output channels", c.save(qdq_model(w_scale=[0.01, 0.01, 0.01])))
    c = Case(root, "quant_bias_zero_point_not_zero", says=["dq_b", "x_zero_point[2] = 7", "out of range"])
    c.run("int32 bias dequantized with zero point 7", c.save(qdq_model(bias_zp=7)))
    c = Case(root, "quant_zero_point_dtype_mismatch", says=["dq_in", "x_zero_point", "int8", "uint8"])
    c.run("uint8 activations dequantized with an int8 zero point", c.save(qdq_model(dq_zp_type=np.int8)))
