#!/bin/bash
# Probe runs on the GPU machine (not a benchmark record): infera's ResNet-50 with device-resident
# I/O, graphs on/off, a per-step profile, and two small models. Usage: bash bench/gpu/probe.sh STAGE_DIR
set -uo pipefail
bin=${1:?stage dir}; out=${OUT:-/tmp/out}
python3 - <<'PY'
import torch, torchvision
for name in ["resnet50", "mobilenet_v2", "efficientnet_b0"]:
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)().eval()
    torch.onnx.export(m, torch.randn(1, 3, 224, 224), "/tmp/%s.onnx" % name, input_names=["input"], output_names=["output"],
                      opset_version=17, dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, dynamo=False)
PY
b="$bin/infera bench"
run() { echo "== $*"; "$@" 2>&1 | grep -E "^ +[0-9]+ +[0-9]+|error" ; }
run $b /tmp/resnet50.onnx --device gpu --precision fp16 --batch 1,32,256 --duration 2 --io device
run $b /tmp/resnet50.onnx --device gpu --precision fp16 --batch 1,32,256 --duration 2 --io device --graph off
run $b /tmp/resnet50.onnx --device gpu --precision fp16 --batch 1,256 --duration 2 --io host
run $b /tmp/resnet50.onnx --device gpu --precision fp32 --batch 1,256 --duration 2 --io device
for m in mobilenet_v2 efficientnet_b0; do run $b /tmp/$m.onnx --device gpu --precision fp16 --batch 1,256 --duration 2 --io device; done
"$bin/infera" bench /tmp/resnet50.onnx --device gpu --precision fp16 --batch 256 --iterations 5 --io device --profile --top 25 2>&1 | tail -32
"$bin/infera" info /tmp/resnet50.onnx --device gpu --precision fp16 --batch 256 --plan > "$out/plan_r50_fp16_b256.txt" 2>&1
