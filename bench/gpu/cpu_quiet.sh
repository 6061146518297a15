#!/bin/bash
# CPU figures on a quiet machine: the GPU machine's host, two of its cores (taskset), nothing else
# running there. Sourced by bench/gpu/memory_run.sh after the ResNet-50 export ($m, $bin, $out set):
#   1. perf DB on the CPU: cold (tune into an empty DB) and warm build times, batch 1 (issue 10: cold
#      <= 30 s, warm <= 1 s on 2 cores);
#   2. INT8 against FP32 at batch 16 (issue 11: >= 2x), and ONNX Runtime FP32 in the same minutes;
#   3. the CPU model itself (lscpu) so the figures can be placed.
cpus=${CPUS:-2,3}
pin=(taskset -c "$cpus")
echo "== CPU, quiet, cores $cpus ($(left) s left)"
lscpu | grep -E "Model name|Flags" | sed -e 's/\(Flags:\).*\(avx512_vnni\|amx_int8\).*/\1 ... \2 .../' | head -n 2
grep -o -E "avx512_vnni|amx_int8|amx_tile|avx_vnni" /proc/cpuinfo | sort -u | tr '\n' ' '; echo
cdb=/tmp/cpu-perfdb.json; rm -f "$cdb"
t0=$(date +%s%N)
timeout 120 "${pin[@]}" "$bin/infera" tune $m --batch 1 --threads 2 --perf-db "$cdb" 2>&1 | tail -n 2
echo "cold tune b1: $(( ($(date +%s%N) - t0) / 1000000 )) ms (process)"
for k in 1 2; do
  t0=$(date +%s%N)
  timeout 60 "${pin[@]}" "$bin/infera" bench $m --batch 1 --threads 2 --perf-db "$cdb" --iterations 1 --warmup 0 \
    --json "$out/cpu-warm$k.json" --quiet 2>&1 | tail -n 2
  echo "warm build b1 ($k): process $(( ($(date +%s%N) - t0) / 1000000 )) ms, plan build_ms $(python3 -c \
    "import json; print(json.load(open('$out/cpu-warm$k.json'))['results'][0]['build_ms'])" 2>/dev/null)"
done
python3 -c "import numpy as np; np.save('/tmp/calib.npy', np.random.default_rng(0).uniform(-2, 2, (8, 3, 224, 224)).astype(np.float32))"
timeout 150 "${pin[@]}" "$bin/infera" quantize $m --calibration /tmp/calib.npy --batch 4 --threads 2 \
  -o /tmp/resnet50.int8.onnx 2>&1 | tail -n 1
for round in 1 2; do
  for f in $m /tmp/resnet50.int8.onnx; do
    timeout 60 "${pin[@]}" "$bin/infera" bench $f --batch 1,16 --threads 2 --perf-db "$cdb" --duration 4 --warmup 2 \
      --json "$out/cpu-$(basename $f .onnx)-r$round.json" --quiet 2>&1 | tail -n 2
    python3 - "$out/cpu-$(basename $f .onnx)-r$round.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(" ".join("%s b%d p50 %.2f ms %.1f img/s;" % (j["model"].split("/")[-1], r["batch"], r["latency_ms_p50"],
                                                     r["throughput_per_s"]) for r in j["results"]))
PY
  done
  timeout 90 "${pin[@]}" python3 - $m <<'PY'
import sys, time
import numpy as np
try:
    import onnxruntime as ort
except ImportError:
    print("onnxruntime: not installed here"); sys.exit(0)
so = ort.SessionOptions(); so.intra_op_num_threads = 2; so.inter_op_num_threads = 1
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
name = s.get_inputs()[0].name
for b in (1, 16):
    x = np.random.default_rng(0).uniform(-1, 1, (b, 3, 224, 224)).astype(np.float32)
    for _ in range(2): s.run(None, {name: x})
    lat, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < 4 or len(lat) < 3:
        t = time.perf_counter(); s.run(None, {name: x}); lat.append((time.perf_counter() - t) * 1000)
    p50 = float(np.median(lat))
    print("onnxruntime %s fp32 b%d p50 %.2f ms %.1f img/s" % (ort.__version__, b, p50, b * 1000 / p50))
PY
done
