#!/bin/bash
# 2 threads x 1 session each against 1 session called from 2 threads (batch 1, 1 OpenMP thread
# per run), for this tree and optionally an earlier build, alternating, R rounds.
# Usage: bash bench/bench_concurrency_cpu.sh MODEL [ROUNDS] [SECONDS] [BASELINE_BUILD_DIR]
#   builds bench/concurrency_cpu.cpp against build/libinfera.a (and BASELINE_BUILD_DIR/libinfera.a
#   with that tree's include/); prints one line per run.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?model}; rounds=${2:-3}; secs=${3:-10}; base=${4:-}
libs="-lonnx_proto -lprotobuf -ldnnl -fopenmp -lpthread"
g++ -O2 -std=c++20 -Iinclude bench/concurrency_cpu.cpp build/libinfera.a $libs -o build/concurrency_cpu
bins=("build/concurrency_cpu")
if [ -n "$base" ]; then
  g++ -O2 -std=c++20 -I"$base/../include" bench/concurrency_cpu.cpp "$base/libinfera.a" $libs -o build/concurrency_cpu_base
  bins+=("build/concurrency_cpu_base")
fi
for r in $(seq 1 "$rounds"); do
  for b in "${bins[@]}"; do
    for mode in sessions shared; do
      echo "round $r $(basename "$b"): $("$b" "$model" "$mode" 2 "$secs")"
    done
  done
done
