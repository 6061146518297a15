# Sourced by the device-call scripts (tests/gpu/validate_device.sh, bench/gpu/final_run.sh,
# bench/gpu/perfdb_run.sh) on the GPU machine: unpacks the stage tarball ($stage, from
# tests/gpu/stage.sh) into $bin and puts the torch venv's cuDNN / CUDA libraries first on
# LD_LIBRARY_PATH (the libcudnn.so.9 PyTorch loads; GPU-MACHINE.md). Sets out, root, start, left();
# defines unit_tests and unpack_base.
out=${OUT:-/tmp/out}; mkdir -p "$out"
root=$(pwd); start=$SECONDS
left() { echo $((total - (SECONDS - start))); }
bin=/tmp/infera-stage; rm -rf "$bin"; mkdir -p "$bin"; tar -C "$bin" -xJf "$stage"
nv=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null)
libs=""
for d in "$nv"/cudnn/lib "$nv"/*/lib; do [[ -d $d ]] && libs="$libs:$d"; done
export LD_LIBRARY_PATH="$bin/lib${libs}:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"

# The unit tests (GPU cases included), 170 s at most: the summary and the failures here, the whole
# output in $out/unit.txt. UNIT=0 skips them.
unit_tests() {
  [ "${UNIT:-1}" = 0 ] && return 0
  echo "== unit ($(left) s left)"
  timeout 170 stdbuf -oL "$bin/infera_unit_tests" --gtest_brief=1 >"$out/unit.txt" 2>&1
  echo "unit exit $?" >>"$out/unit.txt"
  grep -E "FAILED|PASSED|SKIPPED|exit" "$out/unit.txt" | tail -n 12
  grep -B2 -A8 "Failure" "$out/unit.txt" | head -n 40
}
# A baseline infera binary to compare against (.gpu-infera/base-infera.xz, carried) as $base.
unpack_base() {
  base=/tmp/base-infera
  xz -dc .gpu-infera/base-infera.xz >"$base" && chmod +x "$base"
}
