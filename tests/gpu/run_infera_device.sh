#!/bin/bash
# Runs infera's GPU checks on the GPU machine (one device call), from a stage made here:
#   tar of build-cuda/{infera,infera_unit_tests,session_driver} + lib/{libdnnl.so.2,libonnx_proto.so.1,
#   libOpenCL.so.1} (bash tests/gpu/stage.sh makes .gpu-infera/stage.tar.xz).
# On the machine: bash tests/gpu/run_infera_device.sh .gpu-infera/stage.tar.xz [MODELS]
# Writes under $OUT: doctor.txt, unit.txt (backend-conformance cases on the GPU), models.txt/json.
set -uo pipefail
stage=${1:?stage tarball}; models=${2:-}
out=${OUT:-/tmp/out}; mkdir -p "$out"
root=$(pwd)
bin=/tmp/infera-stage; rm -rf "$bin"; mkdir -p "$bin"; tar -C "$bin" -xJf "$stage"
cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(os.path.dirname(nvidia.cudnn.__file__), "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH="$bin/lib:${cudnn:-}:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi -L | tee "$out/doctor.txt"
"$bin/infera" doctor >>"$out/doctor.txt" 2>&1
timeout 300 "$bin/infera_unit_tests" --gtest_brief=1 >"$out/unit.txt" 2>&1; echo "unit exit $?" >>"$out/unit.txt"
tail -n 30 "$out/unit.txt"
args=(--infera "$bin/infera" --driver "$bin/session_driver" --json "$out/models.json")
[ -n "$models" ] && args+=(--models "$models")
PYTHONUNBUFFERED=1 timeout 400 python3 "$root/tests/gpu/gpu_models.py" "${args[@]}" 2>&1 | tee "$out/models.txt"
