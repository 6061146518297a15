#!/bin/bash
# A short device call after a change (about 2 min): the GPU OOM case alone, the other unit tests, the
# ONNX node tests on the GPU and the Python GPU tests (tests/python/run_gpu_device.sh; stage both first).
# Usage (device tool, carry [".gpu-infera"]): bash tests/gpu/final_check.sh
set -u
stage=.gpu-infera/stage.tar.xz total=130
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
git log -1 --format='git %h' 2>/dev/null
timeout 40 "$bin/infera_unit_tests" --gtest_filter='GpuSession*' 2>&1 | grep -E "OK|FAILED|out of memory|Failure|PASSED" | head -8
timeout 50 "$bin/infera_unit_tests" --gtest_filter='-GpuSession*' --gtest_brief=1 2>&1 | grep -E "FAILED|PASSED|SKIPPED|Failure" | head -10
nd=/tmp/nt; mkdir -p $nd; tar -C $nd -xJf .gpu-infera/node-tests.tar.xz
timeout 15 "$bin/infera" check $nd/distinct --device gpu --skip-file $nd/skips.txt --quiet 2>&1 | tail -n 3
OUT=$out timeout $(( $(left) - 5 )) bash tests/python/run_gpu_device.sh 2>&1 | tail -n 15
echo "done in $((SECONDS - start)) s"
