#!/bin/bash
# One device call that validates the GPU build (run on the GPU machine; benchmarks are
# bench/gpu/final_run.sh's):
#   1. doctor; the unit tests (backend-conformance cases on the GPU, cuDNN / cuBLASLt candidates on);
#   2. the ONNX node tests that pass on the CPU (tests/conformance --keep DIR, packed by
#      tests/gpu/pack_node_tests.sh), through `infera check --device gpu` in FP32 (TF32 off);
#   3. the model set (tests/gpu/gpu_models.py: FP32 / FP16 vs PyTorch, graph replay), vendor libraries on.
# Results go to $OUT as they come (few files: the device tool returns a handful).
# Usage: bash tests/gpu/validate_device.sh STAGE_TARBALL NODE_TESTS_TARBALL [TOTAL_S]
set -u
stage=${1:?stage tarball}; nodes=${2:?node tests tarball}; total=${3:-540}
. "$(dirname "$0")/device_env.sh"
{
  date -u; git -C "$root" log -1 --format='git %h %s' 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version --format=csv
  "$bin/infera" doctor
} >"$out/doctor.txt" 2>&1

echo "== unit ($(left) s left)"
timeout 170 "$bin/infera_unit_tests" --gtest_brief=1 >"$out/unit.txt" 2>&1; echo "unit exit $?" >>"$out/unit.txt"
grep -E "FAILED|PASSED|SKIPPED|exit" "$out/unit.txt" | tail -n 15

echo "== node tests on the GPU ($(left) s left)"
nd=/tmp/node-tests; rm -rf "$nd"; mkdir -p "$nd"; tar -C "$nd" -xJf "$nodes"
lim=$(( $(left) - 200 )); ((lim > 200)) && lim=200
timeout "$lim" "$bin/infera" check "$nd/distinct" --device gpu --skip-file "$nd/skips.txt" --quiet \
  --json "$out/node-tests-gpu.json" >"$out/node-tests-gpu.txt" 2>&1
echo "check exit $?" >>"$out/node-tests-gpu.txt"
tail -n 40 "$out/node-tests-gpu.txt"

echo "== models ($(left) s left)"
lim=$(( $(left) - 10 ))
if ((lim > 30)); then
  PYTHONUNBUFFERED=1 timeout "$lim" python3 "$root/tests/gpu/gpu_models.py" --infera "$bin/infera" \
    --driver "$bin/session_driver" --json "$out/models.json" >"$out/models.txt" 2>&1
  grep -E "^(PASS|FAIL)|plan at|passed" "$out/models.txt" | grep -v "^PASS" | head -40
fi
echo "done in $((SECONDS - start)) s"
