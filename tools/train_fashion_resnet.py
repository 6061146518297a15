#!/usr/bin/python3
"""Trains a small ResNet on Fashion-MNIST (Debian's dataset-fashion-mnist) and exports it to ONNX, with the
evaluation and calibration arrays `infera eval` / `infera quantize` read.

Run with Debian's python3 (torch 1.13):
    /usr/bin/python3 tools/train_fashion_resnet.py --out examples/fashion --data-out build/fashion [--epochs 2]
Writes OUT/fashion_resnet.onnx (opset 13, input [batch,1,28,28], output logits [batch,10]; BatchNorm folded
into the convs by the export) and DATA_OUT/{test_images,test_labels,calib_images}.npy: the 10k test set and
1,000 training images (the first 1,000 of a fixed permutation) for calibration, normalized as in training
((x/255 - 0.2860) / 0.3530). Prints the fp32 test top-1 of the PyTorch model.

The network (--width W, default 16): stem conv 3x3 1->W + BN + ReLU, three stages of one basic residual block
each (W, 2W/2, 4W/2 channels; conv-BN-ReLU-conv-BN + identity or 1x1/2 projection, ReLU), global average pool, linear 4W->10.
Training: Adam, one-cycle lr up to 2e-3, batch 128, random horizontal flips, seed 0, on the CPU or, with
--device cuda, a GPU (the GPU machine: its venv's python3, the dataset copied there and named by
--data-dir); --train-images N trains on N of the 60k (a fixed permutation), for a machine with little
CPU to spare.
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530


def read_idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        b = f.read()
    magic = int.from_bytes(b[0:4], "big")
    n = int.from_bytes(b[4:8], "big")
    if magic == 2051:
        return np.frombuffer(b, np.uint8, offset=16).reshape(n, 1, 28, 28)
    return np.frombuffer(b, np.uint8, offset=8).astype(np.int64)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.proj is None else self.proj(x)))


class FashionResNet(nn.Module):
    def __init__(self, w=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, w, 3, 1, 1, bias=False), nn.BatchNorm2d(w), nn.ReLU())
        self.stages = nn.Sequential(Block(w, w, 1), Block(w, 2 * w, 2), Block(2 * w, 4 * w, 2))
        self.fc = nn.Linear(4 * w, 10)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def norm(x):
    return ((x.astype(np.float32) / 255.0) - MEAN) / STD


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--data-out", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu | cuda")
    ap.add_argument("--data-dir", default=None, help="the four .gz files (default: Debian's dataset-fashion-mnist)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--width", type=int, default=16, help="channels of the first stage (x2, x4 after)")
    ap.add_argument("--train-images", type=int, default=60000, help="train on the first N of a fixed permutation")
    args = ap.parse_args()
    global DATA
    DATA = args.data_dir or DATA
    dev = torch.device(args.device)
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    xtr, ytr = norm(read_idx("train-images-idx3-ubyte.gz")), read_idx("train-labels-idx1-ubyte.gz")
    xte, yte = norm(read_idx("t10k-images-idx3-ubyte.gz")), read_idx("t10k-labels-idx1-ubyte.gz")
    calib = np.random.default_rng(1).permutation(len(xtr))[:1000]
    keep = np.random.default_rng(2).permutation(len(xtr))[:args.train_images]
    xcal = xtr[calib]
    xtr, ytr = xtr[keep], ytr[keep]
    model = FashionResNet(args.width).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    steps = args.epochs * ((len(xtr) + 127) // 128)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps)
    rng = np.random.default_rng(0)
    t0 = time.time()
    for ep in range(args.epochs):
        model.train()
        perm = rng.permutation(len(xtr))
        for i in range(0, len(xtr), 128):
            idx = perm[i:i + 128]
            x = torch.from_numpy(xtr[idx])
            flip = torch.from_numpy(rng.random(len(idx)) < 0.5)
            x[flip] = torch.flip(x[flip], dims=[3])
            loss = F.cross_entropy(model(x.to(dev)), torch.from_numpy(ytr[idx]).to(dev))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print("epoch %d done, %.0f s, last loss %.3f" % (ep + 1, time.time() - t0, loss.item()), flush=True)
    model = model.cpu().eval()
    with torch.no_grad():
        pred = torch.cat([model(torch.from_numpy(xte[i:i + 500])).argmax(1) for i in range(0, len(xte), 500)])
    top1 = float((pred.numpy() == yte).mean())
    print("fp32 test top-1 (PyTorch): %.4f" % top1)
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.data_out, exist_ok=True)
    path = os.path.join(args.out, "fashion_resnet.onnx")
    torch.onnx.export(model, torch.from_numpy(xte[:1]), path, opset_version=13, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      do_constant_folding=True)
    np.save(os.path.join(args.data_out, "test_images.npy"), xte)
    np.save(os.path.join(args.data_out, "test_labels.npy"), yte)
    np.save(os.path.join(args.data_out, "calib_images.npy"), xcal)
    print("wrote %s (%d bytes) and %s/*.npy" % (path, os.path.getsize(path), args.data_out))


if __name__ == "__main__":
    main()
