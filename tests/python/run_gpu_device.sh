#!/bin/bash
# The Python tests on the GPU machine (one device call), from a stage made here:
#   bash tests/python/run_gpu_device.sh --stage [BUILD]   packs BUILD/python/infera (a CUDA build with
#       -DINFERA_PYTHON=ON for that machine's python3, e.g. 3.12) and the Debian libraries it lacks
#       into .gpu-infera/python-stage.tar.xz (ignored by git; carry [".gpu-infera"]);
#   bash tests/python/run_gpu_device.sh                   there: unpacks it, runs pytest over
#       tests/python (not the model set or the example: no MODELS_DIR, no Debian torch there) with
#       the GPU tests on, and writes $OUT/pytest.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
stage=.gpu-infera/python-stage.tar.xz
if [ "${1:-}" = "--stage" ]; then
  build=${2:-build-cuda312}
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/lib" .gpu-infera
  cp -rL "$build/python/infera" "$tmp/"
  strip "$tmp"/infera/bin/infera "$tmp"/infera/_infera*.so
  for l in libdnnl.so.2 libonnx_proto.so.1 libOpenCL.so.1; do cp "/lib/x86_64-linux-gnu/$l" "$tmp/lib/"; done
  tar -C "$tmp" -cJf "$stage" .
  ls -la "$stage"
  exit 0
fi
out=${OUT:-/tmp/out}; mkdir -p "$out"
dir=/tmp/infera-py; rm -rf "$dir"; mkdir -p "$dir"; tar -C "$dir" -xJf "$stage"
nv=$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]) + "/nvidia")' 2>/dev/null)
libs=$(ls -d "$nv"/*/lib 2>/dev/null | tr '\n' ':')
export LD_LIBRARY_PATH="$dir/lib:$libs/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
{
  nvidia-smi -L
  python3 --version
  PYTHONPATH=$dir python3 -c 'import infera, torch; print("infera", infera.__version__, infera.get_available_providers(), "torch", torch.__version__, torch.cuda.is_available())'
  PYTHONPATH=$dir timeout 500 python3 -m pytest tests/python -q -rs -p no:cacheprovider \
    --deselect tests/python/test_models.py --deselect tests/python/test_example.py \
    --deselect tests/python/test_threads.py::test_run_releases_the_gil \
    --deselect tests/python/test_dlpack.py::test_torch_cpu_tensors
} >"$out/pytest.txt" 2>&1
tail -n 40 "$out/pytest.txt"
