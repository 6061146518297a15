#!/bin/bash
# Runs a fuzz target on its corpus; crashes go to build-fuzz/crashes/. Allocations over 2 GiB fail
# (return null) so that models asking for huge-but-legal tensors test the error path, not the OOM killer.
# Usage: bash tests/fuzz/run.sh [model|tensor] [SECONDS] [extra libFuzzer flags...]
set -euo pipefail
cd "$(dirname "$0")/../../build-fuzz"
which=${1:-model} secs=${2:-600}
shift $(($# > 2 ? 2 : $#))
[ -d corpus/model ] && [ -d corpus/tensor ] || python3 ../tests/fuzz/make_corpus.py --out corpus
mkdir -p crashes "work/$which"
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:max_allocation_size_mb=2048:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
bin=./fuzz_model; [ "$which" = tensor ] && bin=./fuzz_tensor_file
exec "$bin" -max_total_time="$secs" -rss_limit_mb=4096 -timeout=10 -artifact_prefix=crashes/ \
  -print_final_stats=1 "$@" "work/$which" "corpus/$which"
