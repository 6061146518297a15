#!/bin/bash
# One device call after the ConvNeXt pass changes (issue 13: MatMul of rank > 2 inputs as Gemm rows
# with GELU fused, Reshapes in place, Transpose channel moves): the unit tests on the GPU machine,
# tests/gpu/gpu_models.py (infera on the GPU against PyTorch fp32 on the CPU, fp32 and fp16,
# batch 1 and 3) for ConvNeXt-T, MobileNetV2 and ResNet-50, the step counts per backend, then
# ConvNeXt-T fp16 bench at batch 1 and 32, this build against a baseline build (base-infera.xz,
# from before the change), alternating, one perf db each.
# Usage (device tool, carry [".gpu-infera"] holding stage.tar.xz, base-infera.xz):
#   [UNIT=0] [MODELS=a,b] bash bench/gpu/convnext_gpu_run.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-540}
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
unpack_base
unit_tests
echo "== models on the GPU vs PyTorch ($(left) s left)"
PYTHONUNBUFFERED=1 timeout 240 python3 tests/gpu/gpu_models.py --infera "$bin/infera" --driver "$bin/session_driver" \
  --models "${MODELS:-convnext_tiny,mobilenet_v2,resnet50}" --json "$out/models.json" 2>&1 | grep -vE "^\s*$" | tail -n 30
m=/tmp/gpu-models/convnext_tiny.onnx
echo "== ConvNeXt-T fp16: base vs new ($(left) s left)"
for r in 1 2; do
  for v in base new; do
    b=$base; [ $v = new ] && b=$bin/infera
    echo "round $r $v"
    XDG_CACHE_HOME=/tmp/cache-$v timeout 100 "$b" bench $m --device gpu --precision fp16 --batch 1,32 --iterations 50 \
      --warmup 5 2>&1 | grep -E "^ +(1|32) +[0-9]+ "
  done
done
"$bin/infera" info $m --device gpu --precision fp16 --plan --batch 1 2>&1 | grep -iE "steps|backend" | head -n 6
"$base" info $m --device gpu --precision fp16 --plan --batch 1 2>&1 | grep -iE "steps|backend" | head -n 6
echo "done in $((SECONDS - start)) s"
