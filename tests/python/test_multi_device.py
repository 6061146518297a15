"""infera.MultiDeviceSession: a latency-mode run equals one session's run of its row blocks (two
CPU engines stand in for two GPUs), throughput mode from several threads equals one session per
run and deals runs to both engines; bad device lists and modes raise InvalidInput. On a GPU build
with a GPU, the same on two engines of gpu:0."""
import threading

import numpy as np
import pytest

import infera
from conftest import rand


def device_lists():
    lists = ["cpu,cpu"]
    if any(b["name"] == "gpu" and b["available"] for b in infera.available_backends()):
        lists.append("gpu:0,0")
    return lists


@pytest.mark.parametrize("devices", device_lists())
def test_latency_mode_equals_its_blocks_on_one_session(tiny_path, devices):
    so = infera.SessionOptions()
    so.intra_op_num_threads = 1
    m = infera.MultiDeviceSession(tiny_path, devices=devices, sess_options=so)
    assert m.device_count == 2
    provider = "CPUExecutionProvider" if devices.startswith("cpu") else ("CUDAExecutionProvider", {"device_id": 0})
    one = infera.InferenceSession(tiny_path, so, providers=[provider])
    x = rand(5, 3, 32, 32, seed=4)
    got = m.run(None, {"input": x})[0]
    want = np.concatenate([one.run(None, {"input": x[:3]})[0], one.run(None, {"input": x[3:]})[0]])
    assert got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    assert [s["rows"] for s in m.stats()] == [3, 2]


def test_throughput_mode_from_threads(tiny_path):
    m = infera.MultiDeviceSession(tiny_path, devices="cpu,cpu", mode="throughput")
    one = infera.InferenceSession(tiny_path)
    xs = [rand(1 + k % 2, 3, 32, 32, seed=10 + k) for k in range(8)]
    want = [one.run(None, {"input": x})[0] for x in xs]
    got = [None] * len(xs)

    def worker(k):
        got[k] = m.run(None, {"input": xs[k]})[0]

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(len(xs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()
    assert all(s["runs"] == 4 for s in m.stats()), m.stats()


def test_bad_device_lists_and_modes(tiny_path):
    for bad in ["", "cpu,", "cpu,,cpu", "tpu"]:
        with pytest.raises(infera.InvalidInput, match="device list"):
            infera.MultiDeviceSession(tiny_path, devices=bad)
    with pytest.raises(infera.InvalidInput, match="mode"):
        infera.MultiDeviceSession(tiny_path, devices="cpu,cpu", mode="fastest")
    with pytest.raises(infera.InvalidInput):
        infera.MultiDeviceSession(tiny_path, devices=3)
    m = infera.MultiDeviceSession(tiny_path, devices="cpu,cpu")
    with pytest.raises(infera.InvalidInput, match="unknown output"):
        m.run(["nope"], {"input": rand(2, 3, 32, 32)})
