#!/usr/bin/env bash
# Builds the GPU kernel library with nvcc and links its test and micro-benchmark (standalone;
# the CMake option -DINFERA_GPU=cuda comes with the GPU backend). sm_80 and sm_90 machine code
# plus compute_90 PTX, static CUDA runtime, warnings as errors.
#   tests/gpu/build_cuda.sh [out-dir]      (JOBS=2 by default)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build-gpu-cuda}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
jobs=${JOBS:-2}
mkdir -p "$out/obj"
flags=(-std=c++20 -O3 -DINFERA_GPU_CUDA -I"$root/src"
  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
  -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror)
export nvcc out root
export flags_str="${flags[*]}"
# Hopper-only kernels (*_sm90.cu): sm_90a machine code only (wgmma needs the "a" target).
export flags_sm90="-std=c++20 -O3 -DINFERA_GPU_CUDA -I$root/src -gencode arch=compute_90a,code=sm_90a -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror"
compile() {  # source -> object, only when the source or a header it includes (its .d file) is newer
  local src=$1 obj dep h
  obj="$out/obj/$(basename "${src%.*}").o"
  dep="${obj%.o}.d"
  if [[ -f $obj && -f $dep && $obj -nt $src ]]; then
    local stale=0
    for h in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$dep"); do
      if [[ $h -nt $obj ]]; then stale=1; break; fi
    done
    [[ $stale == 0 ]] && return 0
  fi
  echo "nvcc $src"
  local f=$flags_str
  [[ $src == *_sm90.cu ]] && f=$flags_sm90
  # shellcheck disable=SC2086
  "$nvcc" $f -MMD -MF "$dep" -c "$src" -o "$obj"
}
export -f compile
lib=("$root"/src/backends/gpu/kernels/*.cu)
tests=("$root"/tests/gpu/test_*.cpp)
printf '%s\n' "${lib[@]}" "${tests[@]}" "$root/tests/gpu/bench_conv.cpp" "$root/tests/gpu/bench_memops.cpp" | xargs -P "$jobs" -I{} bash -c 'compile {}'
libobj=()
for s in "${lib[@]}"; do libobj+=("$out/obj/$(basename "${s%.*}").o"); done
testobj=()
for s in "${tests[@]}"; do testobj+=("$out/obj/$(basename "${s%.*}").o"); done
"$nvcc" "${flags[@]}" -cudart static -o "$out/test_kernels" "${libobj[@]}" "${testobj[@]}"
"$nvcc" "${flags[@]}" -cudart static -o "$out/bench_conv" "${libobj[@]}" "$out/obj/bench_conv.o"
"$nvcc" "${flags[@]}" -cudart static -o "$out/bench_memops" "${libobj[@]}" "$out/obj/bench_memops.o"
echo "built $out/test_kernels $out/bench_conv $out/bench_memops"
