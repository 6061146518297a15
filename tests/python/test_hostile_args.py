"""Seeded random hostile arguments to every entry point of the binding (issue 7: the Python
binding's argument conversion): wrong types, huge and negative dims, non-contiguous, strided,
zero-stride and odd-dtype numpy arrays, bad dict keys, None everywhere, wrong provider options.
Every call must either work or raise a Python exception; a crash (signal, abort, interpreter
error) fails. The cases run in a child process (a crash there is seen, with the case that caused
it), under RLIMIT_AS, so that a size the binding would try to allocate is refused, not swapped.

    CASES=20000 SEED=3 python -m pytest tests/python/test_hostile_args.py    (default 3000 cases, seed 1)
"""
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

WORKER = textwrap.dedent(r'''
import os, random, resource, sys, warnings
import numpy as np
sys.path.insert(0, HERE)
import tiny_models
import infera

warnings.simplefilter("ignore")
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
seed, n, tmp = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = random.Random(seed)
two_path = tiny_models.save(tiny_models.two_inputs(), os.path.join(tmp, "two.onnx"))
tiny_path = tiny_models.save(tiny_models.tiny_convnet(), os.path.join(tmp, "tiny.onnx"))
two_bytes = open(two_path, "rb").read()
base = infera.InferenceSession(two_path)
tiny = infera.InferenceSession(tiny_path)

HUGE = [2 ** 31, 2 ** 32 + 1, 2 ** 40, 2 ** 62, 2 ** 63 - 1, 2 ** 64, 2 ** 100]
NEG = [-1, -2, -(2 ** 31), -(2 ** 63), -(2 ** 70)]
ODD = [None, "", "x", b"\x00\xff", 1.5, float("nan"), float("inf"), True, [], {}, (), object(), 1j,
       bytearray(b"ab"), memoryview(b"ab"), Ellipsis, type, lambda: 0]
DTYPES = [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.bool_, np.complex64, np.complex128, object, "U3", "S2", "datetime64[s]", "timedelta64[ms]",
          [("a", "<f4"), ("b", "<i4")], ">f4", ">i8", "V4"]

def dim():
    r = rng.random()
    if r < 0.6: return rng.randint(0, 6)
    if r < 0.8: return rng.choice(HUGE)
    if r < 0.95: return rng.choice(NEG)
    return rng.choice(ODD)

def array():
    """A numpy array with odd dtype, layout or (virtual) size; or something that is none."""
    r = rng.random()
    if r < 0.08: return rng.choice(ODD)
    if r < 0.12: return [[rng.random()] * 4] * rng.randint(0, 3)
    dt = rng.choice(DTYPES) if rng.random() < 0.5 else np.float32
    shape = tuple(rng.randint(0, 5) for _ in range(rng.choice([0, 1, 2, 2, 2, 3, 4, 7])))
    if rng.random() < 0.5: shape = (rng.randint(1, 4), 4)
    try:
        a = np.zeros(shape, dtype=dt)
        if a.dtype.kind == "f": a[...] = rng.choice([0.0, 1.0, float("nan"), float("inf"), -1e38])
    except Exception:
        a = np.zeros((2, 4), np.float32)
    k = rng.random()
    if k < 0.1 and a.ndim >= 1 and a.size:  # negative strides
        a = a[::-1]
    elif k < 0.2 and a.ndim >= 2:  # non-contiguous
        a = np.zeros((a.shape[0], a.shape[1] * 2 + 1), a.dtype)[:, ::2]
    elif k < 0.3:  # Fortran order
        a = np.asfortranarray(a)
    elif k < 0.4:  # zero strides: huge virtual arrays that take no memory
        h = rng.choice([2 ** 20, 2 ** 31, 2 ** 40, 2 ** 50])
        a = np.lib.stride_tricks.as_strided(np.zeros(4, np.float32), shape=(h, 4), strides=(0, 4))
    elif k < 0.45:  # read-only, misaligned
        buf = np.zeros(2 * 4 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(2, 4)
        buf.flags.writeable = False
        a = buf
    elif k < 0.5:
        a = np.float32(1.0)  # a numpy scalar, not an array
    return a

def key():
    r = rng.random()
    if r < 0.7: return rng.choice(["x", "y"])
    if r < 0.8: return rng.choice(["", "z", "x\x00", "\udcff", "sum", "x" * 10000])
    return rng.choice([0, None, b"x", 1.5, ("x",), frozenset()])

def feed():
    r = rng.random()
    if r < 0.08: return rng.choice(ODD)
    if r < 0.12: return [(k, array()) for k in ("x", "y")]
    return {key(): array() for _ in range(rng.randint(0, 4))}

def out_names():
    return rng.choice([None, [], ["sum"], ["prod", "sum"], ["nope"], [None], "sum", 3, [1], ["sum", "sum"],
                       ("sum",), iter(["sum"]), [b"sum"]])

def sess_options():
    if rng.random() < 0.3: return rng.choice([None, None, 3, "x", {}])
    o = infera.SessionOptions()
    for name in rng.sample(["intra_op_num_threads", "inter_op_num_threads", "graph_optimization_level",
                            "execution_mode", "precision", "backends", "max_cached_plans", "max_run_contexts",
                            "allow_tf32", "vendor_libraries", "enable_graph", "verbose", "perf_db", "logid",
                            "enable_profiling", "optimized_model_filepath", "memory_budget_bytes"], rng.randint(0, 3)):
        v = rng.choice([dim(), rng.choice(ODD), rng.choice(["fp16", "int8", "fp32", "none", "/nonexistent/db.json"]),
                        ["dnnl"], ["ref"], ["nope"], [None], ["gpu"], 0, 1])
        try:
            setattr(o, name, v)
        except Exception:
            pass
    if o.perf_db is None: o.perf_db = "none"  # keep the user's perf db out of it
    return o

def providers():
    return rng.choice([None, ["CPUExecutionProvider"], ["CPU"], ["Bogus"], [1], "CPUExecutionProvider", [],
                       [("CPUExecutionProvider", {"bad": 1})], [("CUDAExecutionProvider", {"device_id": -5})],
                       [("CPUExecutionProvider", None)], [None], ["CUDAExecutionProvider", "CPUExecutionProvider"],
                       [("CPUExecutionProvider",)], [("CPUExecutionProvider", {}, 3)]])

def provider_options():
    return rng.choice([None, [{}], [{"device_id": "x"}], [None], 5, {}, [{"device_id": 2 ** 70}], [{}, {}]])

def run_options():
    if rng.random() < 0.5: return None
    if rng.random() < 0.2: return rng.choice(ODD)
    ro = infera.RunOptions()
    ro.profile = rng.random() < 0.3
    ro.terminate = rng.random() < 0.1
    return ro

def shapes():
    if rng.random() < 0.2: return rng.choice(ODD)
    return {key(): rng.choice([[dim(), dim()], [dim()], dim(), [], [[1]], ["N", 4]]) for _ in range(rng.randint(0, 3))}

def case():
    r = rng.random()
    if r < 0.15:
        src = rng.choice([two_path, two_bytes, two_bytes[: rng.randint(0, len(two_bytes))], None, 123, b"",
                          "/nonexistent.onnx", bytearray(two_bytes), memoryview(two_bytes), 1.5, [], {}, tmp,
                          two_path + "\x00x", os.fsencode(two_path)])
        s = infera.InferenceSession(src, sess_options(), providers(), provider_options())
        if rng.random() < 0.5: s.run(None, {"x": np.ones((2, 4), np.float32), "y": np.ones((2, 4), np.float32)})
        return "load"
    s = base if rng.random() < 0.8 else tiny
    if r < 0.6: s.run(out_names(), feed(), run_options(), rng.choice(["numpy", "numpy", "dlpack", None, 3, "torch"]))
    elif r < 0.7: s.run_with_dlpack(out_names(), feed(), run_options())
    elif r < 0.78: s.prepare(shapes())
    elif r < 0.92:
        b = s.io_binding()
        for _ in range(rng.randint(0, 3)):
            b.bind_input(key(), array())
        for _ in range(rng.randint(0, 2)):
            b.bind_output(key(), rng.choice([None, "cpu", "cuda", 3, array()]),
                          rng.choice([0, -1, 2 ** 40, None]), rng.choice([None, np.float32, "x", 5]),
                          rng.choice([None, [dim(), dim()], (2, 4), "x"]), rng.choice([None, 0, 1, -1, 2 ** 64]))
        s.run_with_iobinding(b, run_options())
        b.copy_outputs_to_cpu()
        b.get_outputs()
    else:
        getattr(s, rng.choice(["get_inputs", "get_outputs", "get_providers", "get_provider_options",
                               "get_session_options", "get_modelmeta", "summary", "allocated_bytes",
                               "cached_plan_count", "get_overridable_initializers"]))()
    return "call"

raised = worked = 0
kinds = {}
for i in range(n):
    print("case", i, flush=True)
    try:
        case()
        worked += 1
    except SystemError as e:  # "error return without exception set" and kin: a binding bug
        print("SYSTEM ERROR", e, flush=True)
        sys.exit(4)
    except Exception as e:  # any other Python exception is an answer; only a crash is not
        raised += 1
        k = type(e).__name__
        if k not in kinds:
            print("first %s: %s" % (k, str(e)[:300].encode("ascii", "backslashreplace").decode()), flush=True)
        kinds[k] = kinds.get(k, 0) + 1
    except BaseException as e:  # SystemExit, KeyboardInterrupt: not an answer for a bad argument
        print("BASE EXCEPTION", type(e).__name__, e, flush=True)
        sys.exit(3)
print("summary cases=%d worked=%d raised=%d kinds=%s" % (n, worked, raised, sorted(kinds.items())), flush=True)
''').replace("HERE", repr(HERE), 1)


def test_hostile_arguments_never_crash(tmp_path):
    seed = int(os.environ.get("SEED", "1"))
    n = int(os.environ.get("CASES", "3000"))
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, INFERA_VERBOSE="0", OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, str(script), str(seed), str(n), str(tmp_path)], capture_output=True,
                       text=True, timeout=900, env=env)
    lines = p.stdout.splitlines()
    last = next((l for l in reversed(lines) if l.startswith("case ")), "case -1")
    summary = [l for l in lines if l.startswith("summary ")]
    assert p.returncode == 0 and summary, (
        "the binding crashed (exit %d) at %s of seed %d; stderr tail:\n%s" % (p.returncode, last, seed, p.stderr[-3000:]))
    print(summary[0])
    worked = int(summary[0].split("worked=")[1].split()[0])
    raised = int(summary[0].split("raised=")[1].split()[0])
    assert worked + raised == n
    # The generator must reach both answers often, or it tests only one side.
    assert worked > n // 20 and raised > n // 5, summary[0]
