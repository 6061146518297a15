#!/usr/bin/env bash
# Compiles the same kernel sources with hipcc for gfx908 (MI100), gfx90a (MI200) and gfx1030
# (RX 6800), warnings as errors, links the test and benchmark, and checks the disassembly: the
# fp16 implicit GEMM must use v_mfma on gfx908/gfx90a and v_dot2 on gfx1030. Compile-only here:
# no AMD GPU is available, nothing of this build has been run.
#   tests/gpu/build_hip.sh [out-dir]      (JOBS=2 by default)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build-gpu-hip}
jobs=${JOBS:-2}
mkdir -p "$out/obj"
export root out
export flags_str="-std=c++20 -O3 -DINFERA_GPU_HIP -I$root/src --offload-arch=gfx908 --offload-arch=gfx90a --offload-arch=gfx1030 -Wall -Wextra -Werror"
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
  echo "hipcc $src"
  # shellcheck disable=SC2086
  hipcc $flags_str -x hip -MMD -MF "$dep" -c "$src" -o "$obj" 2> >(grep -v -e rocm_agent_enumerator -e Traceback -e 'File "' -e 'target_list' -e 'readFromKFD' -e 'main()' -e '^    ' >&2)
}
export -f compile
lib=("$root"/src/backends/gpu/kernels/*.cu)
tests=("$root"/tests/gpu/test_*.cpp)
printf '%s\n' "${lib[@]}" "${tests[@]}" "$root/tests/gpu/bench_conv.cpp" "$root/tests/gpu/bench_memops.cpp" | xargs -P "$jobs" -I{} bash -c 'compile {}'
libobj=()
for s in "${lib[@]}"; do libobj+=("$out/obj/$(basename "${s%.*}").o"); done
testobj=()
for s in "${tests[@]}"; do testobj+=("$out/obj/$(basename "${s%.*}").o"); done
# shellcheck disable=SC2086
hipcc $flags_str -o "$out/test_kernels" "${libobj[@]}" "${testobj[@]}" 2>/dev/null
# shellcheck disable=SC2086
hipcc $flags_str -o "$out/bench_conv" "${libobj[@]}" "$out/obj/bench_conv.o" 2>/dev/null
# shellcheck disable=SC2086
hipcc $flags_str -o "$out/bench_memops" "${libobj[@]}" "$out/obj/bench_memops.o" 2>/dev/null

# Which instructions the implicit-GEMM object really uses, per architecture.
llvm=/usr/lib/llvm-15/bin
obj="$out/obj/f16_conv_nhwc_implicit_gemm_mma.o"
"$llvm/llvm-objcopy" --dump-section=.hip_fatbin="$out/igemm.fatbin" "$obj"
for arch in gfx908 gfx90a gfx1030; do
  "$llvm/clang-offload-bundler" --unbundle --type=o --input="$out/igemm.fatbin" \
    --targets="hipv4-amdgcn-amd-amdhsa--$arch" --output="$out/igemm.$arch.co"
  "$llvm/llvm-objdump" -d --mcpu="$arch" "$out/igemm.$arch.co" > "$out/igemm.$arch.s"
  printf '%-8s v_mfma: %6d   v_dot2: %6d\n' "$arch" "$(grep -c v_mfma "$out/igemm.$arch.s" || true)" \
    "$(grep -c v_dot2 "$out/igemm.$arch.s" || true)"
done
echo "built $out/test_kernels $out/bench_conv $out/bench_memops (HIP, compile-only)"
