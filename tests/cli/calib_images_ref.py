#!/usr/bin/python3
"""Calibration images and their reference tensors for tests/cli/cases_images.py.

Run with Debian's python3 (PIL, torchvision 0.14):
    /usr/bin/python3 tests/cli/calib_images_ref.py OUT
Writes seeded images of every kind infera's loader reads into OUT/<set>/ and, per set, OUT/<set>.ref.npy:
the tensor torchvision's ImageNet transform makes of them in name order (Image.open(f).convert(MODE),
Resize, CenterCrop, ToTensor, Normalize), plus OUT/bad/ (files infera must refuse) and OUT/manifest.json.
"""
import json
import os
import struct
import sys
import zlib

import numpy as np
import torch
import torchvision.transforms as T
from PIL import Image

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def smooth(rng, h, w, c):
    """Gradients plus noise: resampling errors show as value differences, unlike on flat images."""
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([(x * (3 + k) + y * (5 - k)) % 256 for k in range(c)], -1)
    return np.clip(base + rng.integers(-40, 41, (h, w, c)), 0, 255).astype(np.uint8)


def ref(folder, mode, resize, crop, mean, std, nhwc=False):
    t = [T.Resize(resize)] if resize else []
    t += [T.CenterCrop(crop)] if crop else []
    t += [T.ToTensor(), T.Normalize(mean, std)]
    tf = T.Compose(t)
    xs = []
    for f in sorted(os.listdir(folder)):
        if f.startswith(".") or not f.lower().endswith((".jpg", ".jpeg", ".png")):
            continue
        with open(os.path.join(folder, f), "rb") as fh:
            x = tf(Image.open(fh).convert(mode))
        xs.append(x.permute(1, 2, 0) if nhwc else x)
    return torch.stack(xs).numpy().astype(np.float32)


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)


def adam7_png(path, px):
    """An interlaced (Adam7) 8-bit RGB PNG, every row filter 0: PIL reads these but cannot write them."""
    h, w, _ = px.shape
    raw = b""
    for y0, x0, dy, dx in ((0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2),
                           (1, 0, 2, 1)):
        sub = px[y0::dy, x0::dx]
        if sub.size:
            raw += b"".join(b"\x00" + row.tobytes() for row in sub)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 1)) +
                png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b""))


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(5)
    man = {}
    # rgb: every decodable kind, converted to RGB; 24-short-side resize then a 20x20 crop.
    d = os.path.join(out, "rgb")
    os.makedirs(d, exist_ok=True)
    Image.fromarray(smooth(rng, 29, 37, 3)).save(os.path.join(d, "a_rgb.png"))
    Image.fromarray(smooth(rng, 40, 21, 1)[:, :, 0]).save(os.path.join(d, "b_gray.png"))
    pal = Image.fromarray(smooth(rng, 31, 31, 3)).convert("P", palette=Image.ADAPTIVE, colors=64)
    pal.info["transparency"] = 3
    pal.save(os.path.join(d, "c_palette.png"), transparency=3)
    rgba = np.concatenate([smooth(rng, 26, 30, 3), rng.integers(0, 256, (26, 30, 1), dtype=np.uint8)], -1)
    Image.fromarray(rgba, "RGBA").save(os.path.join(d, "d_rgba.png"))
    Image.fromarray(smooth(rng, 33, 50, 3)).save(os.path.join(d, "e_photo.jpg"), quality=90)
    Image.fromarray(smooth(rng, 24, 24, 1)[:, :, 0]).save(os.path.join(d, "f_gray.jpeg"), quality=85)
    Image.fromarray(smooth(rng, 64, 48, 3)).save(os.path.join(d, "g_upper.JPG"), quality=75, progressive=True)
    adam7_png(os.path.join(d, "i_interlaced.png"), smooth(rng, 27, 35, 3))
    # Gray with a tRNS color (ignored, as alpha is).
    Image.fromarray(smooth(rng, 22, 26, 1)[:, :, 0]).save(os.path.join(d, "j_gray_trns.png"), transparency=7)
    # A PNG named .jpg: read by its bytes, not its name.
    Image.fromarray(smooth(rng, 25, 22, 3)).save(os.path.join(d, "h_png_named.jpg"), format="PNG")
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not an image: skipped\n")
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    Image.fromarray(smooth(rng, 9, 9, 3)).save(os.path.join(d, "sub", "skipped.png"))
    np.save(os.path.join(out, "rgb.ref.npy"), ref(d, "RGB", 24, 20, MEAN, STD))
    np.save(os.path.join(out, "rgb_nhwc.ref.npy"), ref(d, "RGB", 24, 20, MEAN, STD, nhwc=True))
    np.save(os.path.join(out, "rgb_gray.ref.npy"), ref(d, "L", 24, 20, [0.5], [0.25]))
    man["jpeg"] = ["e_photo.jpg", "f_gray.jpeg", "g_upper.JPG"]
    man["names"] = sorted(f for f in os.listdir(d) if f.lower().endswith((".png", ".jpg", ".jpeg")))
    # Up- and non-square resizes (resize=HxW: torchvision's Resize((h, w))), no crop.
    np.save(os.path.join(out, "rgb_exact.ref.npy"), ref(d, "RGB", (17, 45), None, [0.0], [1.0]))
    # 16-bit PNGs: scaled to 8 bits with rounding (PIL clips them instead: the reference is numpy).
    d16 = os.path.join(out, "png16")
    os.makedirs(d16, exist_ok=True)
    g16 = rng.integers(0, 65536, (12, 14)).astype(np.uint16)
    Image.fromarray(g16.astype(np.int32), "I").convert("I;16").save(os.path.join(d16, "g16.png"))
    back = np.asarray(Image.open(os.path.join(d16, "g16.png"))).astype(np.int64)
    assert (back == g16).all(), "PIL did not write the 16-bit PNG as given"
    assert Image.open(os.path.join(d, "i_interlaced.png")).info.get("interlace") == 1, "not interlaced"
    np.save(os.path.join(out, "png16.ref.npy"),
            (np.floor(g16.astype(np.float64) / 257.0 + 0.5).astype(np.float32) / np.float32(255))[None, None])
    # Bad files, one per folder.
    bad = os.path.join(out, "bad")
    good_png = open(os.path.join(d, "a_rgb.png"), "rb").read()
    good_jpg = open(os.path.join(d, "e_photo.jpg"), "rb").read()
    cases = {
        "truncated_jpeg": ("t.jpg", good_jpg[:len(good_jpg) // 2]),
        "truncated_png": ("t.png", good_png[:len(good_png) // 2]),
        "garbage": ("g.png", bytes(rng.integers(0, 256, 300, dtype=np.uint8))),
        "empty_file": ("e.jpg", b""),
        "png_bad_crc": ("c.png", good_png[:29] + bytes([good_png[29] ^ 0xff]) + good_png[30:]),
        "jpeg_bad_header": ("h.jpg", good_jpg[:2] + b"\xff\xc0\x00\x04\x00\x00" + good_jpg[8:]),
        "huge_png": ("huge.png", b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0))
                     + png_chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + png_chunk(b"IEND", b"")),
    }
    cmyk = Image.fromarray(smooth(rng, 16, 16, 3)).convert("CMYK")
    os.makedirs(os.path.join(bad, "cmyk_jpeg"), exist_ok=True)
    cmyk.save(os.path.join(bad, "cmyk_jpeg", "k.jpg"), quality=90)
    for name, (f, data) in cases.items():
        os.makedirs(os.path.join(bad, name), exist_ok=True)
        with open(os.path.join(bad, name, f), "wb") as fh:
            fh.write(data)
    man["bad"] = {k: v[0] for k, v in cases.items()}
    man["bad"]["cmyk_jpeg"] = "k.jpg"
    os.makedirs(os.path.join(bad, "no_images"), exist_ok=True)
    with open(os.path.join(bad, "no_images", "readme.txt"), "w") as f:
        f.write("nothing\n")
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(man, f)
    print("calib_images_ref: wrote %s" % out)


if __name__ == "__main__":
    main()
