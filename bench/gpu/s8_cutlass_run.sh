#!/bin/bash
# One device call (seventeenth session): the CUTLASS 3 int8 candidates (kernels/s8_cutlass.h) measured
# beside our own int8 kernels, leanest order first (device starts are scarce):
#   1. the int8 kernel tests (every candidate bit-exact against the double reference, CUTLASS's included);
#   2. bench_conv per layer, every candidate (CUTLASS's and ours), batch 1 / 32 / 256;
#   3. ResNet-50 exported by the PyTorch peer, quantized here; infera bench int8 with CUTLASS (default)
#      and ours only (--no-vendor-libs: the issue's "portable kernel alone"), fp16; the peer's fp16;
#   4. the probes (CUTLASS with a float epilogue vs the exact one; cuBLASLt's int8 GEMM), a profile at
#      b256, GPU unit tests of QConv, memcheck of the int8 kernel tests if time is left.
# carry: .gpu-infera (stage.tar.xz, kt.xz, bench_conv.xz, s8_cutlass_probe.xz, s8_blaslt_probe.xz, torch_peer.py)
# Usage (on the GPU machine): bash bench/gpu/s8_cutlass_run.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-300}
. tests/gpu/device_env.sh
dest=$out out=/tmp/results; mkdir -p "$out"
trap 'tar -C "$out" -czf "$dest/results.tgz" . 2>/dev/null' EXIT
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
for f in kt bench_conv s8_cutlass_probe s8_blaslt_probe; do xz -dc .gpu-infera/$f.xz >/tmp/$f && chmod +x /tmp/$f; done
inf=$bin/infera shapes=tests/gpu/resnet50_conv_shapes.txt

echo "== kernel tests int8 ($(left) s left)"
timeout 150 /tmp/kt --only int8 >"$out/kernels.txt" 2>&1; echo "int8 suite exit $?"
grep -E "^(s8_|[0-9]+ variants|.*case\(s\) had no)|FAIL" "$out/kernels.txt" | head -40

echo "== bench_conv per layer ($(left) s left)"
timeout 150 /tmp/bench_conv $shapes 1,32,256 "$out/s8.csv" --dtype s8 >"$out/bench-s8.txt" 2>&1
echo "bench_conv exit $?"
python3 - "$out" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1] + "/s8.csv")))
best, ours = {}, {}
for r in rows:
    ms = float(r["ms"]); k = (r["name"], int(r["batch"]))
    if ms <= 0: continue
    if k not in best or ms < best[k][0]: best[k] = (ms, r["candidate"], int(r["count"]))
    if "cutlass" not in r["candidate"] and (k not in ours or ms < ours[k][0]): ours[k] = (ms, r["candidate"])
tot = collections.Counter()
for k in sorted(best, key=lambda k: (k[1], k[0])):
    ms, cand, cnt = best[k]; o = ours.get(k, (float("nan"), "-"))
    tot[(k[1], "best")] += ms * cnt; tot[(k[1], "ours")] += o[0] * cnt
    print(f"{k[0]:20s} {k[1]:4d} best {ms:.4f} {cand:42s} ours {o[0]:.4f} {o[1]:42s} {o[0] / ms:5.2f}x x{cnt}")
for b in sorted({k[0] for k in tot}):
    print(f"batch {b}: conv sum best {tot[(b, 'best')]:.3f} ms, ours only {tot[(b, 'ours')]:.3f} ms")
PY

echo "== resnet50: export, quantize, peer fp16 ($(left) s left)"
m=/tmp/resnet50.onnx q=/tmp/resnet50.int8.onnx
timeout 120 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1,32,256 --dtypes fp16 --export $m \
  >"$out/torch-resnet50.jsonl" 2>"$out/torch-resnet50.err"
cat "$out/torch-resnet50.jsonl"
python3 -c "import numpy as n; n.save('/tmp/calib.npy', n.random.default_rng(0).standard_normal((32,3,224,224)).astype('float32'))"
timeout 100 "$inf" quantize $m --calibration /tmp/calib.npy -o $q --calib-method minmax 2>&1 | tail -n 1

echo "== bench: int8 with CUTLASS / ours only, alternating; fp16 ($(left) s left)"
for round in 1 2; do
  for v in cutlass ours; do
    flag=""; [[ $v == ours ]] && flag=--no-vendor-libs
    XDG_CACHE_HOME=/tmp/cache-$v timeout 120 "$inf" bench $q --device gpu --precision fp16 --batch 1,32,256 --io device \
      --warmup 10 --duration 1.5 $flag --json "$out/bench-int8-$v-$round.json" >/dev/null 2>"$out/bench-int8-$v-$round.err"
    python3 -c "import json; d=json.load(open('$out/bench-int8-$v-$round.json')); print('int8 $v r$round', [(r['batch'], round(r['latency_ms_p50'], 4), round(r.get('throughput_per_s', 0))) for r in d['results']])" 2>&1 | tail -1
  done
done
XDG_CACHE_HOME=/tmp/cache-cutlass timeout 100 "$inf" bench $m --device gpu --precision fp16 --batch 1,32,256 --io device \
  --warmup 10 --duration 1.5 --json "$out/bench-fp16.json" >/dev/null 2>&1
python3 -c "import json; d=json.load(open('$out/bench-fp16.json')); print('fp16', [(r['batch'], round(r['latency_ms_p50'], 4)) for r in d['results']])" 2>&1 | tail -1

echo "== int8 outputs: GPU (CUTLASS) vs the CPU engine ($(left) s left)"
for d in "cpu" "gpu --precision fp16"; do
  dir=/tmp/o-${d// /_}; mkdir -p "$dir"
  XDG_CACHE_HOME=/tmp/cache-cutlass timeout 60 "$inf" run $q --device $d --batch 8 --seed 3 --output-dir "$dir" --quiet 2>&1 | tail -n 2
done
python3 - <<'PY' | tee "$out/compare.txt"
import glob, numpy as np
def load(d):
    f = sorted(glob.glob(d + "/*.npy")); return np.load(f[0]) if f else None
x, y = load("/tmp/o-gpu_--precision_fp16"), load("/tmp/o-cpu")
if x is None or y is None: print("missing output")
else:
    err = np.abs(x - y).max() / max(np.abs(y).max(), 1e-12)
    print(f"int8 gpu vs int8 cpu: max |a - b| / max |b| = {err:.3e}; top-1 agreement {np.mean(x.argmax(1) == y.argmax(1)):.3f} of {len(y)}")
PY

echo "== profile int8 b256 ($(left) s left)"
XDG_CACHE_HOME=/tmp/cache-cutlass timeout 60 "$inf" profile $q --device gpu --precision fp16 --batch 256 --top 60 \
  >"$out/profile-int8-b256.txt" 2>&1
sed -n '/^step/,/more steps/p' "$out/profile-int8-b256.txt" | cut -c1-230 | head -30
sed -n '/by op kind/,$p' "$out/profile-int8-b256.txt"

if (($(left) > 150)); then
  echo "== probes ($(left) s left)"
  timeout 80 /tmp/s8_cutlass_probe $shapes 256 10 >"$out/cutlass-probe.txt" 2>&1; echo "cutlass probe exit $?"
  grep -E "l1_|l3_1x1_256_1024|batch" "$out/cutlass-probe.txt" | head -40
  timeout 40 /tmp/s8_blaslt_probe $shapes 256 10 >"$out/blaslt-probe.txt" 2>&1; echo "blaslt probe exit $?"
  grep -E "l1_|sum" "$out/blaslt-probe.txt" | head -20
fi

echo "== unit tests ($(left) s left)"
timeout 90 "$bin/infera_unit_tests" --gtest_brief=1 \
  --gtest_filter='QuantBackends.*:GpuConv.*:GpuBackend.*:NanSemantics.*' >"$out/unit.txt" 2>&1
echo "unit exit $?"; grep -E "FAILED|PASSED|Failure" "$out/unit.txt" | head -20
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ -n $san ]] && (($(left) > 60)); then
  echo "== memcheck int8 kernels ($(left) s left)"
  timeout $(($(left) - 10)) "$san" --tool memcheck --error-exitcode 9 /tmp/kt --only int8 >"$out/memcheck.txt" 2>&1
  echo "memcheck exit $?"; grep -E "ERROR SUMMARY" "$out/memcheck.txt" | tail -1
fi
echo "done in $((SECONDS - start)) s"
