#!/bin/bash
# One device call that validates and benchmarks the GPU build (run on the GPU machine):
#   1. doctor; the unit tests (backend-conformance cases on the GPU, cuDNN / cuBLASLt candidates on);
#   2. ResNet-50: PyTorch peer (eager, eager + CUDA graph; same weights, exported by the peer) and
#      infera bench, fp32 / tf32 / fp16 at batch 1, 32, 256 (device-resident I/O, as the peer),
#      then fp16 with our kernels only (--no-vendor-libs) and fp16 b256 with host I/O;
#   3. the model set (tests/gpu/gpu_models.py: FP32 / FP16 vs PyTorch, graph replay);
#   4. MobileNetV2 / EfficientNet-B0 fp16 b1 / b256 with their peer, if time is left;
#   5. with COMPILE=BATCHES: torch.compile (max-autotune-no-cudagraphs) + CUDA graph of ResNet-50 fp16
#      at those batches, before phase 4 (minutes of autotuning: it gets what time is left, less 20 s).
# MODELS=0 skips phase 3 (tests/gpu/validate_device.sh validates without benchmarking).
# Every phase has a time limit; results go to $OUT as they come.
# Usage: bash bench/gpu/final_run.sh STAGE_TARBALL PEER_PY [TOTAL_S]
set -u
stage=${1:?stage tarball}; peer=${2:?torch_peer.py}; total=${3:-520}
. "$(dirname "$0")/../../tests/gpu/device_env.sh"
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
  ldd "$bin/infera" | grep -E "cudnn|cublas|not found"
  "$bin/infera" doctor
} >"$out/doctor.txt" 2>&1
grep -E "H200|cuDNN|not found" "$out/doctor.txt" | head -5

echo "== unit ($(left) s left)"
timeout 150 "$bin/infera_unit_tests" --gtest_brief=1 >"$out/unit.txt" 2>&1; echo "unit exit $?" >>"$out/unit.txt"
grep -E "FAILED|PASSED|SKIPPED|exit" "$out/unit.txt" | tail -n 15

echo "== resnet50 ($(left) s left)"
timeout 150 python3 "$peer" --model resnet50 --batches 1,32,256 --dtypes fp32,tf32,fp16 \
  --export /tmp/resnet50.onnx >"$out/torch-resnet50.jsonl" 2>"$out/torch-resnet50.err"
tail -n 2 "$out/torch-resnet50.err"; cat "$out/torch-resnet50.jsonl"
for p in fp32 tf32 fp16; do
  flags=(--precision "$p"); [ "$p" = tf32 ] && flags=(--precision fp32 --tf32)
  timeout 100 "$bin/infera" bench /tmp/resnet50.onnx --device gpu "${flags[@]}" --batch 1,32,256 --io device \
    --warmup 10 --duration 1.5 --json "$out/infera-resnet50-$p.json" 2>&1 | tail -n 4
done
timeout 60 "$bin/infera" bench /tmp/resnet50.onnx --device gpu --precision fp16 --batch 1,256 --io device \
  --no-vendor-libs --warmup 10 --duration 1.5 --json "$out/infera-resnet50-fp16-ours.json" 2>&1 | tail -n 3
timeout 40 "$bin/infera" bench /tmp/resnet50.onnx --device gpu --precision fp16 --batch 256 --io host \
  --warmup 5 --duration 1.5 --json "$out/infera-resnet50-fp16-hostio.json" 2>&1 | tail -n 2
timeout 40 "$bin/infera" info /tmp/resnet50.onnx --device gpu --precision fp16 --plan --batch 256 \
  >"$out/plan-resnet50-fp16-b256.txt" 2>&1

echo "== models ($(left) s left)"
lim=$(( $(left) - 70 )); ((lim > 200)) && lim=200
[ "${MODELS:-1}" = 0 ] && lim=0
if ((lim > 30)); then
  PYTHONUNBUFFERED=1 timeout "$lim" python3 "$root/tests/gpu/gpu_models.py" --infera "$bin/infera" \
    --driver "$bin/session_driver" --json "$out/models.json" >"$out/models.txt" 2>&1
  grep -E "^(PASS|FAIL)|plan at|passed" "$out/models.txt" | grep -v "^PASS" | head -40
fi

if [ -n "${COMPILE:-}" ]; then
  echo "== torch.compile resnet50 fp16 batches $COMPILE ($(left) s left)"
  PYTHONUNBUFFERED=1 timeout $(( $(left) - 20 )) python3 "$peer" --model resnet50 --batches "$COMPILE" \
    --dtypes fp16 --compile >"$out/torch-compile-resnet50.jsonl" 2>"$out/torch-compile-resnet50.err"
  echo "torch.compile exit $?"; cat "$out/torch-compile-resnet50.jsonl"; tail -n 3 "$out/torch-compile-resnet50.err"
fi
echo "== mobilenet_v2 / efficientnet_b0 ($(left) s left)"
for m in mobilenet_v2 efficientnet_b0; do
  (($(left) < 45)) && { echo "no time left for $m"; break; }
  timeout 40 python3 "$peer" --model "$m" --batches 1,256 --dtypes fp16 --export "/tmp/$m.onnx" \
    >"$out/torch-$m.jsonl" 2>/dev/null
  cat "$out/torch-$m.jsonl"
  timeout 30 "$bin/infera" bench "/tmp/$m.onnx" --device gpu --precision fp16 --batch 1,256 --io device \
    --warmup 10 --duration 1 --json "$out/infera-$m-fp16.json" 2>&1 | tail -n 2
done
echo "done in $((SECONDS - start)) s"
