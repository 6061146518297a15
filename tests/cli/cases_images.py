"""Calibration from a folder of images (issue 11): `infera quantize --calibration DIR --calib-preprocess SPEC`
loads JPEG/PNG files as torchvision's ImageNet transform does (compared with torchvision itself on Debian's
python3, tests/cli/calib_images_ref.py, through --calib-dump), quantizes end to end, and refuses bad images,
specs and model/spec disagreements with one line."""
import json
import os
import re
import subprocess

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from cli_util import expect, ok, one_line_error, save

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_PYTHON = os.environ.get("TORCH_PYTHON", "/usr/bin/python3")
SPEC = "resize=24,crop=20,mean=0.485:0.456:0.406,std=0.229:0.224:0.225"


def conv_model(shape, nhwc=False, seed=0):
    """input `shape` (NCHW, or NHWC transposed first) -> conv 3x3 + relu -> GAP -> Gemm -> [batch, 10]."""
    rng = np.random.default_rng(seed)
    c = shape[3] if nhwc else shape[1]
    inits = [numpy_helper.from_array((rng.standard_normal((8, c, 3, 3)) * 0.3).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal((10, 8)) * 0.3).astype(np.float32), "fc")]
    x = "input"
    nodes = []
    if nhwc:
        nodes.append(helper.make_node("Transpose", ["input"], ["t"], name="to_nchw", perm=[0, 3, 1, 2]))
        x = "t"
    nodes += [helper.make_node("Conv", [x, "w"], ["c"], name="conv", pads=[1] * 4),
              helper.make_node("Relu", ["c"], ["r"], name="relu"),
              helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
              helper.make_node("Flatten", ["g"], ["f"], name="flat"),
              helper.make_node("Gemm", ["f", "fc"], ["logits"], name="fc", transB=1)]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_operatorsetid("", 13)])
    m.ir_version = 8
    return m


def add(c, ort):
    d = c.mkdir("images")
    made = {}

    def make():
        if not made:
            p = subprocess.run([TORCH_PYTHON, os.path.join(HERE, "calib_images_ref.py"), d], capture_output=True,
                               text=True, timeout=300)
            expect(p.returncode == 0, "calib_images_ref.py (%s, needs PIL and torchvision): %s" %
                   (TORCH_PYTHON, p.stderr.strip()[-300:]))
            made.update(json.load(open(os.path.join(d, "manifest.json"))))
        return made

    m_rgb = save(conv_model(["batch", 3, 20, 20]), os.path.join(d, "rgb.onnx"))
    m_free = save(conv_model(["batch", 3, "h", "w"]), os.path.join(d, "free.onnx"))
    m_gray = save(conv_model(["batch", 1, 20, 20]), os.path.join(d, "gray.onnx"))
    m_nhwc = save(conv_model(["batch", 20, 20, 3], nhwc=True), os.path.join(d, "nhwc.onnx"))

    def dump(model, folder, spec, name, *extra):
        out, npy = os.path.join(d, name + ".q.onnx"), os.path.join(d, name + ".dump.npy")
        rc, so, se = c.sh("quantize", model, "--calibration", os.path.join(d, folder), "--calib-preprocess", spec,
                          "-o", out, "--calib-dump", npy, *extra)
        ok(rc, so, se)
        return np.load(npy), out

    def compare(got, want, jpeg_rows, what):
        expect(got.shape == want.shape and got.dtype == np.float32, "%s: shape %s %s, torchvision %s" %
               (what, got.shape, got.dtype, want.shape))
        exact = [i for i in range(len(want)) if i not in jpeg_rows]
        err = np.abs(got[exact] - want[exact]).max()
        # PNG: PIL's fixed-point resize reproduced bit for bit (one 8-bit level is 1/255/std ~ 0.017).
        expect(err <= 1e-5, "%s: PNG images differ from torchvision by %.3g (rows %s)" % (what, err, exact))
        if jpeg_rows:
            # JPEG: decoders may differ by a level or two between libjpeg versions; the same one gives 0.
            j = np.abs(got[jpeg_rows] - want[jpeg_rows])
            expect(j.max() <= 3 / 255 / 0.224 and j.mean() <= 0.5 / 255 / 0.224,
                   "%s: JPEG images differ from torchvision by max %.4f mean %.5f" % (what, j.max(), j.mean()))

    def torchvision_transform():
        man = make()
        jpeg_rows = [man["names"].index(f) for f in man["jpeg"]]
        expect(len(man["names"]) == 10, "reference set: %r" % man["names"])
        got, out = dump(m_rgb, "rgb", SPEC, "rgb")
        compare(got, np.load(os.path.join(d, "rgb.ref.npy")), jpeg_rows, "resize=24,crop=20 nchw")
        # The quantized model's input range is the loaded tensor's.
        amax = json.load(open(out + ".calib.json"))["tensors"]["input"]["amax"]
        expect(abs(amax - np.abs(got).max()) <= 1e-6 * np.abs(got).max(), "input amax %g vs data %g" %
               (amax, np.abs(got).max()))
        got, _ = dump(m_nhwc, "rgb", SPEC + ",layout=nhwc", "nhwc")
        compare(got, np.load(os.path.join(d, "rgb_nhwc.ref.npy")), jpeg_rows, "layout=nhwc")
        got, _ = dump(m_gray, "rgb", "resize=24,crop=20,mean=0.5,std=0.25,color=gray", "gray")
        compare(got, np.load(os.path.join(d, "rgb_gray.ref.npy")), jpeg_rows, "color=gray")
        # resize=HxW (no crop) on a model with free height and width; scale=255 is the default.
        got, _ = dump(m_free, "rgb", "resize=17x45,scale=255", "exact")
        compare(got, np.load(os.path.join(d, "rgb_exact.ref.npy")), jpeg_rows, "resize=17x45")
        m16 = save(conv_model(["batch", 1, 12, 14]), os.path.join(d, "m16.onnx"))
        got, _ = dump(m16, "png16", "color=gray", "png16")
        want = np.load(os.path.join(d, "png16.ref.npy"))
        expect(got.shape == want.shape and np.abs(got - want).max() <= 1e-6,
               "16-bit PNG: max diff %.3g from round(v / 257) / 255" % np.abs(got - want).max())

    c.test("calib images: = torchvision (PNG exact, JPEG within 3 levels)", torchvision_transform)

    def quantize_end_to_end():
        expect(ort is not None, "needs onnxruntime")
        make()
        out = os.path.join(d, "e2e.onnx")
        rc, so, se = c.sh("quantize", m_rgb, "--calibration", os.path.join(d, "rgb"), "--calib-preprocess", SPEC, "-o",
                          out, "--batch", "3", "--calib-method", "percentile:99.9")
        ok(rc, so, se)
        expect("wrote " + out in so, "summary: %s" % so.strip())
        x = np.load(os.path.join(d, "rgb.ref.npy"))
        f32 = ort.InferenceSession(m_rgb, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
        q = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
        rel = np.abs(q - f32).max() / np.abs(f32).max()
        expect(rel < 0.1, "ORT on the image-calibrated int8 model: %.3f (relative) from fp32" % rel)
        # infera eval calibrates from the folder too.
        labels = os.path.join(d, "lab.npy")
        np.save(labels, np.argmax(f32, 1).astype(np.int64))
        np.save(os.path.join(d, "x.npy"), x)
        rc, so, se = c.sh("eval", m_rgb, "--images", os.path.join(d, "x.npy"), "--labels", labels, "--precision", "int8",
                          "--calibration", os.path.join(d, "rgb"), "--calib-preprocess", SPEC)
        ok(rc, so, se)
        expect(re.search(r"^top1=\S+ top5=\S+ n=10 precision=int8$", so.strip().splitlines()[-1]), "eval: %s" % so)

    c.test("calib images: quantize end to end (ORT runs it), eval", quantize_end_to_end)

    def spec_and_model_disagree():
        make()
        x, rgb = os.path.join(d, "x.onnx"), os.path.join(d, "rgb")
        one_line_error(*c.sh("quantize", m_gray, "--calibration", rgb, "--calib-preprocess", SPEC, "-o", x), 1,
                       "3 channel", "color=rgb", "[batch,1,20,20]")
        one_line_error(*c.sh("quantize", m_rgb, "--calibration", rgb, "--calib-preprocess", "resize=24,crop=16", "-o",
                             x), 1, "16x16", "[batch,3,20,20]")
        one_line_error(*c.sh("quantize", m_rgb, "--calibration", rgb, "--calib-preprocess", SPEC + ",layout=nhwc", "-o",
                             x), 1, "layout=nhwc", "[batch,3,20,20]")
        # No crop on fixed 20x20: the first image's size is not the model's.
        one_line_error(*c.sh("quantize", m_rgb, "--calibration", rgb, "--calib-preprocess", "resize=24", "-o", x), 1,
                       "a_rgb.png", "[batch,3,20,20]")
        # Free dims but images of several sizes.
        one_line_error(*c.sh("quantize", m_free, "--calibration", rgb, "--calib-preprocess", "resize=24", "-o", x), 1,
                       "b_gray.png", "crop=")
        one_line_error(*c.sh("quantize", m_rgb, "--calibration", rgb, "-o", x), 1, "--calib-preprocess", "images")
        one_line_error(*c.sh("quantize", m_rgb, "--calibration", os.path.join(d, "rgb.ref.npy"), "--calib-preprocess",
                             SPEC, "-o", x), 1, "not a folder")
        one_line_error(*c.sh("quantize", m_free, "--calibration", rgb, "--calib-preprocess", "crop=30", "-o", x), 1,
                       "a_rgb.png", "smaller than crop=30x30")
        one_line_error(*c.sh("quantize", m_free, "--calibration", rgb, "--calib-preprocess", "resize=2000x2000",
                             "--max-image-pixels", "1M", "-o", x), 1, "a_rgb.png", "resize=2000x2000", "pixel limit")
        for spec, word in (("resize=0", "resize='0'"), ("crop=2x", "crop='2x'"), ("mean=1:2", "mean has 2 values"),
                           ("std=0", "std='0'"), ("layout=chw", "nchw or nhwc"), ("colour=rgb", "unknown key 'colour'"),
                           ("resize=5,resize=6", "twice"), ("", "empty"), ("scale=-1", "scale='-1'")):
            one_line_error(*c.sh("quantize", m_rgb, "--calibration", rgb, "--calib-preprocess", spec, "-o", x), 2,
                           "--calib-preprocess", word)
        one_line_error(*c.sh("quantize", m_rgb, "--calibration", rgb, "--max-image-pixels", "100", "-o", x), 2,
                       "--calib-preprocess")

    c.test("calib images: spec vs model, bad specs: one line", spec_and_model_disagree)

    def bad_images():
        man = make()
        x = os.path.join(d, "x.onnx")
        words = {"truncated_jpeg": ["truncated JPEG"], "truncated_png": ["truncated PNG"],
                 "garbage": ["not a JPEG or PNG"], "empty_file": ["not a JPEG or PNG", "0 bytes"],
                 "png_bad_crc": ["corrupt or unsupported PNG"], "jpeg_bad_header": ["corrupt or unsupported JPEG"],
                 "huge_png": ["100000 x 100000", "--max-image-pixels"], "cmyk_jpeg": ["CMYK", "convert it to RGB"]}
        for case, f in sorted(man["bad"].items()):
            one_line_error(*c.sh("quantize", m_rgb, "--calibration", os.path.join(d, "bad", case), "--calib-preprocess",
                                 SPEC, "-o", x), 1, case + "/" + f, *words[case])
        one_line_error(*c.sh("quantize", m_rgb, "--calibration", os.path.join(d, "bad", "no_images"),
                             "--calib-preprocess", SPEC, "-o", x), 1, "no images", ".png")
        one_line_error(*c.sh("quantize", m_rgb, "--calibration", os.path.join(d, "rgb"), "--calib-preprocess", SPEC,
                             "--max-image-pixels", "1000", "-o", x), 1, "a_rgb.png", "37 x 29", "limit of 1000")

    c.test("calib images: corrupt, truncated, CMYK, huge, none: one line", bad_images)
