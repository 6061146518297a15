#!/usr/bin/env bash
# Installs the CPU peers of bench/cpu_families.py (PyPI openvino; onnxruntime comes from
# scripts/setup_debian.sh) into the same Python that scripts/setup_debian.sh uses for the PyPI
# packages: the python3 on PATH when that is not /usr/bin/python3, else .venv (created there).
#   bash bench/cpu_setup_peers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OPENVINO=openvino==2026.4.1  # the version bench/results/2026-12-01-cpu-families*.md was measured with
py=$(command -v python3 || true)
if [ -z "$py" ] || [ "$(readlink -f "$py")" = "$(readlink -f /usr/bin/python3)" ]; then
  [ -x .venv/bin/python ] || { echo "cpu_setup_peers: no .venv: run scripts/setup_debian.sh first" >&2; exit 1; }
  py=.venv/bin/python
fi
if ! "$py" -c "import openvino, onnxruntime" >/dev/null 2>&1; then
  echo "cpu_setup_peers: pip install $OPENVINO into $py"
  "$py" -m pip install -q --disable-pip-version-check "$OPENVINO"
fi
"$py" -c "import openvino, onnxruntime; print('cpu_setup_peers: ok (openvino %s, onnxruntime %s for %s)' % (openvino.__version__.split('-')[0], onnxruntime.__version__, '$py'))"
