#!/bin/bash
# Packs the CUDA build and the shared libraries the GPU machine lacks into .gpu-infera/stage.tar.xz
# (ignored by git; the device tool carries it: run with carry [".gpu-infera"]).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-cuda}
# The test suite's compile check configures build-cuda for sm_80 only, which an H200 cannot run.
arch=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ -n "$arch" ] && [[ "$arch" != *90* ]]; then
  echo "stage.sh: $build is built for CUDA architectures '$arch' (no sm_90): reconfigure it with" \
       "-DCMAKE_CUDA_ARCHITECTURES='80-real;90-real;90-virtual' and rebuild" >&2
  exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lib" .gpu-infera
cp "$build"/infera "$build"/infera_unit_tests "$build"/session_driver "$tmp/"
strip "$tmp"/infera "$tmp"/infera_unit_tests "$tmp"/session_driver
for l in libdnnl.so.2 libonnx_proto.so.1 libOpenCL.so.1 libjpeg.so.62 libpng16.so.16; do cp "/lib/x86_64-linux-gnu/$l" "$tmp/lib/"; done
tar -C "$tmp" -cJf .gpu-infera/stage.tar.xz .
ls -la .gpu-infera/stage.tar.xz
