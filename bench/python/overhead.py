#!/usr/bin/env python3
"""Per-call overhead of infera's Python `InferenceSession.run` against ONNX Runtime's, same run.

    python3 bench/python/overhead.py [--models-dir models] [--rounds 5] [--calls 2000] [--threads 1]
        [--out bench/results/DATE-python-overhead-cpu.md]

Three models at batch 1 on the CPU, the engines alternating round by round (each round: --calls
timed calls of one engine, then of the other, after warm-up):
  - identity  : Identity on a 1x3x32x32 float tensor: the run is nothing, the latency is the
                per-call overhead (feeds in, dispatch, outputs out)
  - tiny conv : the 1x3x32x32 conv net of tests/python/tiny_models.py (two convs, pool, Gemm)
  - resnet50  : MODELS_DIR/resnet50.onnx (fewer calls: --calls / 250, at least 20)
Reported per model: p50 and mean per call (perf_counter_ns around sess.run, NumPy in and out), and
ORT/infera (above 1.00x: infera's call is cheaper). For infera, the C++ Session::run alone is
timed by `infera bench` (the bundled CLI) in the same run, so the Python layer's own cost is the
difference of the p50s. Both engines use --threads intra-op threads.
"""
import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import tiny_models  # noqa: E402
import infera  # noqa: E402
from onnx import TensorProto  # noqa: E402


def time_calls(run, n):
    t = np.empty(n)
    for i in range(n):
        t0 = time.perf_counter_ns()
        run()
        t[i] = time.perf_counter_ns() - t0
    return t / 1e3  # us


def cli_p50_us(path, threads, iterations):
    """infera bench's p50 of Session::run alone (C++, host inputs), in microseconds."""
    p = subprocess.run([sys.executable, "-m", "infera", "bench", path, "--batch", "1", "--iterations",
                        str(iterations), "--warmup", "50", "--threads", str(threads), "--json", "-", "--quiet"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None
    m = re.search(r'"latency_ms_p50": *([0-9.eE+-]+)', p.stdout)
    return float(m.group(1)) * 1e3 if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models-dir", default=os.environ.get("MODELS_DIR", os.path.join(ROOT, "models")))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", help="write the markdown result here")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="infera-overhead-")
    models = [("identity", tiny_models.save(tiny_models.typed_identity(TensorProto.FLOAT, (1, 3, 32, 32)),
                                            os.path.join(work, "identity.onnx")), "x", args.calls),
              ("tiny conv", tiny_models.save(tiny_models.tiny_convnet(), os.path.join(work, "tiny.onnx")), "input",
               args.calls)]
    r50 = os.path.join(args.models_dir, "resnet50.onnx")
    if not os.path.isfile(r50):
        sys.exit("overhead.py: missing %s (MODELS_DIR)" % r50)
    models.append(("resnet50", r50, "input", max(20, args.calls // 250)))

    rows = []
    for label, path, name, calls in models:
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        o = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        iso = infera.SessionOptions()
        iso.intra_op_num_threads = args.threads
        s = infera.InferenceSession(path, iso, providers=["CPUExecutionProvider"])
        x = np.random.default_rng(0).standard_normal((1, 3, 224, 224) if label == "resnet50" else (1, 3, 32, 32),
                                                     dtype=np.float32)
        feeds = {name: x}
        a, b = s.run(None, feeds)[0], o.run(None, feeds)[0]
        err = float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b))))
        assert err <= 1e-3, (label, err)
        runs = {"infera": lambda: s.run(None, feeds), "ort": lambda: o.run(None, feeds)}
        for r in runs.values():
            time_calls(r, max(10, calls // 10))  # warm-up
        got = {"infera": [], "ort": []}
        for rnd in range(args.rounds):
            order = ["infera", "ort"] if rnd % 2 == 0 else ["ort", "infera"]
            for k in order:
                got[k].append(time_calls(runs[k], calls))
        st = {k: np.concatenate(v) for k, v in got.items()}
        cpp = cli_p50_us(path, args.threads, max(200, calls)) if label != "resnet50" else None
        rows.append((label, calls, np.median(st["infera"]), st["infera"].mean(), np.median(st["ort"]),
                     st["ort"].mean(), cpp, err))
        print("%-10s infera p50 %8.1f us  ORT p50 %8.1f us  ORT/infera %.2fx%s" % (
            label, rows[-1][2], rows[-1][4], rows[-1][4] / rows[-1][2],
            "" if cpp is None else "  (infera C++ run alone p50 %.1f us)" % cpp), flush=True)

    cpu = "?"
    try:
        cpu = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read()).group(1)
    except Exception:
        pass
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    env = " ".join("%s=%s" % (k, v) for k, v in sorted(os.environ.items())
                   if k.startswith(("OMP_", "GOMP_", "INFERA_", "ONEDNN_", "DNNL_")))
    cmd = (env + " " if env else "") + "python3 bench/python/overhead.py " + " ".join(sys.argv[1:])
    md = ["<!-- Generated by bench/python/overhead.py; do not edit by hand. -->",
          "# Python per-call overhead: infera's InferenceSession.run vs ONNX Runtime's, CPU",
          "",
          "- date: %s" % datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
          "- machine: %s, %d cores (%s); load average at the end %s (a shared machine)" % (
              cpu, os.cpu_count(), platform.platform(), ", ".join("%.1f" % v for v in os.getloadavg())),
          "- command: `%s`" % cmd.strip(),
          "- versions: infera %s (git %s), onnxruntime %s, numpy %s, Python %s" % (
              infera.__version__, git.stdout.strip() or "?", ort.__version__, np.__version__,
              platform.python_version()),
          "- settings: batch 1, %d intra-op thread(s) for both, %d rounds alternating engines, NumPy inputs and "
          "outputs, time per `sess.run` call (perf_counter_ns)" % (args.threads, args.rounds),
          "",
          "| model | calls/round | infera p50 us | infera mean us | ORT p50 us | ORT mean us | ORT/infera (p50) | "
          "ORT/infera (mean) | infera C++ run p50 us | Python layer us |",
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for label, calls, ip, im, op, om, cpp, err in rows:
        md.append("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.2fx | %.2fx | %s | %s |" % (
            label, calls, ip, im, op, om, op / ip, om / im, "-" if cpp is None else "%.1f" % cpp,
            "-" if cpp is None else "%.1f" % (ip - cpp)))
    md += ["",
           "A ratio above 1.00x means infera's call takes less time than ONNX Runtime's. `identity` measures the "
           "per-call overhead alone (the model does nothing). `Python layer` = infera's Python p50 minus the C++ "
           "`Session::run` p50 that `infera bench` measured in the same run (feeds to tensors, GIL release, "
           "outputs to NumPy)."]
    text = "\n".join(md) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
