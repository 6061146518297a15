"""One session from many Python threads: the serial outputs bit for bit; and a run does not hold
the GIL (another Python thread makes progress while it runs)."""
import ctypes
import ctypes.util
import os
import threading
import time

import numpy as np
import pytest

import infera
from conftest import rand


def test_eight_threads_equal_serial(tiny_path):
    s = infera.InferenceSession(tiny_path)
    inputs = [rand(1 + k % 3, 3, 32, 32, seed=k) for k in range(8)]  # three shapes: three plans at once
    serial = [s.run(None, {"input": x})[0] for x in inputs]
    results = [[None] * 20 for _ in inputs]
    errors = []
    start = threading.Barrier(8)

    def worker(k):
        try:
            start.wait()
            for r in range(20):
                results[k][r] = s.run(None, {"input": inputs[k]})[0]
        except Exception as e:  # reported below: a thread's failure must fail the test
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(8):
        for r in range(20):
            assert results[k][r].tobytes() == serial[k].tobytes(), (k, r)


def gil_probe(fn):
    """Runs fn in a thread while this thread loops in pure Python; True when the loop kept going
    during fn (the GIL was released): the loop's stalls longer than 20 ms add up to less than half of
    fn's time. Held, a call stalls the loop for all of it; released, only the scheduler stalls it (a
    loaded machine preempts for tens of ms at times, which is why no single gap decides)."""
    done = threading.Event()
    span = {}

    def worker():
        t0 = time.perf_counter()
        fn()
        span["run"] = time.perf_counter() - t0
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    time.sleep(0.01)  # let the worker enter fn
    ticks, stalled, max_gap, last = 0, 0.0, 0.0, time.perf_counter()
    while not done.is_set():
        now = time.perf_counter()
        gap = now - last
        max_gap = max(max_gap, gap)
        if gap > 0.02:
            stalled += gap
        last = now
        ticks += 1
    t.join()
    return ticks > 1000 and stalled < span["run"] / 2, (ticks, stalled, max_gap, span["run"])


def test_run_releases_the_gil(models_dir):
    path = os.path.join(models_dir, "resnet50.onnx")
    if not os.path.isfile(path):
        pytest.fail("missing %s (MODELS_DIR)" % path)
    # The probe's control: a C call that keeps the GIL (ctypes.PyDLL does not release it) must be
    # seen as holding it, and one that releases it (time.sleep) as released.
    libc = ctypes.PyDLL(ctypes.util.find_library("c"))
    held = gil_probe(lambda: libc.usleep(500000))
    assert not held[0], held
    slept = gil_probe(lambda: time.sleep(0.5))
    assert slept[0], slept
    so = infera.SessionOptions()
    so.intra_op_num_threads = 1
    s = infera.InferenceSession(path, so)
    x = rand(2, 3, 224, 224)
    s.run(None, {"input": x})  # the plan is built; the probed runs only run
    t0 = time.perf_counter()
    s.run(None, {"input": x})  # one run's time, without the plan build (reps would come out too few)
    once = time.perf_counter() - t0
    reps = max(1, int(0.3 / max(once, 1e-3)) + 1)  # >= 0.3 s of runs however fast this machine is

    def runs():
        for _ in range(reps):
            s.run(None, {"input": x})

    released, why = gil_probe(runs)
    assert why[3] > 0.1 and released, why


def test_close_while_running_is_safe(tiny_path):
    s = infera.InferenceSession(tiny_path)
    x = rand(3, 3, 32, 32)
    want = s.run(None, {"input": x})[0]
    got, errors = [], []

    def worker():
        for _ in range(200):
            try:
                got.append(s.run(None, {"input": x})[0])
            except infera.InvalidInput as e:
                errors.append(str(e))
                return

    t = threading.Thread(target=worker)
    t.start()
    time.sleep(0.005)
    s.close()
    t.join()
    assert all(g.tobytes() == want.tobytes() for g in got)
    assert errors and "closed" in errors[0], errors
