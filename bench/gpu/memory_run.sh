#!/bin/bash
# One device call for issue 10's memory / streams / saved-plan parts and the check after a change:
#   1. unit tests (chunking on the GPU included), the ONNX node tests on the GPU, the Python tests
#      on the GPU (tests/python/run_gpu_device.sh);
#   2. ResNet-50 exported by the PyTorch peer (same weights), the peer's fp16 eager + CUDA graph
#      times at batch 1 and 256; infera fp16: cold build with search into an empty perf DB, warm
#      build from it (the <= 2 s target), batch 256 whole vs under a 1 GiB memory budget (chunks),
#      batch 1 and 8 at 1, 2 and 4 streams (host I/O);
#   3. a saved plan, where this build has `infera build`: build fp16 b1,256, then bench from it.
# Usage (device tool, carry [".gpu-infera"] holding stage.tar.xz, node-tests.tar.xz,
# python-stage.tar.xz, torch_peer.py): bash bench/gpu/memory_run.sh [TOTAL_S]
# SKIP="coldwarm streams nodes iplan256 multi cpuquiet fuzz" leaves those parts out (a rerun after a fix). Also: a plan saved
# for b256 only against the warm ONNX (like for like), and the device list gpu:0,0 (issue 14's code).
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-480}
want() { [[ " ${SKIP:-} " != *" $1 "* ]]; }
. tests/gpu/device_env.sh
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format='git %h' 2>/dev/null

if want fuzz && [ -f .gpu-infera/fuzz.tar.xz ]; then . bench/gpu/fuzz_device.sh; fuzz_start "${FUZZ_S:-300}"; taskset -cp 0-3 $$ >/dev/null; fi  # the GPU parts keep to cores 0-3
echo "== unit ($(left) s left)"
timeout 150 stdbuf -oL "$bin/infera_unit_tests" --gtest_brief=1 >"$out/unit.txt" 2>&1; echo "unit exit $?" >>"$out/unit.txt"
grep -E "FAILED|PASSED|SKIPPED|exit" "$out/unit.txt" | tail -n 12
grep -B2 -A8 "Failure" "$out/unit.txt" | head -n 40
if want nodes; then
  echo "== node tests on the GPU ($(left) s left)"
  nd=/tmp/nt; mkdir -p $nd; tar -C $nd -xJf .gpu-infera/node-tests.tar.xz
  timeout 60 "$bin/infera" check $nd/distinct --device gpu --skip-file $nd/skips.txt --quiet 2>&1 | tail -n 3
fi
echo "== python on the GPU ($(left) s left)"
OUT=$out timeout 120 bash tests/python/run_gpu_device.sh 2>&1 | tail -n 6

echo "== torch peer, resnet50 fp16 ($(left) s left)"
m=/tmp/resnet50.onnx
timeout 120 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 1,8,256 --dtypes fp16 --export $m \
  >"$out/torch-resnet50.jsonl" 2>"$out/torch-resnet50.err"
tail -n 2 "$out/torch-resnet50.err"; cat "$out/torch-resnet50.jsonl"
b() { timeout 120 "$bin/infera" bench $m --device gpu --precision fp16 --warmup 10 --duration 1.5 "$@" 2>&1 |
  grep -E "perf db|^ +(batch|[0-9]+) |plan memory|error"; }
db=$out/perfdb.json; rm -f "$db"
if want coldwarm; then
  echo "== cold build with search into an empty DB, b256 ($(left) s left)"
  b --batch 256 --io device --perf-db "$db" --verbose --json "$out/cold.json"
  echo "== warm build from the DB ($(left) s left)"
  b --batch 256 --io device --perf-db "$db" --verbose --json "$out/warm.json"
fi
echo "== build (into the DB, or warm) ($(left) s left)"
b --batch 256 --io device --perf-db "$db" --json "$out/warm2.json"
echo "== b256 under a 1 GiB and a 512 MiB memory budget ($(left) s left)"
b --batch 256 --io device --perf-db "$db" --memory-budget 1G --json "$out/budget1g.json"
b --batch 256 --io device --perf-db "$db" --memory-budget 512M --json "$out/budget512m.json"
if want streams; then
  echo "== streams 1,2,4 at b1 and b8, host I/O ($(left) s left)"
  b --batch 1,8 --streams 1,2,4 --perf-db "$db" --json "$out/streams.json"
fi
if "$bin/infera" build --help >/dev/null 2>&1; then
  echo "== saved plan ($(left) s left)"
  t0=$SECONDS
  timeout 120 "$bin/infera" build $m -o /tmp/r50.iplan --device gpu --precision fp16 --batch 1,256 --perf-db "$db" 2>&1 | tail -n 3
  echo "build took $((SECONDS - t0)) s; $(stat -c %s /tmp/r50.iplan 2>/dev/null) bytes"
  timeout 60 "$bin/infera" info /tmp/r50.iplan 2>&1 | grep -iE "saved plan|device|gpu|cudnn|plan" | head -n 12
  # A second process: load the plan (no passes, no search) against loading the ONNX with the warm DB.
  for f in /tmp/r50.iplan $m; do
    extra=(); [ "$f" = "$m" ] && extra=(--perf-db "$db")
    t0=$(date +%s%N)
    timeout 60 "$bin/infera" info "$f" --device gpu --precision fp16 --batch 256 "${extra[@]}" >"$out/info-$(basename $f).txt" 2>&1
    echo "load + plan b256 of $(basename $f): exit $?, $(( ($(date +%s%N) - t0) / 1000000 )) ms (process)"
  done
  timeout 100 "$bin/infera" bench /tmp/r50.iplan --device gpu --precision fp16 --batch 1,256 --io device --warmup 10 \
    --duration 1.5 --json "$out/iplan.json" 2>&1 | grep -E "^ +(batch|[0-9]+) |load|error"
fi
if want iplan256; then
  # Like for like: a plan saved for b256 only, loaded in a fresh process, against the ONNX with the warm DB.
  timeout 120 "$bin/infera" build $m -o /tmp/r50-256.iplan --device gpu --precision fp16 --batch 256 --perf-db "$db" \
    2>&1 | tail -n 1
  for f in /tmp/r50-256.iplan $m /tmp/r50-256.iplan $m; do
    extra=(); [ "$f" = "$m" ] && extra=(--perf-db "$db")
    t0=$(date +%s%N)
    timeout 60 "$bin/infera" info "$f" --device gpu --precision fp16 --batch 256 "${extra[@]}" >/dev/null 2>&1
    echo "load + plan b256 of $(basename $f) (b256-only plan): exit $?, $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  done
fi
if want multi; then
  # Two engines on the one GPU (the lent machine has one): the plumbing of --device lists on the
  # device, not a scaling figure (two engines share one GPU's SMs).
  echo "== device list gpu:0,0 ($(left) s left)"
  for mode in latency throughput; do
    timeout 150 "$bin/infera" bench $m --device gpu:0,0 --multi $mode --precision fp16 --batch 32,256 --perf-db "$db" \
      --warmup 5 --duration 1.5 --json "$out/multi-$mode.json" 2>&1 | grep -vE "^(model|timing|  +\()" | head -n 12
  done
  timeout 30 "$bin/infera" doctor 2>&1 | grep -iE "numa|pcie|pci" | head -n 8
fi
if want fuzz && [ -n "${fuzz_pid:-}" ]; then echo "== fuzz ($(left) s left)"; fuzz_stop; fi
if want cpuquiet; then . bench/gpu/cpu_quiet.sh; fi
echo "done in $((SECONDS - start)) s"
