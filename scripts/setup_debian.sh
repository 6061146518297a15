#!/bin/bash
# Installs what infera needs to build, test and benchmark on Debian 12: apt packages, then the PyPI
# packages (onnxruntime, onnx, numpy; nanobind, scikit-build-core, pytest for the Python package)
# for the Python that the test scripts run as `python3`.
# Idempotent and quiet: does nothing but check when all is installed. Logs to ${TMPDIR:-/tmp}.
#
# Two Pythons, on purpose: Debian's /usr/bin/python3 has python3-torch 1.13 (exports the test models)
# and must keep Debian's numpy 1.x; the PyPI packages (numpy 2, latest onnx, onnxruntime) go to
#   - the python3 on PATH, when that is not /usr/bin/python3 (pyenv, CI images), or else
#   - a virtual environment in .venv (fresh Debian), which scripts/test_all.sh then uses.
# Usage: bash scripts/setup_debian.sh [--upgrade]
#   --upgrade: pip-upgrade to the latest wheels. hipcc and the HIP runtime (Debian 12's ROCm 5.2)
#   are installed for the test suite's HIP build (-DINFERA_GPU=hip, compile only: no AMD GPU); the
#   CUDA build needs the CUDA toolkit (nvcc), which is not a Debian package: without it that build is
#   reported as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

upgrade=""
log=$(mktemp -t infera-setup-XXXXXX.log)
fail() { echo "setup_debian.sh: $1 (log: $log)" >&2; tail -n 20 "$log" >&2; exit 1; }
for arg in "$@"; do
  case "$arg" in
    --upgrade) upgrade="--upgrade" ;;
    *) fail "unknown argument $arg (--upgrade)" ;;
  esac
done

APT_PACKAGES=(
  cmake g++ make git pkg-config ccache clang-format
  libonnx-dev libprotobuf-dev protobuf-compiler libdnnl-dev libgtest-dev libbenchmark-dev
  ocl-icd-opencl-dev opencl-headers
  libonnx-testdata
  libjpeg62-turbo-dev libpng-dev python3-pil  # calibration images (issue 11): decoding; PIL for the tests
  dataset-fashion-mnist  # tools/train_fashion_resnet.py (issue 11: the int8 accuracy table)
  python3 python3-numpy python3-torch python3-torchvision python3-onnx python3-matplotlib python3-venv
  hipcc libamdhip64-dev rocm-device-libs
)
# Pinned: the conformance suite generates node tests from this onnx wheel, and a newer one brings
# newer opsets; the benchmark records the ORT version it ran against. nanobind, scikit-build-core
# and pytest build and test the Python package (python/, tests/python). PyTorch is not installed
# here: PyPI's wheel brings the CUDA libraries (gigabytes); the DLPack tests use NumPy's own
# __dlpack__ and Debian's python3-torch (in /usr/bin/python3, run as a subprocess).
PIP_PACKAGES=(onnxruntime==1.32.0 onnx==1.23.2 numpy==2.4.6 nanobind==3.1.0 scikit-build-core==1.1.2 pytest==9.2.0)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || fail "run as root or install sudo"
  SUDO=sudo
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >>"$log" 2>&1 || fail "apt-get update failed"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1 \
    || fail "apt-get install failed"
else
  echo "setup: apt packages present"
fi

# The Python for the PyPI packages (see the header).
py=$(command -v python3 || true)
if [ -z "$py" ] || [ "$(readlink -f "$py")" = "$(readlink -f /usr/bin/python3)" ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv for the PyPI packages"
    /usr/bin/python3 -m venv .venv >>"$log" 2>&1 || fail "python3 -m venv .venv failed"
  fi
  py=.venv/bin/python
fi
if [ -n "$upgrade" ] || ! "$py" -c "import onnxruntime, onnx, numpy, nanobind, scikit_build_core, pytest" >/dev/null 2>&1; then
  echo "setup: pip install ${PIP_PACKAGES[*]} into $py"
  "$py" -m pip install -q --disable-pip-version-check $upgrade "${PIP_PACKAGES[@]}" >>"$log" 2>&1 \
    || fail "pip install failed"
else
  echo "setup: PyPI packages present in $py"
fi
# CUTLASS 3 (header-only; issue 11's int8 candidates on Hopper): the headers of PyPI's nvidia-cutlass
# wheel, unpacked into .deps/cutlass (ignored by git; CMake looks there). Its Python is not used.
CUTLASS_VERSION=4.2.0.0
if [ "$(cat .deps/cutlass/VERSION 2>/dev/null)" != "$CUTLASS_VERSION" ]; then
  echo "setup: fetching nvidia-cutlass $CUTLASS_VERSION headers into .deps/cutlass"
  rm -rf .deps/cutlass .deps/cutlass-wheel
  "$py" -m pip download -q --disable-pip-version-check --no-deps "nvidia-cutlass==$CUTLASS_VERSION" \
    -d .deps/cutlass-wheel >>"$log" 2>&1 || fail "pip download nvidia-cutlass failed"
  "$py" - "$CUTLASS_VERSION" >>"$log" 2>&1 <<'PY' || fail "unpacking the nvidia-cutlass wheel failed"
import glob, os, sys, zipfile
whl = glob.glob(".deps/cutlass-wheel/nvidia_cutlass-*.whl")[0]
src = "cutlass_library/source/"
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        for part in ("include/", "tools/util/include/"):
            if n.startswith(src + part) and not n.endswith("/"):
                out = os.path.join(".deps/cutlass", n[len(src):])
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with open(out, "wb") as f:
                    f.write(z.read(n))
open(".deps/cutlass/VERSION", "w").write(sys.argv[1])
PY
  rm -rf .deps/cutlass-wheel
else
  echo "setup: CUTLASS $CUTLASS_VERSION headers present"
fi
"$py" -c "import onnxruntime, onnx, numpy; print('setup: ok (onnxruntime %s, onnx %s, numpy %s for %s)' % (onnxruntime.__version__, onnx.__version__, numpy.__version__, '$py'))"
rm -f "$log"
