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
