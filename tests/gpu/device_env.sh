# Sourced by the device-call scripts (tests/gpu/validate_device.sh, bench/gpu/final_run.sh,
# bench/gpu/perfdb_run.sh) on the GPU machine: unpacks the stage tarball ($stage, from
# tests/gpu/stage.sh) into $bin and puts the torch venv's cuDNN / CUDA libraries first on
# LD_LIBRARY_PATH (the libcudnn.so.9 PyTorch loads; GPU-MACHINE.md). Sets out, root, start, left().
out=${OUT:-/tmp/out}; mkdir -p "$out"
root=$(pwd); start=$SECONDS
left() { echo $((total - (SECONDS - start))); }
bin=/tmp/infera-stage; rm -rf "$bin"; mkdir -p "$bin"; tar -C "$bin" -xJf "$stage"
nv=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null)
libs=""
for d in "$nv"/cudnn/lib "$nv"/*/lib; do [[ -d $d ]] && libs="$libs:$d"; done
export LD_LIBRARY_PATH="$bin/lib${libs}:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
