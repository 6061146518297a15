"""The GPU path with PyTorch CUDA tensors (DLPack): zero-copy inputs and outputs by device pointer,
strided device inputs copied once, bound device outputs written in place, GPU vs CPU outputs.
Runs only where infera.get_device() == "GPU" and torch sees CUDA; skipped (visibly) elsewhere."""
import numpy as np
import pytest

import infera
from conftest import GPU_REASON, has_gpu, rand

pytestmark = pytest.mark.skipif(not has_gpu(), reason=GPU_REASON)


@pytest.fixture(scope="module")
def torch():
    t = pytest.importorskip("torch")
    if not t.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return t


@pytest.fixture(scope="module")
def gpu_tiny(tiny_path):
    return infera.InferenceSession(tiny_path, providers=["GPU"])


def test_gpu_session_matches_cpu(gpu_tiny, tiny):
    assert gpu_tiny.device == "gpu:0" and gpu_tiny.get_providers()[-1] == "CPUExecutionProvider"
    for b in (1, 3):
        x = rand(b, 3, 32, 32, seed=b)
        got, = gpu_tiny.run(None, {"input": x})
        want, = tiny.run(None, {"input": x})
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_cuda_tensor_in_and_out_zero_copy(gpu_tiny, tiny, torch):
    x = torch.randn(2, 3, 32, 32, device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    torch.cuda.synchronize()
    ptr, copied = gpu_tiny._core.probe_feed("input", x)
    assert (ptr, copied) == (x.data_ptr(), False)
    want, = tiny.run(None, {"input": x.cpu().numpy()})
    out, = gpu_tiny.run_with_dlpack(None, {"input": x})
    assert tuple(out.__dlpack_device__()) == (2, 0)  # kDLCUDA, device 0: the output stayed there
    t = torch.from_dlpack(out)
    assert t.is_cuda and t.shape == (2, 10)
    np.testing.assert_allclose(t.cpu().numpy(), want, rtol=1e-4, atol=1e-5)
    # the device output fed back as an input is read in place
    assert gpu_tiny._core.probe_feed("input", x)[0] == x.data_ptr()
    host, = gpu_tiny.run(None, {"input": x})  # NumPy outputs from device inputs
    np.testing.assert_allclose(host, want, rtol=1e-4, atol=1e-5)


def test_strided_cuda_input_one_copy(gpu_tiny, tiny, torch):
    x = torch.randn(2, 32, 32, 3, device="cuda").permute(0, 3, 1, 2)  # NHWC memory as NCHW
    torch.cuda.synchronize()
    assert not x.is_contiguous()
    assert gpu_tiny._core.probe_feed("input", x)[1]
    got, = gpu_tiny.run(None, {"input": x})
    want, = tiny.run(None, {"input": x.contiguous().cpu().numpy()})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    sliced = torch.randn(4, 3, 64, 32, device="cuda")[::2, :, ::2, :]  # step slices on the device
    torch.cuda.synchronize()
    got, = gpu_tiny.run(None, {"input": sliced})
    np.testing.assert_allclose(got, tiny.run(None, {"input": sliced.contiguous().cpu().numpy()})[0], rtol=1e-4,
                               atol=1e-5)


def test_cuda_tensor_on_cpu_session(tiny, torch):
    x = torch.randn(1, 3, 32, 32, device="cuda")
    torch.cuda.synchronize()
    ptr, copied = tiny._core.probe_feed("input", x)
    assert copied  # a CPU session reads a host copy
    np.testing.assert_allclose(tiny.run(None, {"input": x})[0], tiny.run(None, {"input": x.cpu().numpy()})[0],
                               rtol=0, atol=0)


def test_bound_cuda_output_in_place(gpu_tiny, tiny, torch):
    x = rand(3, 3, 32, 32, seed=4)
    buf = torch.full((3, 10), float("nan"), device="cuda")
    io = gpu_tiny.io_binding()
    io.bind_input("input", x)
    io.bind_output("logits", buf)
    gpu_tiny.run_with_iobinding(io)
    assert io.get_outputs()[0] is buf
    np.testing.assert_allclose(buf.cpu().numpy(), tiny.run(None, {"input": x})[0], rtol=1e-4, atol=1e-5)


def test_threads_on_gpu_session(gpu_tiny):
    import threading
    xs = [rand(1 + k % 3, 3, 32, 32, seed=k) for k in range(8)]
    serial = [gpu_tiny.run(None, {"input": x})[0] for x in xs]
    got = [None] * 8

    def work(k):
        got[k] = [gpu_tiny.run(None, {"input": xs[k]})[0] for _ in range(10)]

    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for k in range(8):
        assert all(g.tobytes() == serial[k].tobytes() for g in got[k]), k
