"""NumPy and DLPack inputs/outputs: zero-copy proven by pointer identity, one copy (and the right
answer) for strided, broadcast, reversed and misaligned inputs, dtype round trips; PyTorch CPU
tensors through Debian's torch (a subprocess). The GPU path: test_gpu.py."""
import os
import subprocess
import textwrap

import numpy as np
import onnx
import pytest

import infera
import tiny_models
from conftest import rand


class DlpackOnly:
    """An object that offers nothing but the DLPack protocol (as a foreign framework's array)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, *args, **kwargs):
        return self._a.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_numpy_input_zero_copy(tiny):
    x = rand(2, 3, 32, 32)
    ptr, copied = tiny._core.probe_feed("input", x)
    assert (ptr, copied) == (x.ctypes.data, False)
    ptr, copied = tiny._core.probe_feed("input", DlpackOnly(x))
    assert (ptr, copied) == (x.ctypes.data, False)
    ro = x.copy()
    ro.setflags(write=False)  # read-only arrays are read in place too
    assert tiny._core.probe_feed("input", ro) == (ro.ctypes.data, False)


def strided_cases():
    base = rand(2, 3, 32, 32, seed=5)
    big = rand(4, 3, 64, 32, seed=6)
    rev = rand(2, 3, 32, 32, seed=7)
    nhwc = np.ascontiguousarray(base.transpose(0, 2, 3, 1))
    buf = bytearray(base.nbytes + 4)  # float32 data at an odd address
    shifted = np.frombuffer(memoryview(buf)[1:1 + base.nbytes], dtype=np.float32).reshape(base.shape)
    shifted[...] = base
    return {
        "transposed": nhwc.transpose(0, 3, 1, 2),                 # NHWC memory seen as NCHW
        "step slices": big[::2, :, ::2, :],                       # every other sample and row
        "reversed": rev[:, ::-1, :, ::-1],                        # negative strides
        "broadcast": np.broadcast_to(base[:1], (2, 3, 32, 32)),   # zero stride
        "fortran": np.asfortranarray(base),
        "misaligned": shifted,                                    # float32 at an odd address
    }


@pytest.mark.parametrize("case", list(strided_cases()))
def test_strided_input_one_copy_right_answer(tiny, ort_tiny, case):
    x = strided_cases()[case]
    assert not (x.flags.c_contiguous and x.ctypes.data % 4 == 0)
    ptr, copied = tiny._core.probe_feed("input", x)
    assert copied and ptr != x.ctypes.data
    got, = tiny.run(None, {"input": x})
    want, = tiny.run(None, {"input": np.ascontiguousarray(x)})
    np.testing.assert_array_equal(got, want)
    ref, = ort_tiny.run(None, {"input": np.ascontiguousarray(x)})
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
    got2, = tiny.run(None, {"input": DlpackOnly(x)} if x.flags.writeable else {"input": x})
    np.testing.assert_array_equal(got2, want)


def test_size1_dims_any_stride_are_contiguous(tiny):
    x = rand(1, 3, 32, 64)[:, :, :, :32][:1]  # not contiguous
    y = rand(3, 32, 32)[None]                 # [1,3,32,32] view: contiguous
    assert tiny._core.probe_feed("input", y) == (y.ctypes.data, False)
    assert tiny._core.probe_feed("input", x)[1]


def test_wrong_dtype_is_an_error_not_a_cast(tiny):
    for dt in (np.float64, np.float16, np.int32):
        with pytest.raises(infera.InvalidInput, match=r"input 'input': expected dtype float32 .* found"):
            tiny.run(None, {"input": rand(1, 3, 32, 32).astype(dt)})


def test_dlpack_outputs(tiny):
    x = rand(3, 3, 32, 32)
    want, = tiny.run(None, {"input": x})
    out, = tiny.run_with_dlpack(None, {"input": x})
    assert not isinstance(out, np.ndarray) and hasattr(out, "__dlpack__")
    assert tuple(out.__dlpack_device__()) == (1, 0)  # kDLCPU
    a = np.from_dlpack(out)
    assert np.shares_memory(a, np.asarray(out)) and a.ctypes.data == np.asarray(out).ctypes.data
    np.testing.assert_array_equal(a, want)
    out2, = tiny.run(None, {"input": x}, output_type="dlpack")
    np.testing.assert_array_equal(np.from_dlpack(out2), want)


def test_numpy_outputs_own_their_memory(tiny):
    out, = tiny.run(None, {"input": rand(1, 3, 32, 32)})
    assert out.flags.c_contiguous and out.flags.writeable and out.base is not None
    out[...] = 0  # writable, and nobody else's memory
    again, = tiny.run(None, {"input": rand(1, 3, 32, 32)})
    assert np.abs(again).sum() > 0


DTYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16,
          onnx.TensorProto.DOUBLE: np.float64, onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32,
          onnx.TensorProto.INT8: np.int8, onnx.TensorProto.UINT8: np.uint8, onnx.TensorProto.BOOL: np.bool_}


@pytest.mark.parametrize("elem", list(DTYPES), ids=[np.dtype(t).name for t in DTYPES.values()])
def test_dtype_round_trip_zero_copy(tmp_path, elem):
    dt = DTYPES[elem]
    s = infera.InferenceSession(tiny_models.save(tiny_models.typed_identity(elem), tmp_path / "id.onnx"))
    x = (np.arange(15).reshape(3, 5) % 7).astype(dt)
    y, = s.run(None, {"x": x})
    assert y.dtype == dt and np.array_equal(y, x)
    d, = s.run_with_dlpack(None, {"x": x})
    back = np.from_dlpack(d)
    assert back.dtype == dt and np.array_equal(back, x)
    # the DLPack output fed back in: read in place
    assert s._core.probe_feed("x", d) == (back.ctypes.data, False)
    assert s.get_inputs()[0].dtype == np.dtype(dt).name or (dt is np.bool_ and s.get_inputs()[0].dtype == "bool")


TORCH_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np, torch, infera
    s = infera.InferenceSession(sys.argv[2])
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    ptr, copied = s._core.probe_feed("input", x)
    assert (ptr, copied) == (x.data_ptr(), False), (ptr, copied, x.data_ptr())
    want, = s.run(None, {"input": x.numpy()})
    got, = s.run(None, {"input": x})
    assert np.array_equal(got, want)
    nhwc = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)   # non-contiguous torch view
    assert not nhwc.is_contiguous() and s._core.probe_feed("input", nhwc)[1]
    assert np.array_equal(s.run(None, {"input": nhwc})[0], want)
    out, = s.run_with_dlpack(None, {"input": x})
    t = torch.from_dlpack(out)
    assert t.data_ptr() == np.asarray(out).ctypes.data and torch.equal(t, torch.from_numpy(want))
    try:
        s.run(None, {"input": x.double()})
        raise SystemExit("float64 torch input was accepted")
    except infera.InvalidInput as e:
        assert "expected dtype float32" in str(e)
    print("torch", torch.__version__, "ok")
""")


def test_torch_cpu_tensors(tiny_path, tmp_path):
    torch_python = os.environ.get("TORCH_PYTHON", "/usr/bin/python3")
    probe = subprocess.run([torch_python, "-c", "import torch"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("no torch in %s: %s" % (torch_python, probe.stderr.strip().splitlines()[-1:]))
    # Only the package goes on that Python's path (an installed one sits beside NumPy 2, which
    # Debian's torch cannot use).
    os.symlink(os.path.dirname(os.path.abspath(infera.__file__)), tmp_path / "infera")
    p = subprocess.run([torch_python, "-c", TORCH_SCRIPT, str(tmp_path), tiny_path], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and "ok" in p.stdout, p.stdout + p.stderr


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_leak_of_outputs_or_copies(tmp_path):
    # 600 KB per output and per copied input: 300 leaked runs would be ~350 MB.
    s = infera.InferenceSession(tiny_models.save(tiny_models.typed_identity(onnx.TensorProto.FLOAT, (1, 3, 224, 224)),
                                                 tmp_path / "id.onnx"))
    x = rand(1, 3, 224, 224)
    strided = np.asfortranarray(x)
    for _ in range(50):
        s.run(None, {"x": x})
    before = rss_bytes()
    for _ in range(100):
        s.run(None, {"x": x})
        s.run(None, {"x": strided})
        s.run_with_dlpack(None, {"x": x})
    grown = rss_bytes() - before
    assert grown < 64 << 20, "RSS grew by %.1f MiB over 300 runs" % (grown / 2**20)
