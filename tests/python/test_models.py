"""The model set (tests/models: torchvision exports in MODELS_DIR) through the Python API against
ONNX Runtime, batch 1 then 3 from ONE session, with the C++ model tests' comparison and bound
(compare_models.compare_output: shapes, non-finite values, normalized error <= 1e-3, top-1)."""
import os

import numpy as np
import onnxruntime as ort
import pytest

import infera
from compare_models import DEFAULT_MODELS, compare_output

RTOL = 1e-3


@pytest.mark.parametrize("name", DEFAULT_MODELS)
def test_model_vs_onnxruntime(name, models_dir):
    path = os.path.join(models_dir, name + ".onnx")
    if not os.path.isfile(path):  # a missing model is a failure, never a skip
        pytest.fail("missing %s: run tests/models/export_models.py --out %s (or set MODELS_DIR)" % (path, models_dir))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    sess = infera.InferenceSession(path, infera.SessionOptions(), providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == [i.name for i in ref.get_inputs()]
    assert [o.name for o in sess.get_outputs()] == [o.name for o in ref.get_outputs()]
    inp = sess.get_inputs()[0]
    assert inp.type == "tensor(float)" and isinstance(inp.shape[0], str), inp
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal([batch] + inp.shape[1:], dtype=np.float32)
        got = sess.run(None, {inp.name: x})
        want = ref.run(None, {inp.name: x})
        assert len(got) == len(want)
        for g, w, o in zip(got, want, sess.get_outputs()):
            assert isinstance(g, np.ndarray) and g.dtype == w.dtype
            ok, err, msg = compare_output(g, w, RTOL)
            assert ok, "%s batch %d output %s: %s" % (name, batch, o.name, msg)
    assert sess.cached_plan_count() == 2  # one plan per input shape, one session
