#!/bin/bash
# One device call: issue 10's build-time targets for ResNet-50 fp16 on the GPU (one batch size; cold
# with search <= 30 s, warm <= 2 s). Each figure is a fresh `infera bench` process: the plan's
# "build ms" (the table's build column: making the plan, the search or the perf-db lookups
# included) and the process wall (start, ONNX load, build, the short timed runs, exit). Cold = an
# empty perf db (batch 256, then batch 1 into it); warm = the db the cold runs filled, three processes each at batch 256 and batch 1.
# Usage (device tool, carry [".gpu-infera"] holding stage.tar.xz and torch_peer.py):
#   bash bench/gpu/build_time_run.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-400}
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
m=/tmp/resnet50.onnx
timeout 120 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1 --dtypes fp16 --export $m \
  >"$out/torch-resnet50.jsonl" 2>"$out/torch-resnet50.err" || tail -n 3 "$out/torch-resnet50.err"
export XDG_CACHE_HOME=/tmp/build-time-cache
rm -rf "$XDG_CACHE_HOME"
one() {  # batch label
  local t0 t1
  t0=$(date +%s%N)
  timeout 150 "$bin/infera" bench $m --device gpu --precision fp16 --batch "$1" --iterations 5 --warmup 1 --verbose \
    >/tmp/bt.txt 2>&1
  t1=$(date +%s%N)
  printf "%-22s batch %-4s build ms %8s  process wall %6d ms  (%s)\n" "$2" "$1" \
    "$(grep -E "^ +$1 +[0-9]+ " /tmp/bt.txt | awk '{print $(NF-1)}')" $(((t1 - t0) / 1000000)) \
    "$(grep -E "perf db .*choices" /tmp/bt.txt | sed 's/.*: //')"
}
echo "== cold (empty perf db, search) ($(left) s left)"
one 256 cold
one 1 cold
for r in 1 2 3; do one 256 "warm $r"; done
for r in 1 2 3; do one 1 "warm $r"; done
echo "done in $((SECONDS - start)) s"
