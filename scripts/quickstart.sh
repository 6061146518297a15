#!/bin/bash
# A new user's first run on Debian 12: install what is needed, build infera, export a ResNet-50
# (random weights, dynamic batch) with Debian's PyTorch, and benchmark it on the CPU at batch 1 and 16.
# Usage: bash scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup_debian.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
/usr/bin/python3 tests/models/export_models.py --models resnet50 --out models
build/infera bench models/resnet50.onnx --batch 1,16
