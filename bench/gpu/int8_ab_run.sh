#!/bin/bash
# One device call: two infera builds (A, B) on ResNet-50 int8, alternating A B A B in the same call
# (each with its own perf db, so each build searches its own candidates), plus the fp16 model once
# for the ratio. Sixth session: A = without the 2-stage mma s8 variants, B = with them.
# carry: .gpu-infera (stage.tar.xz = B, stage-A.tar.xz = A, torch_peer.py)
# Usage (on the GPU machine): bash bench/gpu/int8_ab_run.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-300}
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
binB=$bin; binA=/tmp/infera-stage-A; rm -rf "$binA"; mkdir -p "$binA"; tar -C "$binA" -xJf .gpu-infera/stage-A.tar.xz
m=/tmp/resnet50.onnx q=/tmp/resnet50.int8.onnx
timeout 120 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1 --dtypes fp16 --export $m >/dev/null 2>&1
python3 -c "import numpy as n; n.save('/tmp/calib.npy', n.random.default_rng(0).standard_normal((32,3,224,224)).astype('float32'))"
timeout 150 "$binB/infera" quantize $m --calibration /tmp/calib.npy -o $q --calib-method minmax 2>&1 | tail -n 1
for round in 1 2; do
  for v in A B; do
    b=$binA; [[ $v == B ]] && b=$binB
    echo "== round $round build $v ($(left) s left)"
    XDG_CACHE_HOME=/tmp/cache-$v timeout 100 "$b/infera" bench $q --device gpu --precision fp16 --batch 1,32,256 \
      --io device --warmup 10 --duration 1.5 --json "$out/bench-int8-$v-$round.json" 2>&1 | grep -E "^ *(1|32|256) " | head -3
    python3 -c "import json; d=json.load(open('$out/bench-int8-$v-$round.json')); print('$v', [(r['batch'], round(r['latency_ms_p50'], 4)) for r in d['results']])"
  done
done
echo "== fp16 ($(left) s left)"
XDG_CACHE_HOME=/tmp/cache-B timeout 100 "$binB/infera" bench $m --device gpu --precision fp16 --batch 1,32,256 --io device \
  --warmup 10 --duration 1.5 --json "$out/bench-fp16.json" >/dev/null 2>&1
python3 -c "import json; d=json.load(open('$out/bench-fp16.json')); print('fp16', [(r['batch'], round(r['latency_ms_p50'], 4)) for r in d['results']])"
echo "done in $((SECONDS - start)) s"
