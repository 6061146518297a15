#!/usr/bin/env bash
# Builds the vendor-library adapters (src/backends/gpu/dnn.cpp, blas.cpp) with the kernel library
# and links their test (vendor_test) and timing table (bench_vendor) against cuDNN 9 and cuBLASLt.
# Standalone until the backend's CMake wiring; the flags and object folder are build_cuda.sh's, so
# the two scripts share the kernel objects.
#   tests/gpu/build_vendor.sh [out-dir]      (JOBS=2 by default; CUDNN_LIB / CUDNN_INCLUDE override)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build-gpu-cuda}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
jobs=${JOBS:-2}
cuda_lib=$(dirname "$(dirname "$nvcc")")/lib64
cudnn_lib=${CUDNN_LIB:-$cuda_lib}
cudnn_inc=${CUDNN_INCLUDE:-$(dirname "$(dirname "$nvcc")")/include}
[[ -f $cudnn_inc/cudnn.h ]] || { echo "build_vendor.sh: no cudnn.h in $cudnn_inc (set CUDNN_INCLUDE)" >&2; exit 1; }
mkdir -p "$out/obj"
flags=(-std=c++20 -O3 -DINFERA_GPU_CUDA -DINFERA_HAVE_CUDNN -I"$root/src" -I"$cudnn_inc"
  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
  -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror)
export nvcc out root
export flags_str="${flags[*]}"
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
  [[ $src == */src/backends/gpu/*.cpp ]] && f="-x cu $f"  # as CMake compiles the GPU sources: CUDA
  # shellcheck disable=SC2086
  "$nvcc" $f -MMD -MF "$dep" -c "$src" -o "$obj"
}
export -f compile
lib=("$root"/src/backends/gpu/kernels/*.cu "$root/src/backends/gpu/dnn.cpp" "$root/src/backends/gpu/blas.cpp")
mains=("$root/tests/gpu/vendor_test.cpp" "$root/tests/gpu/bench_vendor.cpp")
printf '%s\n' "${lib[@]}" "${mains[@]}" | xargs -P "$jobs" -I{} bash -c 'compile {}'
libobj=()
for s in "${lib[@]}"; do libobj+=("$out/obj/$(basename "${s%.*}").o"); done
libs=(-L"$cudnn_lib" -L"$cuda_lib" -lcudnn -lcublasLt)
for m in vendor_test bench_vendor; do
  "$nvcc" "${flags[@]}" -cudart static -o "$out/$m" "${libobj[@]}" "$out/obj/$m.o" "${libs[@]}"
done
echo "built $out/vendor_test $out/bench_vendor"
