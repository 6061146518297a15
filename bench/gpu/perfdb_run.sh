#!/bin/bash
# One device call: validation of what changed (unit tests, ONNX node tests on the GPU, the Concat /
# ResNet models) and the perf DB on the GPU (issue 10): ResNet-50 fp16 b256 cold build with search
# into an empty DB, warm build from it, the same with --search off; infera tune; infera profile;
# infera doctor (NVML). Everything goes to $OUT/log.txt (plus the DB and bench JSONs).
# Usage: bash bench/gpu/perfdb_run.sh STAGE_TARBALL NODE_TESTS_TARBALL [TOTAL_S]
set -u
stage=${1:?stage tarball}; nodes=${2:?node tests tarball}; total=${3:-420}
. "$(dirname "$0")/../../tests/gpu/device_env.sh"
log=$out/log.txt
exec > >(tee -a "$log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

echo "== unit ($(left) s left)"
timeout 170 "$bin/infera_unit_tests" --gtest_brief=1 2>&1 | grep -E "FAILED|PASSED|SKIPPED|Failure" | tail -n 20

echo "== node tests on the GPU ($(left) s left)"
nd=/tmp/node-tests; rm -rf "$nd"; mkdir -p "$nd"; tar -C "$nd" -xJf "$nodes"
timeout 120 "$bin/infera" check "$nd/distinct" --device gpu --skip-file "$nd/skips.txt" --quiet 2>&1 | tail -n 12

echo "== models with Concats, and ResNet-50 ($(left) s left)"
PYTHONUNBUFFERED=1 timeout 200 python3 "$root/tests/gpu/gpu_models.py" --infera "$bin/infera" \
  --driver "$bin/session_driver" --models googlenet,squeezenet1_1,densenet121,shufflenet_v2_x1_0,resnet50 \
  --json "$out/models.json" 2>&1 | grep -E "^(PASS|FAIL)|plan at|passed"
for m in googlenet squeezenet1_1; do
  "$bin/infera" info "/tmp/gpu-models/$m.onnx" --device gpu --precision fp16 --plan --batch 8 2>&1 |
    grep -ciE "in place: its inputs" | sed "s/^/$m: Concat steps done in place: /"
done

m=/tmp/gpu-models/resnet50.onnx db=$out/perfdb.json
b() { timeout 120 "$bin/infera" bench "$m" --device gpu --precision fp16 --batch 256 --io device --warmup 10 \
  --duration 1.5 "$@" 2>&1 | grep -E "perf db|^ +(batch|256) "; }
echo "== perf db: cold build with search into an empty DB ($(left) s left)"
rm -f "$db"; b --perf-db "$db" --verbose --json "$out/bench-cold.json"
echo "== warm build from the DB"; b --perf-db "$db" --verbose --json "$out/bench-warm.json"
echo "== --search off (the first of ours, no vendor timing)"; b --search off --json "$out/bench-off.json"
echo "== tune b1,32 ($(left) s left)"
timeout 90 "$bin/infera" tune "$m" --device gpu --precision fp16 --batch 1,32 --perf-db "$db" 2>&1 | tail -n 6
echo "== profile b32 ($(left) s left)"
timeout 60 "$bin/infera" profile "$m" --device gpu --precision fp16 --batch 32 --top 12 --perf-db "$db" 2>&1 | tail -n 40
echo "== doctor"
"$bin/infera" doctor --perf-db "$db" 2>&1 | tail -n 40
"$bin/infera" doctor --json >"$out/doctor.json" 2>&1
echo "done in $((SECONDS - start)) s"
