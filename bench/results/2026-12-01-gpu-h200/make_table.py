#!/usr/bin/python3
"""Builds summary.json and chart.png of this folder (or of the folder given) from the infera bench JSONs and the PyTorch peer's
lines (torch-peer.jsonl), all from one device call. Ratio = PyTorch median ms / infera p50 ms (>1: faster)."""
import json, os, sys
# The folder of a later run as the argument (its files missing here are left out), else this one.
HERE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
peer = [json.loads(l) for l in open(os.path.join(HERE, "torch-peer.jsonl"))]
def tp(model, dtype, batch, kind):
    for p in peer:
        if (p["model"], p["dtype"], p["batch"], p["peer"]) == (model, dtype, batch, kind):
            return p
runs = [("resnet50", "fp32", "infera-resnet50-fp32.json"), ("resnet50", "tf32", "infera-resnet50-tf32.json"),
        ("resnet50", "fp16", "infera-resnet50-fp16.json"), ("resnet50", "fp16 ours only", "infera-resnet50-fp16-ours.json"),
        ("resnet50", "fp16 host I/O", "infera-resnet50-fp16-hostio.json"),
        ("mobilenet_v2", "fp16", "infera-mobilenet_v2-fp16.json"), ("efficientnet_b0", "fp16", "infera-efficientnet_b0-fp16.json")]
rows = []
for model, mode, f in runs:
    if not os.path.isfile(os.path.join(HERE, f)):
        continue
    d = json.load(open(os.path.join(HERE, f)))
    dtype = mode.split()[0]
    for r in d["results"]:
        e, g = tp(model, dtype, r["batch"], "torch_eager"), tp(model, dtype, r["batch"], "torch_eager_graph")
        rows.append({"model": model, "mode": mode, "batch": r["batch"], "infera_p50_ms": round(r["latency_ms_p50"], 4),
                     "infera_img_s": round(r["batch"] * 1000 / r["latency_ms_p50"], 1),
                     "infera_device_mb": round(r["device_memory_bytes"] / 2**20, 1), "build_ms": round(r["build_ms"]),
                     "torch_eager_ms": e["ms_median"], "torch_graph_ms": g["ms_median"],
                     "torch_eager_peak_mb": e["peak_mem_mb"],
                     "vs_eager": round(e["ms_median"] / r["latency_ms_p50"], 2),
                     "vs_graph": round(g["ms_median"] / r["latency_ms_p50"], 2)})
json.dump(rows, open(os.path.join(HERE, "summary.json"), "w"), indent=1)
print("| model | mode | batch | infera p50 ms | img/s | device MiB | build ms | torch eager ms | torch + graph ms | vs eager | vs graph |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print("| %s | %s | %d | %.4f | %.0f | %.0f | %d | %.4f | %.4f | %.2fx | %.2fx |" % (
        r["model"], r["mode"], r["batch"], r["infera_p50_ms"], r["infera_img_s"], r["infera_device_mb"], r["build_ms"],
        r["torch_eager_ms"], r["torch_graph_ms"], r["vs_eager"], r["vs_graph"]))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sel = [r for r in rows if r["mode"] in ("fp32", "tf32", "fp16", "fp16 ours only")]
    labels = ["%s\n%s b%d" % (r["model"].replace("_", " "), r["mode"], r["batch"]) for r in sel]
    fig, ax = plt.subplots(figsize=(14, 4.5))
    ax.bar(range(len(sel)), [r["vs_graph"] for r in sel], color=["#2a7" if r["vs_graph"] >= 1 else "#c54" for r in sel])
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(sel)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("speed-up vs PyTorch eager + CUDA graph")
    ax.set_title("infera on one H200 (2026-12-01), same run as the PyTorch peer: PyTorch ms / infera ms")
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "chart.png"), dpi=110)
except ImportError:
    print("(no matplotlib: no chart)")
