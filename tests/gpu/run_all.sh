#!/usr/bin/env bash
# One device call: correctness tests, the conv micro-benchmark, PyTorch/cuDNN on the same shapes,
# the comparison table and SASS evidence. Run from a folder holding test_kernels, bench_conv and
# these scripts; results go to $OUT (or ./out).
set -u
out=${OUT:-./out}
mkdir -p "$out"
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
echo "== tests"
timeout 200 ./test_kernels > "$out/test.log" 2>&1
echo "test_kernels rc=$?" | tee -a "$out/test.log"
grep -E "FAIL|passed|first failure" "$out/test.log" | head -40
echo "== bench (ours)"
timeout 150 ./bench_conv resnet50_conv_shapes.txt 1,256 "$out/ours.csv" > "$out/bench.log" 2>&1
echo "bench_conv rc=$?" | tee -a "$out/bench.log"
echo "== bench (torch/cuDNN)"
PYTHONUNBUFFERED=1 timeout 200 python3 bench_torch_conv.py resnet50_conv_shapes.txt 1,256 "$out/torch.csv" \
  > "$out/torch.log" 2>&1
echo "torch rc=$?" | tee -a "$out/torch.log"
python3 compare_conv.py "$out/ours.csv" "$out/torch.csv" > "$out/table.md" 2>&1
cuobjdump -sass test_kernels 2>/dev/null | grep -oE "HMMA\.[0-9A-Z.]+" | sort | uniq -c > "$out/sass.txt"
cat "$out/sass.txt"
cat "$out/table.md"
