#!/usr/bin/env bash
# One device call: correctness tests (one process per suite, so a crash in one cannot hide the
# others; a crashing suite is re-run under compute-sanitizer), the conv micro-benchmark,
# PyTorch/cuDNN on the same shapes, the comparison table, SASS evidence and a few ncu profiles.
# Run from a folder holding test_kernels, bench_conv and these scripts; results go to $OUT (or
# ./out) as few files (the device tool returns at most 8): test.log, ours.csv, torch.csv,
# summary.md, ncu.txt, sanitizer.log.
set -u
out=${OUT:-./out}
mkdir -p "$out"
cd "$(dirname "$0")"
sum="$out/summary.md"
{ echo '```'; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; date -u; echo '```'; } > "$sum"
cat "$sum"
echo "== tests"
: > "$out/test.log"
for suite in conv gemm pool pointwise misc; do
  timeout 120 ./test_kernels --only "$suite" >> "$out/test.log" 2>&1
  rc=$?
  echo "suite $suite rc=$rc" | tee -a "$out/test.log"
  if [[ $rc -ne 0 && $rc -ne 1 ]]; then
    timeout 90 compute-sanitizer --tool memcheck --print-limit 5 ./test_kernels --only "$suite" >> "$out/sanitizer.log" 2>&1
    grep -m 12 -E "Invalid|Error|at .*kernel|by thread" "$out/sanitizer.log"
  fi
done
grep -E "FAIL|SKIPPED|passed|first failure|mismatch|no candidate" "$out/test.log" | head -60
failed=$(awk '$NF == "FAIL" || /FAIL \(/ {print $1}' "$out/test.log" | sort -u | paste -sd, -)
echo "== bench (ours; left out as failing: ${failed:-none})"
timeout 120 ./bench_conv resnet50_conv_shapes.txt 1,256 "$out/ours.csv" --exclude "${failed:-none}" > "$out/bench.log" 2>&1
echo "bench_conv rc=$?"
echo "== bench (torch/cuDNN)"
PYTHONUNBUFFERED=1 timeout 150 python3 bench_torch_conv.py resnet50_conv_shapes.txt 1,256 "$out/torch.csv" \
  > "$out/torch.log" 2>&1
echo "torch rc=$?"
{
  echo; echo "## SASS matrix instructions in test_kernels"; echo '```'
  cuobjdump -sass test_kernels 2>/dev/null | grep -oE "(HMMA|HGMMA)\.[0-9A-Za-z.]+" | sort | uniq -c
  echo '```'; echo; echo "## logs"; echo '```'; tail -n 4 "$out/bench.log" "$out/torch.log"; echo '```'
  python3 compare_conv.py "$out/ours.csv" "$out/torch.csv"
} >> "$sum" 2>&1
rm -f "$out/bench.log" "$out/torch.log"
echo "== ncu (a memory-bound 1x1 and a 3x3 layer at batch 256)"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [[ -n $ncu ]]; then
  for spec in l2_1x1_128_512:f16_conv_nhwc_implicit_gemm_wgmma_128x128 l3_3x3_256:f16_conv_nhwc_implicit_gemm_wgmma_128x256; do
    layer=${spec%%:*} cand=${spec##*:}
    echo "######## $layer $cand" >> "$out/ncu.txt"
    timeout 60 "$ncu" --clock-control none -k regex:igemm --launch-skip 1 --launch-count 1 --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats \
      ./bench_conv resnet50_conv_shapes.txt 256 /dev/null --only "$layer" --candidate "$cand" >> "$out/ncu.txt" 2>&1
    echo "ncu $layer $cand rc=$?"
  done
fi
sed -n '/^## SASS/,$p' "$sum"
