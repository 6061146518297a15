#!/bin/bash
# One device call: int8 ResNet-50 new vs base (an earlier build, .gpu-infera/base-infera.xz) in the
# same call. First written for the persistent small-K kernel (s8_conv_nhwc_implicit_gemm_mma_*_persist;
# fifteenth / sixteenth sessions), reused for the one-launch split-K (sixteenth). Leanest order first
# (device starts are scarce):
#   1. the int8 kernel tests (bit-exact QConv, every candidate, split-K launched twice);
#   2. bench_conv per layer (new: every candidate);
#   3. ResNet-50 exported by the PyTorch peer, quantized here; infera bench int8 (new, base) and
#      fp16 (new), batch 1 / 32 / 256; the peer's fp16;
#   4. GPU unit tests of QConv / conv / copies / the channel shuffle; int8 outputs GPU vs CPU;
#   5. per-step profiles at b1 and b256, memcheck of the int8 kernel tests if time is left.
# carry: .gpu-infera (stage.tar.xz, base-infera.xz, kt.xz, bench_conv.xz, torch_peer.py)
# Usage (on the GPU machine): bash bench/gpu/int8_persist_run.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-300}
. tests/gpu/device_env.sh
dest=$out out=/tmp/results; mkdir -p "$out"
trap 'tar -C "$out" -czf "$dest/results.tgz" . 2>/dev/null' EXIT
exec > >(tee -a "$dest/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
unpack_base
for f in kt bench_conv; do xz -dc .gpu-infera/$f.xz >/tmp/$f && chmod +x /tmp/$f; done
inf=$bin/infera shapes=tests/gpu/resnet50_conv_shapes.txt

echo "== kernel tests int8 ($(left) s left)"
timeout 150 /tmp/kt --only int8 >"$out/kernels.txt" 2>&1; echo "int8 suite exit $?"
grep -E "^(s8_|[0-9]+ variants|.*case\(s\) had no)|FAIL" "$out/kernels.txt" | head -40

echo "== bench_conv per layer, new ($(left) s left)"
timeout 90 /tmp/bench_conv $shapes 1,256 "$out/s8-new.csv" --dtype s8 >"$out/bench-s8-new.txt" 2>&1
echo "s8 new exit $?"; grep -E "^batch " "$out/bench-s8-new.txt"
python3 - "$out" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1] + "/s8-new.csv")))
best, bestold = {}, {}
for r in rows:
    ms = float(r["ms"]); k = (r["name"], int(r["batch"]))
    if ms <= 0: continue
    if k not in best or ms < best[k][0]: best[k] = (ms, r["candidate"], int(r["count"]))
    if "persist" not in r["candidate"] and (k not in bestold or ms < bestold[k][0]): bestold[k] = (ms, r["candidate"])
tot = collections.Counter()
for k, (ms, cand, cnt) in best.items():
    o = bestold.get(k, (float("nan"), "-"))
    tot[(k[1], "all")] += ms * cnt; tot[(k[1], "old")] += o[0] * cnt
    print(f"{k[0]:20s} {k[1]:4d} best {ms:.4f} {cand:50s} without persist {o[0]:.4f} x{cnt}")
for b in sorted({k[0] for k in tot}):
    print(f"batch {b}: conv sum {tot[(b, 'all')]:.3f} ms, without the persistent kernel {tot[(b, 'old')]:.3f} ms")
PY

echo "== resnet50: export, quantize, peer fp16 ($(left) s left)"
m=/tmp/resnet50.onnx q=/tmp/resnet50.int8.onnx
timeout 120 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1,32,256 --dtypes fp16 --export $m \
  >"$out/torch-resnet50.jsonl" 2>"$out/torch-resnet50.err"
cat "$out/torch-resnet50.jsonl"
python3 -c "import numpy as n; n.save('/tmp/calib.npy', n.random.default_rng(0).standard_normal((32,3,224,224)).astype('float32'))"
timeout 100 "$inf" quantize $m --calibration /tmp/calib.npy -o $q --calib-method minmax 2>&1 | tail -n 1

echo "== bench: int8 new / base alternating, fp16 new ($(left) s left)"
# nopdl: the new binary with INFERA_GPU_PDL=0 (programmatic dependent launch off: the A/B of that).
for round in 1 2; do
  for v in new nopdl base; do
    b=$inf; [[ $v == base ]] && b=$base
    pdl=1; [[ $v == nopdl ]] && pdl=0
    INFERA_GPU_PDL=$pdl XDG_CACHE_HOME=/tmp/cache-$v timeout 100 "$b" bench $q --device gpu --precision fp16 --batch 1,32,256 --io device \
      --warmup 10 --duration 1.5 --json "$out/bench-int8-$v-$round.json" >/dev/null 2>&1
    python3 -c "import json; d=json.load(open('$out/bench-int8-$v-$round.json')); print('int8 $v r$round', [(r['batch'], round(r['latency_ms_p50'], 4)) for r in d['results']])" 2>&1 | tail -1
  done
done
XDG_CACHE_HOME=/tmp/cache-new timeout 100 "$inf" bench $m --device gpu --precision fp16 --batch 1,32,256 --io device \
  --warmup 10 --duration 1.5 --json "$out/bench-fp16-new.json" >/dev/null 2>&1
python3 -c "import json; d=json.load(open('$out/bench-fp16-new.json')); print('fp16 new', [(r['batch'], round(r['latency_ms_p50'], 4)) for r in d['results']])" 2>&1 | tail -1

echo "== unit tests ($(left) s left)"
timeout 90 "$bin/infera_unit_tests" --gtest_brief=1 \
  --gtest_filter='QuantBackends.*:GpuConv.*:GpuBackend.*:MemOps.*:ChannelShuffle*:NanSemantics.*' >"$out/unit.txt" 2>&1
echo "unit exit $?"; grep -E "FAILED|PASSED|Failure" "$out/unit.txt" | head -20
grep -A6 "Failure" "$out/unit.txt" | head -30

echo "== int8 outputs: GPU vs the CPU engine ($(left) s left)"
for d in "cpu" "gpu --precision fp16"; do
  dir=/tmp/o-${d// /_}; mkdir -p "$dir"
  XDG_CACHE_HOME=/tmp/cache-new timeout 60 "$inf" run $q --device $d --batch 8 --seed 3 --output-dir "$dir" --quiet 2>&1 | tail -n 2
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

echo "== profile int8 b1 ($(left) s left)"
XDG_CACHE_HOME=/tmp/cache-new timeout 60 "$inf" profile $q --device gpu --precision fp16 --batch 1 --top 70 \
  >"$out/profile-int8-b1.txt" 2>&1
sed -n '/by op kind/,$p' "$out/profile-int8-b1.txt"
echo "== profile int8 b256 ($(left) s left)"
XDG_CACHE_HOME=/tmp/cache-new timeout 60 "$inf" profile $q --device gpu --precision fp16 --batch 256 --top 24 \
  >"$out/profile-int8-b256.txt" 2>&1
sed -n '/^step/,/more steps/p' "$out/profile-int8-b256.txt" | cut -c1-220 | head -26
sed -n '/by op kind/,$p' "$out/profile-int8-b256.txt"
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ -n $san ]] && (($(left) > 60)); then
  echo "== memcheck int8 kernels ($(left) s left)"
  timeout $(($(left) - 10)) "$san" --tool memcheck --error-exitcode 9 /tmp/kt --only int8 >"$out/memcheck.txt" 2>&1
  echo "memcheck exit $?"; grep -E "ERROR SUMMARY" "$out/memcheck.txt" | tail -1
fi
echo "done in $((SECONDS - start)) s"
