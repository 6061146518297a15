#!/usr/bin/env python3
"""Per-op times of infera and ONNX Runtime on the CPU, alternating, matched by ONNX node (issue 13).

Run with the PATH python3 (PyPI onnxruntime and onnx, as bench/cpu_families.py):
    python3 bench/cpu_profile_vs_ort.py --model /tmp/models/mnasnet1_0.onnx [--infera build/infera]
                                        [--batch 1] [--threads 2] [--rounds 5] [--runs 30] [--top 15]
                                        [--json FILE] [--md FILE]

Per round, in an order flipped every round: `infera profile --json` (a fresh process) and an ONNX
Runtime session (CPU provider, ORT_ENABLE_ALL, intra_op_num_threads=T, sequential) with
enable_profiling, --runs timed runs after 3 untimed ones (their trace events dropped).

Matching: both engines fuse (conv + bias + activation, the residual Add, ORT's NCHWc reorders), so
every step is attributed to an anchor ONNX node: a step that runs a convolution goes to the latest
Conv found walking its ONNX node's inputs back through elementwise ops (BatchNormalization, Relu,
Clip, Sigmoid, Mul, Add, ...); any other step to its own node. ORT names an NCHWc node after its
output tensor (`<tensor>_nchwc`), mapped to the tensor's producer. Steps of one anchor are summed.
Per anchor and op kind: the median over rounds of each engine's mean time per run.

Both profilers add overhead (ORT's more: its profiled steps sum to more than its unprofiled run), so
each round also times both engines unprofiled (`infera bench`, and an ORT session without profiling,
--runs runs) and prints those p50s: read a kind's ORT/infera against the whole-model ratio.
bench/cpu_families.py is the whole-model comparison with OpenVINO.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

WALK = {"BatchNormalization", "Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Mul", "Add", "LeakyRelu",
        "Identity", "Reshape", "Flatten"}
CONV_OPS = {"Conv", "FusedConv", "com.infera.FusedConv", "NchwcConv", "Gemm", "MatMul", "FusedGemm"}
# Activations one engine runs as separate steps where the other fuses them into the conv (ORT's
# QuickGelu for x * sigmoid(x), a Sigmoid gate): attributed to the conv too.
ACT_OPS = {"Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "QuickGelu", "Swish", "LeakyRelu"}


class Graph:
    def __init__(self, path, batch):
        m = onnx.load(path)
        inp = m.graph.input[0]
        inp.type.tensor_type.shape.dim[0].dim_value = batch
        try:
            m = onnx.shape_inference.infer_shapes(m)
        except Exception:  # shapes are labels only
            pass
        g = m.graph
        self.nodes = {n.name: n for n in g.node}
        self.order = {n.name: i for i, n in enumerate(g.node)}
        self.producer = {o: n.name for n in g.node for o in n.output}
        self.consumers = collections.defaultdict(list)
        for n in g.node:
            for i in n.input:
                self.consumers[i].append(n.name)
        self.init = {t.name: list(t.dims) for t in g.initializer}
        self.shape = {}
        for vi in list(g.value_info) + list(g.input) + list(g.output):
            self.shape[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]

    def node_of(self, name):
        """An ONNX node name from a profiler's step name: a node name, ORT's `<tensor>_nchwc`, or a
        fused node named after one (`<node>/QuickGeluFusion/`, infera's `<node>/SqueezeExcite`)."""
        while name:
            if name in self.nodes:
                return name
            t = name[:-len("_nchwc")] if name.endswith("_nchwc") else name
            if t in self.producer:
                return self.producer[t]
            name = name.rstrip("/").rpartition("/")[0]
        return None

    def anchor(self, node, runs_conv):
        """The latest Conv reached from node back through elementwise ops, for a step that runs a conv."""
        if not runs_conv or node is None:
            return node
        best, stack, seen = None, [node], set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            op = self.nodes[n].op_type
            if op in ("Conv", "Gemm", "MatMul"):
                if best is None or self.order[n] > self.order[best]:
                    best = n
                continue
            if op in WALK or n == node:
                stack += [self.producer[i] for i in self.nodes[n].input if i in self.producer]
        return best or node

    def label(self, n):
        """Op kind and shape of an anchor node."""
        node = self.nodes.get(n)
        if node is None:
            return ("NCHWc reorders (ORT)" if "Reorder" in n else n.strip("()")), ""
        xs = self.shape.get(node.input[0], [])
        pooled = len(xs) == 4 and xs[2] == 1 and xs[3] == 1
        if (node.op_type == "Conv" and pooled) or (node.op_type == "GlobalAveragePool" and any(
                self.nodes[c].op_type == "Conv" for c in self.consumers[node.output[0]])):
            return "squeeze-excite (pool, 1x1 FCs on the pooled vector, gate)", "x".join(map(str, xs))
        if node.op_type != "Conv":
            s = self.shape.get(node.input[0], [])
            return node.op_type, "x".join(map(str, s))
        a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
        w = self.init.get(node.input[1], [])
        group = a.get("group", 1)
        stride = (a.get("strides") or [1])[0]
        k = w[2] if len(w) > 2 else 0
        cin = xs[1] if len(xs) > 1 else 0
        hw = "%dx%d" % (xs[2], xs[3]) if len(xs) > 3 else "?"
        if group > 1 and group == cin:
            kind = "depthwise %dx%d s%d" % (k, k, stride)
        elif k == 1:
            kind = "pointwise 1x1" + (" s%d" % stride if stride > 1 else "")
            kind += " (expand)" if w and w[0] > cin else " (project/reduce)"
        else:
            kind = "dense %dx%d s%d" % (k, k, stride)
        return kind, "%d->%d @%s" % (cin, w[0] if w else 0, hw)


def infera_steps(binary, model, batch, threads, runs):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([binary, "profile", model, "--batch", str(batch), "--threads", str(threads), "--runs",
                        str(runs), "--warmup", "3", "--json", f.name], check=True, capture_output=True)
        d = json.load(open(f.name))
    return [(s["node"], s["op"], s["kernel"], s["mean_ms"]) for s in d["steps"]], d["total_ms"]


def ort_steps(model, batch, threads, runs, work):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(work, "ort")
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    i = s.get_inputs()[0]
    x = np.random.default_rng(0).standard_normal([batch] + list(i.shape[1:]), dtype=np.float32)
    warm = 3
    for _ in range(warm + runs):
        s.run(None, {i.name: x})
    path = s.end_profiling()
    ev = json.load(open(path))
    os.remove(path)
    per = collections.defaultdict(list)
    ops = {}
    for e in ev:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            n = e["name"][:-len("_kernel_time")]
            per[n].append(e["dur"] / 1e3)
            ops[n] = e["args"].get("op_name", "?")
    model_runs = [e["dur"] / 1e3 for e in ev if e.get("cat") == "Session" and e["name"] == "model_run"][warm:]
    steps = [(n, ops[n], ops[n], sum(v[warm:]) / max(1, len(v[warm:]))) for n, v in per.items()]
    return steps, sum(model_runs) / max(1, len(model_runs))


def plain_p50s(binary, model, batch, threads, runs, ort_session):
    """Unprofiled p50 ms: `infera bench` (0.5 s) and runs of an ORT session without profiling."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([binary, "bench", model, "--batch", str(batch), "--warmup", "3", "--duration", "0.5",
                        "--threads", str(threads), "--json", f.name, "--quiet"], check=True, capture_output=True)
        inf = json.load(open(f.name))["results"][0]["latency_ms_p50"]
    s, feed = ort_session
    for _ in range(3):
        s.run(None, feed)
    lat = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, feed)
        lat.append((time.perf_counter() - t0) * 1e3)
    return inf, statistics.median(lat)


def attribute(g, steps):
    t, n = collections.defaultdict(float), collections.defaultdict(int)
    kern = {}
    for name, op, kernel, ms in steps:
        node = g.node_of(name)
        a = g.anchor(node, op in CONV_OPS or op in ACT_OPS) if node else "(%s)" % op
        t[a] += ms
        n[a] += 1
        kern.setdefault(a, kernel)
    return t, n, kern


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--infera", default="build/infera")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--json")
    ap.add_argument("--md", help="write the two tables as markdown to this file")
    a = ap.parse_args()
    g = Graph(a.model, a.batch)
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    plain = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    pi = plain.get_inputs()[0]
    feed = {pi.name: np.random.default_rng(0).standard_normal([a.batch] + list(pi.shape[1:]), dtype=np.float32)}
    rounds = []
    with tempfile.TemporaryDirectory(prefix="infera-vs-ort-") as work:
        for r in range(a.rounds):
            rec = {"load": round(os.getloadavg()[0], 2)}
            for eng in (("infera", "ort") if r % 2 == 0 else ("ort", "infera")):
                if eng == "infera":
                    steps, total = infera_steps(a.infera, a.model, a.batch, a.threads, a.runs)
                else:
                    steps, total = ort_steps(a.model, a.batch, a.threads, a.runs, work)
                t, n, kern = attribute(g, steps)
                rec[eng] = {"total_ms": total, "steps_ms": sum(t.values()), "anchors": dict(t), "counts": dict(n),
                            "kernels": kern}
            rec["infera"]["plain_p50_ms"], rec["ort"]["plain_p50_ms"] = plain_p50s(
                a.infera, a.model, a.batch, a.threads, a.runs, (plain, feed))
            rounds.append(rec)
            print("round %d: infera steps %.3f ms (unprofiled p50 %.3f), ORT steps %.3f ms (model_run %.3f, "
                  "unprofiled p50 %.3f), load %.2f" % (
                      r + 1, rec["infera"]["steps_ms"], rec["infera"]["plain_p50_ms"], rec["ort"]["steps_ms"],
                      rec["ort"]["total_ms"], rec["ort"]["plain_p50_ms"], rec["load"]), flush=True)

    anchors = sorted({k for rec in rounds for e in ("infera", "ort") for k in rec[e]["anchors"]},
                     key=lambda n: g.order.get(n, 1 << 30))

    def med(eng, n):
        return statistics.median(rec[eng]["anchors"].get(n, 0.0) for rec in rounds)

    def med_adj(eng, n):
        """As med, less the profiler's overhead per step: (sum of steps - unprofiled p50) / steps, per round."""
        v = []
        for rec in rounds:
            e = rec[eng]
            c = (e["steps_ms"] - e["plain_p50_ms"]) / max(1, sum(e["counts"].values()))
            v.append(e["anchors"].get(n, 0.0) - c * e["counts"].get(n, 0))
        return statistics.median(v)
    rows = []
    for n in anchors:
        kind, shape = g.label(n)
        rows.append({"node": n, "kind": kind, "shape": shape, "infera_ms": med("infera", n), "ort_ms": med("ort", n),
                     "infera_adj_ms": med_adj("infera", n), "ort_adj_ms": med_adj("ort", n),
                     "infera_kernel": rounds[-1]["infera"]["kernels"].get(n, "-"),
                     "ort_kernel": rounds[-1]["ort"]["kernels"].get(n, "-")})
    by_kind = collections.OrderedDict()
    for x in rows:
        k = by_kind.setdefault(x["kind"], {"kind": x["kind"], "n": 0, "infera_ms": 0.0, "ort_ms": 0.0,
                                           "infera_adj_ms": 0.0, "ort_adj_ms": 0.0})
        k["n"] += 1
        for f in ("infera_ms", "ort_ms", "infera_adj_ms", "ort_adj_ms"):
            k[f] += x[f]
    tot_i = statistics.median(rec["infera"]["steps_ms"] for rec in rounds)
    tot_o = statistics.median(rec["ort"]["steps_ms"] for rec in rounds)
    ratio_rounds = [rec["ort"]["steps_ms"] / rec["infera"]["steps_ms"] for rec in rounds]
    out = ["%s, batch %d, %d threads: %d rounds x %d runs; medians over rounds of the mean ms per run." % (
        os.path.basename(a.model), a.batch, a.threads, a.rounds, a.runs), "",
        "Sum of steps: infera %.3f ms, ORT %.3f ms (ORT/infera %.2f; median of per-round ratios %.2f); "
        "ORT model_run %.3f ms; load %s." % (
            tot_i, tot_o, tot_o / tot_i, statistics.median(ratio_rounds),
            statistics.median(rec["ort"]["total_ms"] for rec in rounds), " ".join(str(rec["load"]) for rec in rounds)),
        "", "Unprofiled, same rounds: infera p50 %.3f ms, ORT p50 %.3f ms (ORT/infera %.2f; median of per-round "
        "ratios %.2f)." % (
            statistics.median(rec["infera"]["plain_p50_ms"] for rec in rounds),
            statistics.median(rec["ort"]["plain_p50_ms"] for rec in rounds),
            statistics.median(rec["ort"]["plain_p50_ms"] for rec in rounds) /
            statistics.median(rec["infera"]["plain_p50_ms"] for rec in rounds),
            statistics.median(rec["ort"]["plain_p50_ms"] / rec["infera"]["plain_p50_ms"] for rec in rounds)),
        "", "Adjusted (adj.): each step less its engine's profiler overhead per step in that round, (sum of steps - "
        "unprofiled p50) / step count, so that each engine's adjusted steps sum to its unprofiled run.",
        "", "| op kind | nodes | infera ms | ORT ms | infera adj. | ORT adj. | infera - ORT adj. | ORT/infera adj. |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for k in sorted(by_kind.values(), key=lambda k: k["ort_adj_ms"] - k["infera_adj_ms"]):
        out.append("| %s | %d | %.3f | %.3f | %.3f | %.3f | %+.3f | %s |" % (
            k["kind"], k["n"], k["infera_ms"], k["ort_ms"], k["infera_adj_ms"], k["ort_adj_ms"],
            k["infera_adj_ms"] - k["ort_adj_ms"],
            "%.2f" % (k["ort_adj_ms"] / k["infera_adj_ms"]) if k["infera_adj_ms"] > 0 else "-"))
    out += ["", "Top %d nodes by infera - ORT (adjusted):" % a.top, "",
            "| node | kind | shape (Cin->Cout @HxW in) | infera ms | ORT ms | infera adj. | ORT adj. | infera - ORT adj. "
            "| infera kernel |", "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for x in sorted(rows, key=lambda x: x["ort_adj_ms"] - x["infera_adj_ms"])[:a.top]:
        out.append("| %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %+.3f | %s |" % (
            x["node"], x["kind"], x["shape"], x["infera_ms"], x["ort_ms"], x["infera_adj_ms"], x["ort_adj_ms"],
            x["infera_adj_ms"] - x["ort_adj_ms"], x["infera_kernel"]))
    print("\n".join(out))
    if a.md:
        with open(a.md, "w") as f:
            f.write("\n".join(out) + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "batch": a.batch, "threads": a.threads, "runs": a.runs, "rows": rows,
                       "by_kind": list(by_kind.values()), "rounds": rounds}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
