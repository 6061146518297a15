#!/usr/bin/env python3
"""The `infera` command-line contract of issue #2: commands, flags, files written, exit codes.

Run with the PATH python3 (PyPI onnx, onnxruntime, numpy):
    python3 tests/cli/test_cli.py [--infera build/infera]
Builds small models with onnx.helper in a temporary folder. Prints PASS/FAIL per check and last
`N passed, M failed`; exit 1 on any failure. Malformed models/inputs are tests/badinput's job.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    import onnxruntime as ort
except ImportError:
    ort = None

BENCH_KEYS = {"batch", "latency_ms_p50", "latency_ms_p90", "latency_ms_p99", "latency_ms_mean",
              "throughput_per_s", "peak_memory_bytes", "build_ms"}
RNG = np.random.default_rng(0)


class Cli:
    def __init__(self, infera, work):
        self.infera, self.work = infera, work
        self.passed = self.failed = 0

    def sh(self, *args, timeout=120):
        p = subprocess.run([self.infera, *map(str, args)], capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
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
        print("%s %-40s%s" % ("PASS" if ok else "FAIL", name, "" if ok else "  -> " + why), flush=True)

    def path(self, *p):
        return os.path.join(self.work, *p)


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def one_line_error(rc, out, err, code):
    expect(rc == code, "exit %d, expected %d (stderr: %s)" % (rc, code, err.strip()[:200]))
    expect(err.strip() != "", "stderr is empty")
    expect(len(err.splitlines()) == 1 and err.endswith("\n"),
           "stderr is %d lines, not one line ending in a newline: %r" % (len(err.splitlines()), err[:300]))


def clean(text, what):
    expect("\r" not in text and "\x1b[" not in text, "%s has progress/colour control characters "
           "although it is not a terminal" % what)


def save(model, path):
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


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
    g = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 2])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_operatorsetid("", 13)])
    m.ir_version = 8
    return m


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
    g = helper.make_graph(nodes, "threaded", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, 32, 32])],
                          [helper.make_tensor_value_info("logits/out:0", TensorProto.FLOAT, ["N", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_operatorsetid("", 13)])
    m.ir_version = 8
    return m


def ort_run(model_path, feeds):
    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--infera", default="build/infera")
    args = ap.parse_args()
    if not (os.path.isfile(args.infera) and os.access(args.infera, os.X_OK)):
        sys.stderr.write("test_cli.py: %s is not an executable; build infera first\n" % args.infera)
        return 1
    tmp = tempfile.TemporaryDirectory(prefix="infera-cli-")
    c = Cli(os.path.abspath(args.infera), tmp.name)
    small = save(small_model(), c.path("small.onnx"))
    thr = save(threaded_model(), c.path("threaded.onnx"))
    x1 = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(c.path("x1.npy"), x1)
    with open(c.path("x1.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x1, "input").SerializeToString())

    # Usage errors: exit 2, one line on stderr.
    def usage(*a):
        return lambda: one_line_error(*c.sh(*a), 2)
    c.test("usage: no command", usage())
    c.test("usage: unknown command", usage("frobnicate"))
    c.test("usage: run without a model", usage("run"))
    c.test("usage: run with an unknown flag", usage("run", small, "--no-such-flag"))
    c.test("usage: run --batch abc", usage("run", small, "--batch", "abc"))
    c.test("usage: run --batch 0", usage("run", small, "--batch", "0"))
    c.test("usage: run --device warp9", usage("run", small, "--device", "warp9"))
    c.test("usage: run --precision fp7", usage("run", small, "--precision", "fp7"))
    c.test("usage: check without a folder", usage("check"))
    c.test("usage: check --rtol abc", usage("check", c.work, "--rtol", "abc"))
    c.test("usage: bench --batch 1,x", usage("bench", small, "--batch", "1,x"))
    c.test("usage: bench --iters and --duration", usage("bench", small, "--iters", "5", "--duration", "1"))
    c.test("input error: run a missing model -> 1", lambda: one_line_error(*c.sh("run", c.path("nope.onnx")), 1))

    def help_ok():
        rc, out, err = c.sh("--help")
        expect(rc == 0, "--help exit %d" % rc)
        for cmd in ("run", "check", "bench", "info", "doctor"):
            expect(cmd in out, "--help does not mention %s" % cmd)
    c.test("--help lists the commands", help_ok)

    def info():
        rc, out, err = c.sh("info", small)
        expect(rc == 0, "exit %d: %s" % (rc, err.strip()))
        for word in ("input", "output", "Conv", "Gemm"):
            expect(word in out, "info does not mention %s" % word)
        expect(re.search(r"batch", out), "info does not show the symbolic dim 'batch'")
        clean(out + err, "info output")
    c.test("info: inputs, outputs, ops", info)

    def info_passes():
        rc, out, err = c.sh("info", small, "--passes")
        expect(rc == 0, "exit %d: %s" % (rc, err.strip()))
        expect(re.search(r"pass|fold|fuse", out, re.I), "info --passes names no pass")
    c.test("info --passes", info_passes)

    def run_random(batch):
        def t():
            d = c.path("run_random_%d" % batch)
            os.makedirs(d)
            rc, out, err = c.sh("run", small, "--batch", batch, "--output-dir", d)
            expect(rc == 0, "exit %d: %s" % (rc, err.strip()))
            y = np.load(os.path.join(d, "output.npy"))
            expect(y.shape == (batch, 2) and y.dtype == np.float32, "output.npy is %s %s" % (y.dtype, y.shape))
            expect(np.all(np.isfinite(y)), "output has NaN/Inf")
            clean(out + err, "run output")
        return t
    c.test("run: random input, batch 1 -> output.npy", run_random(1))
    c.test("run: random input, batch 3 -> output.npy", run_random(3))

    def run_input(spec, d):
        def t():
            os.makedirs(c.path(d))
            rc, out, err = c.sh("run", small, "--input", spec, "--output-dir", c.path(d))
            expect(rc == 0, "exit %d: %s" % (rc, err.strip()))
            y = np.load(c.path(d, "output.npy"))
            expect(y.shape == (1, 2), "shape %s" % (y.shape,))
            if ort:
                ref = ort_run(small, {"input": x1})[0]
                err_n = float(np.max(np.abs(y - ref)) / max(np.max(np.abs(ref)), 1e-30))
                expect(err_n <= 1e-4, "differs from onnxruntime: normalized error %.3g" % err_n)
        return t
    c.test("run --input NAME=x.npy matches ORT", run_input("input=" + c.path("x1.npy"), "in_named"))
    c.test("run --input x.npy (single input)", run_input(c.path("x1.npy"), "in_plain"))
    c.test("run --input NAME=x.pb (TensorProto)", run_input("input=" + c.path("x1.pb"), "in_pb"))

    def sanitized():
        d = c.path("sanitized")
        os.makedirs(d)
        rc, out, err = c.sh("run", thr, "--output-dir", d)
        expect(rc == 0, "exit %d: %s" % (rc, err.strip()))
        files = sorted(os.listdir(d))
        expect(files == ["logits_out_0.npy"], "output 'logits/out:0' written as %s, want logits_out_0.npy" % files)
    c.test("run: output file name sanitized", sanitized)

    def deterministic():
        xb = RNG.standard_normal((4, 16, 32, 32)).astype(np.float32)
        np.save(c.path("xb.npy"), xb)
        outs = []
        for k in range(2):
            d = c.path("det%d" % k)
            os.makedirs(d)
            rc, out, err = c.sh("run", thr, "--input", "x=" + c.path("xb.npy"), "--threads", 2, "--output-dir", d)
            expect(rc == 0, "exit %d: %s" % (rc, err.strip()))
            with open(os.path.join(d, "logits_out_0.npy"), "rb") as f:
                outs.append(f.read())
        expect(outs[0] == outs[1], "two runs with --threads 2 gave different bytes")
    c.test("run: same input and threads -> identical bytes", deterministic)

    def bench():
        j = c.path("bench.json")
        rc, out, err = c.sh("bench", small, "--batch", "1,2", "--warmup", 1, "--iters", 5, "--json", j, "--quiet")
        expect(rc == 0, "exit %d: %s" % (rc, err.strip()))
        clean(out + err, "bench --quiet output")
        with open(j) as f:
            data = json.load(f)
        expect(isinstance(data, list) and len(data) == 2, "JSON is not a list of 2 objects: %r" % (data,))
        expect([d.get("batch") for d in data] == [1, 2], "batches %r" % [d.get("batch") for d in data])
        for d in data:
            missing = BENCH_KEYS - set(d)
            expect(not missing, "missing keys %s" % sorted(missing))
            for k in BENCH_KEYS - {"batch"}:
                expect(isinstance(d[k], (int, float)) and d[k] >= 0, "%s = %r" % (k, d[k]))
            expect(d["latency_ms_p50"] > 0 and d["throughput_per_s"] > 0, "zero latency or throughput")
            expect(d["latency_ms_p50"] <= d["latency_ms_p90"] <= d["latency_ms_p99"], "percentiles not ordered")
            expect(d["peak_memory_bytes"] > 0, "peak_memory_bytes is 0")
    c.test("bench --json: keys and values", bench)

    def bench_duration():
        rc, out, err = c.sh("bench", small, "--batch", "1", "--duration", "0.5", "--threads", 1)
        expect(rc == 0, "exit %d: %s" % (rc, err.strip()))
        expect(out.strip() != "", "bench printed no table")
    c.test("bench --duration prints a table", bench_duration)

    def doctor():
        rc, out, err = c.sh("doctor")
        expect(rc == 0, "exit %d: %s" % (rc, err.strip()))
        expect(re.search(r"onednn|dnnl", out, re.I), "doctor does not mention oneDNN")
        expect(re.search(r"cores?|threads?", out, re.I), "doctor does not mention cores")
        expect(re.search(r"avx|sse|neon|isa", out, re.I), "doctor does not mention the ISA")
        expect(re.search(r"gpu", out, re.I), "doctor does not say anything about a GPU")
    c.test("doctor: oneDNN, cores, ISA, GPU line", doctor)

    def check_ok():
        base = c.path("checkdir")
        t = os.path.join(base, "test_small")
        os.makedirs(os.path.join(t, "test_data_set_0"))
        save(small_model(), os.path.join(t, "model.onnx"))
        ref = ort_run(os.path.join(t, "model.onnx"), {"input": x1})[0] if ort else None
        expect(ref is not None, "onnxruntime missing")
        with open(os.path.join(t, "test_data_set_0", "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x1, "input").SerializeToString())
        with open(os.path.join(t, "test_data_set_0", "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(ref, "output").SerializeToString())
        t2 = os.path.join(base, "test_skipped")
        os.makedirs(t2)
        os.symlink(os.path.join(t, "model.onnx"), os.path.join(t2, "model.onnx"))
        os.symlink(os.path.join(t, "test_data_set_0"), os.path.join(t2, "test_data_set_0"))
        rc, out, err = c.sh("check", t)
        expect(rc == 0, "single test dir: exit %d: %s" % (rc, (out + err).strip()[-300:]))
        expect(out.strip().splitlines()[-1].startswith("1 passed, 0 failed"), "last line %r" % out.strip()[-80:])
        skips = c.path("skips.txt")
        with open(skips, "w") as f:
            f.write("# header\n\ntest_skipped  # demo reason\n")
        rc, out, err = c.sh("check", base, "--skip-file", skips, "--rtol", "1e-3", "--atol", "1e-5")
        expect(rc == 0, "folder of tests: exit %d: %s" % (rc, (out + err).strip()[-300:]))
        last = out.strip().splitlines()[-1]
        expect(last == "1 passed, 0 failed, 1 skipped", "last line %r, want '1 passed, 0 failed, 1 skipped'" % last)
    c.test("check: pass, folder of tests, --skip-file", check_ok)

    tmp.cleanup()
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
