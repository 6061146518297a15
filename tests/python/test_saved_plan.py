"""A saved plan (`infera build`, docs/saved_plans.md) opens as an InferenceSession like the ONNX file
it was built from: same inputs and outputs, the same bits at the saved batch sizes."""
import os
import subprocess
import sys

import numpy as np

import infera
from conftest import rand


def test_saved_plan_session(tiny_path, tmp_path):
    plan = tmp_path / "tiny.iplan"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-m", "infera", "build", str(tiny_path), "-o", str(plan), "--batch", "1,3"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    so = infera.SessionOptions()
    so.perf_db = str(tmp_path / "cache" / "infera" / "perfdb.json")  # the build's choices
    from_onnx = infera.InferenceSession(str(tiny_path), so)
    from_plan = infera.InferenceSession(str(plan))
    assert [(a.name, a.shape) for a in from_plan.get_inputs()] == [(a.name, a.shape) for a in from_onnx.get_inputs()]
    assert [a.name for a in from_plan.get_outputs()] == [a.name for a in from_onnx.get_outputs()]
    for n in (1, 3):
        x = rand(n, 3, 32, 32, seed=n)
        want, = from_onnx.run(None, {"input": x})
        got, = from_plan.run(None, {"input": x})
        assert np.array_equal(got, want)


def test_build_from_python(tiny_path, tmp_path):
    """infera.build is `infera build`: the plan it writes gives the bits of the session that made it."""
    plan = tmp_path / "tiny_py.iplan"
    so = infera.SessionOptions()
    so.perf_db = str(tmp_path / "db.json")
    made = infera.build(tiny_path, plan, batches=[2, 5], sess_options=so)
    loaded = infera.InferenceSession(str(plan))
    for n in (2, 5):
        x = rand(n, 3, 32, 32, seed=10 + n)
        assert np.array_equal(loaded.run(None, {"input": x})[0], made.run(None, {"input": x})[0])
    made.save_plan(tmp_path / "again.iplan", [{"input": [4, 3, 32, 32]}])
    r = infera.InferenceSession(str(tmp_path / "again.iplan")).prepare({"input": [4, 3, 32, 32]})
    assert r["steps"] > 0
    assert r["perf_db_timed"] == 0, "a loaded plan times nothing"
    assert r["weights_converted"] + r["weights_reused"] > 0, r
    import pytest
    with pytest.raises(infera.InvalidInput, match="missing shape|unknown input"):
        made.save_plan(tmp_path / "bad.iplan", [{"nope": [1, 3, 32, 32]}])
