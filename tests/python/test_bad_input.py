"""Bad input: the right infera exception with a clear message, never an interpreter crash."""
import gc
import subprocess
import sys
import weakref

import numpy as np
import pytest

import infera
from conftest import rand


@pytest.fixture(scope="module")
def two(two_path):
    return infera.InferenceSession(two_path)


def feeds(**kw):
    base = {"x": rand(2, 4, seed=1), "y": rand(2, 4, seed=2)}
    base.update(kw)
    return {k: v for k, v in base.items() if v is not None}


CASES = [
    ("unknown input name", lambda s: s.run(None, feeds(z=rand(2, 4))), infera.InvalidInput,
     r"unknown input 'z' \(model inputs: 'x', 'y'\)"),
    ("missing input", lambda s: s.run(None, feeds(y=None)), infera.InvalidInput, r"missing input 'y'"),
    ("wrong dtype", lambda s: s.run(None, feeds(x=rand(2, 4).astype(np.float64))), infera.InvalidInput,
     r"input 'x': expected dtype float32 \(tensor\(float\)\), found float64"),
    ("int dtype", lambda s: s.run(None, feeds(x=np.ones((2, 4), np.int64))), infera.InvalidInput,
     r"expected dtype float32 .*found int64"),
    ("wrong rank", lambda s: s.run(None, feeds(x=rand(2, 4, 1))), infera.InvalidInput, r"'x'.*rank|rank.*'x'"),
    ("wrong static dim", lambda s: s.run(None, feeds(x=rand(2, 5))), infera.InvalidInput, r"'x'"),
    ("symbol mismatch", lambda s: s.run(None, feeds(x=rand(3, 4))), infera.InvalidInput, r"'y'|'x'|N"),
    ("list, not an array", lambda s: s.run(None, feeds(x=[[1.0] * 4] * 2)), infera.InvalidInput,
     r"input 'x': expected a numpy.ndarray or an object with __dlpack__.*found list"),
    ("None value", lambda s: s.run(None, {"x": None, "y": rand(2, 4)}), infera.InvalidInput, r"found NoneType"),
    ("string array", lambda s: s.run(None, feeds(x=np.array([["a"] * 4] * 2))), infera.InvalidInput, r"input 'x'"),
    ("object array", lambda s: s.run(None, feeds(x=np.empty((2, 4), object))), infera.InvalidInput, r"input 'x'"),
    ("complex array", lambda s: s.run(None, feeds(x=np.ones((2, 4), np.complex64))), infera.InvalidInput,
     r"input 'x'.*complex"),
    ("feeds not a dict", lambda s: s.run(None, [rand(2, 4)]), infera.InvalidInput,
     r"input_feed must be a dict.*found list"),
    ("non-str key", lambda s: s.run(None, {0: rand(2, 4)}), infera.InvalidInput, r"keys must be input names"),
    ("unknown output", lambda s: s.run(["nope"], feeds()), infera.InvalidInput,
     r"unknown output 'nope' \(model outputs: 'sum', 'prod'\)"),
    ("output names a str", lambda s: s.run("sum", feeds()), infera.InvalidInput, r"list of names or None"),
    ("output names an int", lambda s: s.run(3, feeds()), infera.InvalidInput, r"list of names or None"),
    ("bad output_type", lambda s: s.run(None, feeds(), output_type="torch"), infera.InvalidInput, r"output_type"),
    ("bad run_options", lambda s: s.run(None, feeds(), run_options={"a": 1}), infera.InvalidInput,
     r"run_options must be an infera.RunOptions"),
]


@pytest.mark.parametrize("what,call,exc,pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_run(two, what, call, exc, pattern):
    with pytest.raises(exc, match=pattern) as e:
        call(two)
    assert isinstance(e.value, infera.InferaError) and e.value.code == "invalid input"
    assert "\n" not in str(e.value)


def test_exception_hierarchy():
    for name in ("InvalidModel", "InvalidInput", "Unsupported", "OutOfMemory", "DeviceError", "IoError",
                 "InternalError"):
        cls = getattr(infera, name)
        assert issubclass(cls, infera.InferaError) and cls.__module__ == "infera", name
    assert issubclass(infera.InferaError, RuntimeError)
    assert issubclass(infera.InvalidInput, ValueError) and issubclass(infera.OutOfMemory, MemoryError)
    assert infera.InvalidModel.code == "invalid model"


def write(path, data):
    path.write_bytes(data)
    return path


BAD_MODELS = [
    ("missing file", lambda d: d / "nope.onnx", (infera.IoError, infera.InvalidModel), r"nope.onnx"),
    ("empty file", lambda d: write(d / "e.onnx", b""), infera.InvalidModel, r"empty"),
    ("garbage file", lambda d: write(d / "g.onnx", b"\x08\xff\xff\xff garbage" * 10), infera.InvalidModel,
     r"not a valid ONNX model|protobuf"),
    ("garbage bytes", lambda d: b"not a model at all", infera.InvalidModel, r"not a valid ONNX model"),
]


@pytest.mark.parametrize("what,make,exc,pattern", BAD_MODELS, ids=[c[0] for c in BAD_MODELS])
def test_bad_model(tmp_path, what, make, exc, pattern):
    src = make(tmp_path)
    with pytest.raises(exc, match=pattern):
        infera.InferenceSession(str(src) if not isinstance(src, bytes) else src)


def test_bad_session_arguments(tiny_path):
    with pytest.raises(infera.InvalidInput, match="unknown provider 'TPU'"):
        infera.InferenceSession(tiny_path, providers=["TPU"])
    with pytest.raises(infera.InvalidInput, match="providers is empty"):
        infera.InferenceSession(tiny_path, providers=[])
    with pytest.raises(infera.InvalidInput, match="device_id must be an int"):
        infera.InferenceSession(tiny_path, providers=[("GPU", {"device_id": "x"})])
    with pytest.raises(infera.InvalidInput, match="path_or_bytes must be"):
        infera.InferenceSession(42)
    with pytest.raises(infera.InvalidInput, match="sess_options must be"):
        infera.InferenceSession(tiny_path, {"intra_op_num_threads": 1})
    with pytest.raises(infera.InvalidInput, match="unknown argument"):
        infera.InferenceSession(tiny_path, frobnicate=1)
    so = infera.SessionOptions()
    so.intra_op_num_threads = -1
    with pytest.raises(infera.InvalidInput, match="intra_op_num_threads must be an int >= 0"):
        infera.InferenceSession(tiny_path, so)
    for field, value, exc, pattern in (("precision", "fp8", infera.InvalidInput, "fp8"),
                                       ("backends", ["nope"], infera.InvalidInput, "nope"),
                                       ("memory_budget_bytes", -1, infera.InvalidInput, "memory_budget_bytes"),
                                       ("arena_extend_strategy", "kDouble", infera.InvalidInput, "arena_extend"),
                                       ("perf_db", 3, infera.InvalidInput, "perf_db"),
                                       ("enable_profiling", True, infera.Unsupported, "RunOptions.profile"),
                                       ("enable_graph", "yes", infera.InvalidInput, "enable_graph")):
        so = infera.SessionOptions()
        setattr(so, field, value)
        with pytest.raises(exc, match=pattern):
            infera.InferenceSession(tiny_path, so)


def test_closed_and_collected_session(tiny_path):
    s = infera.InferenceSession(tiny_path)
    io = s.io_binding()
    io.bind_input("input", rand(1, 3, 32, 32))
    out, = s.run(None, {"input": rand(1, 3, 32, 32)})
    d, = s.run_with_dlpack(None, {"input": rand(1, 3, 32, 32)})
    s.close()
    s.close()  # twice is fine
    for call in (lambda: s.run(None, {"input": rand(1, 3, 32, 32)}), lambda: s.run_with_iobinding(io),
                 lambda: s.get_modelmeta(), lambda: s.prepare({"input": [1, 3, 32, 32]})):
        with pytest.raises(infera.InvalidInput, match="closed"):
            call()
    ref = weakref.ref(s)
    del s, io
    gc.collect()
    assert ref() is None
    assert out.shape == (1, 10) and np.isfinite(out).all()  # outputs own their memory
    assert np.isfinite(np.from_dlpack(d)).all()


def test_no_crash_on_hostile_calls(tiny_path):
    # In a child interpreter: whatever happens must be an exception, never a signal.
    code = """
import numpy as np, infera
s = infera.InferenceSession(%r)
bad = [None, 1, "x", b"x", object(), np.float32(1), np.zeros((0, 3, 32, 32), np.float32),
       np.zeros((1, 3, 32, 32), np.float32)[:, :, :, :0], np.zeros((1, 3, 1 << 14, 1 << 14), np.float32)[:, :, :32, :32]]
n = 0
for x in bad:
    try:
        s.run(None, {"input": x}); n += 1
    except infera.InferaError:
        n += 1
for args in [(None, None), (None, {}), ([None], {"input": bad[-1]}), ((), {"input": bad[-1]})]:
    try:
        s.run(*args)
    except infera.InferaError:
        pass
print("survived", n)
""" % tiny_path
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "survived 9" in p.stdout, (p.returncode, p.stdout, p.stderr[-2000:])


def test_names_that_are_not_unicode(tiny):
    """A key or output name with a lone surrogate has no UTF-8: InvalidInput, not RuntimeError."""
    with pytest.raises(infera.InvalidInput, match="not valid Unicode"):
        tiny.run(None, {"in\udcffput": np.zeros((1, 3, 32, 32), np.float32)})
    with pytest.raises(infera.InvalidInput, match="not valid Unicode"):
        tiny.run(["log\udcffits"], {"input": np.zeros((1, 3, 32, 32), np.float32)})
