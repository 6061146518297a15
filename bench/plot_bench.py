#!/usr/bin/python3
"""Chart of a benchmark results JSON (bench/bench_resnet50_cpu.py): latency and throughput per batch.

    /usr/bin/python3 bench/plot_bench.py bench/results/DATE-resnet50-cpu.json OUT.png
Needs matplotlib (Debian: python3-matplotlib). Engines are the keys of each result other than batch
and ratio_*; each has p50_ms, mean_ms and throughput_per_s.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: plot_bench.py RESULTS.json OUT.png\n")
        return 2
    with open(sys.argv[1]) as f:
        res = json.load(f)
    rows = res["results"]
    engines = [k for k in rows[0] if isinstance(rows[0][k], dict)]
    batches = [r["batch"] for r in rows]
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red"]
    # One latency panel per batch size (each from 0 on its own scale: batch 16 takes ~10x batch 1),
    # then one throughput panel for all batch sizes.
    fig, axes = plt.subplots(1, len(rows) + 1, figsize=(3.2 * (len(rows) + 1) + 1, 4.2),
                             gridspec_kw={"width_ratios": [1] * len(rows) + [max(2, len(rows))]})
    for ax, r in zip(axes, rows):
        vals = [r[e]["p50_ms"] for e in engines]
        bars = ax.bar(range(len(engines)), vals, 0.6, color=colors[: len(engines)])
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
        ax.set_xticks(range(len(engines)), engines, fontsize=8)
        ax.set_title("latency p50, batch %d" % r["batch"], fontsize=10)
        ax.set_ylabel("ms per batch (lower is better)")
    ax = axes[-1]
    xs = range(len(batches))
    width = 0.8 / len(engines)
    for k, eng in enumerate(engines):
        pos = [x - 0.4 + width * (k + 0.5) for x in xs]
        bars = ax.bar(pos, [r[eng]["throughput_per_s"] for r in rows], width, label=eng, color=colors[k])
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.set_xticks(list(xs), ["batch %d" % b for b in batches])
    ax.set_title("throughput", fontsize=10)
    ax.set_ylabel("images per second (higher is better)")
    ax.legend(fontsize=8)
    m = res.get("machine", {})
    fig.suptitle("%s — %s, %s threads, %s" % (res.get("settings", {}).get("model", "model"), m.get("cpu", "?"),
                                              res.get("settings", {}).get("threads", "?"), res.get("date", "")[:10]),
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
