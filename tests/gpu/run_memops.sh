#!/usr/bin/env bash
# One device call for the copy / LayerNorm / reduction kernels: their test suites (one process
# each), the memory-bound micro-benchmark, the same suites under compute-sanitizer memcheck, then
# the older non-GEMM suites as a regression check, each step skipped once the time budget
# (BUDGET seconds, default 165) would be exceeded. Run from a folder holding test_kernels,
# bench_memops and this script; results under $OUT (or ./out): test.log, bench.txt, bench.csv,
# sanitizer.log, summary.txt.
set -u
out=${OUT:-./out}
budget=${BUDGET:-165}
mkdir -p "$out"
cd "$(dirname "$0")"
sum="$out/summary.txt"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv; date -u; } > "$sum" 2>&1
step() {  # step SECONDS LOG NAME CMD...: runs CMD with a timeout if the budget allows
  local t=$1 log=$2 name=$3
  shift 3
  if (( SECONDS + t > budget )); then
    echo "$name: skipped (budget)" | tee -a "$sum"
    return
  fi
  timeout "$t" "$@" >> "$log" 2>&1
  echo "$name: rc=$? after ${SECONDS}s" | tee -a "$sum"
}
: > "$out/test.log"
step 35 "$out/test.log" "test copy" ./test_kernels --only copy
step 35 "$out/test.log" "test norm" ./test_kernels --only norm
step 40 "$out/bench.txt" "bench" ./bench_memops "$out/bench.csv"
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ -n $san ]]; then
  step 30 "$out/sanitizer.log" "memcheck copy" "$san" --tool memcheck --print-limit 5 ./test_kernels --only copy
  step 30 "$out/sanitizer.log" "memcheck norm" "$san" --tool memcheck --print-limit 5 ./test_kernels --only norm
fi
for suite in misc pointwise pool; do
  step 15 "$out/test.log" "test $suite" ./test_kernels --only "$suite"
done
{
  echo
  grep -E "FAIL|SKIPPED|variants passed|first failure|no candidate" "$out/test.log" | head -40
  grep -E "ERROR SUMMARY|Invalid|out of bounds" "$out/sanitizer.log" 2>/dev/null | head -12
} >> "$sum"
cat "$sum"
