#!/bin/bash
# One device call for int8 in the GPU backend (fifth session): the int8 kernel tests (mma.sync and
# the new wgmma s8 variants, bit-exact against the QConv reference), the unit tests (QConv / Q / DQ
# steps of the GPU backend against the reference), then ResNet-50 (PyTorch peer's export and fp16
# timings) quantized by `infera quantize` on the host CPU, its int8 outputs on the GPU against the
# CPU engine's, the plan, and `infera bench` of the int8 model against the float one at batch 1, 32,
# 256 in the same call; a per-layer profile of int8 b256; compute-sanitizer on the int8 kernels.
# Sixth session: the same script after the epilogue's per-thread channel parameters, the 2-stage
# wgmma variants and the int8 max pool.
# carry: .gpu-infera (stage.tar.xz, torch_peer.py) build-cuda/infera_gpu_kernel_tests
# Usage (on the GPU machine): bash bench/gpu/int8_gpu_run.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-570}
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
kt=$root/build-cuda/infera_gpu_kernel_tests
inf=$bin/infera

echo "== int8 kernel tests ($(left) s left)"
timeout 150 "$kt" --only int8 >"$out/kernels-int8.txt" 2>&1; echo "kernel tests exit $?"
grep -E "^(s8_|[0-9]+ variants|.*case\(s\) had no)|FAIL" "$out/kernels-int8.txt" | head -30

echo "== unit tests ($(left) s left)"
timeout 200 "$bin/infera_unit_tests" --gtest_brief=1 >"$out/unit.txt" 2>&1; echo "unit exit $?" | tee -a "$out/unit.txt"
grep -E "FAILED|PASSED|SKIPPED|Failure|exit" "$out/unit.txt" | head -30

echo "== resnet50: peer export + fp16 timings ($(left) s left)"
m=/tmp/resnet50.onnx q=/tmp/resnet50.int8.onnx
timeout 120 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1,32,256 --dtypes fp16 --export $m \
  >"$out/torch-resnet50.jsonl" 2>"$out/torch-resnet50.err"
cat "$out/torch-resnet50.jsonl"; tail -n 2 "$out/torch-resnet50.err"
python3 -c "import numpy as n; n.save('/tmp/calib.npy', n.random.default_rng(0).standard_normal((32,3,224,224)).astype('float32'))"
echo "== quantize on the host CPU ($(left) s left)"
t0=$SECONDS
timeout 150 "$inf" quantize $m --calibration /tmp/calib.npy -o $q --calib-method minmax 2>&1 | tail -n 3
echo "quantize took $((SECONDS - t0)) s"

echo "== int8 outputs: GPU (fp32 / fp16 float parts) vs the CPU engine ($(left) s left)"
for d in "cpu" "gpu --precision fp32" "gpu --precision fp16"; do
  dir=/tmp/o-${d// /_}; mkdir -p "$dir"
  timeout 60 "$inf" run $q --device $d --batch 8 --seed 3 --output-dir "$dir" --quiet 2>&1 | tail -n 2
done
python3 - <<'PY' | tee "$out/int8-compare.txt"
import glob, numpy as np
def load(d):
    f = sorted(glob.glob(d + "/*.npy")); return np.load(f[0]) if f else None
c = load("/tmp/o-cpu")
for name in ("gpu_--precision_fp32", "gpu_--precision_fp16"):
    g = load("/tmp/o-" + name)
    if c is None or g is None: print(name, "missing output"); continue
    err = np.abs(g - c).max() / max(np.abs(c).max(), 1e-12)
    print(f"{name}: max |gpu - cpu| / max |cpu| = {err:.3e}; top-1 agreement {np.mean(g.argmax(1) == c.argmax(1)):.3f} of {len(c)}")
PY
timeout 60 "$inf" info $q --device gpu --precision fp16 --plan --batch 256 >"$out/plan-int8-fp16-b256.txt" 2>&1
grep -cE "QConv" "$out/plan-int8-fp16-b256.txt"; grep -E "cpu|dnnl|ref" "$out/plan-int8-fp16-b256.txt" | head -8
grep -E "MaxPool|QuantizeLinear|DequantizeLinear" "$out/plan-int8-fp16-b256.txt" | cut -c1-160 | head -8

echo "== bench: float vs int8, fp16 ($(left) s left)"
for f in $m $q; do
  timeout 110 "$inf" bench $f --device gpu --precision fp16 --batch 1,32,256 --io device --warmup 10 --duration 1.5 \
    --json "$out/bench-$(basename $f .onnx).json" 2>&1 | tail -n 4
done
echo "== profile int8 b256 ($(left) s left)"
timeout 60 "$inf" profile $q --device gpu --precision fp16 --batch 256 --top 25 >"$out/profile-int8-b256.txt" 2>&1
head -n 45 "$out/profile-int8-b256.txt"
timeout 60 "$inf" profile $m --device gpu --precision fp16 --batch 256 --top 12 >"$out/profile-fp16-b256.txt" 2>&1
sed -n '/by op kind/,$p' "$out/profile-fp16-b256.txt"
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ -n $san ]] && (($(left) > 130)); then
  echo "== memcheck int8 kernels ($(left) s left)"
  timeout $(( $(left) - 15 )) "$san" --tool memcheck --error-exitcode 9 "$kt" --only int8 >"$out/memcheck.txt" 2>&1
  echo "memcheck exit $?"; grep -E "ERROR SUMMARY" "$out/memcheck.txt" | tail -1
fi
echo "done in $((SECONDS - start)) s"
