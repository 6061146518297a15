#!/bin/bash
# ONNX node conformance of infera's operators (see run_conformance.py for what it checks): picks the
# Python with PyPI onnx and runs tests/conformance/run_conformance.py with the same arguments.
#
# Usage: bash tests/conformance/run_conformance.sh [--only debian|onnx] [--verbose] [--keep DIR]
# Env:   INFERA (default build/infera), PYTHON (needs PyPI onnx at the pinned version; default
#        .venv/bin/python if scripts/setup_debian.sh made one, else python3), LOG_DIR (build/test-logs),
#        ONNX_TESTDATA (default /usr/share/libonnx-testdata/data/node)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
exec "$PYTHON" tests/conformance/run_conformance.py "$@"
