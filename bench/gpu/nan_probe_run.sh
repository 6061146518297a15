#!/bin/bash
# One device call after the cuDNN NaN probe (Choice::keeps_nan, gpu_conv.cpp): the unit tests on the GPU
# machine; NanSemantics.ActivationsFusedIntoConvKeepNaN alone, fresh perf db, 3 times; the multi-device
# throughput test on gpu:0,gpu:0 3 times as built and 3 times with CUDA_MODULE_LOADING=EAGER (is the
# "operation not permitted when stream is capturing" of the first call a lazy module load during another
# engine's capture?); ResNet-50 fp16 build time and speed, this build against base-infera.xz, one fresh
# perf db each (the probe runs during the search).
# Usage (device tool, carry [".gpu-infera"] holding stage.tar.xz, base-infera.xz, torch_peer.py):
#   bash bench/gpu/nan_probe_run.sh [TOTAL_S]
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-540}
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
unpack_base
unit_tests
echo "== the NaN test alone, fresh perf db each ($(left) s left)"
for i in 1 2 3; do
  XDG_CACHE_HOME=/tmp/nan-$i timeout 90 "$bin/infera_unit_tests" --gtest_filter='NanSemantics.ActivationsFusedIntoConvKeepNaN' \
    2>&1 | grep -E "OK|FAILED  \]|normalized" | head -n 3
done
echo "== multi-device throughput, gpu:0,gpu:0 ($(left) s left)"
for mode in default EAGER; do
  for i in 1 2 3; do
    env $([ $mode = EAGER ] && echo CUDA_MODULE_LOADING=EAGER) timeout 60 "$bin/infera_unit_tests" \
      --gtest_filter='MultiDevice.ThroughputModeDealsWholeRunsAndEachEqualsOneSession' 2>&1 |
      grep -E "^\[ +(OK|FAILED) +\]|capturing" | sort | uniq -c | head -n 3 | sed "s/^/$mode $i: /"
  done
done
if [ ! -f /tmp/gpu-models/resnet50.onnx ]; then
  mkdir -p /tmp/gpu-models
  timeout 120 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1 --dtypes fp16 \
    --export /tmp/gpu-models/resnet50.onnx >/dev/null 2>&1
fi
m=/tmp/gpu-models/resnet50.onnx
echo "== ResNet-50 fp16: build (fresh perf db) and speed, base vs new ($(left) s left)"
for v in base new; do
  b=$base; [ $v = new ] && b=$bin/infera
  s0=$SECONDS
  XDG_CACHE_HOME=/tmp/cache-$v timeout 150 "$b" bench $m --device gpu --precision fp16 --batch 1,256 --iterations 50 \
    --warmup 5 2>&1 | grep -E "^ +(1|256) +[0-9]+ "
  echo "$v: bench with a cold perf db took $((SECONDS - s0)) s"
done
echo "done in $((SECONDS - start)) s"
