"""Joins bench_conv's and bench_torch_conv's CSVs into a markdown table with ratios
(cuDNN ms / ours ms: above 1 means ours is faster) and the ResNet-50 totals.
  python3 compare_conv.py OURS_CSV TORCH_CSV"""
import csv
import sys
from collections import defaultdict


def main():
    ours = defaultdict(list)
    for r in csv.DictReader(open(sys.argv[1])):
        if float(r["ms"]) > 0:
            ours[(r["name"], int(r["batch"]))].append(r)
    torch = {(r["name"], int(r["batch"])): r for r in csv.DictReader(open(sys.argv[2]))}
    batches = sorted({b for _, b in torch})
    for batch in batches:
        print(f"\n### batch {batch}\n")
        print("| layer | n | ours best | ms | TFLOP/s | cuDNN ms | TFLOP/s | ratio | mix ms |")
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
        tot_o = tot_t = tot_mix = 0.0
        for (name, b), t in torch.items():
            if b != batch:
                continue
            cands = ours.get((name, b), [])
            if not cands:
                print(f"| {name} | {t['count']} | (none) | | | {float(t['ms']):.4f} | {t['tflops']} | | |")
                continue
            best = min(cands, key=lambda r: float(r["ms"]))
            mo, mt = float(best["ms"]), float(t["ms"])
            n = int(t["count"])
            tot_o += n * mo
            tot_t += n * mt
            tot_mix += n * min(mo, mt)
            label = best["candidate"].replace("f16_conv_nhwc_implicit_gemm_mma_", "igemm_")
            if int(best["splits"]) > 1:
                label += f" (x{best['splits']})"
            print(f"| {name} | {n} | {label} | {mo:.4f} | {float(best['tflops']):.1f} | {mt:.4f} | "
                  f"{float(t['tflops']):.1f} | {mt / mo:.2f} | {min(mo, mt):.4f} |")
        print(f"| **ResNet-50 convs (53)** | | | **{tot_o:.3f}** | | **{tot_t:.3f}** | | **{tot_t / tot_o:.2f}** "
              f"| **{tot_mix:.3f}** |")
        print(f"\nours alone / best mix = {tot_mix / tot_o:.2f} (target >= 0.7)")


if __name__ == "__main__":
    main()
