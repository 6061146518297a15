#!/bin/bash
# One device call after com.infera.FusedBatchNorm (issue 13: DenseNet's BatchNormalization + Relu as one
# step; on the GPU the activation joins batchnorm_affine's pointwise pass): the unit tests and the GPU
# kernel tests (test_pointwise's BatchNorm + Relu case) on the GPU machine, tests/gpu/gpu_models.py
# (infera on the GPU against PyTorch fp32 on the CPU, fp32 and fp16) for DenseNet-121 and ResNet-50,
# then DenseNet-121 fp16 at batch 1 / 32 / 256: this build against the baseline build (base-infera.xz,
# from before the change), alternating, one perf db for both, and the PyTorch peer in the same call.
# Usage (device tool, carry [".gpu-infera"] holding stage.tar.xz, base-infera.xz, kernel-tests.xz):
#   [UNIT=0] bash bench/gpu/densenet_bn_run.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-560}
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
unpack_base
unit_tests
echo "== GPU kernel tests ($(left) s left)"
xz -dc .gpu-infera/kernel-tests.xz >/tmp/kernel-tests && chmod +x /tmp/kernel-tests
timeout 120 /tmp/kernel-tests >"$out/kernel.txt" 2>&1
echo "kernel tests exit $?"; grep -iE "fail|batchnorm|passed|summary" "$out/kernel.txt" | tail -n 8
echo "== models on the GPU vs PyTorch ($(left) s left)"
PYTHONUNBUFFERED=1 timeout 200 python3 tests/gpu/gpu_models.py --infera "$bin/infera" --driver "$bin/session_driver" \
  --models densenet121,resnet50 --json "$out/models.json" 2>&1 | grep -vE "^\s*$" | tail -n 20
m=/tmp/gpu-models/densenet121.onnx
echo "== DenseNet-121 fp16: base vs new, one perf db ($(left) s left)"
for r in 1 2; do
  for v in base new; do
    b=$base; [ $v = new ] && b=$bin/infera
    echo "round $r $v"
    XDG_CACHE_HOME=/tmp/cache-ab timeout 120 "$b" bench $m --device gpu --precision fp16 --batch 1,32,256 \
      --iterations 50 --warmup 5 2>&1 | grep -E "^ +(1|32|256) +[0-9]+ "
  done
done
"$bin/infera" info $m --device gpu --precision fp16 --plan --batch 1 2>&1 | grep -iE "steps|backend" | head -n 6
"$base" info $m --device gpu --precision fp16 --plan --batch 1 2>&1 | grep -iE "steps|backend" | head -n 6
echo "== PyTorch peer, DenseNet-121 fp16 ($(left) s left)"
[ "$(left)" -gt 60 ] && timeout $(($(left) - 20)) python3 .gpu-infera/torch_peer.py --model densenet121 \
  --batches 1,32,256 --dtypes fp16 2>&1 | grep -E '^\{' | tee "$out/torch.jsonl"
echo "done in $((SECONDS - start)) s"
