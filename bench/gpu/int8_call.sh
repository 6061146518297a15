#!/bin/bash
# One device call for the GPU int8 kernels (tests/gpu/run_int8.sh: bit-exact tests, memcheck, fp16
# regression, s8 vs f16 on ResNet-50's layers) while fuzz_tensor_file runs on the spare cores.
# carry: .gpu-infera/stage.tar.xz .gpu-infera/fuzz.tar.xz build-cuda/infera_gpu_kernel_tests build-cuda/bench_conv
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-570}
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
. bench/gpu/fuzz_device.sh
FUZZ_BIN=fuzz_tensor_file fuzz_start "${FUZZ_S:-300}"
taskset -cp 0-3 $$ >/dev/null
OUT=$out/int8 BUDGET=$((total - 60)) bash tests/gpu/run_int8.sh "$root/build-cuda"
echo "== fuzz ($(left) s left)"
FUZZ_BIN=fuzz_tensor_file fuzz_stop
echo "done in $((SECONDS - start)) s"
