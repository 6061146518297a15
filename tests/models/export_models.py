#!/usr/bin/python3
"""Export torchvision CNNs with random weights to ONNX (dynamic batch) for infera's model tests.

Run with Debian's Python (torch 1.13, torchvision 0.14):
    /usr/bin/python3 tests/models/export_models.py --out models            # all models
    /usr/bin/python3 tests/models/export_models.py --models resnet50 --out models
    /usr/bin/python3 tests/models/export_models.py --list

Every model gets torch.manual_seed(0), weights=None, BatchNorm statistics calibrated on a seeded
random batch (see calibrate_batchnorm; --plain-init turns it off), eval mode, and is exported with
input "input", output "output" and a symbolic batch dim "batch" on both.

Exports are keyed: <name>.onnx.stamp holds the key (a hash of this script's text, the torch and
torchvision versions and the options) and the sha256 of the .onnx file. A model already in --out is
skipped only if its stamp has this run's key and the file still has the stamped sha256; otherwise
it is exported again (--force always re-exports). Files and stamps are written to a temporary name
and renamed, so an interrupted export never leaves a half file that a later run would skip.
--manifest PATH writes `name key sha256 path` for every model exported or verified in this run;
tests/models/compare_models.py tests only files listed there with that sha256, so a stale file left
by an earlier export (or a failed export) cannot be tested. Exit 1 if any export failed.

Opset 13 for all: at opset 17 torch exports nn.LayerNorm (ConvNeXt) as LayerNormalization, which is
not in infera's op list; at 13 it becomes ReduceMean/Sub/Pow/Sqrt/Div.
"""
import argparse
import hashlib
import os
import sys
import time

try:
    import torch
    import torchvision
except ImportError as e:  # pragma: no cover - environment problem
    sys.stderr.write("export_models.py: needs Debian's python3-torch and python3-torchvision "
                     "(run it with /usr/bin/python3): %s\n" % e)
    sys.exit(1)

M = torchvision.models
import torchvision.models.segmentation  # noqa: E402  (M.segmentation is not imported by models)


class SegmentationOut(torch.nn.Module):
    """torchvision's segmentation models return {"out": ...}: export the tensor alone."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)["out"]


# name -> constructor (random weights). Keep names stable: other scripts and the README use them.
MODELS = {
    "resnet50": lambda: M.resnet50(weights=None),
    "mobilenet_v2": lambda: M.mobilenet_v2(weights=None),
    "mobilenet_v3_large": lambda: M.mobilenet_v3_large(weights=None),
    "efficientnet_b0": lambda: M.efficientnet_b0(weights=None),
    "densenet121": lambda: M.densenet121(weights=None),
    "squeezenet1_1": lambda: M.squeezenet1_1(weights=None),
    "shufflenet_v2_x1_0": lambda: M.shufflenet_v2_x1_0(weights=None),
    "googlenet": lambda: M.googlenet(weights=None, aux_logits=False, init_weights=True),
    "regnet_y_400mf": lambda: M.regnet_y_400mf(weights=None),
    "convnext_tiny": lambda: M.convnext_tiny(weights=None),
    # Families of issue 13: grouped (RegNetX), wide, NAS-found depthwise (MnasNet), plain deep 3x3
    # (VGG), and segmentation heads (dilated convolutions, ASPP / LRASPP, bilinear Resize to the input
    # size, large spatial outputs). The segmentation models return a dict: only its "out" is exported.
    "regnet_x_800mf": lambda: M.regnet_x_800mf(weights=None),
    "wide_resnet50_2": lambda: M.wide_resnet50_2(weights=None),
    "mnasnet1_0": lambda: M.mnasnet1_0(weights=None),
    "vgg16": lambda: M.vgg16(weights=None),
    "lraspp_mobilenet_v3_large": lambda: SegmentationOut(
        M.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)),
    "deeplabv3_resnet50": lambda: SegmentationOut(
        M.segmentation.deeplabv3_resnet50(weights=None, weights_backbone=None, aux_loss=False)),
}

DEFAULT_OPSET = 13


def calibrate_batchnorm(model, size):
    """Give every BatchNorm real statistics and a non-trivial affine transform.

    With weights=None, BatchNorm has mean 0, var 1, gamma 1, beta 0: a BN-folding bug would go
    unseen, and in deep nets (EfficientNet, MobileNet) the signal shrinks to ~1e-14 by the output.
    So: run a seeded random batch with only the BN layers in training mode (cumulative averages),
    then draw gamma in [0.8, 1.2] and beta in N(0, 0.1). Activations stay O(1) to the output
    (gamma in [0.5, 1.5] made EfficientNet ill-conditioned: ORT vs torch differed by 2e-4).
    """
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
        m.train()
    with torch.no_grad():
        model(torch.randn(4, 3, size, size))
        for m in bns:
            m.eval()
            m.weight.uniform_(0.8, 1.2)
            m.bias.normal_(0.0, 0.1)


def export_one(name, path, opset, size, plain_init=False):
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    if not plain_init:
        calibrate_batchnorm(model, size)
    x = torch.randn(1, 3, size, size)
    tmp = path + ".tmp"
    # PyTorch 2.x exports through dynamo by default; the TorchScript exporter is what 1.13 has.
    extra = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
    with torch.no_grad():
        torch.onnx.export(
            model, x, tmp,
            opset_version=opset,
            input_names=["input"],
            output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
            do_constant_folding=True,
            **extra,
        )
    os.replace(tmp, path)


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_stamp(stamp_path):
    """(key, sha256) from a stamp file, or (None, None)."""
    try:
        with open(stamp_path) as f:
            parts = f.read().split()
    except OSError:
        return None, None
    return (parts[0], parts[1]) if len(parts) == 2 else (None, None)


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def stamp_of(name, args):
    """Identifies an export: this script's text, torch/torchvision versions and the options used."""
    with open(os.path.abspath(__file__), "rb") as f:
        h = hashlib.sha256(f.read())
    h.update(repr((name, torch.__version__, torchvision.__version__, args.opset, args.size,
                   args.plain_init)).encode())
    return h.hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="models", help="output folder (default: models)")
    ap.add_argument("--models", default="all",
                    help="comma-separated model names, or 'all' (default); see --list")
    ap.add_argument("--opset", type=int, default=DEFAULT_OPSET, help="ONNX opset (default 13)")
    ap.add_argument("--size", type=int, default=224, help="input height/width (default 224)")
    ap.add_argument("--force", action="store_true", help="re-export models already present")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: all cores)")
    ap.add_argument("--plain-init", action="store_true",
                    help="keep torchvision's BatchNorm init (mean 0, var 1); default: calibrate it")
    ap.add_argument("--manifest", metavar="PATH",
                    help="write `name key sha256 path` of every model exported or verified in this run")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    args = ap.parse_args()

    if args.list:
        print("\n".join(MODELS))
        return 0
    names = list(MODELS) if args.models == "all" else [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.stderr.write("export_models.py: unknown model(s) %s; known: %s\n"
                         % (",".join(unknown), ",".join(MODELS)))
        return 2
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)

    failed, manifest = [], []
    t_all = time.time()
    for name in names:
        path = os.path.join(args.out, name + ".onnx")
        stamp_path, key = path + ".stamp", stamp_of(name, args)
        if os.path.exists(path) and not args.force:
            stamped_key, stamped_sha = read_stamp(stamp_path)
            if stamped_key == key:
                sha = file_sha256(path)
                if sha == stamped_sha:
                    print("%-20s present, skipped (%s, key %s)" % (name, path, key), flush=True)
                    manifest.append((name, key, sha, os.path.abspath(path)))
                    continue
                print("%-20s %s changed since its export (sha256 differs): exporting again" % (name, path),
                      flush=True)
        t0 = time.time()
        try:
            if os.path.exists(stamp_path):
                os.unlink(stamp_path)  # no stamp until the new file is complete
            export_one(name, path, args.opset, args.size, args.plain_init)
        except Exception as e:  # report and continue with the other models
            failed.append(name)
            sys.stderr.write("%s: export failed: %s\n" % (name, str(e).splitlines()[0] if str(e) else type(e).__name__))
            continue
        sha = file_sha256(path)
        write_atomic(stamp_path, "%s %s\n" % (key, sha))
        manifest.append((name, key, sha, os.path.abspath(path)))
        print("%-20s exported in %5.1f s -> %s (%.1f MB, key %s)"
              % (name, time.time() - t0, path, os.path.getsize(path) / 1e6, key), flush=True)
    if args.manifest:
        write_atomic(args.manifest, "".join("%s %s %s %s\n" % m for m in manifest))
    print("total %.1f s; %d exported or present, %d failed"
          % (time.time() - t_all, len(names) - len(failed), len(failed)), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
