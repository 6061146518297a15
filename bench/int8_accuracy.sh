#!/bin/bash
# The int8 accuracy table of issue 11 on the CPU: the Fashion-MNIST ResNet (tools/train_fashion_resnet.py)
# evaluated by `infera eval` on the 10k test set in fp32 and in int8 for each calibration method
# (calibrated on 1,000 training images). Prints one markdown row per precision.
# DEVICE=gpu runs every row on the GPU (adds fp16; int8/mixed keep their float layers in fp16 there);
# a mixed row with a top-1 budget joins when DATA_DIR has calib_labels.npy.
# Usage: [DEVICE=cpu|gpu] bash bench/int8_accuracy.sh [MODEL] [DATA_DIR]   (defaults: examples/fashion/fashion_resnet.onnx build/fashion)
set -euo pipefail
cd "$(dirname "$0")/.."
INFERA=${INFERA:-build/infera}
MODEL=${1:-examples/fashion/fashion_resnet.onnx}
DATA=${2:-build/fashion}
[ -f "$DATA/test_images.npy" ] || { echo "no $DATA/test_images.npy: run tools/train_fashion_resnet.py --data-out $DATA" >&2; exit 1; }
run() {  # LABEL ARGS...: the top1=/top5= of infera eval's last line
  local label=$1; shift
  local last
  last=$("$INFERA" eval "$MODEL" --images "$DATA/test_images.npy" --labels "$DATA/test_labels.npy" --batch 100 \
    --device "${DEVICE:-cpu}" "$@" | tail -1)
  echo "| $label | $(sed -E 's/^top1=([0-9.]+) top5=([0-9.]+).*/\1 | \2/' <<<"$last") |"
}
echo "| precision | top-1 | top-5 |"
echo "| --- | ---: | ---: |"
run fp32
[[ ${DEVICE:-cpu} == gpu* ]] && run fp16 --precision fp16
for m in minmax percentile:99.99 entropy; do
  run "int8 ($m)" --precision int8 --calibration "$DATA/calib_images.npy" --calib-method "$m"
done
for b in 0.02 0.005; do
  run "mixed (budget $b)" --precision mixed --calibration "$DATA/calib_images.npy" --accuracy-budget "$b"
done
if [ -f "$DATA/calib_labels.npy" ]; then
  run "mixed (top-1 budget 0.2 points, entropy)" --precision mixed --calibration "$DATA/calib_images.npy" \
    --calib-method entropy --calib-labels "$DATA/calib_labels.npy" --accuracy-budget 0.2
fi
