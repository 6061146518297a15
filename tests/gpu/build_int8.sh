#!/usr/bin/env bash
# After the CMake CUDA build (cmake -S . -B build-cuda -DINFERA_GPU=cuda && cmake --build build-cuda),
# links the conv micro-benchmark (tests/gpu/bench_conv.cpp, which has --dtype s8) against that
# build's libinfera.a with the link line CMake made for infera_gpu_kernel_tests, so the device
# script (run_int8.sh) needs only these two binaries:
#   build-cuda/infera_gpu_kernel_tests   build-cuda/bench_conv
#   tests/gpu/build_int8.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-cuda}
cd "$build"
[[ -f infera_gpu_kernel_tests && -f libinfera.a ]] || { echo "build_int8: build $build first (-DINFERA_GPU=cuda)" >&2; exit 1; }
if [[ -f CMakeFiles/infera_gpu_kernel_tests.dir/link.txt ]]; then  # Makefiles
  link=$(cat CMakeFiles/infera_gpu_kernel_tests.dir/link.txt)
else  # Ninja: the target's last command is its link
  link=$(ninja -t commands infera_gpu_kernel_tests | tail -n 1)
fi
c++ -std=c++20 -O3 -DINFERA_GPU_CUDA -I"$root/src" -I"$root/include" -I/usr/local/cuda/include -c "$root/tests/gpu/bench_conv.cpp" \
  -o bench_conv.o
# The same line with bench_conv.o for the test objects and bench_conv as the output.
link=$(sed -e 's#CMakeFiles/infera_gpu_kernel_tests.dir/tests/gpu/[^ ]*\.o##g' -e 's#-o infera_gpu_kernel_tests#bench_conv.o -o bench_conv#' <<< "$link")
eval "$link"
strip bench_conv
echo "built $build/bench_conv"
