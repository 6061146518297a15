#!/bin/bash
# Builds the libFuzzer targets (fuzz_model, fuzz_tensor_file, fuzz_npy_header, fuzz_tensor_pb, fuzz_perfdb,
# fuzz_saved_plan, fuzz_calib_cache, fuzz_image) with clang, ASan and UBSan in build-fuzz.
# Usage: bash tests/fuzz/build.sh [BUILD_DIR]   (default build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-build-fuzz}
cmake -S . -B "$dir" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" -DINFERA_FUZZ=ON \
  -DINFERA_BUILD_TESTS=OFF >/dev/null
cmake --build "$dir" -j"${JOBS:-$(nproc)}" --target fuzz_model fuzz_tensor_file fuzz_npy_header fuzz_tensor_pb fuzz_perfdb fuzz_saved_plan fuzz_calib_cache fuzz_image
