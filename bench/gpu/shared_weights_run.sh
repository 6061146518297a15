#!/bin/bash
# One device call for the GPU backend's device constants in the session's packed store (issue 10:
# the plans of every batch size share one device copy of the weights): the unit tests on the GPU
# machine, then ResNet-50 fp16 (exported by the PyTorch peer) benched at batch 1,32,256 in one
# process by this build and by a baseline build from before the change, alternating, each with its
# own warm perf db: the process's peak device memory (nvidia-smi sampled every 50 ms, the idle
# figure subtracted), each batch's build ms and throughput, the packed-weights counts; then a
# saved plan of the three batch sizes loaded by both (bench/plan_load.sh with OLD_INFERA).
# Usage (device tool, carry [".gpu-infera"] holding stage.tar.xz, base-infera.xz, torch_peer.py):
#   [ROUNDS=3] bash bench/gpu/shared_weights_run.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-540}
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format='git %h' 2>/dev/null
base=/tmp/base-infera
xz -dc .gpu-infera/base-infera.xz >"$base" && chmod +x "$base"

echo "== unit ($(left) s left)"
timeout 170 stdbuf -oL "$bin/infera_unit_tests" --gtest_brief=1 >"$out/unit.txt" 2>&1; echo "unit exit $?" >>"$out/unit.txt"
grep -E "FAILED|PASSED|SKIPPED|exit" "$out/unit.txt" | tail -n 12
grep -B2 -A8 "Failure" "$out/unit.txt" | head -n 40
"$bin/infera_unit_tests" --gtest_filter='GpuPackedWeights*:GpuGraphs*' 2>&1 | grep -E "^\[ +(OK|FAILED|SKIPPED) " | head

echo "== torch peer export, resnet50 ($(left) s left)"
m=/tmp/resnet50.onnx
timeout 120 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1 --dtypes fp16 --export $m \
  >"$out/torch-resnet50.jsonl" 2>"$out/torch-resnet50.err"
tail -n 2 "$out/torch-resnet50.err"

echo "== bench batch 1,32,256 fp16 in one process: base vs new ($(left) s left)"
work=$(mktemp -d /tmp/shared-w.XXXXXX)
flags=(--device gpu --precision fp16 --batch 1,32,256 --iterations 20 --warmup 3)
for v in base new; do  # warm perf dbs
  b=$base; [ $v = new ] && b=$bin/infera
  XDG_CACHE_HOME=$work/cache-$v timeout 120 "$b" bench $m "${flags[@]}" --quiet >/dev/null 2>&1
done
idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n 1)
echo "idle device memory ${idle} MiB"
for r in $(seq "${ROUNDS:-3}"); do
  for v in base new; do
    b=$base; [ $v = new ] && b=$bin/infera
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 >"$work/mem.txt" &
    smi=$!
    t0=$(date +%s%N)
    XDG_CACHE_HOME=$work/cache-$v timeout 120 "$b" bench $m "${flags[@]}" --verbose >"$work/$v-$r.txt" 2>&1
    t1=$(date +%s%N)
    kill $smi; wait $smi 2>/dev/null
    peak=$(sort -n "$work/mem.txt" | tail -n 1)
    echo "round $r $v: wall $(((t1 - t0) / 1000000)) ms, peak device memory $((peak - idle)) MiB over idle"
    grep -E "^ +(1|32|256) +[0-9]+ " "$work/$v-$r.txt"
    grep -E "packed weights|^plan memory" "$work/$v-$r.txt"
  done
done
cp "$work"/new-1.txt "$out/bench-new-1.txt"; cp "$work"/base-1.txt "$out/bench-base-1.txt"

echo "== saved plan of batch 1,32,256: load, new vs base ($(left) s left)"
FLAGS="--device gpu --precision fp16" timeout 200 bash bench/plan_load.sh $m 3 1,32,256 "$bin/infera" "$base"
echo "done in $((SECONDS - start)) s"
