#!/usr/bin/env python3
"""Compare `infera run` with ONNX Runtime on the exported torchvision models, at batch 1 and 3.

Run with the PATH python3 (PyPI onnxruntime + numpy), after tests/models/export_models.py:
    python3 tests/models/compare_models.py --models-dir models [--infera build/infera]
                                           [--models resnet50,googlenet] [--batches 1,3]

For each model and batch size: one seeded standard-normal input (N, C, H, W) is written to an .npy,
ONNX Runtime (CPUExecutionProvider, ORT_ENABLE_ALL) computes the reference, and
`infera run MODEL --input input=x.npy --output-dir D` writes D/<output>.npy. Both batch sizes use the
same model file (symbolic batch dim): infera must not need a re-export per batch.

Criterion (per output): normalized max error  max|infera - ort| / max|ort|  <=  --rtol (1e-3).
Normalizing by the largest reference magnitude makes the test independent of the output's scale
(logits of random-weight models range from ~1 to ~100) and does not blow up on elements near zero,
as an elementwise relative error would. Shapes must match exactly and infera's output must be finite.

Prints one line per model/batch and last `N passed, M failed`; exit 1 if any failed.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import onnxruntime as ort
except ImportError as e:
    sys.stderr.write("compare_models.py: needs PyPI onnxruntime (run with the PATH python3): %s\n" % e)
    sys.exit(1)

DEFAULT_MODELS = ["resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "densenet121",
                  "squeezenet1_1", "shufflenet_v2_x1_0", "googlenet", "regnet_y_400mf", "convnext_tiny"]


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def concrete_shape(shape, batch):
    """ORT reports symbolic dims as strings or None: dim 0 must be one (the batch), the rest static."""
    if isinstance(shape[0], int) and shape[0] > 0:
        raise ValueError("batch dim is static (%d): export with dynamic_axes" % shape[0])
    dims = [batch]
    for i, d in enumerate(shape[1:], 1):
        if not (isinstance(d, int) and d > 0):
            raise ValueError("input dim %d is symbolic (%r); only the batch dim may be" % (i, d))
        dims.append(d)
    return dims


def first_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:200] if lines else "(no message)"


def compare_one(infera, model_path, sess, batch, seed, rtol, threads, timeout, work):
    inputs = sess.get_inputs()
    feeds, args = {}, []
    for k, inp in enumerate(inputs):
        if inp.type != "tensor(float)":
            return False, "input %s has type %s; this test feeds float only" % (inp.name, inp.type)
        shape = concrete_shape(inp.shape, batch)
        rng = np.random.default_rng(seed * 1000 + batch * 10 + k)
        x = rng.standard_normal(shape, dtype=np.float32)
        path = os.path.join(work, "in_%s.npy" % sanitize(inp.name))
        np.save(path, x)
        feeds[inp.name] = x
        args += ["--input", "%s=%s" % (inp.name, path)]
    ref = sess.run(None, feeds)

    out_dir = os.path.join(work, "out")
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        os.unlink(os.path.join(out_dir, f))
    cmd = [infera, "run", model_path] + args + ["--output-dir", out_dir]
    if threads:
        cmd += ["--threads", str(threads)]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "infera run timed out after %d s" % timeout
    ms = (time.time() - t0) * 1e3
    if p.returncode != 0:
        return False, "infera run exit %d: %s" % (p.returncode, first_line(p.stderr))

    worst = 0.0
    details = []
    for o, r in zip(sess.get_outputs(), ref):
        path = os.path.join(out_dir, sanitize(o.name) + ".npy")
        if not os.path.exists(path):
            return False, "no output file %s" % path
        try:
            y = np.load(path, allow_pickle=False)
        except Exception as e:
            return False, "cannot read %s: %s" % (path, e)
        if y.shape != r.shape:
            return False, "output %s shape %s, expected %s" % (o.name, y.shape, r.shape)
        if not np.all(np.isfinite(y)) and np.all(np.isfinite(r)):
            return False, "output %s has NaN/Inf" % o.name
        a, b = y.astype(np.float64), r.astype(np.float64)
        max_abs = float(np.max(np.abs(a - b))) if a.size else 0.0
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        err = max_abs / scale if scale > 0 else max_abs
        worst = max(worst, err)
        details.append("%s max_abs=%.3g norm_err=%.3g" % (o.name, max_abs, err))
    msg = "%s (infera run %.0f ms)" % ("; ".join(details), ms)
    return worst <= rtol, msg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models-dir", default="models")
    ap.add_argument("--infera", default="build/infera")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated names")
    ap.add_argument("--batches", default="1,3")
    ap.add_argument("--rtol", type=float, default=1e-3, help="bound on max|a-b|/max|ref| (1e-3)")
    ap.add_argument("--threads", type=int, default=0, help="passed to infera run --threads if > 0")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per infera run call")
    args = ap.parse_args()

    if not (os.path.isfile(args.infera) and os.access(args.infera, os.X_OK)):
        sys.stderr.write("compare_models.py: %s is not an executable; build infera first\n" % args.infera)
        return 1
    batches = [int(b) for b in args.batches.split(",") if b.strip()]
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="infera-models-") as work:
        for name in names:
            path = os.path.join(args.models_dir, name + ".onnx")
            if not os.path.isfile(path):
                for b in batches:
                    print("FAIL %-20s batch=%d  missing %s (run tests/models/export_models.py)"
                          % (name, b, path), flush=True)
                    failed += 1
                continue
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            for b in batches:
                try:
                    ok, msg = compare_one(args.infera, path, sess, b, args.seed, args.rtol,
                                          args.threads, args.timeout, work)
                except Exception as e:
                    ok, msg = False, "%s: %s" % (type(e).__name__, e)
                print("%s %-20s batch=%d  %s" % ("PASS" if ok else "FAIL", name, b, msg), flush=True)
                passed += ok
                failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
