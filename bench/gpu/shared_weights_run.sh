#!/bin/bash
# One device call for the GPU backend's device constants in the session's packed store (issue 10:
# the plans of every batch size share one device copy of the weights): the unit tests on the GPU
# machine (UNIT=0 skips them), then ResNet-50 fp16 (exported by the PyTorch peer) with this build
# and a baseline build from before the change, alternating, on one perf db. `infera bench` keeps
# one plan at a time (each batch's memory figure is its own), so the sharing shows in
# `infera build --batch 1,32,256` and in loading that plan (`infera info`: one session, the three
# plans kept): wall time, peak device memory (nvidia-smi every 50 ms, idle subtracted), the reuse
# counts; then bench's run times, which the change should leave as they are.
# Usage (device tool, carry [".gpu-infera"] holding stage.tar.xz, base-infera.xz, torch_peer.py):
#   [UNIT=0] [ROUNDS=3] bash bench/gpu/shared_weights_run.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-540}
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format='git %h' 2>/dev/null
unpack_base
unit_tests
[ "${UNIT:-1}" = 0 ] ||
  "$bin/infera_unit_tests" --gtest_filter='GpuPackedWeights*:GpuGraphs*' 2>&1 | grep -E "^\[ +(OK|FAILED|SKIPPED) " | head

echo "== torch peer export, resnet50 ($(left) s left)"
m=/tmp/resnet50.onnx
timeout 120 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1 --dtypes fp16 --export $m \
  >"$out/torch-resnet50.jsonl" 2>"$out/torch-resnet50.err"
tail -n 2 "$out/torch-resnet50.err"

# One perf db for both builds (filled by this build): separate tunings pick different winners
# (87 vs 78 cuDNN layers in the first try of this script), which moves build and run times more
# than the change does.
work=$(mktemp -d /tmp/shared-w.XXXXXX)
export XDG_CACHE_HOME=$work/cache
gpu=(--device gpu --precision fp16)
timeout 120 "$bin/infera" bench $m "${gpu[@]}" --batch 1,32,256 --iterations 3 --warmup 1 --quiet >/dev/null 2>&1
idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n 1)
echo "idle device memory ${idle} MiB"
# Runs "$@" with nvidia-smi sampling; prints wall ms and the peak device memory over idle.
sampled() {
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 >"$work/mem.txt" &
  local smi=$! t0 t1
  t0=$(date +%s%N)
  "$@" >"$work/cmd.txt" 2>&1
  t1=$(date +%s%N)
  kill $smi; wait $smi 2>/dev/null
  echo "wall $(((t1 - t0) / 1000000)) ms, peak device memory $(($(sort -n "$work/mem.txt" | tail -n 1) - idle)) MiB over idle"
}
echo "== build of batch 1,32,256 into a plan, then its load (infera info: one session, the three plans kept) ($(left) s left)"
for r in $(seq "${ROUNDS:-3}"); do
  for v in base new; do
    b=$base; [ $v = new ] && b=$bin/infera
    echo "round $r $v build: $(sampled timeout 120 "$b" build $m -o $work/$v.iplan "${gpu[@]}" --batch 1,32,256)"
    grep -E "^batch" "$work/cmd.txt"
    echo "round $r $v info:  $(sampled timeout 120 "$b" info $work/$v.iplan)"
    grep -E "weights|packed" "$work/cmd.txt" | head -n 8
  done
done
echo "== bench, same perf db: run times unchanged? ($(left) s left)"
for r in 1 2; do
  for v in base new; do
    b=$base; [ $v = new ] && b=$bin/infera
    echo "round $r $v"
    timeout 120 "$b" bench $m "${gpu[@]}" --batch 1,32,256 --iterations 20 --warmup 3 2>&1 | grep -E "^ +(1|32|256) +[0-9]+ "
  done
done
echo "done in $((SECONDS - start)) s"
