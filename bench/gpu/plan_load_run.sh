#!/bin/bash
# One device call after the packed-weights change (issue 10): the unit tests on the GPU machine
# (GPU backend cases included), then ResNet-50 (exported by the PyTorch peer) saved as an fp16 GPU
# plan and its load timed against the ONNX model with a warm perf db (bench/plan_load.sh, fresh
# processes alternating; with and without vendor libraries), plus one verbose load of the plan and
# of a CPU fp32 plan (what is packed).
# Usage (device tool, carry [".gpu-infera"] holding stage.tar.xz and torch_peer.py):
#   [QUICK=1] [CPU_ROUNDS=N] bash bench/gpu/plan_load_run.sh [TOTAL_S]   (QUICK: no --no-vendor-libs rerun)
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-400}
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format='git %h' 2>/dev/null

unit_tests

echo "== torch peer export, resnet50 ($(left) s left)"
m=/tmp/resnet50.onnx
timeout 120 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1 --dtypes fp16 --export $m \
  >"$out/torch-resnet50.jsonl" 2>"$out/torch-resnet50.err"
tail -n 2 "$out/torch-resnet50.err"; cat "$out/torch-resnet50.jsonl"

echo "== load: fp16 GPU plan vs ONNX, batch 1 ($(left) s left)"
FLAGS="--device gpu --precision fp16" timeout 150 bash bench/plan_load.sh $m 5 1 "$bin/infera"
if [ -z "${QUICK:-}" ]; then
  echo "== load: the same without vendor libraries (cuDNN / cuBLASLt's share of the build) ($(left) s left)"
  FLAGS="--device gpu --precision fp16 --no-vendor-libs" timeout 120 bash bench/plan_load.sh $m 3 1 "$bin/infera"
fi
echo "== load: fp32 CPU plan vs ONNX on this host's CPU, batch 1 ($(left) s left)"
timeout 100 bash bench/plan_load.sh $m "${CPU_ROUNDS:-3}" 1 "$bin/infera"

echo "== verbose loads ($(left) s left)"
export XDG_CACHE_HOME=/tmp/plcache
"$bin/infera" build $m -o /tmp/g.iplan --device gpu --precision fp16 --batch 1 | tail -n 2
"$bin/infera" bench /tmp/g.iplan --batch 1 --iterations 1 --warmup 0 --verbose 2>&1 | grep -E "packed weights|perf db" | head
"$bin/infera" info /tmp/g.iplan | grep -E "saved plan|packed|weights|one run"
"$bin/infera" build $m -o /tmp/c.iplan --batch 1 | tail -n 1
"$bin/infera" bench /tmp/c.iplan --batch 1 --iterations 1 --warmup 0 --verbose 2>&1 | grep -E "packed weights" | head
echo "done in $((SECONDS - start)) s"
