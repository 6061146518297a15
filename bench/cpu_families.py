#!/usr/bin/env python3
"""CPU FP32 across CNN families: infera against ONNX Runtime and OpenVINO, alternately, in one run.

Run with the PATH python3 (PyPI onnxruntime, openvino, numpy: bench/cpu_setup_peers.sh installs
openvino the way scripts/setup_debian.sh installs the other PyPI packages), after building infera and
exporting the models (/usr/bin/python3 tests/models/export_models.py --out models):
    python3 bench/cpu_families.py [--models-dir models] [--models a,b] [--batch16 resnet50,...]
                                  [--threads N] [--rounds 3] [--duration 3] [--warmup 3]
                                  [--out bench/results] [--name cpu-families]

Configurations: every model of the set (tests/models/export_models.py) at batch 1, and ResNet-50,
MobileNetV2 and DenseNet-121 at batch 16. For each round and configuration the three engines run one
after the other, for --duration seconds each after --warmup iterations, the order rotated every round
(so drift in clock or load hits all three). Engines:
  - infera: `infera bench MODEL --batch B --warmup W --duration S --threads T --json F --quiet`
    (a fresh process per timing, the plan build not timed);
  - ONNX Runtime: InferenceSession, CPUExecutionProvider, intra_op_num_threads=T, inter_op=1,
    ORT_SEQUENTIAL, ORT_ENABLE_ALL;
  - OpenVINO: core.read_model(ONNX), reshaped to the static [B, ...] input, compiled for "CPU" with
    INFERENCE_NUM_THREADS=T, PERFORMANCE_HINT=LATENCY, INFERENCE_PRECISION_HINT=f32; one infer request.
All three get the same seeded input shape. Per engine and configuration: p50 = median of the rounds'
p50s. Ratios = peer p50 / infera p50 (> 1: infera is faster); "best" is the faster peer per model.
A second statistic, "median of per-round ratios": in each round, the faster peer's p50 / infera's p50
of that round, then the median over rounds (on a VM whose speed flips between states every tens of
seconds, the p50 over rounds can pick a different state per engine; a ratio within one round less so).
Geomeans are over the batch-1 set and over batch 16 separately.

The load average (1 min) is read before and after each configuration's rounds and written next to
its numbers: on a shared machine the absolute times move with other people's work, the ratios less so
(the engines alternate within the same seconds).

Writes bench/results/<date>-<name>.json, .md and .png (chart by bench/cpu_families_plot.py under a
Python with matplotlib: Debian's /usr/bin/python3 has python3-matplotlib).
"""
import argparse
import datetime
import json
import math
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
sys.path.insert(0, HERE)
from bench_resnet50_cpu import OrtRunner, cpu_flags, cpu_model, git_rev, infera_version, mem_total_gib, \
    run_infera  # noqa: E402

MODEL_SET = ["resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "densenet121",
             "squeezenet1_1", "shufflenet_v2_x1_0", "googlenet", "regnet_y_400mf", "convnext_tiny",
             "regnet_x_800mf", "wide_resnet50_2", "mnasnet1_0", "vgg16", "lraspp_mobilenet_v3_large",
             "deeplabv3_resnet50"]
BATCH16 = ["resnet50", "mobilenet_v2", "densenet121"]
ENGINES = ["infera", "onnxruntime", "openvino"]
ENV_ENGINE = "infera_env"  # infera again, with --infera-env's variables (e.g. OMP_WAIT_POLICY=passive)
BASE_ENGINE = "infera_base"  # another infera binary (--baseline: the build before a change)


def run_infera_env(env, *a):
    """run_infera with extra environment variables for the infera process only (libgomp reads
    OMP_WAIT_POLICY / GOMP_SPINCOUNT at process start: the peers in this process are not affected)."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return run_infera(*a)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def stats(lat, batch):
    a = np.array(lat)
    return {"p50_ms": float(np.percentile(a, 50)), "mean_ms": float(a.mean()),
            "p90_ms": float(np.percentile(a, 90)), "throughput_per_s": batch * 1e3 / float(a.mean()),
            "iterations": len(lat)}


def timed(fn, warmup, duration):
    for _ in range(warmup):
        fn()
    lat = []
    end = time.perf_counter() + duration
    while True:
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        lat.append((t1 - t0) * 1e3)
        if t1 >= end and len(lat) >= 3:
            return lat


class OvRunner:
    def __init__(self, model, batch, threads):
        import openvino as ov
        core = ov.Core()
        t0 = time.perf_counter()
        m = core.read_model(model)
        inp = m.inputs[0]
        shape = [batch] + [d.get_length() for d in list(inp.get_partial_shape())[1:]]
        m.reshape({inp.get_any_name(): ov.PartialShape(shape)})
        self.compiled = core.compile_model(m, "CPU", {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
                                                      "INFERENCE_PRECISION_HINT": "f32"})
        self.build_ms = (time.perf_counter() - t0) * 1e3
        self.req = self.compiled.create_infer_request()
        self.x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)

    def run(self, batch, warmup, duration):
        lat = timed(lambda: self.req.infer({0: self.x}), warmup, duration)
        return stats(lat, batch)


def loadavg():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt_ratio(x):
    return "%.2f×" % x if x else "–"


def write_markdown(path, res, png_name):
    m, s = res["machine"], res["settings"]
    v = res["versions"]
    lines = [
        "<!-- Generated by bench/cpu_families.py; do not edit by hand. -->",
        "# CPU FP32 across CNN families: infera vs ONNX Runtime and OpenVINO",
        "",
        "- date: %s" % res["date"],
        "- CPU: %s, %d cores (%s), %s GiB memory, ISA flags: %s" % (
            m["cpu"], m["cores"], m["os"], m["mem_gib"], ", ".join(m["isa"]) or "-"),
        "- command: `%s`" % res["command"],
        "- versions: infera %s (git %s), onnxruntime %s, openvino %s, numpy %s, Python %s" % (
            v["infera"], v["git"], v["onnxruntime"], v["openvino"], v["numpy"], v["python"]),
        "- settings: %d threads for all three, %d rounds, %g s per engine per round after %d warm-up "
        "iterations, engines alternating (order rotated every round)" % (
            s["threads"], s["rounds"], s["duration_s"], s["warmup"]),
        "- load: the machine is shared (2 cores, other engineers' builds); 1-minute load average before/after "
        "each configuration in the table, %s to %s over the run. Absolute times move with the load; the "
        "ratios come from runs alternating in the same seconds." % (res["load_min"], res["load_max"]),
        "",
        "| model | batch | infera p50 ms | ORT p50 ms | OpenVINO p50 ms | ORT/infera | OpenVINO/infera "
        "| best peer/infera | best peer/infera, median of per-round ratios | load |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    env = s.get("infera_env") or {}
    env_label = " ".join("%s=%s" % kv for kv in env.items())
    if env:
        lines[-2] = lines[-2][:-len("| load |")] + "| infera (%s) p50 ms | best peer/infera (%s) | load |" % (
            env_label, env_label)
        lines[-1] = lines[-1][:-len(" --- |")] + " ---: | ---: | --- |"
    base = bool(s.get("baseline"))
    if base:
        lines[-2] = lines[-2][:-len("| load |")] + "| before p50 ms | before/after | best peer/before | load |"
        lines[-1] = lines[-1][:-len(" --- |")] + " ---: | ---: | ---: | --- |"
    for r in res["results"]:
        e = r["engines"]

        def p50(k):
            return "%.2f" % e[k]["p50_ms"] if "p50_ms" in e.get(k, {}) else "failed"
        extra = " %s | %s |" % (p50(ENV_ENGINE), fmt_ratio(r.get("ratio_best_env"))) if env else ""
        if base:
            extra += " %s | %s | %s |" % (p50(BASE_ENGINE), fmt_ratio(r.get("ratio_base")),
                                          fmt_ratio(r.get("ratio_best_base")))
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |%s %s–%s |" % (
            r["model"], r["batch"], p50("infera"), p50("onnxruntime"), p50("openvino"),
            fmt_ratio(r.get("ratio_ort")), fmt_ratio(r.get("ratio_ov")), fmt_ratio(r.get("ratio_best")),
            fmt_ratio(r.get("ratio_best_rounds_median")), extra, r["load_before"], r["load_after"]))
    g = res["geomean"]
    lines += ["", "| geomean | ORT/infera | OpenVINO/infera | best peer/infera | models below 1.0× of the best "
              "| best peer/infera, median of per-round ratios | below 1.0× by that statistic |" +
              (" best peer/infera (%s) | below 1.0× (%s) |" % (env_label, env_label) if env else ""),
              "| --- | ---: | ---: | ---: | --- | ---: | --- |" + (" ---: | --- |" if env else "")]
    for key, label in (("b1", "batch 1, the model set"), ("b16", "batch 16")):
        if key in g:
            extra = " %s | %s |" % (fmt_ratio(g[key].get("best_env")), ", ".join(g[key].get("below_env", [])) or
                                    "none") if env else ""
            lines.append("| %s | %s | %s | %s | %s | %s | %s |%s" % (
                label, fmt_ratio(g[key]["ort"]), fmt_ratio(g[key]["ov"]), fmt_ratio(g[key]["best"]),
                ", ".join(g[key]["below"]) or "none", fmt_ratio(g[key].get("best_rounds_median")),
                ", ".join(g[key].get("below_rounds_median", [])) or "none", extra))
    if base:
        lines += ["", "Before/after in the same rounds: `%s`%s as 'before'." % (
            s["baseline"], " (git %s)" % s["baseline_git"] if s.get("baseline_git") else "")]
        for key, label in (("b1", "batch 1"), ("b16", "batch 16")):
            if key in g:
                lines.append("- %s: geomean before/after %s; best peer/before %s (after: %s)" % (
                    label, fmt_ratio(g[key].get("base")), fmt_ratio(g[key].get("best_base")),
                    fmt_ratio(g[key]["best"])))
    lines += ["", "Median of per-round ratios: per round, the faster peer's p50 / infera's p50 in that round; "
              "the median over the rounds (per-round values in the JSON: `ratio_best_rounds`). The p50 columns "
              "take each engine's median round separately, which on a machine that changes speed between "
              "rounds can compare different states.",
              "", "A ratio above 1.00× means infera takes less time than that peer. Targets (issue 13): geomean "
              "≥ 1.25× the faster peer over the batch-1 set, no model below 1.0×, batch 16 ≥ 1.25× on all three.", ""]
    if res.get("errors"):
        lines += ["Errors:", ""] + ["- %s" % x for x in res["errors"]] + [""]
    if png_name:
        lines += ["![speed relative to each peer](%s)" % png_name, ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def plot(json_path, png_path):
    script = os.path.join(HERE, "cpu_families_plot.py")
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and subprocess.run([py, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            p = subprocess.run([py, script, json_path, png_path], capture_output=True, text=True)
            if p.returncode == 0:
                return True
            sys.stderr.write("cpu_families_plot.py failed: %s\n" % p.stderr.strip()[-300:])
            return False
    sys.stderr.write("no chart: matplotlib is in neither python (apt-get install python3-matplotlib)\n")
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models-dir", default="models")
    ap.add_argument("--models", default=",".join(MODEL_SET), help="batch-1 models (default: the model set)")
    ap.add_argument("--batch16", default=",".join(BATCH16), help="models also timed at batch 16 ('' for none)")
    ap.add_argument("--infera", default="build/infera")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per engine, configuration and round")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--name", default="cpu-families")
    ap.add_argument("--baseline", default=None, metavar="BIN",
                    help="also time this infera binary (the build before a change) as another engine alternating "
                    "with the others; the table gets before p50 and before/after")
    ap.add_argument("--baseline-git", default=None, help="the git revision the --baseline binary was built at")
    ap.add_argument("--infera-env", action="append", default=[], metavar="VAR=VALUE",
                    help="also time infera with these variables set (repeatable), as a fourth engine "
                    "alternating with the others")
    args = ap.parse_args()
    env = dict(kv.split("=", 1) for kv in args.infera_env if "=" in kv)
    engines = ENGINES + ([ENV_ENGINE] if env else []) + ([BASE_ENGINE] if args.baseline else [])
    if args.baseline and not os.path.isfile(args.baseline):
        sys.stderr.write("cpu_families.py: no baseline binary at %s\n" % args.baseline)
        return 1

    try:
        import onnxruntime as ort
        import openvino as ov
    except ImportError as e:
        sys.stderr.write("cpu_families.py: %s (bench/cpu_setup_peers.sh installs the peers)\n" % e)
        return 1
    if not os.path.isfile(args.infera):
        sys.stderr.write("cpu_families.py: no infera binary at %s (build first)\n" % args.infera)
        return 1
    configs = [(n, 1) for n in args.models.split(",") if n] + [(n, 16) for n in args.batch16.split(",") if n]
    missing = sorted({n for n, _ in configs if not os.path.isfile(os.path.join(args.models_dir, n + ".onnx"))})
    if missing:
        sys.stderr.write("cpu_families.py: missing %s in %s (tests/models/export_models.py --models %s)\n" % (
            ", ".join(missing), args.models_dir, ",".join(missing)))
        return 1
    infera = os.path.abspath(args.infera)
    results, errors, loads = [], [], []
    with tempfile.TemporaryDirectory(prefix="infera-families-") as work:
        for model, batch in configs:
            path = os.path.join(args.models_dir, model + ".onnx")
            runs = {e: [] for e in engines}
            peers = {}
            try:
                peers["onnxruntime"] = OrtRunner(path, args.threads)
            except Exception as e:  # a peer that cannot load the model is a row entry, not the end of the run
                errors.append("%s b%d onnxruntime: %s" % (model, batch, str(e).splitlines()[0]))
            try:
                peers["openvino"] = OvRunner(path, batch, args.threads)
            except Exception as e:
                errors.append("%s b%d openvino: %s" % (model, batch, str(e).splitlines()[0]))
            l0 = loadavg()
            for r in range(args.rounds):
                n = len(engines)
                order = engines[r % n:] + engines[:r % n]
                for eng in order:
                    try:
                        if eng == "infera":
                            res = run_infera(infera, path, batch, args.threads, args.warmup, args.duration, work)
                        elif eng == BASE_ENGINE:
                            res = run_infera(os.path.abspath(args.baseline), path, batch, args.threads, args.warmup,
                                             args.duration, work)
                        elif eng == ENV_ENGINE:
                            res = run_infera_env(env, infera, path, batch, args.threads, args.warmup,
                                                 args.duration, work)
                        elif eng in peers:
                            res = peers[eng].run(batch, args.warmup, args.duration)
                        else:
                            continue
                    except Exception as e:
                        errors.append("%s b%d %s: %s" % (model, batch, eng, str(e).splitlines()[0]))
                        continue
                    res["round"] = r
                    runs[eng].append(res)
                    print("%-26s b%-2d round %d %-11s p50 %8.2f ms" % (model, batch, r + 1, eng, res["p50_ms"]),
                          flush=True)
            l1 = loadavg()
            loads += [l0, l1]
            row = {"model": model, "batch": batch, "load_before": l0, "load_after": l1, "engines": {}}
            for eng in engines:
                if runs[eng]:
                    row["engines"][eng] = {"p50_ms": round(statistics.median(x["p50_ms"] for x in runs[eng]), 3),
                                           "round_p50s": [round(x["p50_ms"], 3) for x in runs[eng]]}
            e = row["engines"]
            if "infera" in e:
                i = e["infera"]["p50_ms"]
                if "onnxruntime" in e:
                    row["ratio_ort"] = round(e["onnxruntime"]["p50_ms"] / i, 3)
                if "openvino" in e:
                    row["ratio_ov"] = round(e["openvino"]["p50_ms"] / i, 3)
                best = [e[k]["p50_ms"] for k in ("onnxruntime", "openvino") if k in e]
                if best:
                    row["ratio_best"] = round(min(best) / i, 3)
            per_round = []  # the faster peer / infera within each round where infera and a peer both ran
            for r in range(args.rounds):
                t = {eng: x["p50_ms"] for eng in ("infera", "onnxruntime", "openvino") for x in runs[eng]
                     if x["round"] == r}
                peer = [t[k] for k in ("onnxruntime", "openvino") if k in t]
                if "infera" in t and peer:
                    per_round.append(round(min(peer) / t["infera"], 3))
            if per_round:
                row["ratio_best_rounds"] = per_round
                row["ratio_best_rounds_median"] = round(statistics.median(per_round), 3)
            if BASE_ENGINE in e and "infera" in e:
                row["ratio_base"] = round(e[BASE_ENGINE]["p50_ms"] / e["infera"]["p50_ms"], 3)
                best = [e[k]["p50_ms"] for k in ("onnxruntime", "openvino") if k in e]
                if best:
                    row["ratio_best_base"] = round(min(best) / e[BASE_ENGINE]["p50_ms"], 3)
            if ENV_ENGINE in e and any(k in e for k in ("onnxruntime", "openvino")):
                best = min(e[k]["p50_ms"] for k in ("onnxruntime", "openvino") if k in e)
                row["ratio_best_env"] = round(best / e[ENV_ENGINE]["p50_ms"], 3)
            for k, pr in peers.items():
                row["engines"].setdefault(k, {})["build_ms"] = round(pr.build_ms, 1)
            results.append(row)
            del peers

    geo = {}
    for key, b in (("b1", 1), ("b16", 16)):
        rows = [r for r in results if r["batch"] == b]
        if rows:
            geo[key] = {k: geomean([r.get("ratio_" + k) for r in rows])
                        for k in ("ort", "ov", "best", "best_env", "base", "best_base", "best_rounds_median")}
            geo[key]["below"] = [r["model"] for r in rows if r.get("ratio_best") is not None and r["ratio_best"] < 1.0]
            geo[key]["below_rounds_median"] = [r["model"] for r in rows if r.get("ratio_best_rounds_median") is not None
                                               and r["ratio_best_rounds_median"] < 1.0]
            geo[key]["below_env"] = [r["model"] for r in rows
                                     if r.get("ratio_best_env") is not None and r["ratio_best_env"] < 1.0]
    now = datetime.datetime.now().astimezone()
    res = {
        "generator": "bench/cpu_families.py",
        "date": now.isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "isa": cpu_flags(), "mem_gib": mem_total_gib(),
                    "os": platform.platform()},
        "command": " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], os.getcwd())] + sys.argv[1:]),
        "versions": {"infera": infera_version(infera), "git": git_rev(), "onnxruntime": ort.__version__,
                     "openvino": ov.__version__.split("-")[0], "numpy": np.__version__,
                     "python": platform.python_version()},
        "settings": {"threads": args.threads, "rounds": args.rounds, "duration_s": args.duration,
                     "warmup": args.warmup, "models_dir": args.models_dir, "infera_env": env,
                     "baseline": args.baseline, "baseline_git": args.baseline_git},
        "load_min": min([x for x in loads if x is not None], default=None),
        "load_max": max([x for x in loads if x is not None], default=None),
        "results": results, "geomean": geo, "errors": errors,
    }
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, "%s-%s" % (now.strftime("%Y-%m-%d"), args.name))
    with open(stem + ".json", "w") as f:
        json.dump(res, f, indent=1)
    png = plot(stem + ".json", stem + ".png")
    write_markdown(stem + ".md", res, os.path.basename(stem + ".png") if png else None)
    print()
    for key, g in geo.items():
        print("geomean %s: ORT/infera %s, OpenVINO/infera %s, best/infera %s; below 1.0x: %s; median of per-round "
              "best/infera %s; below 1.0x: %s%s" % (
            key, fmt_ratio(g["ort"]), fmt_ratio(g["ov"]), fmt_ratio(g["best"]), ", ".join(g["below"]) or "none",
            fmt_ratio(g.get("best_rounds_median")), ", ".join(g.get("below_rounds_median", [])) or "none",
            "; with the env: best/infera %s" % fmt_ratio(g.get("best_env")) if env else ""))
        if args.baseline:
            print("geomean %s: before/after %s, best peer/before %s" % (key, fmt_ratio(g.get("base")),
                                                                       fmt_ratio(g.get("best_base"))))
    print("wrote %s.md" % stem)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
