#!/usr/bin/env python3
"""Compare infera with ONNX Runtime on the exported torchvision models, several shapes in ONE session.

Run with the PATH python3 (PyPI onnxruntime + numpy), after tests/models/export_models.py:
    python3 tests/models/compare_models.py --models-dir models --manifest MANIFEST
        [--driver build/session_driver] [--models resnet50,googlenet] [--batches 1,3,2]

For each model, one session_driver process loads the model into one infera Session and runs, in
order, batch 1, batch 3 and batch 2 (one seeded standard-normal input each; the model's batch dim is
symbolic), then batch 1's input again. ONNX Runtime (CPUExecutionProvider, ORT_ENABLE_ALL) computes
the references. So one loaded session must serve several shapes one after the other (a plan per
shape, the arena reused), as an application does.

Per model and batch, per output:
  - the shape must match exactly;
  - non-finite values must match: NaN or Inf where ORT is finite (or the reverse) fails, NaN where
    ORT has NaN matches;
  - normalized error max|infera - ort| / max|ort| (finite ORT values) <= --rtol (1e-3): independent
    of the output's scale (logits of random-weight models range ~1..100), and no blow-up near zero;
  - top-1 (argmax over the last axis of a [N, classes] output) must agree for every sample.
The repeated batch-1 run must give bit-identical outputs to the first (same session, cached plan).
Every file tested must be listed in --manifest (written by export_models.py in this run) with its
sha256: a stale or unverified export is a failure, never tested (--unverified skips this check for
manual runs). The comparison itself is self-tested first (a NaN output must fail).

Prints one line per model and batch with the measured error, a line per model with its largest
error, and last `N passed, M failed`; exit 1 if any failed.
"""
import argparse
import hashlib
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
                  "squeezenet1_1", "shufflenet_v2_x1_0", "googlenet", "regnet_y_400mf", "convnext_tiny",
                  "regnet_x_800mf", "wide_resnet50_2", "mnasnet1_0", "vgg16", "lraspp_mobilenet_v3_large",
                  "deeplabv3_resnet50"]
# The families added for issue 13 run batch 1 only (and its repeat) unless --batches is given: they
# cover ops and shapes, and the multi-shape session path is covered by the first ten; CI has 2 cores
# and VGG-16 / DeepLabV3 / Wide ResNet take seconds per batch there.
BATCH1_ONLY = {"regnet_x_800mf", "wide_resnet50_2", "mnasnet1_0", "vgg16", "lraspp_mobilenet_v3_large",
               "deeplabv3_resnet50"}
DEFAULT_BATCHES = "1,3,2"


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)  # as session_driver names its output files


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


def compare_output(y, r, rtol):
    """Compares infera's y with the reference r. Returns (ok, error, message)."""
    if y.shape != r.shape:
        return False, float("inf"), "shape %s, expected %s" % (y.shape, r.shape)
    a, b = y.astype(np.float64), r.astype(np.float64)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    inf_a, inf_b = np.isinf(a), np.isinf(b)
    bad = (nan_a != nan_b) | (inf_a != inf_b) | (inf_a & inf_b & (a != b))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        return False, float("inf"), "%d non-finite values differ (first at flat index %d: %r, expected %r)" % (
            int(bad.sum()), i, a.flat[i], b.flat[i])
    fin = np.isfinite(b)
    max_abs = float(np.max(np.abs(a[fin] - b[fin]))) if fin.any() else 0.0
    scale = float(np.max(np.abs(b[fin]))) if fin.any() else 0.0
    err = max_abs / scale if scale > 0 else max_abs
    msg = "max_abs=%.3g norm_err=%.3g" % (max_abs, err)
    if not err <= rtol:
        return False, err, msg + " > %g" % rtol
    if y.ndim == 2 and y.shape[1] > 1:
        top_a, top_b = np.argmax(a, axis=1), np.argmax(b, axis=1)
        agree = int(np.sum(top_a == top_b))
        top2 = np.sort(b, axis=1)[:, -2:]
        msg += " top1 %d/%d (ORT margin >= %.3g)" % (agree, y.shape[0], float(np.min(top2[:, 1] - top2[:, 0])))
        if agree != y.shape[0]:
            i = int(np.flatnonzero(top_a != top_b)[0])
            srt = np.sort(b[i])
            return False, err, msg + " (sample %d: class %d, ORT %d; ORT margin top1-top2 %.3g)" % (
                i, top_a[i], top_b[i], srt[-1] - srt[-2])
    return True, err, msg


def self_test():
    """The comparison must fail on what it exists to catch; returns the failures (empty = ok)."""
    ref = np.array([[1.0, 3.0, 2.0], [0.5, -1.0, 4.0]], np.float32)
    nan, inf = np.float32("nan"), np.float32("inf")
    cases = [
        ("identical", ref.copy(), ref, True),
        ("small error", ref + 1e-5, ref, True),
        ("one NaN", np.where(ref == 3.0, nan, ref), ref, False),
        ("all NaN", np.full_like(ref, nan), ref, False),
        ("Inf where finite", np.where(ref == 2.0, inf, ref), ref, False),
        ("finite where NaN", ref, np.where(ref == 2.0, nan, ref), False),
        ("NaN where NaN", np.where(ref == 2.0, nan, ref), np.where(ref == 2.0, nan, ref), True),
        ("-Inf where Inf", np.where(ref == 2.0, -inf, ref), np.where(ref == 2.0, inf, ref), False),
        ("large error", ref * 1.1, ref, False),
        ("wrong shape", ref[:1], ref, False),
        ("top-1 differs", np.array([[1.0, 2.999, 3.0], [0.5, -1.0, 4.0]], np.float32),
         np.array([[1.0, 3.0, 2.999], [0.5, -1.0, 4.0]], np.float32), False),
    ]
    wrong = []
    for what, y, r, want in cases:
        ok = compare_output(y, r, 1e-3)[0]
        if ok != want:
            wrong.append("%s: %s, expected %s" % (what, "pass" if ok else "fail", "pass" if want else "fail"))
    return wrong, len(cases)


def read_manifest(path):
    """{name: (sha256, path)} from export_models.py --manifest; None when missing."""
    if not path or not os.path.isfile(path):
        return None
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 4:
                out[parts[0]] = (parts[2], parts[3])
    return out


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def compare_model(args, name, path, sess, batches, work):
    """Runs every batch through one session_driver; returns [(label, ok, message, error)]."""
    inputs = sess.get_inputs()
    runs, refs = [], []
    for b in batches + [batches[0]]:  # the last run repeats the first input
        spec, feeds = [], {}
        for k, inp in enumerate(inputs):
            if inp.type != "tensor(float)":
                raise ValueError("input %s has type %s; this test feeds float only" % (inp.name, inp.type))
            x = np.random.default_rng(args.seed * 1000 + b * 10 + k).standard_normal(
                concrete_shape(inp.shape, b), dtype=np.float32)
            p = os.path.join(work, "b%d_in%d.npy" % (b, k))
            np.save(p, x)
            feeds[inp.name] = x
            spec.append("%s=%s" % (inp.name, p))
        runs.append(",".join(spec))
        if len(refs) < len(batches):
            refs.append(sess.run(None, feeds))
    out_dir = os.path.join(work, "out_" + name)
    # Batch 1 on the loading thread, the other shapes on a 1 MiB-stack thread and a default
    # std::thread, the repeat of batch 1 on a 1 MiB stack again: the repeat must match bit for bit.
    where = ["main"] + ["1048576" if k % 2 == 0 else "thread" for k in range(len(batches) - 1)] + ["1048576"]
    cmd = [args.driver, path, out_dir] + runs + ["--run-on", ",".join(where)] + \
        (["--threads", str(args.threads)] if args.threads else [])
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return [("all", False, "session_driver timed out after %d s" % args.timeout, None)]
    secs = time.time() - t0
    if p.returncode != 0:
        return [("all", False, "session_driver exit %d: %s" % (p.returncode, first_line(p.stderr)), None)]
    run_ms = re.findall(r"^run \d+:.* on \S+ ([0-9.]+) ms$", p.stdout, re.M)
    results = []
    outputs = sess.get_outputs()
    got_runs = []
    for k, b in enumerate(batches):
        ok_all, msgs, worst, got = True, [], 0.0, []
        for o, r in zip(outputs, refs[k]):
            f = os.path.join(out_dir, "run%d" % k, sanitize(o.name) + ".npy")
            try:
                y = np.load(f, allow_pickle=False)
            except Exception as e:
                ok_all, worst = False, float("inf")
                msgs.append("%s: cannot read %s: %s" % (o.name, f, e))
                continue
            got.append(y)
            ok, err, msg = compare_output(y, r, args.rtol)
            ok_all &= ok
            worst = max(worst, err)
            msgs.append("%s %s" % (o.name, msg))
        got_runs.append(got)
        ms = " (first run of this shape %s ms)" % run_ms[k] if k < len(run_ms) else ""
        results.append(("batch=%d" % b, ok_all, "; ".join(msgs) + ms, worst))
    # The repeat of the first input, after the other shapes: the same bits as the first run.
    k = len(batches)
    same = True
    for j, o in enumerate(outputs):
        f = os.path.join(out_dir, "run%d" % k, sanitize(o.name) + ".npy")
        try:
            y = np.load(f, allow_pickle=False)
        except Exception:
            same = False
            continue
        same &= j < len(got_runs[0]) and y.shape == got_runs[0][j].shape and \
            y.tobytes() == got_runs[0][j].tobytes()
    results.append(("repeat batch=%d" % batches[0], same,
                    "after batches %s in the same session: %s (%s; session_driver %.1f s)"
                    % (",".join(map(str, batches[1:])), "bit-identical to the first run" if same else "DIFFERS",
                       first_line(p.stdout), secs), None))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models-dir", default="models")
    ap.add_argument("--driver", default="build/session_driver", help="tests/models/session_driver.cpp, built")
    ap.add_argument("--manifest", help="export_models.py --manifest output of this run")
    ap.add_argument("--unverified", action="store_true", help="test model files without a manifest (manual runs)")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated names")
    ap.add_argument("--batches", help="batch sizes run in this order in one session (default %s; 1 for %s)"
                    % (DEFAULT_BATCHES, ", ".join(sorted(BATCH1_ONLY))))
    ap.add_argument("--rtol", type=float, default=1e-3, help="bound on max|a-b|/max|ref| (1e-3)")
    ap.add_argument("--threads", type=int, default=0, help="session_driver --threads if > 0")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per model (session_driver)")
    args = ap.parse_args()

    passed = failed = 0
    wrong, n_cases = self_test()
    if wrong:
        print("FAIL compare self-test: %s" % "; ".join(wrong))
        failed += 1
    else:
        print("PASS compare self-test (%d cases: NaN, Inf, shape, error, top-1 must fail)" % n_cases)
        passed += 1
    if not (os.path.isfile(args.driver) and os.access(args.driver, os.X_OK)):
        print("compare_models.py: %s is not an executable; build infera first" % args.driver)
        print("%d passed, %d failed" % (passed, failed + 1))
        return 1
    manifest = read_manifest(args.manifest)
    if manifest is None and not args.unverified:
        print("compare_models.py: no export manifest (%s): pass --manifest from export_models.py, "
              "or --unverified for a manual run" % args.manifest)
        print("%d passed, %d failed" % (passed, failed + 1))
        return 1
    batches_arg = args.batches or DEFAULT_BATCHES
    batches_all = [int(b) for b in batches_arg.split(",") if b.strip()]
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    summary = []
    with tempfile.TemporaryDirectory(prefix="infera-models-") as work:
        for name in names:
            path = os.path.join(args.models_dir, name + ".onnx")
            why = None
            if not os.path.isfile(path):
                why = "missing %s (run tests/models/export_models.py)" % path
            elif manifest is not None:
                if name not in manifest:
                    why = "not in the export manifest: its export failed or did not run; %s is not tested" % path
                elif file_sha256(path) != manifest[name][0]:
                    why = "%s is not the file exported in this run (sha256 differs from the manifest)" % path
            if why:
                print("FAIL %-20s %s" % (name, why), flush=True)
                failed += 1
                continue
            batches = [1] if args.batches is None and name in BATCH1_ONLY else batches_all
            try:
                sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
                results = compare_model(args, name, path, sess, batches, work)
            except Exception as e:
                results = [("all", False, "%s: %s" % (type(e).__name__, e), None)]
            for label, ok, msg, _ in results:
                print("%s %-20s %-15s %s" % ("PASS" if ok else "FAIL", name, label, msg), flush=True)
                passed += ok
                failed += not ok
            errs = [e for _, _, _, e in results if e is not None]
            if errs:
                summary.append("%-20s max norm_err %.3g over batches %s" % (name, max(errs), ",".join(map(str, batches))))
    print("measured (normalized error vs ONNX Runtime %s, bound %g):" % (ort.__version__, args.rtol))
    for line in summary:
        print("  " + line)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
