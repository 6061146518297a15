#!/bin/bash
# Issue 11's smoke test: each model of the model set quantized by `infera quantize` (minmax,
# calibrated on random inputs) and its top-1 agreement with the float model on other random
# inputs (labels = the float model's own argmax). Random inputs say nothing about accuracy on
# images; the test shows that every architecture quantizes, runs as int8 and stays near its float
# self. Prints one markdown row per model: agreement, the int8 Conv steps, the time of each part.
# Usage: bash bench/int8_agreement.sh [MODELS_DIR] [N_IMAGES]   (defaults: models, 32)
set -uo pipefail
cd "$(dirname "$0")/.."
INFERA=${INFERA:-build/infera}
MODELS=${1:-models}
N=${2:-32}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$work" "$N" <<'PY'
import sys, numpy as np
w, n = sys.argv[1], int(sys.argv[2])
r = np.random.default_rng(0)
np.save(w + "/images.npy", r.standard_normal((n, 3, 224, 224)).astype(np.float32))
np.save(w + "/calib.npy", r.standard_normal((16, 3, 224, 224)).astype(np.float32))
PY
echo "| model | top-1 agreement int8 vs fp32 | int8 conv steps | quantize s | eval s |"
echo "| --- | ---: | ---: | ---: | ---: |"
for m in "$MODELS"/*.onnx; do
  name=$(basename "$m" .onnx)
  d=$work/$name; mkdir -p "$d"
  if ! "$INFERA" run "$m" --input "$work/images.npy" --output-dir "$d" >/dev/null 2>"$d/err"; then
    echo "| $name | run failed: $(head -c 120 "$d/err") | | | |"; continue
  fi
  /usr/bin/python3 -c "import numpy as np,glob; y=np.load(sorted(glob.glob('$d/*.npy'))[0]); np.save('$d/labels.npy', y.reshape(y.shape[0], -1).argmax(1).astype(np.int64))"
  t0=$(date +%s.%N)
  if ! "$INFERA" quantize "$m" --calibration "$work/calib.npy" --batch 8 -o "$d/q.onnx" >/dev/null 2>"$d/err"; then
    echo "| $name | quantize failed: $(head -c 160 "$d/err") | | | |"; continue
  fi
  t1=$(date +%s.%N)
  last=$("$INFERA" eval "$d/q.onnx" --images "$work/images.npy" --labels "$d/labels.npy" --batch 8 2>"$d/err" | tail -1)
  t2=$(date +%s.%N)
  qconv=$("$INFERA" info "$d/q.onnx" --batch 1 --plan 2>/dev/null | grep -c "QConv")
  echo "| $name | $(sed -E 's/^top1=([0-9.]+).*/\1/' <<<"$last") | $qconv | $(printf %.1f "$(echo "$t1 - $t0" | bc)") | $(printf %.1f "$(echo "$t2 - $t1" | bc)") |"
done
