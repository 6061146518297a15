#!/bin/bash
# Load time of a saved plan against its ONNX model (issue 10): each engine run is a fresh
# `infera bench FILE --batch B --iterations 1 --warmup 0` process; its wall time (process start,
# load, preparing batch B, one run, exit) and the plan's "build ms" (making the batch-B plan,
# inside the load for a saved plan) are recorded. No --json: bench would hash the file for it. The ONNX model runs against a warm perf db
# (its own, filled by a first run), so neither side times anything. Rounds alternate the files.
#
#   [FLAGS="--device gpu --precision fp16"] bash bench/plan_load.sh MODEL.onnx [ROUNDS=5] [BATCH=1] [INFERA=build/infera] [OLD_INFERA]
#
# FLAGS go to every build and bench (default: none, the CPU in fp32).
# OLD_INFERA (optional): a second infera binary (e.g. built from an earlier commit) whose own plan
# of the same model is timed in the same rounds. Prints one line per run and the medians.
set -euo pipefail
model=${1:?usage: plan_load.sh MODEL.onnx [ROUNDS] [BATCH] [INFERA] [OLD_INFERA]}
rounds=${2:-5}
batch=${3:-1}
infera=${4:-build/infera}
old=${5:-}
read -r -a flags <<<"${FLAGS:-}"
work=$(mktemp -d /tmp/plan-load.XXXXXX)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
"$infera" build "$model" -o "$work/new.iplan" --batch "$batch" "${flags[@]}" >/dev/null
"$infera" bench "$model" --batch "$batch" --iterations 1 --warmup 0 --quiet "${flags[@]}" >/dev/null  # warm perf db
names=(onnx plan)
files=("$model" "$work/new.iplan")
bins=("$infera" "$infera")
if [ -n "$old" ]; then
  XDG_CACHE_HOME=$work/cache-old "$old" build "$model" -o "$work/old.iplan" --batch "$batch" "${flags[@]}" >/dev/null
  names+=(old-plan)
  files+=("$work/old.iplan")
  bins+=("$old")
fi
echo "model $model, batch $batch, $rounds rounds, flags '${FLAGS:-}'; $(ls -l "$work/new.iplan" | awk '{printf "plan %.1f MiB", $5/1048576}')"
for r in $(seq "$rounds"); do
  for i in "${!names[@]}"; do
    cache=$work/cache
    [ "${names[$i]}" = old-plan ] && cache=$work/cache-old
    t0=$(date +%s%N)
    XDG_CACHE_HOME=$cache "${bins[$i]}" bench "${files[$i]}" --batch "$batch" --iterations 1 --warmup 0 \
      "${flags[@]}" >"$work/r.txt" 2>&1
    t1=$(date +%s%N)
    # build ms: the second-last column of the table's row (no --json: it would hash the file)
    b=$(awk '/build ms/ {getline; print $(NF-1); exit}' "$work/r.txt")
    printf "round %d %-8s wall %7.1f ms  build_ms %7.1f  load %s\n" "$r" "${names[$i]}" \
      "$(((t1 - t0) / 1000)).0e-3" "$b" "$(cut -d' ' -f1 /proc/loadavg)"
  done
done | tee "$work/runs.txt"
python3 - "$work/runs.txt" "${names[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("medians (wall ms / build_ms):")
for n in sys.argv[2:]:
    w = [float(r[4]) for r in rows if len(r) > 7 and r[2] == n]
    b = [float(r[7]) for r in rows if len(r) > 7 and r[2] == n]
    print("  %-8s %7.1f / %7.1f" % (n, statistics.median(w), statistics.median(b)))
PY
