#!/usr/bin/env python3
"""Per-step A/B of infera binaries on the CPU: `infera profile` of each, alternating, several rounds.

    python3 bench/cpu_profile_ab.py --bin base=OLD_BIN --bin new=NEW_BIN [--bin ...] --model M.onnx
                                    [--kernel small-spatial] [--rounds 7] [--runs 30] [--threads 2]
                                    [--batch 1] [--json FILE]

Per round, each binary's `infera profile --csv` (a fresh process, its own XDG_CACHE_HOME so that one
binary's perf-db choices do not steer another's), the order rotated every round. Reported: the steps
whose kernel contains --kernel in any binary's profile, their sum and the sum of all steps; per round
the ratio of the first binary's time to each other's (> 1: the other is faster), and the medians.
On a machine whose speed flips within seconds, read the median of the per-round ratios.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile


def profile(binary, cache, model, batch, threads, runs):
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        subprocess.run([binary, "profile", model, "--batch", str(batch), "--threads", str(threads), "--runs",
                        str(runs), "--warmup", "3", "--csv", f.name], check=True, capture_output=True, env=env)
        return {r["node"]: r for r in csv.DictReader(open(f.name))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", action="append", required=True, help="NAME=PATH (the first is the baseline)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--kernel", default="small-spatial")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.bin]
    caches = {n: tempfile.mkdtemp(prefix="infera-xdg-%s-" % n) for n, _ in bins}
    for n, p in bins:  # warm each perf db once (the search is not timed)
        profile(p, caches[n], a.model, a.batch, a.threads, 1)
    rounds = []
    for r in range(a.rounds):
        order = bins[r % len(bins):] + bins[:r % len(bins)]
        got = {n: profile(p, caches[n], a.model, a.batch, a.threads, a.runs) for n, p in order}
        rounds.append({"load": os.getloadavg()[0], "order": [n for n, _ in order], "steps": got})
    names = [n for n, _ in bins]
    base = names[0]
    nodes = sorted({node for rd in rounds for s in rd["steps"].values() for node, row in s.items()
                    if a.kernel in row["kernel"]}, key=lambda x: int(rounds[0]["steps"][base][x]["step"]))

    def ms(rd, n, node):
        return float(rd["steps"][n][node]["mean_ms"])

    rows = [(node.rsplit("/", 1)[0] if node.endswith("/Conv") else node,
             [[ms(rd, n, node) for rd in rounds] for n in names]) for node in nodes]
    rows.append(("sum of those", [[sum(ms(rd, n, x) for x in nodes) for rd in rounds] for n in names]))
    rows.append(("all steps", [[sum(float(v["mean_ms"]) for v in rd["steps"][n].values()) for rd in rounds]
                               for n in names]))
    print("| step | kernel (%s) | %s | %s |" % (names[-1], " | ".join("%s ms" % n for n in names),
                                                 " | ".join("%s/%s per round (median)" % (base, n) for n in names[1:])))
    print("| --- | --- | %s |" % " | ".join(["---:"] * (2 * len(names) - 1)))
    out = []
    for label, t in rows:
        kern = rounds[0]["steps"][names[-1]][label + "/Conv"]["kernel"] if label + "/Conv" in nodes else ""
        ratios = [[b / x for b, x in zip(t[0], t[i])] for i in range(1, len(names))]
        print("| %s | %s | %s | %s |" % (label, kern, " | ".join("%.3f" % statistics.median(x) for x in t),
                                         " | ".join("%s (**%.3f**)" % (" ".join("%.2f" % v for v in rr),
                                                                        statistics.median(rr)) for rr in ratios)))
        out.append({"step": label, "kernel": kern, "ms": dict(zip(names, t)),
                    "ratio_median": dict(zip(names[1:], [statistics.median(rr) for rr in ratios]))})
    print("load per round: " + " ".join("%.1f" % rd["load"] for rd in rounds))
    if a.json:
        json.dump({"model": a.model, "bins": dict(bins), "rows": out, "loads": [rd["load"] for rd in rounds]},
                  open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
