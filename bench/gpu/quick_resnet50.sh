#!/bin/bash
# A quick look at ResNet-50 on the GPU machine: infera bench (fp32, fp16) and PyTorch eager / eager +
# CUDA graph (no torch.compile) from ../shared/peers/torch_peer.py, same weights. Output under $OUT.
# Usage (on the GPU machine, stage from tests/gpu/stage.sh): bash bench/gpu/quick_resnet50.sh STAGE_DIR PEER
set -uo pipefail
bin=${1:?stage dir}; peer=${2:?torch_peer.py}; out=${OUT:-/tmp/out}
python3 "$peer" --model resnet50 --batches 1,32,256 --dtypes fp32,fp16 --export /tmp/resnet50.onnx 2>/dev/null \
  | tee "$out/torch.jsonl"
for p in fp32 fp16; do
  "$bin/infera" bench /tmp/resnet50.onnx --device gpu --precision "$p" --batch 1,32,256 --warmup 5 --duration 2 \
    --json "$out/infera-$p.json" 2>&1 | tail -n 6
done
