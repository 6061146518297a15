"""infera.quantize: INT8 post-training quantization from Python (the C++ calibrate + QDQ writer)."""
import numpy as np
import onnx
import pytest

import infera
from conftest import rand


def test_quantize_writes_a_qdq_model_close_to_float(tiny_path, tmp_path):
    out = tmp_path / "tiny_int8.onnx"
    calib = [rand(4, 3, 32, 32, seed=s) for s in range(4)]
    table = infera.quantize(tiny_path, out, calib, method="minmax")
    assert table["method"] == "minmax" and table["amax"], table
    assert all(v > 0 for v in table["amax"].values()), table
    ops = [n.op_type for n in onnx.load(str(out)).graph.node]
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops, ops
    x = rand(2, 3, 32, 32, seed=9)
    f32 = infera.InferenceSession(tiny_path).run(None, {"input": x})[0]
    q = infera.InferenceSession(str(out)).run(None, {"input": x})[0]
    # int8 activations: within a few percent of the float outputs' range on this small net.
    err = float(np.abs(q - f32).max() / np.abs(f32).max())
    assert err < 0.05, err
    ort = pytest.importorskip("onnxruntime")
    r = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    assert float(np.abs(q - r).max() / np.abs(r).max()) < 0.02  # the same QDQ model, ORT's way


def test_quantize_methods_and_errors(tiny_path, tmp_path):
    calib = [rand(2, 3, 32, 32, seed=s) for s in range(3)]
    mm = infera.quantize(tiny_path, tmp_path / "a.onnx", calib, method="minmax")["amax"]
    pc = infera.quantize(tiny_path, tmp_path / "b.onnx", calib, method="percentile:99")["amax"]
    assert mm.keys() == pc.keys()
    assert all(pc[k] <= mm[k] + 1e-6 for k in mm), (mm, pc)  # a percentile never exceeds the max
    assert any(pc[k] < mm[k] for k in mm)
    with pytest.raises(infera.InvalidInput, match="method"):
        infera.quantize(tiny_path, tmp_path / "c.onnx", calib, method="median")
    with pytest.raises(infera.InferaError, match="(?i)empty|no .*sample"):
        infera.quantize(tiny_path, tmp_path / "c.onnx", [])
    bad = rand(2, 3, 32, 32)
    bad[0, 0, 0, 0] = np.nan
    with pytest.raises(infera.InferaError, match="calibration sample 0"):
        infera.quantize(tiny_path, tmp_path / "c.onnx", [bad])
    with pytest.raises(infera.InferaError, match="calibration sample 0"):
        infera.quantize(tiny_path, tmp_path / "c.onnx", [rand(2, 4, 32, 32)])


def test_quantize_mixed(tiny_path, tmp_path):
    calib = [rand(2, 3, 32, 32, seed=s) for s in range(3)]
    r = infera.quantize(tiny_path, tmp_path / "m.onnx", calib, accuracy_budget=1.0)
    assert r["layers"] and all(l["precision"] == "int8" for l in r["layers"]), r["layers"]
    assert r["measured_error"] <= 1.0 and r["all_int8_error"] > 0
    first = r["layers"][0]["layer"]
    r = infera.quantize(tiny_path, tmp_path / "m.onnx", calib, accuracy_budget=1.0, fp32_layers=[first])
    assert [l["precision"] for l in r["layers"]][0] == "fp32" and r["layers"][0]["why"] == "forced fp32"
    r = infera.quantize(tiny_path, tmp_path / "m.onnx", calib, accuracy_budget=0.0)
    assert all(l["precision"] == "fp32" for l in r["layers"]) and r["measured_error"] == 0.0
    with pytest.raises(infera.InvalidInput, match="'nope'"):
        infera.quantize(tiny_path, tmp_path / "m.onnx", calib, accuracy_budget=0.1, fp32_layers=["nope"])
    with pytest.raises(infera.InvalidInput, match="accuracy_budget"):
        infera.quantize(tiny_path, tmp_path / "m.onnx", calib, accuracy_budget=-1)


# ---------------------------------------------------------------- labels: a top-1 budget (--calib-labels)

def _top1_correct(logits, labels):
    """Rows whose label no class outscores (infera eval's rule, ties count for the label)."""
    mine = logits[np.arange(len(labels)), labels][:, None]
    return int(((logits > mine).sum(axis=1) == 0).sum())


def _labelled_calib(tiny_path):
    calib = [rand(8, 3, 32, 32, seed=s) for s in range(3)]
    sess = infera.InferenceSession(tiny_path)
    logits = np.concatenate([sess.run(None, {"input": x})[0] for x in calib])
    labels = logits.argmax(axis=1)
    labels[::3] = (labels[::3] + 1) % 10  # a third wrong: float top-1 is not 1
    return calib, logits, labels


def _int8_logits(tiny_path, path, calib, method):
    infera.quantize(tiny_path, path, calib, method=method)  # every layer int8
    q = infera.InferenceSession(str(path))
    return np.concatenate([q.run(None, {"input": x})[0] for x in calib])


def test_quantize_labels_measure_the_mix_as_top1_points(tiny_path, tmp_path):
    calib, logits, labels = _labelled_calib(tiny_path)
    # percentile:55 clips hard enough that int8 changes the tiny net's top-1 (minmax changes none of it).
    m = "percentile:55"
    r = infera.quantize(tiny_path, tmp_path / "top1.onnx", calib, method=m, accuracy_budget=100.0, labels=labels)
    assert r["measure"] == "top1" and r["rows"] == 24, r
    correct = _top1_correct(logits, labels)
    assert r["float_top1"] == pytest.approx(correct / 24, abs=1e-12)
    # The loss of the all-int8 model, measured here on that model against the labels, is the one reported.
    q = _int8_logits(tiny_path, tmp_path / "int8.onnx", calib, m)
    lost = 100.0 * (correct - _top1_correct(q, labels)) / 24
    assert lost != 0 and r["all_int8_error"] == pytest.approx(lost, abs=1e-9), (lost, r)
    # A sequence of ints is taken as the array; uint8 labels too.
    seq = infera.quantize(tiny_path, tmp_path / "s.onnx", calib, method=m, accuracy_budget=100.0,
                          labels=[int(v) for v in labels])
    u8 = infera.quantize(tiny_path, tmp_path / "s.onnx", calib, method=m, accuracy_budget=100.0,
                         labels=labels.astype(np.uint8))
    assert seq["float_top1"] == u8["float_top1"] == r["float_top1"]
    assert seq["all_int8_error"] == u8["all_int8_error"] == r["all_int8_error"]
    # Without labels: the relative output error, no top-1 fields.
    rel = infera.quantize(tiny_path, tmp_path / "rel.onnx", calib, method=m, accuracy_budget=100.0)
    assert rel["measure"] == "relative_error" and "float_top1" not in rel and "rows" not in rel, rel
    # Budget 0 points keeps every free layer float (the CLI's rule).
    z = infera.quantize(tiny_path, tmp_path / "z.onnx", calib, accuracy_budget=0.0, labels=labels)
    assert z["measure"] == "top1" and all(l["precision"] == "fp32" for l in z["layers"]) and z["measured_error"] == 0


def test_quantize_a_top1_budget_chooses_another_mix(tiny_path, tmp_path):
    calib, logits, _ = _labelled_calib(tiny_path)
    y = logits.argmax(axis=1)
    prec = lambda r: [l["precision"] for l in r["layers"]]  # noqa: E731
    # percentile:70: relative output error ~0.7 (over a budget of 0.5), but no top-1 point lost (under 0.5).
    rel = infera.quantize(tiny_path, tmp_path / "a.onnx", calib, method="percentile:70", accuracy_budget=0.5)
    top = infera.quantize(tiny_path, tmp_path / "b.onnx", calib, method="percentile:70", accuracy_budget=0.5, labels=y)
    assert "fp32" in prec(rel) and prec(top) == ["int8", "int8"], (rel, top)
    # percentile:55: the relative error (~1) fits 50, but conv2 alone in int8 loses every point: kept float.
    rel = infera.quantize(tiny_path, tmp_path / "c.onnx", calib, method="percentile:55", accuracy_budget=50)
    top = infera.quantize(tiny_path, tmp_path / "d.onnx", calib, method="percentile:55", accuracy_budget=50, labels=y)
    assert prec(rel) == ["int8", "int8"] and prec(top) == ["int8", "fp32"], (rel, top)
    assert top["measured_error"] <= 50 and top["all_int8_error"] > 50, top


@pytest.mark.parametrize("bad, match", [
    (lambda y: y[:-1], "23 labels for 24 calibration sample rows"),
    (lambda y: np.concatenate([y, y]), "48 labels for 24"),
    (lambda y: y[:0], "0 labels for 24"),
    (lambda y: y.astype(np.float32), "labels must be integers .*float32"),
    (lambda y: np.ones(24, dtype=bool), "labels must be integers .*bool"),
    (lambda y: [float(v) for v in y], "labels must be integers"),
    (lambda y: y.reshape(4, 6), r"one-dimensional .*\[4, 6\]"),
    (lambda y: np.where(np.arange(24) == 5, -1, y), r"labels\[5\] is -1: labels are class indices >= 0"),
    (lambda y: np.where(np.arange(24) == 0, 10, y), r"label 10 of calibration sample 0 is outside \[0, 10\)"),
])
def test_quantize_bad_labels(tiny_path, tmp_path, bad, match):
    calib, _, labels = _labelled_calib(tiny_path)
    with pytest.raises(infera.InvalidInput, match=match):
        infera.quantize(tiny_path, tmp_path / "bad.onnx", calib, accuracy_budget=0.5, labels=bad(labels))


def test_quantize_labels_need_a_budget_in_points(tiny_path, tmp_path):
    calib, _, labels = _labelled_calib(tiny_path)
    with pytest.raises(infera.InvalidInput, match="give accuracy_budget"):
        infera.quantize(tiny_path, tmp_path / "bad.onnx", calib, labels=labels)
    with pytest.raises(infera.InvalidInput, match="points of top-1, 0..100"):
        infera.quantize(tiny_path, tmp_path / "bad.onnx", calib, accuracy_budget=101, labels=labels)


# ---------------------------------------------------------------- paths: images with a spec, .npy files

SPEC = "resize=36,crop=32,mean=0.485:0.456:0.406,std=0.229:0.224:0.225,layout=nchw"


def _write_png(path, rgb):
    """An 8-bit RGB PNG by the standard library (zlib), filter 0 on every row."""
    import struct
    import zlib
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + np.ascontiguousarray(rgb[y], dtype=np.uint8).tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                     chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _image_dir(tmp_path):
    d = tmp_path / "images"
    d.mkdir()
    rng = np.random.default_rng(3)
    for i, (h, w) in enumerate([(36, 40), (45, 37), (48, 48), (33, 50), (40, 36)]):
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([xx * 255 // w, yy * 255 // h, rng.integers(0, 256, (h, w))], axis=-1)
        _write_png(d / ("img%d.png" % i), img.astype(np.uint8))
    (d / "notes.txt").write_text("not an image")  # skipped, as the CLI skips it
    return d


def test_quantize_image_folder_equals_the_cli(tiny_path, tmp_path):
    import json
    import subprocess
    d = _image_dir(tmp_path)
    r = infera.quantize(tiny_path, tmp_path / "py.onnx", d, preprocess=SPEC, batch=2)
    cache = tmp_path / "cli.calib.json"
    p = subprocess.run([infera.cli_path(), "quantize", tiny_path, "--calibration", str(d), "--calib-preprocess", SPEC,
                        "--batch", "2", "-o", str(tmp_path / "cli.onnx"), "--calib-cache", str(cache)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    cli = {k: v["amax"] for k, v in json.loads(cache.read_text())["tensors"].items()}
    assert r["amax"].keys() == cli.keys() and r["amax"]
    for k, v in cli.items():
        assert r["amax"][k] == pytest.approx(v, rel=1e-6), (k, r["amax"][k], v)
    # The spec matters: another mean gives other ranges (the input's range first of all).
    other = infera.quantize(tiny_path, tmp_path / "o.onnx", str(d), preprocess=SPEC.replace("mean=0.485", "mean=0.1"))
    assert other["amax"]["input"] != pytest.approx(r["amax"]["input"], rel=1e-3)


def test_quantize_npy_paths_equal_the_arrays(tiny_path, tmp_path):
    x = rand(6, 3, 32, 32, seed=4)
    arrays = infera.quantize(tiny_path, tmp_path / "a.onnx", [x[0:2], x[2:4], x[4:6]], method="percentile:99")["amax"]
    np.save(tmp_path / "calib.npy", x)
    one = infera.quantize(tiny_path, tmp_path / "b.onnx", tmp_path / "calib.npy", method="percentile:99", batch=2)
    folder = tmp_path / "npys"
    folder.mkdir()
    for i in range(3):
        np.save(folder / ("b%d.npy" % i), x[2 * i:2 * i + 2])
    many = infera.quantize(tiny_path, tmp_path / "c.onnx", str(folder), method="percentile:99")
    assert one["amax"] == arrays and many["amax"] == arrays


def test_quantize_bad_paths_and_specs(tiny_path, tmp_path):
    d = _image_dir(tmp_path)
    out = tmp_path / "bad.onnx"
    for spec, match in [("resize=abc", r"^preprocess 'resize=abc': resize='abc': expected a size"),
                        ("resize=36,foo=1", r"preprocess '.*': unknown key 'foo'"),
                        ("", r"preprocess '': empty"),
                        ("resize=36,crop=30", r"preprocess '.*' gives 30x30 images .*'input' is \[N,3,32,32\]")]:
        with pytest.raises(infera.InvalidInput, match=match) as e:
            infera.quantize(tiny_path, out, d, preprocess=spec)
        assert "--calib" not in str(e.value)  # Python's names, not the CLI's options
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(infera.InvalidInput, match="the folder holds no images"):
        infera.quantize(tiny_path, out, empty, preprocess=SPEC)
    with pytest.raises(infera.InvalidInput, match="the folder holds no .npy files"):
        infera.quantize(tiny_path, out, empty)
    with pytest.raises(infera.InvalidInput, match=r"holds images \(img0.png\) .*give preprocess=SPEC"):
        infera.quantize(tiny_path, out, d)
    with pytest.raises(infera.InvalidInput, match="not found"):
        infera.quantize(tiny_path, out, tmp_path / "nowhere")
    with pytest.raises(infera.InvalidInput, match="more than the limit of 1000 .max_image_pixels."):
        infera.quantize(tiny_path, out, d, preprocess=SPEC, max_image_pixels=1000)
    with pytest.raises(infera.InvalidInput, match="max_image_pixels must be in 1..67108864"):
        infera.quantize(tiny_path, out, d, preprocess=SPEC, max_image_pixels=2**27)
    for kw, match in [({"preprocess": SPEC}, "apply to calibration data read from a path"),
                      ({"batch": 2}, "apply to calibration data read from a path")]:
        with pytest.raises(infera.InvalidInput, match=match):
            infera.quantize(tiny_path, out, [rand(2, 3, 32, 32)], **kw)
    with pytest.raises(infera.InvalidInput, match="batch must be in 1..65536"):
        infera.quantize(tiny_path, out, d, preprocess=SPEC, batch=0)
    with pytest.raises(infera.InvalidInput, match="max_image_pixels limits calibration images"):
        infera.quantize(tiny_path, out, tmp_path / "calib.npy", max_image_pixels=10)
    with pytest.raises(infera.InvalidInput, match="empty path"):
        infera.quantize(tiny_path, out, "")
