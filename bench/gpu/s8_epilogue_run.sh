#!/bin/bash
# The CUTLASS int8 candidates in the network (issue 11). Eighteenth session: the exact epilogue
# without local memory and the new GEMM tiles. Nineteenth: the epilogue rows made once per plan (no
# rows kernel before each CUTLASS step), the GEMMs launched as programmatic dependents, the magic
# constant's conversions. In one call: the int8 kernel tests (bit-exact), ResNet-50 int8 at batch 1
# / 32 / 256 with CUTLASS, ours only (--no-vendor-libs) and CUTLASS without PDL (INFERA_GPU_PDL=0,
# the same perf db as the CUTLASS run: the same choices), infera fp16 and the PyTorch peer's fp16,
# bench_conv b256 per layer (ours vs CUTLASS), a profile; PROBE=1 adds the probe's float epilogue
# on the same layers (the speed an exact epilogue should approach).
# Twentieth: QConv's requantization in float32 (QRequant), the epilogues without the rounding-
# boundary test and the double path; with .gpu-infera/base-infera.xz (an infera binary from before
# a change) the network runs the base binary too ("base", its own perf db), alternated with the new.
# carry: .gpu-infera (stage.tar.xz, kt.xz, bench_conv.xz, s8_cutlass_probe.xz, torch_peer.py,
# base-infera.xz optional)
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-400}
. tests/gpu/device_env.sh
dest=$out out=/tmp/results; mkdir -p "$out"
trap 'tar -C "$out" -czf "$dest/results.tgz" . 2>/dev/null' EXIT
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for f in kt bench_conv s8_cutlass_probe; do xz -dc .gpu-infera/$f.xz >/tmp/$f && chmod +x /tmp/$f; done
inf=$bin/infera shapes=tests/gpu/resnet50_conv_shapes.txt
echo "== kernel tests ($(left) s left)"
timeout 70 /tmp/kt --only int8 >"$out/kernels.txt" 2>&1; echo "int8 suite exit $?"
grep -E "^s8_conv_nhwc_cutlass|variants|first failure|FAIL" "$out/kernels.txt" | head -24
echo "== unit: the int8 steps on the GPU ($(left) s left)"
timeout 90 "$bin/infera_unit_tests" --gtest_brief=1 --gtest_filter='QuantBackends.*:GpuConv*:GpuPackedWeights*:GpuGraphs*' \
  >"$out/unit.txt" 2>&1; echo "unit exit $?"
grep -E "FAILED|PASSED|SKIPPED" "$out/unit.txt" | tail -n 8
echo "== network ($(left) s left)"
m=/tmp/resnet50.onnx q=/tmp/resnet50.int8.onnx
batches=1,32,256 order="cutlass ours nopdl cutlass nopdl"
# QUICK=1 (a short call): batch 256 only, each configuration once.
[[ ${QUICK:-0} == 1 ]] && batches=256 order="cutlass ours nopdl"
if [[ -f .gpu-infera/base-infera.xz ]]; then
  unpack_base
  order="cutlass base ours nopdl cutlass base"
  [[ ${QUICK:-0} == 1 ]] && order="cutlass base ours nopdl"
fi
timeout 80 python3 .gpu-infera/torch_peer.py --model resnet50 --batches ${batches/1,32,/1,} --dtypes fp16 --export $m >"$out/torch.jsonl" 2>/dev/null
cat "$out/torch.jsonl"
python3 -c "import numpy as n; n.save('/tmp/calib.npy', n.random.default_rng(0).standard_normal((32,3,224,224)).astype('float32'))"
timeout 60 "$inf" quantize $m --calibration /tmp/calib.npy -o $q --calib-method minmax 2>&1 | tail -n 1
summ() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], [(r['batch'], round(r['latency_ms_p50'], 4), round(r['throughput_per_s'])) for r in d['results']])" "$@" 2>&1 | tail -1; }
# SM clock and power while the network runs (does int8 b256 throttle?), every 100 ms.
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 100 >"$out/smi.csv" 2>/dev/null &
smi=$!
for v in $order; do
  flag="" cache=$v pdl=2 exe=$inf; [[ $v == ours ]] && flag=--no-vendor-libs
  [[ $v == nopdl ]] && cache=cutlass pdl=0
  [[ $v == base ]] && exe=$base
  t0=$(date +%s.%N)
  INFERA_GPU_PDL=$pdl XDG_CACHE_HOME=/tmp/cache-$cache timeout 80 "$exe" bench $q --device gpu --precision fp16 \
    --batch $batches --io device --warmup 5 --duration 1 $flag --json "$out/b-$v.json" >/dev/null 2>"$out/b-$v.err"
  echo "int8-$v $t0 $(date +%s.%N)" >>"$out/marks.txt"
  summ "$out/b-$v.json" "int8 $v"
done
t0=$(date +%s.%N)
XDG_CACHE_HOME=/tmp/cache-fp16 timeout 80 "$inf" bench $m --device gpu --precision fp16 --batch $batches --io device \
  --warmup 5 --duration 1 --json "$out/b-fp16.json" >/dev/null 2>"$out/b-fp16.err"
echo "fp16 $t0 $(date +%s.%N)" >>"$out/marks.txt"
summ "$out/b-fp16.json" "fp16"
kill $smi 2>/dev/null
python3 - "$out/smi.csv" "$out/marks.txt" <<'PY'
import sys, statistics as st, datetime as dt
samples = []
for l in open(sys.argv[1]):
    f = [x.strip() for x in l.split(",")]
    try:
        t = dt.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        samples.append((t, float(f[1].split()[0]), float(f[2].split()[0])))
    except (ValueError, IndexError):
        pass
for l in open(sys.argv[2]):  # per bench: each run also builds its plan (the search): clocks then too
    name, a, b = l.split()
    s = [x for x in samples if float(a) <= x[0] <= float(b)]
    if s: print(f"smi {name:14s} {len(s):4d} samples: SM clock min {min(x[1] for x in s):.0f} median {st.median(x[1] for x in s):.0f} MHz, power median {st.median(x[2] for x in s):.0f} max {max(x[2] for x in s):.0f} W")
PY
echo "== bench_conv b256 ($(left) s left)"
timeout 90 /tmp/bench_conv $shapes 256 "$out/s8.csv" --dtype s8 >"$out/bench-s8.txt" 2>&1; echo "bench_conv exit $?"
python3 - "$out" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1] + "/s8.csv")))
best, ours, cut = {}, {}, {}
for r in rows:
    ms = float(r["ms"]); k = r["name"]
    if ms <= 0: continue
    if k not in best or ms < best[k][0]: best[k] = (ms, r["candidate"], int(r["count"]))
    d = cut if "cutlass" in r["candidate"] else ours
    if k not in d or ms < d[k][0]: d[k] = (ms, r["candidate"])
t = collections.Counter()
for k, (ms, c, n) in best.items():
    t["best"] += ms * n; t["ours"] += ours[k][0] * n
    cu = cut.get(k, (float("nan"), "-"))
    print(f"{k:20s} best {ms:.4f} {c:42s} ours {ours[k][0]:.4f} cutlass {cu[0]:.4f} {cu[1]:36s} x{n}")
print(f"batch 256 conv sum: best {t['best']:.3f} ms, ours only {t['ours']:.3f} ms")
PY
if [[ ${PROBE:-0} == 1 ]] && (($(left) > 90)); then
echo "== probe: CUTLASS with a float epilogue, not exact ($(left) s left)"
timeout $(($(left) - 40)) /tmp/s8_cutlass_probe $shapes 256 5 >"$out/cutlass-probe.txt" 2>&1; echo "probe exit $?"
grep -E "l1_|l2_1x1|l3_1x1|batch" "$out/cutlass-probe.txt" | head -40
fi
(($(left) > 30)) || exit 0
echo "== profile ($(left) s left)"
XDG_CACHE_HOME=/tmp/cache-cutlass timeout 40 "$inf" profile $q --device gpu --precision fp16 --batch 256 --top 60 >"$out/prof.txt" 2>&1
grep -E "QConv" "$out/prof.txt" | awk '{print $NF, $0}' | grep -c cutlass
sed -n '/by op kind/,$p' "$out/prof.txt"
echo "done in $((SECONDS - start)) s"
