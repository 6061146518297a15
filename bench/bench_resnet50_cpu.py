#!/usr/bin/env python3
"""ResNet-50 FP32 on the CPU: `infera bench` against ONNX Runtime, alternately, on this machine.

Run with the PATH python3 (PyPI onnxruntime + numpy), after building infera and exporting the model:
    /usr/bin/python3 tests/models/export_models.py --models resnet50 --out models
    python3 bench/bench_resnet50_cpu.py [--model models/resnet50.onnx] [--batches 1,16] [--threads N]
                                        [--rounds 3] [--duration 10] [--warmup 3] [--out bench/results]

For each round and batch size, both engines run for --duration seconds after --warmup iterations, in
alternating order (infera first in even rounds, ORT first in odd ones) so that drift in clock speed or
machine load hits both. infera runs as `infera bench MODEL --batch B --warmup W --duration S --threads T
--json F --quiet`; ORT as an InferenceSession (CPUExecutionProvider, intra_op_num_threads=T,
inter_op_num_threads=1, ORT_SEQUENTIAL, ORT_ENABLE_ALL) on the same seeded random input. Per engine
and batch: p50 = median of the rounds' p50s, mean = mean of the rounds' means, throughput = batch /
mean. ratio = ORT time / infera time (> 1: infera is faster).

Writes bench/results/<date>-resnet50-cpu.json, .md and .png (chart by bench/plot_bench.py, which needs
matplotlib: Debian's python3-matplotlib for /usr/bin/python3, installed by scripts/setup_debian.sh).
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return [x for x in ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile") if x in flags]
    except OSError:
        pass
    return []


def mem_total_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    return round(int(line.split()[1]) / 2 ** 20, 1)
    except OSError:
        pass
    return None


def git_rev():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip() or "no commit"
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except OSError:
        return "unknown"


def infera_version(infera):
    for flag in ("--version", "version"):
        try:
            p = subprocess.run([infera, flag], capture_output=True, text=True, timeout=30)
            if p.returncode == 0 and p.stdout.strip():
                v = p.stdout.strip().splitlines()[0]
                return v[len("infera "):] if v.startswith("infera ") else v
        except (OSError, subprocess.TimeoutExpired):
            pass
    return "unknown"


def run_infera(infera, model, batch, threads, warmup, duration, work):
    j = os.path.join(work, "infera-%d.json" % batch)
    if os.path.exists(j):
        os.unlink(j)
    cmd = [infera, "bench", model, "--batch", str(batch), "--warmup", str(warmup), "--duration", str(duration),
           "--threads", str(threads), "--json", j, "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600 + 20 * duration)
    if p.returncode != 0:
        raise RuntimeError("infera bench exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
    with open(j) as f:
        data = json.load(f)
    if isinstance(data, dict):  # infera >= 0.2 writes {metadata..., "results": [...]}
        data = data["results"]
    row = [d for d in data if d.get("batch") == batch]
    if not row:
        raise RuntimeError("infera bench JSON has no batch %d: %s" % (batch, data))
    r = row[0]
    return {"p50_ms": r["latency_ms_p50"], "mean_ms": r["latency_ms_mean"], "p90_ms": r["latency_ms_p90"],
            "p99_ms": r["latency_ms_p99"], "throughput_per_s": r["throughput_per_s"],
            "peak_memory_bytes": r.get("peak_memory_bytes"), "build_ms": r.get("build_ms")}


class OrtRunner:
    def __init__(self, model, threads):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        t0 = time.perf_counter()
        self.sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        self.build_ms = (time.perf_counter() - t0) * 1e3
        self.inp = self.sess.get_inputs()[0]

    def run(self, batch, warmup, duration):
        shape = [batch] + [d for d in self.inp.shape[1:]]
        x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
        feeds = {self.inp.name: x}
        for _ in range(warmup):
            self.sess.run(None, feeds)
        lat = []
        end = time.perf_counter() + duration
        while True:
            t0 = time.perf_counter()
            self.sess.run(None, feeds)
            t1 = time.perf_counter()
            lat.append((t1 - t0) * 1e3)
            if t1 >= end and len(lat) >= 3:
                break
        a = np.array(lat)
        return {"p50_ms": float(np.percentile(a, 50)), "mean_ms": float(a.mean()),
                "p90_ms": float(np.percentile(a, 90)), "p99_ms": float(np.percentile(a, 99)),
                "throughput_per_s": batch * 1e3 / float(a.mean()), "iterations": len(lat)}


def summarize(rounds, batch):
    p50 = statistics.median(r["p50_ms"] for r in rounds)
    mean = statistics.mean(r["mean_ms"] for r in rounds)
    return {"p50_ms": round(p50, 3), "mean_ms": round(mean, 3), "throughput_per_s": round(batch * 1e3 / mean, 2),
            "rounds": rounds}


def write_markdown(path, res, png_name):
    m = res["machine"]
    lines = [
        "<!-- Generated by bench/bench_resnet50_cpu.py; do not edit by hand. -->",
        "# ResNet-50 FP32, CPU: infera vs ONNX Runtime",
        "",
        "- date: %s" % res["date"],
        "- CPU: %s, %d cores (%s), %s GiB memory, ISA flags: %s" % (
            m["cpu"], m["cores"], m["os"], m["mem_gib"], ", ".join(m["isa"]) or "-"),
        "- command: `%s`" % res["command"],
        "- versions: infera %s (git %s), onnxruntime %s, numpy %s, Python %s" % (
            res["versions"]["infera"], res["versions"]["git"], res["versions"]["onnxruntime"],
            res["versions"]["numpy"], res["versions"]["python"]),
        "- settings: %d threads for both, %d rounds, %g s per engine per round after %d warm-up iterations, "
        "engines alternating; model %s" % (res["settings"]["threads"], res["settings"]["rounds"],
                                           res["settings"]["duration_s"], res["settings"]["warmup"],
                                           res["settings"]["model"]),
        "",
        "| batch | infera p50 ms | infera mean ms | ORT p50 ms | ORT mean ms | infera img/s | ORT img/s "
        "| ORT/infera (p50) | ORT/infera (mean) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in res["results"]:
        i, o = r["infera"], r["onnxruntime"]
        lines.append("| %d | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %.2f× | %.2f× |" % (
            r["batch"], i["p50_ms"], i["mean_ms"], o["p50_ms"], o["mean_ms"], i["throughput_per_s"],
            o["throughput_per_s"], r["ratio_p50"], r["ratio_mean"]))
    lines += ["", "A ratio above 1.00× means infera takes less time than ONNX Runtime.", ""]
    if "baseline" in res["versions"]:
        bv = res["versions"]["baseline"]
        lines += ["Before and after, same rounds: infera %s (git %s) as 'before'." % (bv["infera"], bv["git"]), "",
                  "| batch | before p50 ms | after p50 ms | before/after (p50) |", "| ---: | ---: | ---: | ---: |"]
        for r in res["results"]:
            lines.append("| %d | %.2f | %.2f | %.2f× |" % (r["batch"], r["baseline"]["p50_ms"], r["infera"]["p50_ms"],
                                                        r["baseline_ratio_p50"]))
        lines += [""]
    extra = []
    for r in res["results"]:
        first = r["infera"]["rounds"][0]
        b, mem = first.get("build_ms"), first.get("peak_memory_bytes")
        extra.append("- infera at batch %d: build %s ms, peak memory %s MiB (first round)" % (
            r["batch"], "%.0f" % b if isinstance(b, (int, float)) else "?",
            "%.1f" % (mem / 2 ** 20) if isinstance(mem, (int, float)) else "?"))
    lines += extra + [""]
    if png_name:
        lines += ["![latency and throughput per batch size](%s)" % png_name, ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def plot(json_path, png_path):
    """bench/plot_bench.py under a Python that has matplotlib; returns True if the PNG was written."""
    script = os.path.join(HERE, "plot_bench.py")
    for py in (sys.executable, "/usr/bin/python3"):
        if not os.path.exists(py):
            continue
        if subprocess.run([py, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            p = subprocess.run([py, script, json_path, png_path], capture_output=True, text=True)
            if p.returncode == 0:
                return True
            sys.stderr.write("plot_bench.py failed: %s\n" % p.stderr.strip()[-300:])
            return False
    sys.stderr.write("no chart: matplotlib is in neither python (apt-get install python3-matplotlib)\n")
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="models/resnet50.onnx")
    ap.add_argument("--infera", default="build/infera")
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="both engines (default: all cores)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per engine, batch and round")
    ap.add_argument("--warmup", type=int, default=3, help="iterations before each timed run")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--name", default="resnet50-cpu", help="file name after the date")
    ap.add_argument("--baseline", default="", help="an infera binary of an earlier commit, timed in the same "
                    "rounds (alternating with the others) and reported as 'before'")
    ap.add_argument("--baseline-git", default="", help="the commit the --baseline binary was built from")
    args = ap.parse_args()

    for path, what in ((args.model, "model (tests/models/export_models.py --models resnet50)"),
                       (args.infera, "infera binary")):
        if not os.path.isfile(path):
            sys.stderr.write("bench_resnet50_cpu.py: no %s at %s\n" % (what, path))
            return 1
    import onnxruntime as ort
    batches = [int(b) for b in args.batches.split(",")]
    infera = os.path.abspath(args.infera)
    ortr = OrtRunner(args.model, args.threads)
    engines = ["infera", "onnxruntime"] + (["baseline"] if args.baseline else [])
    baseline = os.path.abspath(args.baseline) if args.baseline else ""
    runs = {b: {e: [] for e in engines} for b in batches}
    with tempfile.TemporaryDirectory(prefix="infera-bench-") as work:
        for r in range(args.rounds):
            for b in batches:
                order = engines[r % len(engines):] + engines[:r % len(engines)]  # rotate who goes first
                for eng in order:
                    if eng == "infera":
                        res = run_infera(infera, args.model, b, args.threads, args.warmup, args.duration, work)
                    elif eng == "baseline":
                        res = run_infera(baseline, args.model, b, args.threads, args.warmup, args.duration, work)
                    else:
                        res = ortr.run(b, args.warmup, args.duration)
                    runs[b][eng].append(res)
                    print("round %d batch %2d %-11s p50 %8.2f ms  mean %8.2f ms" % (
                        r + 1, b, eng, res["p50_ms"], res["mean_ms"]), flush=True)

    results = []
    for b in batches:
        i, o = summarize(runs[b]["infera"], b), summarize(runs[b]["onnxruntime"], b)
        row = {"batch": b, "infera": i, "onnxruntime": o, "ratio_p50": round(o["p50_ms"] / i["p50_ms"], 3),
               "ratio_mean": round(o["mean_ms"] / i["mean_ms"], 3)}
        if args.baseline:
            bl = summarize(runs[b]["baseline"], b)
            row["baseline"] = bl
            row["baseline_ratio_p50"] = round(bl["p50_ms"] / i["p50_ms"], 3)  # > 1: faster than before
        results.append(row)
    now = datetime.datetime.now().astimezone()
    res = {
        "generator": "bench/bench_resnet50_cpu.py",
        "date": now.isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "isa": cpu_flags(), "mem_gib": mem_total_gib(),
                    "os": platform.platform()},
        "command": " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], os.getcwd())] + sys.argv[1:]),
        "versions": {"infera": infera_version(infera), "git": git_rev(), "onnxruntime": ort.__version__,
                     "numpy": np.__version__, "python": platform.python_version()},
        "settings": {"threads": args.threads, "rounds": args.rounds, "duration_s": args.duration,
                     "warmup": args.warmup, "model": args.model, "ort_build_ms": round(ortr.build_ms, 1)},
        "results": results,
    }
    if args.baseline:
        res["versions"]["baseline"] = {"infera": infera_version(baseline), "git": args.baseline_git or "unknown"}
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, "%s-%s" % (now.strftime("%Y-%m-%d"), args.name))
    with open(stem + ".json", "w") as f:
        json.dump(res, f, indent=1)
    png = plot(stem + ".json", stem + ".png")
    write_markdown(stem + ".md", res, os.path.basename(stem + ".png") if png else None)
    print()
    for r in results:
        print("batch %2d: infera p50 %.2f ms, ORT p50 %.2f ms, ORT/infera %.2fx (mean %.2fx)%s" % (
            r["batch"], r["infera"]["p50_ms"], r["onnxruntime"]["p50_ms"], r["ratio_p50"], r["ratio_mean"],
            ", before %.2f ms (before/after %.2fx)" % (r["baseline"]["p50_ms"], r["baseline_ratio_p50"])
            if "baseline" in r else ""))
    print("wrote %s.json, .md%s" % (stem, ", .png" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
