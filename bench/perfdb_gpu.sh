#!/bin/bash
# The perf db on the GPU (run on the GPU machine, one device call): ResNet-50 FP16 plan build cold
# (fresh database: ours + cuDNN / cuBLASLt timed per layer) vs warm (every choice found, nothing
# timed, no cuDNN engine compiled unless the db names one), the per-layer winners, doctor --json,
# profile, and the PerfDb unit tests. Stage here: bash tests/gpu/stage.sh (carry .gpu-infera).
# Usage: bash bench/perfdb_gpu.sh STAGE_TARBALL MODEL_ONNX   (MODEL: e.g. exported by the torch peer:
#   python3 PEER --model resnet50 --export /tmp/resnet50.onnx, as bench/gpu/final_run.sh does)
set -u
stage=${1:?stage tarball}; model=${2:?resnet50.onnx}
out=${OUT:-/tmp/out}; mkdir -p "$out"
bin=/tmp/infera-stage; rm -rf "$bin"; mkdir -p "$bin"; tar -C "$bin" -xJf "$stage"
nv=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null)
libs=""
for d in "$nv"/cudnn/lib "$nv"/*/lib; do [[ -d $d ]] && libs="$libs:$d"; done
export LD_LIBRARY_PATH="$bin/lib${libs}:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
db=$out/perfdb.json; rm -f "$db"
{
  echo "== unit PerfDb"; timeout 60 "$bin/infera_unit_tests" --gtest_filter='PerfDb*' --gtest_brief=1 2>&1 | tail -3
  for b in 1 256; do
    echo "== batch $b fp16: cold, then warm (target: warm <= 2 s, 0 timed)"
    /usr/bin/time -f "wall %e s" timeout 200 "$bin/infera" tune "$model" --device gpu --precision fp16 --batch $b \
      --perf-db "$db" 2>&1 | grep -E "^batch|wall|error"
    /usr/bin/time -f "wall %e s" timeout 60 "$bin/infera" info "$model" --device gpu --precision fp16 --batch $b \
      --perf-db "$db" --verbose 2>&1 | grep -E "perf db .*choices|plan built|wall|error"
  done
  echo "== fp16 b256: searched (warm db) vs --search off, same call"
  for m in "--perf-db $db" "--search off"; do
    # shellcheck disable=SC2086
    timeout 60 "$bin/infera" bench "$model" --device gpu --precision fp16 --batch 256 --io device --duration 3 $m \
      2>&1 | grep -E "^ +256 " | sed "s|^|$m: |"
  done
  echo "== doctor --json verdicts"
  "$bin/infera" doctor --json --perf-db "$db" | python3 -c \
    'import json,sys; d=json.load(sys.stdin); [print(v["level"]+": "+v["message"]) for v in d["verdicts"]]'
  "$bin/infera" doctor --perf-db "$db" | grep -E "^(gpu|topology|     )" | head -20
  echo "== profile fp16 b256 (top 10)"
  timeout 60 "$bin/infera" profile "$model" --device gpu --precision fp16 --batch 256 --runs 5 --top 10 \
    --perf-db "$db" --json "$out/profile.json" 2>&1 | head -30
} 2>&1 | tee "$out/perfdb_gpu.txt"
python3 - "$db" >"$out/winners.txt" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1]))["entries"]:
    print("%-5s %-70s %-45s %.4f ms of %d" % (e["op"], e["shape"], e["winner"], e["ms"], len(e["candidates"])))
PY
head -5 "$out/winners.txt"
