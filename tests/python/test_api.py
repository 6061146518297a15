"""The ONNX Runtime-shaped API: introspection, providers, options, output selection, model bytes,
the bundled CLI."""
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import infera
from conftest import has_gpu, rand


def test_inputs_outputs_like_ort(tiny, ort_tiny):
    for ours, theirs in ((tiny.get_inputs(), ort_tiny.get_inputs()), (tiny.get_outputs(), ort_tiny.get_outputs())):
        assert [(a.name, a.type, a.shape) for a in ours] == [(b.name, b.type, b.shape) for b in theirs]
    i = tiny.get_inputs()[0]
    assert (i.name, i.type, i.shape, i.dtype) == ("input", "tensor(float)", ["N", 3, 32, 32], "float32")
    assert "NodeArg(name='input'" in repr(i)


def test_run_matches_ort(tiny, ort_tiny):
    x = rand(2, 3, 32, 32)
    got, = tiny.run(None, {"input": x})
    want, = ort_tiny.run(None, {"input": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    by_name, = tiny.run(["logits"], {"input": x}, run_options=None)
    assert np.array_equal(by_name, got)


def test_output_selection_and_order(two_path):
    s = infera.InferenceSession(two_path)
    x, y = rand(2, 4, seed=1), rand(2, 4, seed=2)
    prod, summ = s.run(["prod", "sum"], {"x": x, "y": y})
    np.testing.assert_array_equal(summ, x + y)
    np.testing.assert_array_equal(prod, x * y)
    summ2, prod2 = s.run([], {"x": x, "y": y})  # empty means all, as in ORT
    assert np.array_equal(summ2, summ) and np.array_equal(prod2, prod)


def test_modelmeta(tiny, ort_tiny):
    m, r = tiny.get_modelmeta(), ort_tiny.get_modelmeta()
    for k in ("producer_name", "graph_name", "domain", "description", "graph_description", "version",
              "custom_metadata_map"):
        assert getattr(m, k) == getattr(r, k), k
    assert (m.producer_name, m.graph_name, m.version, m.custom_metadata_map) == \
        ("infera-tests", "tiny_convnet", 7, {"author": "tests"})


def test_providers_mapping(tiny_path):
    for p in (None, ["CPU"], ["CPUExecutionProvider"], [("CPUExecutionProvider", {})], "CPUExecutionProvider"):
        s = infera.InferenceSession(tiny_path, providers=p)
        assert s.get_providers() == ["CPUExecutionProvider"] and s.device == "cpu"
    assert "CPUExecutionProvider" in infera.get_available_providers()
    assert set(infera.get_all_providers()) >= {"GPU", "CUDAExecutionProvider", "ROCMExecutionProvider",
                                                "MIGraphXExecutionProvider", "CPUExecutionProvider"}


@pytest.mark.skipif(infera.get_device() == "GPU", reason="needs a machine without a usable GPU")
def test_gpu_provider_without_gpu(tiny_path):
    # Only a GPU asked for: the library's clear error. GPU then CPU: ORT's fallback, with a warning.
    for p in (["GPU"], ["CUDAExecutionProvider"], [("ROCMExecutionProvider", {"device_id": 1})],
              ["MIGraphXExecutionProvider"]):
        with pytest.raises((infera.Unsupported, infera.DeviceError)) as e:
            infera.InferenceSession(tiny_path, providers=p)
        assert "gpu" in str(e.value).lower()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = infera.InferenceSession(tiny_path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]
    assert any("running on the CPU" in str(x.message) for x in w)


def test_session_options_effect(tiny_path, tiny):
    x = rand(1, 3, 32, 32)
    want, = tiny.run(None, {"input": x})
    so = infera.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = infera.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.backends = ["ref"]
    so.max_cached_plans = 1
    so.log_severity_level = 3  # ORT fields without effect are accepted
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    s = infera.InferenceSession(tiny_path, so)
    got, = s.run(None, {"input": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert s.get_session_options() is so
    assert s.summary()["node_count"] == s.summary()["node_count_original"]  # no passes ran
    s.run(None, {"input": rand(2, 3, 32, 32)})
    assert s.cached_plan_count() == 1  # max_cached_plans
    with pytest.raises(AttributeError):
        so.intra_op_num_thread = 2  # a typo is an error, not a silent no-op


def test_model_from_bytes_and_pathlike(tiny_path, tiny):
    x = rand(1, 3, 32, 32)
    want, = tiny.run(None, {"input": x})
    data = open(tiny_path, "rb").read()
    for src in (data, bytearray(data), pathlib.Path(tiny_path)):
        got, = infera.InferenceSession(src).run(None, {"input": x})
        np.testing.assert_array_equal(got, want)


def test_run_options_profile(tiny):
    ro = infera.RunOptions()
    ro.profile = True
    out, = tiny.run(None, {"input": rand(1, 3, 32, 32)}, ro)
    assert out.shape == (1, 10)
    assert ro.profile_result and all(isinstance(t, infera.StepTiming) and t.ms >= 0 for t in ro.profile_result)
    assert {t.backend for t in ro.profile_result} <= {"dnnl", "ref"}
    ro.terminate = True
    with pytest.raises(infera.InvalidInput, match="terminate"):
        tiny.run(None, {"input": rand(1, 3, 32, 32)}, ro)


def test_prepare_and_memory(tiny):
    r = tiny.prepare({"input": [4, 3, 32, 32]})
    assert r["output_dims"] == [[4, 10]] and r["steps"] > 0
    assert tiny.allocated_bytes() > 0
    assert 0 < sum(r["weight_bytes_per_device"].values()) <= r["weight_bytes"]  # held by kernels; + constants
    assert sum(r["arena_bytes_per_device"].values()) == r["arena_bytes"] <= r["naive_bytes"]
    assert set(r["scratch_bytes_per_device"]) <= {"cpu"}
    assert r["perf_db_found"] >= 0 and r["perf_db_timed"] >= 0 and r["inserted_steps"] >= 0

def test_prepare_counts_weights_in_backend_formats(tiny_path):
    """A fresh session's first plan converts its weights (oneDNN's reorders); nothing to reuse yet."""
    s = infera.InferenceSession(tiny_path, providers=["CPUExecutionProvider"])
    r = s.prepare({"input": [2, 3, 32, 32]})
    assert r["weights_converted"] > 0 and r["weights_reused"] == 0, r


def test_profile_per_layer(tiny):
    rows = tiny.profile({"input": rand(2, 3, 32, 32)}, runs=3, warmup=1)
    assert rows and {"node", "op", "backend", "ms", "share", "calls"} <= set(rows[0])
    assert all(rows[i]["ms"] >= rows[i + 1]["ms"] for i in range(len(rows) - 1))
    assert abs(sum(r["share"] for r in rows) - 1.0) < 1e-6
    assert any("Conv" in r["op"] for r in rows), [r["op"] for r in rows]
    with pytest.raises(infera.InvalidInput, match="runs"):
        tiny.profile({"input": rand(2, 3, 32, 32)}, runs=0)


def test_memory_budget_runs_in_chunks(tiny_path, tiny):
    """SessionOptions.memory_budget_bytes is the C++ budget: a batch over it runs in chunks, equal to
    the whole batch run without a budget; too small for batch 1 is infera.OutOfMemory."""
    x = rand(16, 3, 32, 32)
    whole = tiny.prepare({"input": [16, 3, 32, 32]})
    assert whole["chunks"] == 0 and whole["peak_bytes"] > 0
    so = infera.SessionOptions()
    so.memory_budget_bytes = whole["peak_bytes"] - whole["arena_bytes"] // 2
    so.arena_extend_strategy = "kNextPowerOfTwo"
    s = infera.InferenceSession(tiny_path, so)
    r = s.prepare({"input": [16, 3, 32, 32]})
    assert r["chunks"] >= 2 and 1 <= r["chunk_batch"] < 16 and r["peak_bytes"] <= so.memory_budget_bytes, r
    a = s.run(None, {"input": x})[0]
    b = tiny.run(None, {"input": x})[0]
    assert a.shape == (16, 10)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    so.memory_budget_bytes = 1024
    with pytest.raises(infera.OutOfMemory, match="too small for batch 1"):
        infera.InferenceSession(tiny_path, so).run(None, {"input": x})


def test_context_manager_and_close(tiny_path):
    with infera.InferenceSession(tiny_path) as s:
        out, = s.run(None, {"input": rand(1, 3, 32, 32)})
    with pytest.raises(infera.InvalidInput, match="closed"):
        s.run(None, {"input": rand(1, 3, 32, 32)})
    assert out.shape == (1, 10) and np.isfinite(out).all()  # outputs outlive the session
    assert "closed" in repr(s)


def test_help_and_docstrings():
    for obj in (infera.InferenceSession, infera.InferenceSession.run, infera.InferenceSession.run_with_dlpack,
                infera.SessionOptions, infera.RunOptions, infera.IoBinding, infera.IoBinding.bind_output,
                infera.NodeArg, infera.ModelMetadata, infera.InferaError, infera.InvalidInput,
                infera.get_available_providers, infera.get_device):
        assert obj.__doc__ and len(obj.__doc__) > 20, obj
    assert "providers" in infera.InferenceSession.__doc__
    assert infera.__version__ == "0.2.0"
    stub = os.path.join(os.path.dirname(infera.__file__), "__init__.pyi")
    assert os.path.isfile(stub), "type stubs are installed beside the package"


def test_cli_bundled(tiny_path):
    p = subprocess.run([sys.executable, "-m", "infera", "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "infera 0.2.0", p
    p = subprocess.run([sys.executable, "-m", "infera", "info", tiny_path], capture_output=True, text=True)
    assert p.returncode == 0 and "logits" in p.stdout, p
    p = subprocess.run([sys.executable, "-m", "infera", "frobnicate"], capture_output=True, text=True)
    assert p.returncode == 2 and "unknown command" in p.stderr, p


def test_perf_db_option(tmp_path):
    """SessionOptions.perf_db is the C++ option: a path is filled by the build's algorithm choices
    (a 3x3 conv 16->16: direct vs Winograd on the CPU, our kernels vs cuDNN on a GPU), and a second
    session finds them and gives the same bits. Where oneDNN has no Winograd (AVX2) the CPU's conv has
    one algorithm: nothing is stored."""
    import json
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array((rng.standard_normal((16, 16, 3, 3)) * 0.2).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="c")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16, 16, 16])], [w])
    path = tmp_path / "conv.onnx"
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    db = tmp_path / "perfdb.json"
    so = infera.SessionOptions()
    so.perf_db = str(db)
    x = rand(2, 16, 16, 16)
    a = infera.InferenceSession(str(path), so).run(None, {"x": x})[0]
    dnnl = [d for d in infera.available_backends() if d["name"] == "dnnl"]
    one_algorithm = not has_gpu() and "conv algorithms: direct, winograd" not in dnnl[0]["details"]
    if one_algorithm:  # oneDNN without Winograd (AVX2): no choice to time or store
        assert not db.exists() or not json.loads(db.read_text())["entries"]
    else:
        entries = json.loads(db.read_text())["entries"]
        assert any(e["op"] == "conv" for e in entries), entries[:1]
    b = infera.InferenceSession(str(path), so).run(None, {"x": x})[0]
    assert a.tobytes() == b.tobytes()  # the same choices: the same bits
    so.perf_db = "none"
    infera.InferenceSession(str(path), so).run(None, {"x": x})
