#!/usr/bin/env python3
"""Classify an image with a torchvision model exported to ONNX on the fly, run by infera.

    python3 examples/python/classify.py [--model mobilenet_v2] [--image photo.jpg] [--runs 20]

The export (and the image's preprocessing: resize 256, center crop 224, ImageNet normalization)
runs in Debian's /usr/bin/python3, which has torch and torchvision (--torch-python to change it);
infera runs in this Python, which only needs `infera` and NumPy. No weights are downloaded: the
model has torch's seeded random weights, so the classes are not meaningful, but the numbers are
checked: infera's logits must match torch's own (normalized error <= 1e-3, same top-5).
Prints the top-5 (class index, probability), the time per run and exits 1 on a mismatch.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import infera

EXPORT = r"""
import sys, numpy as np, torch, torchvision
from PIL import Image
name, image, out = sys.argv[1:4]
torch.manual_seed(0)
model = getattr(torchvision.models, name)(weights=None).eval()
T = torchvision.transforms
prep = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                  T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
if image:
    x = prep(Image.open(image).convert("RGB"))[None]
else:  # a synthetic picture: smooth color gradients
    yy, xx = np.mgrid[0:256, 0:256] / 255.0
    rgb = (np.stack([xx, yy, 1 - xx * yy], -1) * 255).astype(np.uint8)
    x = prep(Image.fromarray(rgb))[None]
with torch.no_grad():
    logits = model(x)
torch.onnx.export(model, x, out + "/model.onnx", input_names=["input"], output_names=["logits"],
                  dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, opset_version=13)
np.save(out + "/input.npy", x.numpy())
np.save(out + "/torch_logits.npy", logits.numpy())
"""

DEFAULT_IMAGE = "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg"  # python3-matplotlib


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="mobilenet_v2", help="a torchvision.models constructor name")
    ap.add_argument("--image", default=DEFAULT_IMAGE if os.path.isfile(DEFAULT_IMAGE) else "",
                    help="an image file (default: matplotlib's sample photo, else a synthetic one)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", "/usr/bin/python3"))
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="infera-classify-") as work:
        t0 = time.perf_counter()
        p = subprocess.run([args.torch_python, "-c", EXPORT, args.model, args.image, work], capture_output=True,
                           text=True)
        if p.returncode != 0:
            err = [l for l in p.stderr.splitlines() if l.strip()]
            sys.stderr.write("classify.py: export with %s failed: %s\n" % (args.torch_python, err[-1] if err else "?"))
            return 1
        print("exported %s (random weights) in %.1f s; image: %s" % (args.model, time.perf_counter() - t0,
                                                                      args.image or "synthetic"))
        x = np.load(os.path.join(work, "input.npy"))
        want = np.load(os.path.join(work, "torch_logits.npy"))
        t0 = time.perf_counter()
        sess = infera.InferenceSession(os.path.join(work, "model.onnx"), providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        logits, = sess.run(None, {name: x})  # the first run builds the plan for this shape
        load_ms = (time.perf_counter() - t0) * 1e3
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            logits, = sess.run(None, {name: x})
            times.append((time.perf_counter() - t0) * 1e3)

    probs = softmax(logits[0].astype(np.float64))
    top5 = np.argsort(-probs)[:5]
    print("top-5 (class index: probability):")
    for c in top5:
        print("  %4d: %.4f" % (c, probs[c]))
    print("infera %s: load + first run %.0f ms, run %.2f ms (median of %d)"
          % (infera.__version__, load_ms, float(np.median(times)), args.runs))
    err = float(np.max(np.abs(logits - want)) / np.max(np.abs(want)))
    same_top5 = list(top5) == list(np.argsort(-want[0])[:5])
    print("vs torch: normalized error %.2g, top-5 %s" % (err, "identical" if same_top5 else "DIFFERS"))
    return 0 if err <= 1e-3 and same_top5 else 1


if __name__ == "__main__":
    sys.exit(main())
