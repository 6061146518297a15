"""IoBinding: preallocated outputs written in place (pointer identity), bound inputs, errors."""
import numpy as np
import pytest

import infera
from conftest import rand


def test_bind_output_in_place(tiny):
    x = rand(2, 3, 32, 32)
    want, = tiny.run(None, {"input": x})
    buf = np.full((2, 10), np.nan, np.float32)
    ptr = buf.ctypes.data
    io = tiny.io_binding()
    io.bind_cpu_input("input", x)
    io.bind_output("logits", buf)
    tiny.run_with_iobinding(io)
    out, = io.get_outputs()
    assert out is buf and buf.ctypes.data == ptr
    np.testing.assert_array_equal(buf, want)
    np.testing.assert_array_equal(io.copy_outputs_to_cpu()[0], want)
    x[...] = rand(2, 3, 32, 32, seed=9)  # the bound input is read again on the next run
    tiny.run_with_iobinding(io)
    np.testing.assert_array_equal(buf, tiny.run(None, {"input": x})[0])


def test_bind_output_allocated(tiny):
    io = tiny.io_binding()
    x = rand(1, 3, 32, 32)
    io.bind_input("input", x)
    io.bind_output("logits")
    tiny.run_with_iobinding(io)
    np.testing.assert_array_equal(np.asarray(io.get_outputs()[0]), tiny.run(None, {"input": x})[0])


def test_two_outputs_one_bound(two_path):
    s = infera.InferenceSession(two_path)
    x, y = rand(3, 4, seed=1), rand(3, 4, seed=2)
    prod = np.empty((3, 4), np.float32)
    io = s.io_binding()
    io.bind_input("x", x)
    io.bind_input("y", y)
    io.bind_output("prod", prod)
    s.run_with_iobinding(io)
    assert io.get_outputs()[0] is prod
    np.testing.assert_array_equal(prod, x * y)


@pytest.mark.parametrize("buf,pattern", [
    (np.empty((2, 11), np.float32), r"bound buffer has shape \[2,11\], this run writes \[2,10\]"),
    (np.empty((2, 10), np.float64), r"must be float32, found float64"),
    (np.empty((10, 2), np.float32).T, r"C-contiguous"),
    ("readonly", r"read-only"),
    ([0.0] * 20, r"expected a writable numpy.ndarray"),
])
def test_bind_output_errors(tiny, buf, pattern):
    if isinstance(buf, str):
        buf = np.empty((2, 10), np.float32)
        buf.setflags(write=False)
    io = tiny.io_binding()
    io.bind_input("input", rand(2, 3, 32, 32))
    io.bind_output("logits", buf)
    with pytest.raises(infera.InvalidInput, match=pattern):
        tiny.run_with_iobinding(io)


def test_iobinding_misuse(tiny, two_path):
    io = tiny.io_binding()
    with pytest.raises(infera.InvalidInput, match="unknown output 'nope'"):
        io.bind_output("nope")
    with pytest.raises(infera.InvalidInput, match="has not run"):
        io.get_outputs()
    with pytest.raises(infera.Unsupported, match="raw pointers"):
        io.bind_output("logits", "cpu", 0, np.float32, [1, 10], 12345)
    other = infera.InferenceSession(two_path)
    with pytest.raises(infera.InvalidInput, match="this session's io_binding"):
        other.run_with_iobinding(io)
    with pytest.raises(infera.InvalidInput, match="missing input 'input'"):
        tiny.run_with_iobinding(io)
