#!/usr/bin/env python3
"""Per-block A/B of the fused inverted-residual step (com.infera.InvertedResidual) in one binary:
`infera profile --csv` with INFERA_INVERTED_RESIDUAL=off and with it on (the default), alternating
the order each round. Each fused step is matched to the unfused steps it replaces (its project
conv's node, and the one or two steps before it). Prints per round the totals and per block the
unfused / fused times, then the median of the per-round ratios (off / on: > 1 means fused wins)."""
import argparse, csv, json, os, statistics, subprocess, sys, tempfile


def profile(binary, model, batch, threads, runs, env_off):
    env = dict(os.environ)
    if env_off:
        env["INFERA_INVERTED_RESIDUAL"] = "off"
    else:
        env.pop("INFERA_INVERTED_RESIDUAL", None)
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        cmd = [binary, "profile", model, "--batch", str(batch), "--csv", f.name]
        if threads:
            cmd += ["--threads", str(threads)]
        if runs:
            cmd += ["--runs", str(runs)]
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(f.name) as fh:
            return list(csv.DictReader(fh))


def blocks(on_rows, off_rows):
    """(label, fused ms, unfused ms) per fused step."""
    idx = {r["node"]: i for i, r in enumerate(off_rows)}
    out = []
    for r in on_rows:
        if r["op"] != "com.infera.InvertedResidual":
            continue
        proj = r["node"][: -len("/InvertedResidual")]
        j = idx.get(proj)
        if j is None:
            continue
        k = 3 if "expand" in r["kernel"] else 2
        off = sum(float(off_rows[i]["mean_ms"]) for i in range(j - k + 1, j + 1))
        label = r["kernel"].split("(", 1)[1].rstrip(")")
        out.append((proj, label, float(r["mean_ms"]), off))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    rounds = []
    for rd in range(a.rounds):
        res = {}
        for off in ((True, False) if rd % 2 == 0 else (False, True)):
            res[off] = profile(a.bin, a.model, a.batch, a.threads, a.runs, off)
        tot_on = sum(float(r["mean_ms"]) for r in res[False])
        tot_off = sum(float(r["mean_ms"]) for r in res[True])
        b = blocks(res[False], res[True])
        rounds.append({"total_on": tot_on, "total_off": tot_off, "blocks": b})
        print(f"round {rd + 1}: steps total off {tot_off:.3f} ms, on {tot_on:.3f} ms, ratio {tot_off / tot_on:.3f}",
              flush=True)
    print(f"{os.path.basename(a.model)} batch {a.batch}: median of per-round ratios (off/on) of the step totals "
          f"{statistics.median(r['total_off'] / r['total_on'] for r in rounds):.3f}")
    print(f"{'block':60s} {'shape':42s} {'off ms':>8s} {'on ms':>8s} {'ratio':>6s}")
    for i, (node, label, _, _) in enumerate(rounds[0]["blocks"]):
        offs = [r["blocks"][i][3] for r in rounds]
        ons = [r["blocks"][i][2] for r in rounds]
        ratio = statistics.median(o / n for o, n in zip(offs, ons))
        print(f"{node[-60:]:60s} {label[:42]:42s} {statistics.median(offs):8.3f} {statistics.median(ons):8.3f} "
              f"{ratio:6.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "batch": a.batch, "rounds": rounds}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
