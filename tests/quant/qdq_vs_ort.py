#!/usr/bin/env python3
"""A float CNN (conv+relu, a residual block, a strided conv) quantized by ONNX Runtime's
quantize_static (QDQ, per-channel int8 weights, int8 activations, int32 bias), run by ONNX Runtime
and by infera (whose quantize_qdq pass runs it as int8 QConv nodes), outputs compared in units of
the output's quantization step. Prints the mismatch; exits 1 when more than --max-off-frac of the
elements differ by more than one step, or any by more than --max-steps.

    python3 tests/quant/qdq_vs_ort.py --infera build/infera [--keep DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def float_model(rng):
    def conv(name, x, cin, cout, k=3, stride=1, relu=True):
        w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, name + "_w"), numpy_helper.from_array(b, name + "_b")])
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name], name=name,
                                      pads=[k // 2] * 4, strides=[stride, stride]))
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [name + "_r"], name=name + "_relu"))
        return name + "_r"

    nodes, inits = [], []
    a = conv("c1", "input", 3, 16)
    b = conv("c2", a, 16, 16)
    c = conv("c3", b, 16, 16, relu=False)
    nodes.append(helper.make_node("Add", [c, a], ["res"], name="add1"))
    nodes.append(helper.make_node("Relu", ["res"], ["res_r"], name="add1_relu"))
    d = conv("c4", "res_r", 16, 32, stride=2)
    conv("c5", d, 32, 8, k=1, relu=False)
    g = helper.make_graph(nodes, "qdq_cnn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("c5", TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_operatorsetid("", 13)])
    m.ir_version = 8
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--infera", default="build/infera")
    ap.add_argument("--keep", help="folder for the models and outputs (default: a temporary one)")
    ap.add_argument("--max-off-frac", type=float, default=0.01, help="elements more than 1 step off (0.01)")
    ap.add_argument("--max-steps", type=float, default=3.0, help="largest difference in steps (3)")
    args = ap.parse_args()
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(11)
    work = args.keep or tempfile.mkdtemp(prefix="infera-qdq-")
    os.makedirs(work, exist_ok=True)
    fp32, int8 = os.path.join(work, "cnn.onnx"), os.path.join(work, "cnn.int8.onnx")
    onnx.save(float_model(rng), fp32)
    calib = [rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(16)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calib)

        def get_next(self):
            x = next(self.it, None)
            return None if x is None else {"input": x}

    quantize_static(fp32, int8, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    qm = onnx.load(int8)
    ops = sorted({n.op_type for n in qm.graph.node})
    # The step of the output: the scale of the QuantizeLinear that writes c5's quantized value.
    inits = {t.name: numpy_helper.to_array(t) for t in qm.graph.initializer}
    out_dq = [n for n in qm.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == "c5"]
    step = float(inits[out_dq[0].input[1]]) if out_dq else None

    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    xin = os.path.join(work, "x.npy")
    np.save(xin, x)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    ref = ort.InferenceSession(int8, so, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    fref = ort.InferenceSession(fp32, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    outdir = os.path.join(work, "out")
    r = subprocess.run([args.infera, "run", int8, "--input", "input=" + xin, "--output-dir", outdir],
                       capture_output=True, text=True, env=dict(os.environ, INFERA_VERBOSE="1"))
    if r.returncode != 0:
        print("qdq_vs_ort: infera run failed: %s" % r.stderr.strip().splitlines()[-1:])
        return 1
    got = np.load(os.path.join(outdir, "c5.npy"))
    qconvs = sum(1 for l in r.stderr.splitlines() if "(com.infera.QConv) ->" in l)
    diff = np.abs(got - ref) / step
    off = float(np.mean(diff > 1.0 + 1e-3))
    print("qdq_vs_ort: quantize_static model ops %s; infera ran %d QConv steps" % (ops, qconvs))
    print("qdq_vs_ort: output step %.6g; |infera - ORT| in steps: max %.2f, mean %.4f; %.2f%% of %d elements "
          "more than 1 step off; exact %.1f%%" % (step, diff.max(), diff.mean(), 100 * off, diff.size,
                                                 100 * float(np.mean(diff < 1e-3))))
    print("qdq_vs_ort: vs the fp32 model (ORT): infera max %.4f, ORT int8 max %.4f (|fp32| max %.3f)"
          % (np.abs(got - fref).max(), np.abs(ref - fref).max(), np.abs(fref).max()))
    ok = qconvs > 0 and off <= args.max_off_frac and diff.max() <= args.max_steps
    print("qdq_vs_ort: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
