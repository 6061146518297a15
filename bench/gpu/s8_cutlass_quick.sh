#!/bin/bash
# A short device call (seventeenth session, the last of its budget): the CUTLASS int8 candidates after
# the epilogue's float path (s8_cutlass.h): kernel tests (bit-exact), bench_conv at batch 256, ResNet-50
# int8 at batch 256 with CUTLASS and ours only (--no-vendor-libs), the peer's fp16.
# carry: .gpu-infera (stage.tar.xz, kt.xz, bench_conv.xz, torch_peer.py)
set -u
stage=.gpu-infera/stage.tar.xz total=${1:-220}
. tests/gpu/device_env.sh
dest=$out out=/tmp/results; mkdir -p "$out"
trap 'tar -C "$out" -czf "$dest/results.tgz" . 2>/dev/null' EXIT
exec > >(tee -a "$out/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for f in kt bench_conv; do xz -dc .gpu-infera/$f.xz >/tmp/$f && chmod +x /tmp/$f; done
inf=$bin/infera
timeout 60 /tmp/kt --only int8 >"$out/kernels.txt" 2>&1; echo "int8 suite exit $?"
grep -E "^s8_conv_nhwc_cutlass|variants|first failure" "$out/kernels.txt" | head -20
timeout 60 /tmp/bench_conv tests/gpu/resnet50_conv_shapes.txt 256 "$out/s8.csv" --dtype s8 >"$out/bench-s8.txt" 2>&1
python3 - "$out" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1] + "/s8.csv")))
best, ours = {}, {}
for r in rows:
    ms = float(r["ms"]); k = r["name"]
    if ms <= 0: continue
    if k not in best or ms < best[k][0]: best[k] = (ms, r["candidate"], int(r["count"]))
    if "cutlass" not in r["candidate"] and (k not in ours or ms < ours[k][0]): ours[k] = (ms, r["candidate"])
t = collections.Counter()
for k, (ms, c, n) in best.items():
    t["best"] += ms * n; t["ours"] += ours[k][0] * n
    print(f"{k:20s} best {ms:.4f} {c:42s} ours {ours[k][0]:.4f} {ours[k][0] / ms:5.2f}x x{n}")
print(f"batch 256 conv sum: best {t['best']:.3f} ms, ours only {t['ours']:.3f} ms")
PY
m=/tmp/resnet50.onnx q=/tmp/resnet50.int8.onnx
timeout 70 python3 .gpu-infera/torch_peer.py --model resnet50 --batches 256 --dtypes fp16 --export $m >"$out/torch.jsonl" 2>/dev/null
cat "$out/torch.jsonl"
python3 -c "import numpy as n; n.save('/tmp/calib.npy', n.random.default_rng(0).standard_normal((32,3,224,224)).astype('float32'))"
timeout 60 "$inf" quantize $m --calibration /tmp/calib.npy -o $q --calib-method minmax 2>&1 | tail -n 1
for v in cutlass ours cutlass; do
  flag=""; [[ $v == ours ]] && flag=--no-vendor-libs
  XDG_CACHE_HOME=/tmp/cache-$v timeout 60 "$inf" bench $q --device gpu --precision fp16 --batch 256 --io device \
    --warmup 5 --duration 1 $flag --json "$out/b-$v.json" >/dev/null 2>"$out/b-$v.err"
  python3 -c "import json; d=json.load(open('$out/b-$v.json')); print('int8 $v', [(r['batch'], round(r['latency_ms_p50'], 4), round(r['throughput_per_s'])) for r in d['results']])" 2>&1 | tail -1
done
XDG_CACHE_HOME=/tmp/cache-cutlass timeout 30 "$inf" profile $q --device gpu --precision fp16 --batch 256 --top 60 >"$out/prof.txt" 2>&1
grep -c cutlass "$out/prof.txt"
echo "done in $((SECONDS - start)) s"
