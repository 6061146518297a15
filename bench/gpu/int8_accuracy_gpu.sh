#!/bin/bash
# One device call: the Fashion-MNIST int8 accuracy table (bench/int8_accuracy.sh) on the GPU and on
# the GPU machine's CPU, from the same binaries. Data: .gpu-infera/fashion/{test,calib}_{images,labels}.npy
# (made here from Debian's dataset-fashion-mnist as tools/train_fashion_resnet.py selects them).
# carry: .gpu-infera (stage.tar.xz, fashion/)
# Usage (on the GPU machine): bash bench/gpu/int8_accuracy_gpu.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-400}
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for dev in gpu cpu; do
  echo "== $dev ($(left) s left)"
  DEVICE=$dev INFERA=$bin/infera timeout $(( $(left) / 2 )) bash bench/int8_accuracy.sh \
    examples/fashion/fashion_resnet.onnx .gpu-infera/fashion | tee "$out/fashion-$dev.md"
done
echo "done in $((SECONDS - start)) s"
