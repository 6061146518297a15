"""int8 (issue 11): a model quantized by ONNX Runtime's quantize_static runs in infera as int8 and agrees
with ONNX Runtime (tests/quant/qdq_vs_ort.py prints the measured mismatch); `infera quantize` (every
calibration method, the cache and its refusals, bad calibration data) writes QDQ models that ONNX Runtime
runs; `infera eval` prints top-1/top-5 with `top1=` on its last line."""
import json
import os
import re
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from cli_util import expect, ok, one_line_error, save

HERE = os.path.dirname(os.path.abspath(__file__))


def classifier(seed=0):
    """[batch,3,8,8] -> conv+relu -> conv -> +residual -> relu -> GAP -> Gemm -> [batch,10]."""
    rng = np.random.default_rng(seed)
    def w(*s):
        return numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32))
    inits = [w(8, 3, 3, 3), w(8), w(8, 8, 3, 3), w(8), w(10, 8), w(10)]
    for t, n in zip(inits, ["w1", "b1", "w2", "b2", "fc", "fcb"]):
        t.name = n
    nodes = [helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="c1", pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["r1"], name="r1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="c2", pads=[1] * 4),
             helper.make_node("Add", ["c2", "r1"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["ar"], name="ar"),
             helper.make_node("GlobalAveragePool", ["ar"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["logits"], name="fc", transB=1)]
    g = helper.make_graph(nodes, "cls", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_operatorsetid("", 13)])
    m.ir_version = 8
    return m


def add(c, ort):
    def qdq_vs_ort():
        expect(ort is not None, "needs onnxruntime")
        script = os.path.join(HERE, "..", "quant", "qdq_vs_ort.py")
        p = subprocess.run([sys.executable, script, "--infera", c.infera, "--keep", c.mkdir("qdq_vs_ort")],
                           capture_output=True, text=True, timeout=300)
        lines = [l for l in p.stdout.splitlines() if l.startswith("qdq_vs_ort:")]
        expect(p.returncode == 0 and lines and lines[-1].endswith("PASS"),
               "exit %d: %s" % (p.returncode, " | ".join(lines) or p.stderr.strip()[-300:]))
        expect(any("5 QConv" in l for l in lines), "not every conv ran as QConv: %s" % lines)

    c.test("int8: quantize_static QDQ model vs ONNX Runtime", qdq_vs_ort)

    d = c.mkdir("quant")
    model = save(classifier(), os.path.join(d, "cls.onnx"))
    other = save(classifier(1), os.path.join(d, "other.onnx"))
    rng = np.random.default_rng(7)
    calib = os.path.join(d, "calib.npy")
    np.save(calib, rng.standard_normal((40, 3, 8, 8)).astype(np.float32))
    images = rng.standard_normal((50, 3, 8, 8)).astype(np.float32)
    np.save(os.path.join(d, "images.npy"), images)

    def quantize_methods():
        expect(ort is not None, "needs onnxruntime")
        f32 = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"input": images})[0]
        for m in ("minmax", "percentile:99.9", "entropy"):
            out = os.path.join(d, "cls.%s.onnx" % m.split(":")[0])
            ok(*c.sh("quantize", model, "--calibration", calib, "-o", out, "--calib-method", m, "--batch", "8"))
            cache = json.load(open(out + ".calib.json"))
            expect(cache["method"] == m and len(cache["model_sha256"]) == 64 and sorted(cache["tensors"]) == ["ar", "c2", "input", "r1"],
                   "cache %s" % {k: cache[k] for k in ("method", "model_sha256")})
            q = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"input": images})[0]
            rel = np.abs(q - f32).max() / np.abs(f32).max()
            # Entropy clips the tails of these random activations harder (by design): a looser bound.
            bound = 0.3 if m == "entropy" else 0.1
            expect(rel < bound, "%s: ONNX Runtime's int8 output is %.3f (relative) from fp32" % (m, rel))

    c.test("quantize: minmax/percentile/entropy models run in ORT", quantize_methods)

    def shared_bias_through_identity():
        # PyTorch's opset-17 export shares equal tensors through Identity nodes (the zero biases of
        # BatchNorm-folded convs): such a bias is still a constant, and both convs must become int8.
        import onnx
        m = classifier()
        g = m.graph
        for t in g.initializer:
            if t.name == "b1":
                t.CopyFrom(numpy_helper.from_array(np.zeros(8, np.float32), "bz"))
        g.initializer.remove([t for t in g.initializer if t.name == "b2"][0])
        g.node.insert(0, helper.make_node("Identity", ["bz"], ["b1"], name="id1"))
        g.node.insert(1, helper.make_node("Identity", ["bz"], ["b2"], name="id2"))
        shared = save(m, os.path.join(d, "shared_bias.onnx"))
        out = os.path.join(d, "shared_bias.int8.onnx")
        ok(*c.sh("quantize", shared, "--calibration", calib, "-o", out))
        q = onnx.load(out)
        floats = [t.name for t in q.graph.initializer if t.name in ("w1", "w2")]
        expect(not floats, "float conv weights left in the QDQ model: %s" % floats)
        rc, so, se = c.sh("info", out)
        ok(rc, so, se)
        expect(re.search(r"com\.infera\.QConv\s+0 -> 2\b", so), "not both convs int8: %s" %
               [l for l in so.splitlines() if "Conv" in l])
        # The int8 convs count their multiply-adds as the float ones do (batch 512: 0.05 GFLOP a run).
        flops = lambda text: re.search(r"\(([0-9.]+) G per run of batch 512", text).group(1)
        got = {}
        for name, f in (("int8", out), ("float", shared)):
            rc2, so2, se2 = c.sh("info", f, "--batch", "512")
            ok(rc2, so2, se2)
            got[name] = flops(so2)
        expect(got["int8"] == got["float"] and float(got["float"]) > 0.04, "flops per run: %s" % got)
        if ort is not None:
            ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"input": images[:2]})

    c.test("quantize: a bias shared through Identity (PyTorch opset 17) is quantized", shared_bias_through_identity)

    def cache_reuse_and_refusals():
        out = os.path.join(d, "cls.minmax.onnx")
        cache = out + ".calib.json"
        rc, so, se = c.sh("quantize", model, "--calib-cache", cache, "-o", os.path.join(d, "re.onnx"))
        ok(rc, so, se)
        expect("ranges from" in so, "the cache was not reused: %s" % so.strip())
        one_line_error(*c.sh("quantize", model, "--calib-cache", cache, "-o", os.path.join(d, "x.onnx"),
                             "--calib-method", "entropy"), 1, "made with method 'minmax'", "not 'entropy'")
        one_line_error(*c.sh("quantize", other, "--calib-cache", cache, "-o", os.path.join(d, "x.onnx")), 1,
                       "another model")
        bad = os.path.join(d, "corrupt.json")
        with open(bad, "w") as f:
            f.write('{"format": "infera-calibration-cache-1", "tensors": {"c1": {"amax": ')
        one_line_error(*c.sh("quantize", model, "--calib-cache", bad, "-o", os.path.join(d, "x.onnx")), 1,
                       "corrupt.json", "not a valid cache")

    c.test("quantize: cache reused; other method/model, corrupt: errors", cache_reuse_and_refusals)

    def entropy_matches_reference():
        # Pixel-like calibration data: 8-bit values, 60% background 0, normalized as for training
        # (background at -0.857): the input's |x| histogram is 256 sparse bins with a spike, the case
        # where KL used to clip the input at the background (Fashion: -8.4 points). The activations'
        # thresholds must equal the numpy reference of TensorRT's algorithm (tests/quant/entropy_ref.py)
        # on the same histograms, to a bin.
        expect(ort is not None, "needs onnxruntime")
        sys.path.insert(0, os.path.join(HERE, "..", "quant"))
        import entropy_ref
        r = np.random.default_rng(11)
        px = r.integers(0, 256, (40, 3, 8, 8)) * (r.random((40, 3, 8, 8)) > 0.6)
        x = ((px / 255.0 - 0.3) / 0.35).astype(np.float32)
        data = os.path.join(d, "pixels.npy")
        np.save(data, x)
        out = os.path.join(d, "cls.pixels.onnx")
        ok(*c.sh("quantize", model, "--calibration", data, "-o", out, "--calib-method", "entropy"))
        got = {k: v["amax"] for k, v in json.load(open(out + ".calib.json"))["tensors"].items()}
        expect(abs(got["input"] - np.abs(x).max()) <= 1e-6 * np.abs(x).max(),
               "input: entropy clipped the model input to %.4f of %.4f" % (got["input"], np.abs(x).max()))
        import onnx
        m = onnx.load(model)
        for n in ("c2", "r1", "ar"):
            m.graph.output.add().name = n
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        acts = dict(zip([o.name for o in s.get_outputs()], s.run(None, {"input": x})))
        for n in ("c2", "r1", "ar"):
            amax = np.float32(np.abs(acts[n]).max())
            want = entropy_ref.amax_entropy(entropy_ref.histogram(acts[n], amax), amax)
            expect(abs(got[n] - want) <= 1.01 * float(amax) / 2048,
                   "%s: infera's entropy threshold %.5f, the reference's %.5f (max %.5f)" % (n, got[n], want, amax))

    c.test("quantize: entropy thresholds = TensorRT's reference (numpy); input keeps its range",
           entropy_matches_reference)

    def bad_calibration_data():
        x = os.path.join(d, "x.onnx")
        nan = rng.standard_normal((4, 3, 8, 8)).astype(np.float32)
        nan[1, 2, 3, 4] = np.nan
        np.save(os.path.join(d, "nan.npy"), nan)
        one_line_error(*c.sh("quantize", model, "--calibration", os.path.join(d, "nan.npy"), "-o", x), 1,
                       "nan.npy", "NaN")
        inf = np.ones((4, 3, 8, 8), np.float32)
        inf[0, 0, 0, 0] = np.inf
        np.save(os.path.join(d, "inf.npy"), inf)
        one_line_error(*c.sh("quantize", model, "--calibration", os.path.join(d, "inf.npy"), "-o", x), 1,
                       "inf.npy", "infinite")
        np.save(os.path.join(d, "shape.npy"), np.ones((4, 2, 8, 8), np.float32))
        one_line_error(*c.sh("quantize", model, "--calibration", os.path.join(d, "shape.npy"), "-o", x), 1,
                       "shape.npy", "input 'input'")
        np.save(os.path.join(d, "empty.npy"), np.ones((0, 3, 8, 8), np.float32))
        one_line_error(*c.sh("quantize", model, "--calibration", os.path.join(d, "empty.npy"), "-o", x), 1,
                       "empty")
        os.makedirs(os.path.join(d, "nofiles"), exist_ok=True)
        one_line_error(*c.sh("quantize", model, "--calibration", os.path.join(d, "nofiles"), "-o", x), 1,
                       "no .npy files")
        one_line_error(*c.sh("quantize", model, "-o", x), 1, "--calibration")
        # A degenerate range (all zeros) gets a safe scale; the model runs.
        np.save(os.path.join(d, "zeros.npy"), np.zeros((4, 3, 8, 8), np.float32))
        ok(*c.sh("quantize", model, "--calibration", os.path.join(d, "zeros.npy"), "-o", x))
        cache = json.load(open(x + ".calib.json"))
        expect(cache["tensors"]["input"] == {"amax": 0, "scale": 1}, "zero range: %s" % cache["tensors"]["input"])
        ok(*c.sh("run", x, "--batch", "2", "--output-dir", c.mkdir("quant", "zeros_out")))

    c.test("quantize: NaN/Inf/shape/empty data: errors; zero range", bad_calibration_data)

    def eval_top1():
        expect(ort is not None, "needs onnxruntime")
        f32 = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"input": images})[0]
        labels = np.argmax(f32, axis=1).astype(np.int64)
        np.save(os.path.join(d, "labels.npy"), labels)
        args = ["eval", model, "--images", os.path.join(d, "images.npy"), "--labels", os.path.join(d, "labels.npy")]
        rc, so, se = c.sh(*args, "--batch", "16")
        ok(rc, so, se)
        last = so.strip().splitlines()[-1]
        expect(re.match(r"^top1=1\.0000 top5=1\.0000 n=50 precision=fp32$", last), "fp32 last line: %r" % last)
        rc, so, se = c.sh(*args, "--precision", "int8", "--calibration", calib)
        ok(rc, so, se)
        m = re.match(r"^top1=(0\.\d{4}|1\.0000) ", so.strip().splitlines()[-1])
        expect(m and float(m.group(1)) >= 0.7, "int8 last line: %r" % so.strip().splitlines()[-1])
        wrong = labels.copy()
        wrong[3] = 10
        np.save(os.path.join(d, "wrong.npy"), wrong)
        one_line_error(*c.sh("eval", model, "--images", os.path.join(d, "images.npy"), "--labels",
                             os.path.join(d, "wrong.npy")), 1, "label 10", "image 3", "[0, 10)")
        np.save(os.path.join(d, "short.npy"), labels[:7])
        one_line_error(*c.sh("eval", model, "--images", os.path.join(d, "images.npy"), "--labels",
                             os.path.join(d, "short.npy")), 1, "short.npy", "[50]")
        rc, so, se = c.sh(*args, "--precision", "int8")
        expect(rc == 2 and "--calibration" in se, "int8 without calibration: exit %d %s" % (rc, se.strip()))
        rc, so, se = c.sh(*args, "--precision", "fp16")
        expect(rc == 2 and "runs on a GPU" in se, "fp16 on the CPU: exit %d %s" % (rc, se.strip()))
        rc, so, se = c.sh(*args, "--device", "tpu")
        expect(rc == 2 and "unknown device 'tpu'" in se, "--device tpu: exit %d %s" % (rc, se.strip()))
        rc, so, se = c.sh(*args, "--device", "cpu")
        ok(rc, so, se)
        expect("device cpu" in so, "the device is not printed: %s" % so.strip())

    c.test("eval: fp32 top1=1 vs its own argmax; int8; bad labels", eval_top1)

    def mixed_precision():
        import onnx
        def quant_ops(path):
            g = onnx.load(path).graph
            convs = [n for n in g.node if n.op_type == "Conv"]
            quantized = {n.name for n in convs if n.input[1].endswith("_dq")}
            return quantized, sum(n.op_type == "QuantizeLinear" for n in g.node)
        out = os.path.join(d, "cls.mixed.onnx")
        # A generous budget: every layer int8, as plain int8.
        rc, so, se = c.sh("quantize", model, "--calibration", calib, "-o", out, "--batch", "8", "--precision", "mixed",
                          "--accuracy-budget", "1")
        ok(rc, so, se)
        expect(re.search(r"mixed: 3 of 3 layers int8; .* measured [0-9.]+ \(budget 1\.00000, met\)", so),
               "budget 1: not every layer int8:\n" + so)
        expect(quant_ops(out)[0] == {"c1", "c2"}, "budget 1: quantized convs %r" % (quant_ops(out)[0],))
        # No error allowed: every layer float (the model is the float one again, no Q nodes).
        rc, so, se = c.sh("quantize", model, "--calibration", calib, "-o", out, "--batch", "8", "--precision", "mixed",
                          "--accuracy-budget", "0")
        ok(rc, so, se)
        expect("mixed: 0 of 3 layers int8" in so and quant_ops(out) == (set(), 0), "budget 0:\n" + so)
        # An override wins over the budget.
        rc, so, se = c.sh("quantize", model, "--calibration", calib, "-o", out, "--batch", "8", "--precision", "mixed",
                          "--accuracy-budget", "1", "--layer-precision", "c1:fp32,*:int8")
        ok(rc, so, se)
        expect(re.search(r"c1\s+fp32\s+-\s+forced fp32", so) and quant_ops(out)[0] == {"c2"}, "c1:fp32:\n" + so)
        # eval --precision mixed runs the mix and reports it.
        labels = os.path.join(d, "mlabels.npy")
        np.save(labels, np.zeros(50, np.int64))
        rc, so, se = c.sh("eval", model, "--images", os.path.join(d, "images.npy"), "--labels", labels, "--precision",
                          "mixed", "--calibration", calib, "--batch", "10", "--accuracy-budget", "0.05")
        ok(rc, so, se)
        expect(re.search(r"^mixed: \d of 3 layers int8", so, re.M) and "precision=mixed" in so.splitlines()[-1],
               "eval mixed:\n" + so)
        one_line_error(*c.sh("quantize", model, "--calibration", calib, "-o", out, "--precision", "mixed",
                             "--layer-precision", "nope:fp32"), 1, "'nope'")
        one_line_error(*c.sh("quantize", model, "--calibration", calib, "-o", out, "--precision", "mixed",
                             "--layer-precision", "c1=fp32"), 1, "--layer-precision")
        one_line_error(*c.sh("quantize", model, "--calibration", calib, "-o", out, "--accuracy-budget", "0.1"), 2,
                       "--precision mixed")
        one_line_error(*c.sh("quantize", model, "--calibration", calib, "-o", out, "--precision", "fp8"), 2,
                       "--precision")
    c.test("quantize --precision mixed: budget 1 all int8, 0 all float, overrides, eval", mixed_precision)

    def mixed_choice_in_cache():
        # The mix is stored in the calibration cache and read back: the same budget and overrides give
        # the same model without calibration data (nothing re-measured); another budget needs samples.
        import onnx
        cache = os.path.join(d, "mix.calib.json")
        if os.path.exists(cache):
            os.remove(cache)
        a, b = os.path.join(d, "mix_a.onnx"), os.path.join(d, "mix_b.onnx")
        ok(*c.sh("quantize", model, "--calibration", calib, "-o", a, "--batch", "8", "--precision", "mixed",
                 "--accuracy-budget", "1", "--layer-precision", "c1:fp32,*:int8", "--calib-cache", cache))
        mix = json.load(open(cache)).get("mixed")
        expect(mix == {"budget": 1, "layer_precision": "c1:fp32,*:int8", "float_layers": ["c1"]}, "cache: %r" % mix)
        rc, so, se = c.sh("quantize", model, "-o", b, "--precision", "mixed", "--accuracy-budget", "1",
                          "--layer-precision", "c1:fp32,*:int8", "--calib-cache", cache)
        ok(rc, so, se)
        expect("not re-measured" in so, "the stored mix was not reused:\n" + so)
        ga, gb = onnx.load(a).graph, onnx.load(b).graph
        expect([(n.op_type, list(n.input)) for n in ga.node] == [(n.op_type, list(n.input)) for n in gb.node],
               "the model from the stored mix differs from the measured one")
        one_line_error(*c.sh("quantize", model, "-o", b, "--precision", "mixed", "--accuracy-budget", "0.5",
                             "--layer-precision", "c1:fp32,*:int8", "--calib-cache", cache), 1, "--calibration")
        bad = os.path.join(d, "badmix.json")
        text = open(cache).read().replace('"float_layers": ["c1"]', '"float_layers": [1]')
        open(bad, "w").write(text)
        one_line_error(*c.sh("quantize", model, "-o", b, "--precision", "mixed", "--accuracy-budget", "1",
                             "--calib-cache", bad), 1, "badmix.json", "not a valid cache")

    c.test("quantize --precision mixed: the choice stored in the cache and reused", mixed_choice_in_cache)

    def integer_adds_left_alone():
        # conv -> Reshape to [N, -1] by shape arithmetic (Shape, Gather, Add of int64 tensors, as
        # PyTorch exports x.view(x.size(0), -1)): only float tensors are quantized.
        rng = np.random.default_rng(3)
        w = numpy_helper.from_array((rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32), "w")
        one = numpy_helper.from_array(np.array([0], np.int64), "zero")
        nodes = [helper.make_node("Conv", ["input", "w"], ["c"], name="conv", pads=[1] * 4),
                 helper.make_node("Shape", ["c"], ["s"], name="shape"),
                 helper.make_node("Constant", [], ["k"], name="k",
                                  value=numpy_helper.from_array(np.array([0], np.int64))),
                 helper.make_node("Gather", ["s", "k"], ["n"], name="gather", axis=0),
                 helper.make_node("Constant", [], ["m1"], name="m1",
                                  value=numpy_helper.from_array(np.array([-1], np.int64))),
                 helper.make_node("Add", ["m1", "zero"], ["m1b"], name="iadd0"),
                 helper.make_node("Add", ["n", "k"], ["n2"], name="iadd"),
                 helper.make_node("Concat", ["n2", "m1b"], ["shp"], name="cat", axis=0),
                 helper.make_node("Reshape", ["c", "shp"], ["output"], name="flat")]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 256])], [w, one])
        m = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(d, "ishape.onnx"))
        out = os.path.join(d, "ishape.q.onnx")
        ok(*c.sh("quantize", m, "--calibration", calib, "-o", out, "--batch", "8"))
        ok(*c.sh("run", out, "--batch", 2, "--output-dir", c.mkdir("ishape_out")))
        import onnx
        quantized = {n.input[0] for n in onnx.load(out).graph.node if n.op_type == "QuantizeLinear"}
        expect(quantized and not quantized & {"n", "k", "n2", "m1", "m1b", "s"}, "integer tensors quantized: %r" % quantized)
    c.test("quantize: integer shape arithmetic (Add of int64) left alone", integer_adds_left_alone)
