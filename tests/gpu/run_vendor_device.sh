#!/usr/bin/env bash
# One device call for the vendor adapters: vendor_test (correctness, threads, graphs), then
# bench_vendor (cuDNN vs ours on ResNet-50's conv shapes, batch 256 and 1, fp16 / fp32 / TF32)
# with what is left of the time budget. Run from a folder holding vendor_test, bench_vendor,
# resnet50_conv_shapes.txt and this script; results go to $OUT (or ./out).
# cuDNN: the newest one PyTorch's venv has (9.19 on the H200 machine) goes first on the library
# path, with the venv's other nvidia/*/lib folders (NVRTC for cuDNN's runtime-compiled engines).
#   TOTAL_S=225 bash run_vendor_device.sh
set -u
out=${OUT:-./out}
mkdir -p "$out"
cd "$(dirname "$0")"
total=${TOTAL_S:-225}
start=$SECONDS
nv=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null)
libs=""
for d in "$nv"/cudnn/lib "$nv"/*/lib; do [[ -d $d ]] && libs="$libs:$d"; done
export LD_LIBRARY_PATH="${libs#:}:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd ./vendor_test | grep -E "cudnn|cublas|not found"
} > "$out/env.txt" 2>&1
cat "$out/env.txt"
timeout 110 ./vendor_test --budget-s 95 > "$out/vendor_test.log" 2>&1
echo "vendor_test rc=$?" | tee -a "$out/vendor_test.log"
grep -E "FAIL|no cuDNN|no cuBLASLt|gelu probe|^==|^--" "$out/vendor_test.log" | head -80
tail -n 6 "$out/vendor_test.log"
left=$((total - (SECONDS - start)))
if ((left > 30)); then
  timeout $((left - 3)) ./bench_vendor resnet50_conv_shapes.txt 256,1 "$out/bench_vendor" --budget-s $((left - 25)) \
    > "$out/bench_vendor.log" 2>&1
  echo "bench_vendor rc=$?" | tee -a "$out/bench_vendor.log"
  grep -E "Sum|BUDGET" "$out/bench_vendor.log"
else
  echo "no time left for bench_vendor ($left s)"
fi
