#!/bin/bash
# One device call (thirteenth session): the int8 epilogue without conversion instructions and the
# space-to-depth stem (int8 and fp16), against the build before them (base) in the same call.
#   1. kernel tests: the int8 suite (bit-exact QConv, every candidate) and the fp16 conv suite;
#   2. the GPU unit tests of QConv / stems / conv (backend level, against the reference);
#   3. bench_conv on ResNet-50's layers, int8 and fp16, new and base (per-layer A/B);
#   4. ResNet-50 exported by the PyTorch peer, quantized on the host CPU; int8 outputs GPU vs CPU;
#   5. infera bench int8 and fp16, new and base alternating, batch 1 / 32 / 256; the peer's fp16;
#   6. a per-layer profile of int8 at batch 256; memcheck of the int8 kernels if time is left.
# carry: .gpu-infera (stage.tar.xz, base-infera.xz, kt.xz, bench_conv.xz, base-bench_conv.xz,
#        torch_peer.py)
# Every log goes to results.tgz under $OUT (the device tool returns 8 files at most), the
# console's copy to log.txt.
# Usage (on the GPU machine): bash bench/gpu/int8_epilogue_run.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-570}
. tests/gpu/device_env.sh
dest=$out out=/tmp/results; mkdir -p "$out"
trap 'tar -C "$out" -czf "$dest/results.tgz" . 2>/dev/null' EXIT
exec > >(tee -a "$dest/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
unpack_base
for f in kt bench_conv base-bench_conv; do xz -dc .gpu-infera/$f.xz >/tmp/$f && chmod +x /tmp/$f; done
inf=$bin/infera shapes=tests/gpu/resnet50_conv_shapes.txt

echo "== kernel tests int8 + conv ($(left) s left)"
timeout 120 /tmp/kt --only int8 >"$out/kernels.txt" 2>&1; echo "int8 suite exit $?"
timeout 100 /tmp/kt --only conv >>"$out/kernels.txt" 2>&1; echo "conv suite exit $?"
grep -E "^(s8_|[0-9]+ variants|.*case\(s\) had no)|FAIL" "$out/kernels.txt" | head -40

echo "== unit tests: GPU conv / QConv / stems ($(left) s left)"
timeout 150 "$bin/infera_unit_tests" --gtest_brief=1 \
  --gtest_filter='QuantBackends.*:GpuConv.*:DnnlConv.*:GpuPackedWeights.*:NanSemantics.*:GpuBackend.*' \
  >"$out/unit.txt" 2>&1
echo "unit exit $?"; grep -E "FAILED|PASSED|Failure" "$out/unit.txt" | head -20
grep -A6 "Failure" "$out/unit.txt" | head -40

echo "== bench_conv per layer, new vs base ($(left) s left)"
for v in new base; do
  b=/tmp/bench_conv; [[ $v == base ]] && b=/tmp/base-bench_conv
  timeout 75 $b $shapes 1,256 "$out/s8-$v.csv" --dtype s8 >"$out/bench-s8-$v.txt" 2>&1
  echo "s8 $v exit $?"; grep -E "^batch " "$out/bench-s8-$v.txt"
done
timeout 70 /tmp/bench_conv $shapes 256 "$out/f16-new.csv" --dtype f16 --only conv1_s2d >"$out/bench-f16-stem.txt" 2>&1
timeout 70 /tmp/bench_conv $shapes 256 "$out/f16-conv1.csv" --dtype f16 --only conv1 >>"$out/bench-f16-stem.txt" 2>&1
grep -E "^batch " "$out/bench-f16-stem.txt"
python3 - "$out" <<'PY'
import csv, sys, collections
out = sys.argv[1]
def best(path):
    b = collections.OrderedDict()
    try:
        for r in csv.DictReader(open(path)):
            ms = float(r["ms"])
            k = (r["name"], int(r["batch"]))
            if ms > 0 and (k not in b or ms < b[k][0]): b[k] = (ms, r["candidate"], int(r["count"]))
    except FileNotFoundError: pass
    return b
n, o = best(out + "/s8-new.csv"), best(out + "/s8-base.csv")
tot = collections.Counter()
print(f"{'layer':20s} {'batch':>5s} {'base ms':>9s} {'new ms':>9s} {'x':>6s}  new winner")
for k, (ms, cand, cnt) in n.items():
    b = o.get(k)
    if b: tot[(k[1], 'new')] += ms * cnt; tot[(k[1], 'base')] += b[0] * cnt
    print(f"{k[0]:20s} {k[1]:5d} {b[0] if b else float('nan'):9.4f} {ms:9.4f} {(b[0] / ms) if b else float('nan'):6.2f}  {cand}")
for bt in sorted({k[0] for k in tot}):
    print(f"sum over the network's convs, batch {bt}: base {tot[(bt, 'base')]:.3f} ms, new {tot[(bt, 'new')]:.3f} ms")
PY

echo "== resnet50: peer export + fp16 timings ($(left) s left)"
m=/tmp/resnet50.onnx q=/tmp/resnet50.int8.onnx
timeout 120 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1,32,256 --dtypes fp16 --export $m \
  >"$out/torch-resnet50.jsonl" 2>"$out/torch-resnet50.err"
cat "$out/torch-resnet50.jsonl"
python3 -c "import numpy as n; n.save('/tmp/calib.npy', n.random.default_rng(0).standard_normal((32,3,224,224)).astype('float32'))"
timeout 100 "$inf" quantize $m --calibration /tmp/calib.npy -o $q --calib-method minmax 2>&1 | tail -n 1

echo "== int8 outputs: GPU vs the CPU engine ($(left) s left)"
for d in "cpu" "gpu --precision fp32" "gpu --precision fp16"; do
  dir=/tmp/o-${d// /_}; mkdir -p "$dir"
  timeout 60 "$inf" run $q --device $d --batch 8 --seed 3 --output-dir "$dir" --quiet 2>&1 | tail -n 2
done
mkdir -p /tmp/o-f16; timeout 60 "$inf" run $m --device gpu --precision fp16 --batch 8 --seed 3 --output-dir /tmp/o-f16 --quiet
mkdir -p /tmp/o-f32; timeout 60 "$inf" run $m --device cpu --batch 8 --seed 3 --output-dir /tmp/o-f32 --quiet
python3 - <<'PY' | tee "$out/compare.txt"
import glob, numpy as np
def load(d):
    f = sorted(glob.glob(d + "/*.npy")); return np.load(f[0]) if f else None
def cmp(a, b, name):
    x, y = load(a), load(b)
    if x is None or y is None: print(name, "missing output"); return
    err = np.abs(x - y).max() / max(np.abs(y).max(), 1e-12)
    print(f"{name}: max |a - b| / max |b| = {err:.3e}; top-1 agreement {np.mean(x.argmax(1) == y.argmax(1)):.3f} of {len(y)}")
cmp("/tmp/o-gpu_--precision_fp32", "/tmp/o-cpu", "int8 gpu (fp32 float parts) vs int8 cpu")
cmp("/tmp/o-gpu_--precision_fp16", "/tmp/o-cpu", "int8 gpu (fp16 float parts) vs int8 cpu")
cmp("/tmp/o-f16", "/tmp/o-f32", "fp16 gpu (space-to-depth stem) vs fp32 cpu")
PY
timeout 60 "$inf" info $q --device gpu --precision fp16 --plan --batch 256 >"$out/plan-int8-b256.txt" 2>&1
grep -E "conv1/Conv" "$out/plan-int8-b256.txt" | cut -c1-220

echo "== bench: int8 and fp16, new and base ($(left) s left)"
for f in $q $m; do
  for v in new base; do
    b=$inf; [[ $v == base ]] && b=$base
    n=$(basename $f .onnx)
    XDG_CACHE_HOME=/tmp/cache-$v timeout 100 "$b" bench $f --device gpu --precision fp16 --batch 1,32,256 --io device \
      --warmup 10 --duration 1.5 --json "$out/bench-$n-$v.json" >/dev/null 2>&1
    python3 -c "import json; d=json.load(open('$out/bench-$n-$v.json')); print('$n $v', [(r['batch'], round(r['latency_ms_p50'], 4)) for r in d['results']])" 2>&1 | tail -1
  done
done

echo "== profile int8 b256 ($(left) s left)"
XDG_CACHE_HOME=/tmp/cache-new timeout 60 "$inf" profile $q --device gpu --precision fp16 --batch 256 --top 20 \
  >"$out/profile-int8-b256.txt" 2>&1
sed -n '/^step/,/more steps/p' "$out/profile-int8-b256.txt" | cut -c1-200 | head -24
sed -n '/by op kind/,$p' "$out/profile-int8-b256.txt"
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ -n $san ]] && (($(left) > 100)); then
  echo "== memcheck int8 kernels ($(left) s left)"
  timeout $(($(left) - 10)) "$san" --tool memcheck --error-exitcode 9 /tmp/kt --only int8 >"$out/memcheck.txt" 2>&1
  echo "memcheck exit $?"; grep -E "ERROR SUMMARY" "$out/memcheck.txt" | tail -1
fi
echo "done in $((SECONDS - start)) s"
