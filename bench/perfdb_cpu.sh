#!/bin/bash
# Perf db on the CPU: ResNet-50 plan build cold (fresh database: every choice timed) vs warm
# (every choice found), and run time with the search's choices vs the fixed rule (--search off),
# interleaved in the same run. Usage: MODELS_DIR=... bash bench/perfdb_cpu.sh [build/infera]
set -euo pipefail
B=${1:-build/infera}
M=${MODELS_DIR:-models}/resnet50.onnx
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x$(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
for b in 1 16; do
  echo "## batch $b: cold (fresh db), then warm, then the fixed rule (--search off)"
  /usr/bin/time -f "wall %e s (process)" "$B" tune "$M" --batch $b --perf-db "$T/db.json" 2>&1 | grep -E "^batch|wall"
  /usr/bin/time -f "wall %e s (process)" "$B" tune "$M" --batch $b --perf-db "$T/db.json" 2>&1 | grep -E "^batch|wall"
  /usr/bin/time -f "wall %e s (process)" "$B" info "$M" --batch $b --search off 2>&1 | grep -E "built|wall" || true
done
echo "## run time, interleaved: searched choices (warm db) vs the fixed rule"
for round in 1 2; do
  for mode in search fixed; do
    if [ $mode = search ]; then extra=(--perf-db "$T/db.json"); else extra=(--search off); fi
    echo "### round $round, $mode"
    "$B" bench "$M" --batch 1,16 --warmup 3 --duration 4 "${extra[@]}" 2>/dev/null | grep -E "^ +(1|16) +[0-9]"
  done
done
echo "## the choices"
python3 -c "
import json,sys
for e in json.load(open('$T/db.json'))['entries']:
    print(e['shape'], '->', e['winner'], ', '.join('%s %.3f ms' % (c['name'], c['ms']) for c in e['candidates']))"
