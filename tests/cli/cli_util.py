"""Harness and small ONNX models for tests/cli/test_cli.py (built with onnx.helper, seeded)."""
import os
import subprocess
import traceback

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(0)


class Cli:
    def __init__(self, infera, work):
        self.infera, self.work = infera, work
        self.passed = self.failed = 0

    def sh(self, *args, timeout=120, env=None):
        e = dict(os.environ)
        e.pop("INFERA_VERBOSE", None)
        e.pop("INFERA_PROFILE", None)
        e.update(env or {})
        p = subprocess.run([self.infera, *map(str, args)], capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL, env=e)
        return p.returncode, p.stdout, p.stderr

    def test(self, name, fn):
        try:
            why = fn()
        except AssertionError as e:
            why = str(e) or "assertion failed"
        except subprocess.TimeoutExpired as e:
            why = "timed out: %s" % " ".join(map(str, e.cmd))
        except Exception as e:
            why = "%s: %s" % (type(e).__name__, traceback.format_exc().strip().splitlines()[-1])
        ok = not why
        self.passed += ok
        self.failed += not ok
        print("%s %-52s%s" % ("PASS" if ok else "FAIL", name, "" if ok else "  -> " + why), flush=True)

    def cpu_winograd(self):
        """Whether oneDNN has Winograd on this CPU (doctor --json, the dnnl backend's details). oneDNN 2.6
        has it on AVX-512 only: elsewhere the CPU's convs have one algorithm and the perf db nothing
        to time; the search tests then check that instead."""
        if not hasattr(self, "_wino"):
            rc, out, err = self.sh("doctor", "--json")
            ok(rc, out, err)
            import json
            dnnl = [b for b in json.loads(out)["backends"] if b["name"] == "dnnl"]
            expect(dnnl and "conv algorithms: " in dnnl[0]["details"], "doctor names the CPU's conv algorithms")
            self._wino = "conv algorithms: direct, winograd" in dnnl[0]["details"]
        return self._wino

    def path(self, *p):
        return os.path.join(self.work, *p)

    def mkdir(self, *p):
        d = self.path(*p)
        os.makedirs(d, exist_ok=True)
        return d


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def ok(rc, out, err):
    expect(rc == 0, "exit %d: %s" % (rc, (err or out).strip()[-300:]))


def one_line_error(rc, out, err, code, *words):
    """Exit `code`, exactly one line on stderr, containing each of `words`."""
    expect(rc == code, "exit %d, expected %d (stderr: %s)" % (rc, code, err.strip()[:300]))
    expect(err.strip() != "", "stderr is empty")
    expect(len(err.splitlines()) == 1 and err.endswith("\n"),
           "stderr is %d lines, not one line ending in a newline: %r" % (len(err.splitlines()), err[:300]))
    for w in words:
        expect(w in err, "error %r does not say %r" % (err.strip(), w))


def clean(text, what):
    expect("\r" not in text and "\x1b[" not in text, "%s has progress/colour control characters "
           "although it is not a terminal" % what)


def save(model, path):
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def make_model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_operatorsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, dtype, dims):
    return helper.make_tensor_value_info(name, dtype, dims)


def small_model():
    """input [N,3,8,8] -> Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> output [N,2]."""
    inits = [numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array(RNG.standard_normal(4).astype(np.float32), "B"),
             numpy_helper.from_array(RNG.standard_normal((2, 4)).astype(np.float32), "G"),
             numpy_helper.from_array(RNG.standard_normal(2).astype(np.float32), "GB")]
    nodes = [helper.make_node("Conv", ["input", "W", "B"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "G", "GB"], ["output"], transB=1)]
    return make_model(nodes, [vi("input", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                      [vi("output", TensorProto.FLOAT, ["batch", 2])], inits)


def threaded_model():
    """Big enough for the thread pool to split work: [N,16,32,32] -> Conv 3x3 64 -> Relu -> Conv 1x1 ->
    GAP -> Gemm; output name with characters that the output file name must replace."""
    inits = [numpy_helper.from_array((RNG.standard_normal((64, 16, 3, 3)) * 0.1).astype(np.float32), "W1"),
             numpy_helper.from_array((RNG.standard_normal((64, 64, 1, 1)) * 0.1).astype(np.float32), "W2"),
             numpy_helper.from_array(RNG.standard_normal((10, 64)).astype(np.float32), "G")]
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "W2"], ["c2"], kernel_shape=[1, 1]),
             helper.make_node("GlobalAveragePool", ["c2"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "G"], ["logits/out:0"], transB=1)]
    return make_model(nodes, [vi("x", TensorProto.FLOAT, ["N", 16, 32, 32])],
                      [vi("logits/out:0", TensorProto.FLOAT, ["N", 10])], inits)


# Conv 3 -> 4 channels, 3x3, pad 1: FLOPs per sample = 2 * 4 * 3 * 3 * 3 * H * W.
CONV_FLOPS_PER_PIXEL = 2 * 4 * 3 * 3 * 3


def conv_model(in_dims, out_dims):
    """input -> Conv(3->4, 3x3, pad 1) -> Relu -> output, with the declared dims given (symbols or ints)."""
    w = numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
    nodes = [helper.make_node("Conv", ["input", "W"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["output"])]
    return make_model(nodes, [vi("input", TensorProto.FLOAT, in_dims)], [vi("output", TensorProto.FLOAT, out_dims)],
                      [w])


def relu_outputs_model(names):
    """x [2] -> one Relu per output name."""
    return make_model([helper.make_node("Relu", ["x"], [n]) for n in names], [vi("x", TensorProto.FLOAT, [2])],
                      [vi(n, TensorProto.FLOAT, [2]) for n in names])


def two_input_model():
    """a [batch,4] + b [batch,4] -> Add -> y."""
    return make_model([helper.make_node("Add", ["a", "b"], ["y"])],
                      [vi("a", TensorProto.FLOAT, ["batch", 4]), vi("b", TensorProto.FLOAT, ["batch", 4])],
                      [vi("y", TensorProto.FLOAT, ["batch", 4])])


def write_pb(path, array_or_tensor, name):
    t = array_or_tensor if isinstance(array_or_tensor, onnx.TensorProto) else numpy_helper.from_array(
        array_or_tensor, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def backend_test(root, name, model, inputs, outputs):
    """An ONNX backend-test folder root/name: model.onnx + test_data_set_0/{input,output}_N.pb."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    save(model, os.path.join(d, "model.onnx"))
    for i, t in enumerate(inputs):
        write_pb(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), t, "in%d" % i)
    for i, t in enumerate(outputs):
        write_pb(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), t, "out%d" % i)
    return d


def doctor_case(c):
    import re

    def t():
        rc, out, err = c.sh("doctor")
        ok(rc, out, err)
        expect(re.search(r"onednn|dnnl", out, re.I), "doctor does not mention oneDNN")
        expect(re.search(r"cores?|threads?", out, re.I), "doctor does not mention cores")
        expect(re.search(r"avx|sse|neon|isa", out, re.I), "doctor does not mention the ISA")
        expect(re.search(r"gpu", out, re.I), "doctor does not say anything about a GPU")
    return t
