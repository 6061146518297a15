#!/usr/bin/env python3
"""Before/after of two infera binaries on the CPU: `infera bench` of each, alternating, several repeats.

    python3 bench/cpu_ab.py --before OLD_BIN --after NEW_BIN --models a,b [--threads 1] [--batch 1]
                            [--reps 5] [--duration 1] [--models-dir models] [--json FILE]

Per model: the p50 of each binary per repeat (a fresh process each, the plan build not timed), the
order flipped every repeat, and the median of the per-repeat ratios before/after (> 1: after is
faster). On a shared machine a ratio of runs seconds apart moves less than either time; --threads 1
moves least (no OpenMP team to wake under load). The 1-minute load average is printed per model;
--json writes every repeat's p50s and load.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def p50(binary, model, batch, threads, duration):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([binary, "bench", model, "--batch", str(batch), "--warmup", "3", "--duration", str(duration),
                        "--threads", str(threads), "--json", f.name, "--quiet"], check=True, capture_output=True)
        return json.load(open(f.name))["results"][0]["latency_ms_p50"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--models-dir", default="models")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--json")
    a = ap.parse_args()
    out = []
    for m in a.models.split(","):
        path = os.path.join(a.models_dir, m + ".onnx")
        t = {"before": [], "after": []}
        loads = []
        for r in range(a.reps):
            for k in (("before", "after") if r % 2 == 0 else ("after", "before")):
                t[k].append(p50(getattr(a, k), path, a.batch, a.threads, a.duration))
            loads.append(os.getloadavg()[0])
        ratios = [b / n for b, n in zip(t["before"], t["after"])]
        print("%-26s b%d t%d before %8.2f ms after %8.2f ms  before/after %.2fx (per repeat %s) load %.1f-%.1f" % (
            m, a.batch, a.threads, statistics.median(t["before"]), statistics.median(t["after"]),
            statistics.median(ratios), " ".join("%.2f" % x for x in ratios), min(loads), max(loads)), flush=True)
        out.append({"model": m, "batch": a.batch, "threads": a.threads, "before_ms": t["before"],
                    "after_ms": t["after"], "ratios": ratios, "ratio_median": statistics.median(ratios), "loads": loads})
        if a.json:
            json.dump({"before": a.before, "after": a.after, "results": out}, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
