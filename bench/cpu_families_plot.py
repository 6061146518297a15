#!/usr/bin/python3
"""Chart of bench/cpu_families.py's JSON: infera's speed relative to each peer, per configuration.

    /usr/bin/python3 bench/cpu_families_plot.py bench/results/DATE-cpu-families.json OUT.png
Needs matplotlib (Debian: python3-matplotlib). One horizontal bar pair per model and batch: peer p50 /
infera p50 for ONNX Runtime and OpenVINO (right of the 1.0 line: infera is faster), the 1.25 target
dashed.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: cpu_families_plot.py RESULTS.json OUT.png\n")
        return 2
    with open(sys.argv[1]) as f:
        res = json.load(f)
    rows = res["results"]
    labels = ["%s b%d" % (r["model"], r["batch"]) for r in rows]
    y = list(range(len(rows)))[::-1]
    fig, ax = plt.subplots(figsize=(8, 0.38 * len(rows) + 1.6))
    h = 0.38
    for k, (key, name, color) in enumerate((("ratio_ort", "ONNX Runtime", "tab:orange"),
                                            ("ratio_ov", "OpenVINO", "tab:green"))):
        vals = [r.get(key) or 0 for r in rows]
        ax.barh([v + (h / 2 if k == 0 else -h / 2) for v in y], vals, height=h, color=color,
                label="%s p50 / infera p50" % name)
    ax.axvline(1.0, color="black", lw=1)
    ax.axvline(1.25, color="gray", lw=1, ls="--", label="target 1.25×")
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("speed-up of infera over the peer (> 1: infera is faster)")
    ax.set_title("CPU FP32, %d threads, %s (load %s–%s)" % (res["settings"]["threads"], res["date"][:16],
                                                          res.get("load_min"), res.get("load_max")), fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
