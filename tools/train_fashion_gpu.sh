#!/bin/bash
# Trains the Fashion-MNIST ResNet on the GPU machine (one device call; its venv's python3 and torch):
# the dataset travels in .gpu-train/data (carry [".gpu-train"]; copy the four .gz files of Debian's
# dataset-fashion-mnist there first). Writes $OUT/fashion_resnet.onnx and the training log.
# Usage: bash tools/train_fashion_gpu.sh [EPOCHS] [WIDTH]
set -euo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"
python3 tools/train_fashion_resnet.py --device cuda --data-dir .gpu-train/data --epochs "${1:-15}" \
  --width "${2:-16}" --out "$out" --data-out /tmp/fashion-data 2>&1 | grep -v Warning | tee "$out/train.log"
