#!/bin/bash
# The int8 accuracy table of issue 11 on the CPU: the Fashion-MNIST ResNet (tools/train_fashion_resnet.py)
# evaluated by `infera eval` on the 10k test set in fp32 and in int8 for each calibration method
# (calibrated on 1,000 training images). Prints one markdown row per precision.
# Usage: bash bench/int8_accuracy.sh [MODEL] [DATA_DIR]   (defaults: examples/fashion/fashion_resnet.onnx build/fashion)
set -euo pipefail
cd "$(dirname "$0")/.."
INFERA=${INFERA:-build/infera}
MODEL=${1:-examples/fashion/fashion_resnet.onnx}
DATA=${2:-build/fashion}
[ -f "$DATA/test_images.npy" ] || { echo "no $DATA/test_images.npy: run tools/train_fashion_resnet.py --data-out $DATA" >&2; exit 1; }
run() {  # LABEL ARGS...: the top1=/top5= of infera eval's last line
  local label=$1; shift
  local last
  last=$("$INFERA" eval "$MODEL" --images "$DATA/test_images.npy" --labels "$DATA/test_labels.npy" --batch 100 "$@" | tail -1)
  echo "| $label | $(sed -E 's/^top1=([0-9.]+) top5=([0-9.]+).*/\1 | \2/' <<<"$last") |"
}
echo "| precision | top-1 | top-5 |"
echo "| --- | ---: | ---: |"
run fp32
for m in minmax percentile:99.99 entropy; do
  run "int8 ($m)" --precision int8 --calibration "$DATA/calib_images.npy" --calib-method "$m"
done
for b in 0.02 0.005; do
  run "mixed (budget $b)" --precision mixed --calibration "$DATA/calib_images.npy" --accuracy-budget "$b"
done
