#!/usr/bin/env python3
"""The model set on the GPU, against PyTorch on the CPU (run on the GPU machine, in its torch venv).

For each model of tests/models/export_models.py (same constructors, seed and BatchNorm calibration),
exports ONNX (TorchScript exporter), computes PyTorch float32 CPU outputs for a batch-1 and a batch-3
input, and runs both through ONE infera session on the GPU (session_driver) in FP32 and in FP16:
  - FP32: normalized error max|y - ref| / max|ref| <= 1e-4 (TF32 off);
  - FP16: normalized error <= max(1e-2, 1.5 x PyTorch's own FP16 error on the GPU, same inputs) and
    top-1 agreement with PyTorch FP32 >= 99% of the samples (the peer's FP16 error is printed too).
Also prints `infera info --device gpu --plan` step counts per backend (CPU fallbacks are visible).
Prints one line per check and `N passed, M failed`; writes a JSON summary with --json.

  python3 tests/gpu/gpu_models.py --infera BIN --driver BIN [--models a,b] [--work DIR] [--json F]
"""
import argparse, copy, json, os, re, subprocess, sys, time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import export_models as em  # noqa: E402  (MODELS, calibrate_batchnorm)


def norm_err(y, ref):
    if y.shape != ref.shape:
        return float("inf")
    if not np.all(np.isfinite(y)) and np.all(np.isfinite(ref)):
        return float("inf")
    return float(np.max(np.abs(y.astype(np.float64) - ref)) / max(1e-6, float(np.max(np.abs(ref)))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--infera", required=True)
    ap.add_argument("--driver", required=True)
    ap.add_argument("--models", default=",".join(em.MODELS))
    ap.add_argument("--work", default="/tmp/gpu-models")
    ap.add_argument("--json", default="")
    ap.add_argument("--batches", default="1,3")
    ap.add_argument("--precisions", default="fp32,fp16", help="of fp32, fp16, tf32 (fp32 storage, TF32 math)")
    ap.add_argument("--no-vendor-libs", action="store_true", help="our kernels only (no cuDNN / cuBLASLt)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    batches = [int(b) for b in a.batches.split(",")]
    passed = failed = 0
    summary = []
    for name in a.models.split(","):
        t0 = time.time()
        torch.manual_seed(0)
        model = em.MODELS[name]().eval()
        em.calibrate_batchnorm(model, 224)
        path = os.path.join(a.work, name + ".onnx")
        with torch.no_grad():
            torch.onnx.export(model, torch.randn(1, 3, 224, 224), path, opset_version=13, input_names=["input"],
                              output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                              do_constant_folding=True, dynamo=False)
        runs, refs, torch16 = [], [], []
        half = copy.deepcopy(model).half().cuda() if torch.cuda.is_available() else None
        for b in batches:
            x = np.random.default_rng(b).standard_normal((b, 3, 224, 224), dtype=np.float32)
            p = os.path.join(a.work, "%s_b%d.npy" % (name, b))
            np.save(p, x)
            with torch.no_grad():
                refs.append(model(torch.from_numpy(x)).numpy().astype(np.float64))
                if half is not None:
                    y16 = half(torch.from_numpy(x).half().cuda()).float().cpu().numpy()
                    torch16.append(norm_err(y16, refs[-1]))
            runs.append("input=" + p)
        # The first input twice more: the second run of a run context captures a GPU graph, the
        # third replays it; both must give the first run's bits.
        runs += [runs[0], runs[0]]
        info = subprocess.run([a.infera, "info", path, "--device", "gpu", "--plan", "--batch", "1"] +
                              (["--no-vendor-libs"] if a.no_vendor_libs else []), capture_output=True, text=True)
        steps = re.search(r"steps\s+(.*)", info.stdout)
        row = {"model": name, "plan": steps.group(1) if steps else info.stderr.strip()[-200:]}
        for prec in a.precisions.split(","):
            out = os.path.join(a.work, "out_%s_%s" % (name, prec))
            flags = ["--precision", "fp32", "--tf32"] if prec == "tf32" else ["--precision", prec]
            if a.no_vendor_libs:
                flags.append("--no-vendor-libs")
            p = subprocess.run([a.driver, path, out] + runs + ["--device", "gpu"] + flags, capture_output=True, text=True)
            if p.returncode != 0:
                print("FAIL %-20s %s: session_driver exit %d: %s" % (name, prec, p.returncode, p.stderr.strip()[-300:]))
                failed += 1
                row[prec] = {"error": p.stderr.strip()[-300:]}
                continue
            errs, agree, total = [], 0, 0
            for k, b in enumerate(batches):
                y = np.load(os.path.join(out, "run%d" % k, "output.npy"))
                errs.append(norm_err(y, refs[k]))
                agree += int(np.sum(np.argmax(y, axis=1) == np.argmax(refs[k], axis=1)))
                total += b
            first = np.load(os.path.join(out, "run0", "output.npy"))
            graphed = all(np.array_equal(np.load(os.path.join(out, "run%d" % k, "output.npy")), first)
                          for k in (len(batches), len(batches) + 1))
            err = max(errs)
            peer16 = max(torch16) if torch16 else float("nan")
            tol = 1e-4 if prec == "fp32" else max(1e-2, 1.5 * peer16 if torch16 else 1e-2)
            ok = err <= tol and (prec == "fp32" or agree >= 0.99 * total) and graphed
            if not graphed:
                print("FAIL %-20s %s: the captured / replayed GPU graph runs differ from the first run" % (name, prec))
            passed += ok
            failed += not ok
            row[prec] = {"norm_err": err, "tol": tol, "top1_agree": "%d/%d" % (agree, total)}
            if prec == "fp16":
                row[prec]["torch_fp16_norm_err"] = peer16
            print("%s %-20s %s: norm_err %.3g (tol %.3g%s), top-1 %d/%d vs PyTorch fp32, batches %s in one session" % (
                "PASS" if ok else "FAIL", name, prec, err, tol,
                ", PyTorch fp16 %.3g" % peer16 if prec == "fp16" else "", agree, total, a.batches), flush=True)
        print("     %-20s plan at batch 1: %s (%.0f s)" % (name, row["plan"], time.time() - t0), flush=True)
        summary.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
