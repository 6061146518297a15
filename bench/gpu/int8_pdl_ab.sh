#!/bin/bash
# One device call (sixteenth session): programmatic dependent launch's grid gate, A/B in one binary.
# ResNet-50 int8 (exported by the PyTorch peer, quantized here); one perf db searched first and then
# shared by every run, so only the launch mode differs: INFERA_GPU_PDL = 0 (off) / 1 / 2 / 4 blocks
# per multiprocessor as the largest grid launched as a dependent; rounds alternate the settings.
# carry: .gpu-infera (stage.tar.xz, kt.xz, torch_peer.py). Usage: bash bench/gpu/int8_pdl_ab.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-200}
. tests/gpu/device_env.sh
dest=$out out=/tmp/results; mkdir -p "$out"
trap 'tar -C "$out" -czf "$dest/results.tgz" . 2>/dev/null' EXIT
exec > >(tee -a "$dest/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
inf=$bin/infera
xz -dc .gpu-infera/kt.xz >/tmp/kt && chmod +x /tmp/kt
echo "== kernel tests int8 ($(left) s left)"
timeout 60 /tmp/kt --only int8 >"$out/kernels.txt" 2>&1; echo "int8 suite exit $?"; tail -n 1 "$out/kernels.txt"
m=/tmp/resnet50.onnx q=/tmp/resnet50.int8.onnx
timeout 90 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1 --dtypes fp16 --export $m >"$out/torch.jsonl" 2>&1
python3 -c "import numpy as n; n.save('/tmp/calib.npy', n.random.default_rng(0).standard_normal((32,3,224,224)).astype('float32'))"
timeout 100 "$inf" quantize $m --calibration /tmp/calib.npy -o $q --calib-method minmax 2>&1 | tail -n 1
echo "== search once ($(left) s left)"
XDG_CACHE_HOME=/tmp/cache timeout 100 "$inf" bench $q --device gpu --precision fp16 --batch 1,32,256 --io device \
  --warmup 5 --duration 0.5 >/dev/null 2>&1
echo "== A/B ($(left) s left)"
for round in 1 2 3; do
  for v in 0 1 2 4; do
    (($(left) < 15)) && break 2
    INFERA_GPU_PDL=$v XDG_CACHE_HOME=/tmp/cache timeout 60 "$inf" bench $q --device gpu --precision fp16 --batch 1,32,256 \
      --io device --warmup 10 --duration 1.0 --json "$out/pdl$v-r$round.json" >/dev/null 2>&1
    python3 -c "import json; d=json.load(open('$out/pdl$v-r$round.json')); print('PDL=$v r$round', [(r['batch'], round(r['latency_ms_p50'], 4)) for r in d['results']])" 2>&1 | tail -1
  done
done
echo "done in $((SECONDS - start)) s"
