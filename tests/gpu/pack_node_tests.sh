#!/bin/bash
# Packs the ONNX node tests of the conformance suite (one copy of each distinct test) with the
# suite's skips, renamed to the folder names `infera check --skip-file` matches, into
# .gpu-infera/node-tests.tar.xz for tests/gpu/validate_device.sh (about 1 MB).
set -euo pipefail
cd "$(dirname "$0")/../.."
keep=$(mktemp -d); trap 'rm -rf "$keep"' EXIT
bash tests/conformance/run_conformance.sh --keep "$keep/tests" >"$keep/log" 2>&1 || {
  tail -n 5 "$keep/log"; exit 1; }
# skips.txt names tests source:name; the distinct folder holds source.name.
sed -E 's/^(debian|onnx):/\1./' tests/conformance/skips.txt >"$keep/skips.txt"
mkdir -p .gpu-infera
tar -C "$keep/tests" -chf - distinct | tar -C "$keep" -xf -
tar -C "$keep" -cJf .gpu-infera/node-tests.tar.xz distinct skips.txt
ls -la .gpu-infera/node-tests.tar.xz
