#!/usr/bin/env python3
"""Hostile inputs from the red-team pass (issue 7): each case once crashed, hung, or gave a wrong
answer; each must now give a clean one-line error or the right answer, within its time limit.

    python3 tests/hostile/run_hostile.py [--infera build/infera] [-k SUBSTRING] [-v] [--time-scale X]

Needs onnx + numpy (PyPI). The cases are written to a temporary folder (nothing is kept). Kinds:
  refuse  exit 1, exactly one stderr line, no crash text, and `needle` in that line
  answer  exit 0 and every listed output .npy equal to the numpy reference (exact: these are
          integer, bool or copy results)
  custom  a function judges the result (symlink at the output path)
  usage   exit 2 (a usage error), one safe stderr line with `needle`
  lines   exit 0, every stderr line safe (no control byte, <= 2100 bytes), `needle` in stderr;
          tty=True runs it with stderr on a pseudo-terminal (bench's progress line)
Prints PASS/FAIL per case, then `N passed, M failed`; exit 1 on any failure.
"""
import argparse
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
CRASH = ["terminate called", "Segmentation", "Aborted", "core dumped", "Traceback", "AddressSanitizer",
         "std::bad_alloc", "runtime error:", "stack smashing", "LeakSanitizer"]
RNG = np.random.default_rng(7)


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "hostile", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def chain_model(op, n, extra_inputs=(), inits=(), shape=(1, 4), alternate=None):
    """n nodes in a line, built on the GraphProto directly (helper.make_node is 2x slower)."""
    m = model([], [vi("x", list(shape))], [vi("y", None)], inits)
    g = m.graph
    prev = "x"
    for i in range(n):
        node = g.node.add()
        node.op_type = alternate[i % len(alternate)] if alternate else op
        node.name = "n%d" % i
        node.input.append(prev)
        node.input.extend(extra_inputs)
        out = "y" if i == n - 1 else "t%d" % i
        node.output.append(out)
        prev = out
    return m


def run_on_pty(cmd, timeout):
    """Runs cmd with stderr on a pseudo-terminal (isatty(2) is true), stdout captured."""
    import pty
    import select
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    err, deadline = b"", time.time() + timeout
    while True:
        r, _, _ = select.select([master], [], [], max(0.0, deadline - time.time()))
        if not r:
            p.kill()
            p.wait()
            os.close(master)
            raise subprocess.TimeoutExpired(cmd, timeout)
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its side
            chunk = b""
        if not chunk:
            break
        err += chunk
    os.close(master)
    out = p.stdout.read()
    p.wait()
    # A pty turns \n into \r\n: back to what the program wrote.
    return subprocess.CompletedProcess(cmd, p.returncode, out, err.replace(b"\r\n", b"\n"))


def npy_bytes(header_text, payload):
    """A .npy v1.0 file with this header text (not validated) and payload."""
    h = header_text.encode("latin1")
    pad = 64 - (10 + len(h) + 1) % 64
    h = h + b" " * pad + b"\n"
    if len(h) > 65535:
        return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(h)) + h + payload
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + payload


class Suite:
    def __init__(self, root, infera):
        self.root, self.infera, self.cases = root, infera, []

    def dir(self, name):
        d = os.path.join(self.root, name)
        os.makedirs(os.path.join(d, "out"), exist_ok=True)
        return d

    def save(self, name, m, fname="model.onnx"):
        p = os.path.join(self.dir(name), fname)
        with open(p, "wb") as f:
            f.write(m.SerializeToString() if hasattr(m, "SerializeToString") else m)
        return p

    def file(self, name, fname, data):
        p = os.path.join(self.dir(name), fname)
        if isinstance(data, np.ndarray):
            np.save(p, data)
        else:
            with open(p, "wb") as f:
                f.write(data)
        return p

    def add(self, name, what, args, kind, needle="", expect=None, timeout=20, judge=None, rlimits=None, env=None,
            tty=False):
        self.cases.append(dict(name=name, what=what, args=args, kind=kind, needle=needle, expect=expect or {},
                               timeout=timeout, judge=judge, rlimits=rlimits or {}, env=env or {}, tty=tty))

    def run_case(self, c):
        out_dir = os.path.join(self.root, c["name"], "out")
        cmd = [self.infera] + [a.replace("@OUT", out_dir) for a in c["args"]]
        t0 = time.time()
        def limits():
            for res, v in c["rlimits"].items():
                resource.setrlimit(res, (v, v))
        env = dict(os.environ, **c["env"]) if c["env"] else None
        try:
            if c["tty"]:
                p = run_on_pty(cmd, c["timeout"])
            else:
                p = subprocess.run(cmd, capture_output=True, timeout=c["timeout"], stdin=subprocess.DEVNULL,
                                   preexec_fn=limits if c["rlimits"] else None, env=env)
        except subprocess.TimeoutExpired:
            return "no answer within %d s (hang or quadratic time)" % c["timeout"], "", c["timeout"]
        secs = time.time() - t0
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        for t in CRASH:
            if t in out + err:
                return "crash text %r" % t, err, secs
        if p.returncode < 0:
            return "killed by signal %d" % -p.returncode, err, secs
        if c["kind"] == "lines":
            if p.returncode != 0:
                return "exit %d, expected 0" % p.returncode, err, secs
            # The program's own \r and ESC[K (tty progress) are allowed; nothing from the model.
            raw = p.stderr.replace(b"\r\x1b[K", b"\n").replace(b"\x1b[K", b"").replace(b"\r", b"\n")
            for line in raw.split(b"\n"):
                bad = sorted({b for b in line if b < 0x20 or b == 0x7F})
                if bad:
                    return "a stderr line holds raw control bytes %s: %r" % (bad, line[:120]), err, secs
                if len(line) > 2100:
                    return "a stderr line is %d bytes (the cap is 2048)" % len(line), err, secs
            if c["needle"] not in err:
                return "stderr does not say %r" % c["needle"], err, secs
            return None, err, secs
        if c["kind"] in ("refuse", "usage"):
            want_rc = 1 if c["kind"] == "refuse" else 2
            if p.returncode != want_rc:
                return "exit %d, expected %d" % (p.returncode, want_rc), err, secs
            # One safe line (issue 7): no control byte but the final newline, capped in length.
            raw = p.stderr
            bad = sorted({b for b in raw[:-1] if b < 0x20 or b == 0x7F})
            if bad:
                return "stderr holds raw control bytes %s" % bad, err, secs
            if len(raw) > 2100:
                return "the error line is %d bytes (the cap is 2048)" % len(raw), err, secs
            lines = err.splitlines()
            if len(lines) != 1 or not err.endswith("\n"):
                return "stderr has %d lines, expected one" % len(lines), err, secs
            if c["needle"] not in lines[0]:
                return "the error does not say %r" % c["needle"], err, secs
            return None, err, secs
        if p.returncode != 0:
            return "exit %d, expected 0" % p.returncode, err, secs
        if c["judge"]:
            return c["judge"](out_dir), err, secs
        for fname, want in c["expect"].items():
            path = os.path.join(out_dir, fname)
            if not os.path.isfile(path):
                return "no output %s" % fname, err, secs
            got = np.load(path)
            if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
                return "%s differs from the reference: got %s %s %s, want %s %s %s" % (
                    fname, got.dtype, got.shape, got.ravel()[:6], want.dtype, want.shape, want.ravel()[:6]), err, secs
        return None, err, secs


# --------------------------------------------------------------------------------------- the cases

def npy_cases(s):
    relu = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["N", 4])], [vi("y", ["N", 4])])
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    payload = x.tobytes()
    want = {"y.npy": np.maximum(x, 0)}

    def case(name, what, header, kind, needle="", data=payload):
        mp = s.save(name, relu)
        f = s.file(name, "x.npy", npy_bytes(header, data))
        s.add(name, what, ["run", mp, "--input", "x=" + f, "--output-dir", "@OUT"], kind, needle,
              want if kind == "answer" else None)

    run = " " * 40000
    # Long runs: std::regex recursed per character (SIGSEGV at ~40 KB).
    case("npy_whitespace_run_40k", "40 KB of spaces inside the header dict (valid Python)",
         "{'descr':%s'<f4', 'fortran_order': False, 'shape': (2, 4), }" % run, "answer")
    case("npy_shape_whitespace_run_40k", "40 KB of spaces inside the shape tuple (valid Python)",
         "{'descr': '<f4', 'fortran_order': False, 'shape': (2,%s4), }" % run, "answer")
    case("npy_descr_run_40k", "a 40 KB descr string",
         "{'descr': '<f4%s', 'fortran_order': False, 'shape': (2, 4), }" % ("x" * 40000), "refuse", "dtype")
    case("npy_shape_digit_run_40k", "a dimension of 40,000 digits",
         "{'descr': '<f4', 'fortran_order': False, 'shape': (%s, 4), }" % ("9" * 40000), "refuse", "2^40")
    # Grammar: the regexes accepted these as shape [2, 4].
    case("npy_shape_float", "'shape': (2.4,) is not a tuple of ints",
         "{'descr': '<f4', 'fortran_order': False, 'shape': (2.4,), }", "refuse", "tuple of integers")
    case("npy_shape_words", "'shape': (2 x 4)",
         "{'descr': '<f4', 'fortran_order': False, 'shape': (2 x 4), }", "refuse", "'shape'")
    case("npy_header_not_a_dict", "the three entries without braces",
         "'descr': '<f4', 'fortran_order': False, 'shape': (2, 4),", "refuse", "not a dict")
    case("npy_header_list", "a list, not a dict",
         "['descr', '<f4', 'fortran_order', False, 'shape', (2, 4)]", "refuse", "not a dict")
    case("npy_header_extra_key", "a fourth key",
         "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), 'x': 1}", "refuse", "unexpected key")
    case("npy_header_trailing_text", "text after the dict",
         "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), } junk", "refuse", "after the dict")
    case("npy_shape_int_not_tuple", "'shape': (8) is an int in Python",
         "{'descr': '<f4', 'fortran_order': False, 'shape': (8), }", "refuse", "not a tuple")
    case("npy_shape_rank_40", "'shape' with 40 dims (over the rank limit)",
         "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ", ".join(["1"] * 40), "refuse",
         "more than 32")


def bool_cases(s):
    # Not on non-canonical bool bytes gave 253/254 and 0: bytes must read as 0/1.
    raw = np.array([2, 255, 0, 1], np.uint8)
    not_model = model([helper.make_node("Not", ["x"], ["y"])], [vi("x", [4], B)], [vi("y", [4], B)])
    want = {"y.npy": np.array([False, False, True, False])}
    name = "bool_npy_noncanonical"
    mp = s.save(name, not_model)
    f = s.file(name, "x.npy", npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", raw.tobytes()))
    s.add(name, ".npy bool bytes 2, 255, 0, 1 into Not", ["run", mp, "--input", "x=" + f, "--output-dir", "@OUT"],
          "answer", expect=want)
    name = "bool_pb_raw_noncanonical"
    mp = s.save(name, not_model)
    tp = helper.make_tensor("x", B, [4], raw.tobytes(), raw=True)
    f = s.file(name, "x.pb", tp.SerializeToString())
    s.add(name, "TensorProto .pb bool raw_data 2, 255, 0, 1 into Not",
          ["run", mp, "--input", "x=" + f, "--output-dir", "@OUT"], "answer", expect=want)
    name = "bool_initializer_raw_noncanonical"
    c = helper.make_tensor("c", B, [4], raw.tobytes(), raw=True)
    m = model([helper.make_node("Not", ["c"], ["nc"]), helper.make_node("And", ["x", "nc"], ["y"])],
              [vi("x", [4], B)], [vi("y", [4], B)], [c])
    mp = s.save(name, m)
    f = s.file(name, "x.npy", np.ones(4, bool))
    s.add(name, "initializer bool raw_data 2, 255, 0, 1: And(ones, Not(c))",
          ["run", mp, "--input", "x=" + f, "--output-dir", "@OUT"], "answer", expect=want)
    name = "bool_external_data_noncanonical"
    c = onnx.TensorProto()
    c.name, c.data_type = "c", B
    c.dims.append(4)
    c.data_location = onnx.TensorProto.EXTERNAL
    for k, v in (("location", "c.bin"), ("offset", "0"), ("length", "4")):
        e = c.external_data.add()
        e.key, e.value = k, v
    m = model([helper.make_node("Not", ["c"], ["nc"]), helper.make_node("And", ["x", "nc"], ["y"])],
              [vi("x", [4], B)], [vi("y", [4], B)], [c])
    mp = s.save(name, m)
    s.file(name, "c.bin", raw.tobytes())
    f = s.file(name, "x.npy", np.ones(4, bool))
    s.add(name, "initializer bool external data 2, 255, 0, 1: And(ones, Not(c))",
          ["run", mp, "--input", "x=" + f, "--output-dir", "@OUT"], "answer", expect=want)


def omitted_output_cases(s):
    x = RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)

    def run(name, what, m, want, extra=()):
        mp = s.save(name, m)
        f = s.file(name, "x.npy", x)
        s.add(name, what, ["run", mp, *extra, "--input", "x=" + f, "--output-dir", "@OUT"], "answer", expect=want)

    # MaxPool 2x2 stride 2: indices are row-major into the whole NCHW input.
    win = x.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(1, 2, 2, 2, 4)
    arg = win.argmax(-1)
    hh, ww = np.meshgrid(np.arange(2), np.arange(2), indexing="ij")
    c = np.arange(2).reshape(1, 2, 1, 1)
    idx = c * 16 + (hh * 2 + arg // 2) * 4 + (ww * 2 + arg % 2)
    m = model([helper.make_node("MaxPool", ["x"], ["", "indices"], kernel_shape=[2, 2], strides=[2, 2])],
              [vi("x", [1, 2, 4, 4])], [vi("indices", None, I64)])
    run("maxpool_omitted_y", 'MaxPool -> ["", indices]', m, {"indices.npy": idx.astype(np.int64)})

    # BatchNormalization training mode (opset 15): running stats from the batch statistics.
    scale, bias = np.ones(2, np.float32), np.zeros(2, np.float32)
    mean, var = np.array([0.5, -1.0], np.float32), np.array([2.0, 0.25], np.float32)
    mom = 0.75
    bmean = x.mean(axis=(0, 2, 3))
    bvar = x.var(axis=(0, 2, 3))
    inits = [numpy_helper.from_array(a, n) for a, n in ((scale, "s"), (bias, "b"), (mean, "m"), (var, "v"))]
    m = model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["", "rm", "rv"],
                                training_mode=1, momentum=mom)],
              [vi("x", [1, 2, 4, 4])], [vi("rm", None), vi("rv", None)], inits, opset=15)
    # Float statistics are not bit-exact: judged with a tolerance below.
    name = "batchnorm_training_omitted_y"
    mp = s.save(name, m)
    f = s.file(name, "x.npy", x)
    want_rm, want_rv = mean * mom + bmean * (1 - mom), var * mom + bvar * (1 - mom)

    def judge_bn(out_dir):
        for fname, want in (("rm.npy", want_rm), ("rv.npy", want_rv)):
            p = os.path.join(out_dir, fname)
            if not os.path.isfile(p):
                return "no output " + fname
            got = np.load(p)
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
                return "%s = %s, want %s" % (fname, got, want)
        return None
    s.add(name, 'BatchNormalization(training_mode=1) -> ["", mean, var]',
          ["run", mp, "--input", "x=" + f, "--output-dir", "@OUT"], "answer", judge=judge_bn)

    m = model([helper.make_node("Dropout", ["x"], ["", "mask"])], [vi("x", [1, 2, 4, 4])], [vi("mask", None, B)])
    run("dropout_omitted_y", 'Dropout -> ["", mask] (inference: the mask is all true)', m,
        {"mask.npy": np.ones(x.shape, bool)})

    # With the passes off, nothing removes the node whose output is omitted.
    m = model([helper.make_node("Relu", ["x"], [""]), helper.make_node("Neg", ["x"], ["y"])],
              [vi("x", [1, 2, 4, 4])], [vi("y", None)])
    run("relu_omitted_output_no_optimize", 'Relu -> "" beside Neg -> y, --no-optimize', m, {"y.npy": -x},
        ("--no-optimize",))
    m = model([helper.make_node("Relu", ["x"], [""]), helper.make_node("Neg", ["x"], ["y"])],
              [vi("x", [1, 2, 4, 4])], [vi("y", None)])
    run("relu_omitted_output_no_dnnl", 'Relu -> "" beside Neg -> y, --no-optimize --no-dnnl', m, {"y.npy": -x},
        ("--no-optimize", "--no-dnnl"))

    def refuse(name, what, m, needle, extra=("--no-optimize",)):
        mp = s.save(name, m)
        f = s.file(name, "x.npy", x)
        s.add(name, what, ["run", mp, *extra, "--input", "x=" + f, "--output-dir", "@OUT"], "refuse", needle)

    w = numpy_helper.from_array(RNG.standard_normal((2, 2, 1, 1)).astype(np.float32), "w")
    conv = model([helper.make_node("Conv", ["x", "w"], [], name="c0"), helper.make_node("Neg", ["x"], ["y"])],
                 [vi("x", [1, 2, 4, 4])], [vi("y", None)], [w])
    refuse("conv_no_outputs_no_optimize", "Conv -> [] with --no-optimize", conv, "node 'c0' (Conv) has no outputs")
    refuse("conv_no_outputs", "Conv -> [] with the passes on", conv, "node 'c0' (Conv) has no outputs", ())
    const = model([helper.make_node("Constant", [], [], name="k", value=numpy_helper.from_array(np.ones(2, np.float32))),
                   helper.make_node("Neg", ["x"], ["y"])], [vi("x", [1, 2, 4, 4])], [vi("y", None)])
    refuse("constant_no_outputs", "a Constant with no output", const, "node 'k' (Constant) has no outputs")


def symlink_cases(s):
    name = "output_path_is_symlink"
    m = model([helper.make_node("Neg", ["x"], ["y"])], [vi("x", [4])], [vi("y", [4])])
    mp = s.save(name, m)
    x = np.arange(4, dtype=np.float32)
    f = s.file(name, "x.npy", x)
    victim = os.path.join(s.dir(name), "victim.txt")
    with open(victim, "wb") as fh:
        fh.write(b"do not overwrite\n")
    os.symlink(victim, os.path.join(s.dir(name), "out", "y.npy"))

    def judge(out_dir):
        with open(victim, "rb") as fh:
            if fh.read() != b"do not overwrite\n":
                return "the file the planted symlink pointed to was overwritten"
        p = os.path.join(out_dir, "y.npy")
        if os.path.islink(p) or not os.path.isfile(p):
            return "y.npy is still a symlink or missing"
        if not np.array_equal(np.load(p), -x):
            return "y.npy holds the wrong values"
        leftovers = [e for e in os.listdir(out_dir) if e != "y.npy"]
        return "left behind: %s" % leftovers if leftovers else None
    s.add(name, "a symlink planted at OUT/y.npy is replaced, its target untouched",
          ["run", mp, "--input", "x=" + f, "--output-dir", "@OUT"], "custom", judge=judge)


def limit_cases(s):
    ax = numpy_helper.from_array(np.array([0], np.int64), "ax")

    def refuse(name, what, m, needle, timeout=20):
        mp = s.save(name, m)
        s.add(name, what, ["run", mp, "--output-dir", "@OUT"], "refuse", needle, timeout=timeout)

    refuse("unsqueeze_chain_rank_40", "40 Unsqueeze in a row (rank 41)", chain_model("Unsqueeze", 40, ["ax"], [ax],
                                                                                    shape=(1,)), "more than the limit of 32")
    refuse("unsqueeze_chain_rank_10k", "10,000 Unsqueeze in a row (shapes of rank 10k: minutes and GBs)",
           chain_model("Unsqueeze", 10000, ["ax"], [ax], shape=(1,)), "more than the limit of 32")
    refuse("input_rank_40", "a graph input declared with 40 dims",
           model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1] * 40)], [vi("y", None)]),
           "more than the limit of 32")
    # Shape inputs whose length is declared huge: inference made a Shape of that rank (bad_alloc).
    for op, ins, extra in (("Reshape", ["x", "s"], [vi("s", [10 ** 12], I64)]),
                           ("Expand", ["x", "s"], [vi("s", [10 ** 12], I64)]),
                           ("ConstantOfShape", ["s"], [vi("s", [10 ** 12], I64)])):
        inputs = ([vi("x", [1])] if "x" in ins else []) + extra
        refuse("%s_shape_input_rank_1e12" % op.lower(), "%s whose shape input is declared [10^12]" % op,
               model([helper.make_node(op, ins, ["y"])], inputs, [vi("y", None)]), "more than the limit of 32")
    big = model([helper.make_node("Constant", [], ["c"], value_ints=list(range(1100000))),
                 helper.make_node("Shape", ["c"], ["y"])], [], [vi("y", None, I64)])
    refuse("attribute_list_1m", "a Constant value_ints of 1.1 million elements", big, "more than the limit")


def session_limit_cases(s):
    # SessionOptions::limits through the --max-* flags: a small model that fits the defaults
    # (answer), then each limit lowered just below what it needs (refused, naming the limit).
    k = (np.arange(32, dtype=np.float32) * 0.25).reshape(1, 2, 4, 4)
    m = model([helper.make_node("Transpose", ["x"], ["t"], perm=[0, 1, 3, 2], name="tr"),
               helper.make_node("Add", ["t", "K"], ["y"], name="add")],
              [vi("x", [1, 2, 4, 4])], [vi("y", None)], [numpy_helper.from_array(k, "K")])
    name = "limits_default_loads"
    mp = s.save(name, m)
    x = RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)
    f = s.file(name, "x.npy", x)
    want = (x.transpose(0, 1, 3, 2) + k).astype(np.float32)
    base = ["run", mp, "--input", "x=" + f, "--output-dir", "@OUT"]
    s.add(name, "the limits' model with every limit at its default", base, "answer", expect={"y.npy": want})
    s.add("limits_just_enough", "every --max-* flag at exactly what the model needs (K/M suffixes too)",
          base + ["--max-model-bytes", "1K", "--max-nodes", "2", "--max-rank", "4", "--max-tensor-elements", "32",
                  "--max-node-io", "2", "--max-attribute-elements", "4", "--max-nesting", "8",
                  "--max-tensor-file-bytes", "1K"], "answer", expect={"y.npy": want})
    for flag, value, needle in (("--max-model-bytes", "64", "(max_model_bytes)"),
                                ("--max-nodes", "1", "(max_nodes)"),
                                ("--max-rank", "3", "(max_rank)"),
                                ("--max-tensor-elements", "16", "(max_tensor_elements)"),
                                ("--max-node-io", "1", "(max_node_io)"),
                                ("--max-attribute-elements", "3", "(max_attribute_elements)"),
                                ("--max-nesting", "3", "(max_nesting)"),
                                ("--max-tensor-file-bytes", "200", "(--max-tensor-file-bytes)")):
        s.add("limits" + flag[5:].replace("-", "_"), "%s %s refuses a model (or input) that fits the default" %
              (flag, value), base + [flag, value], "refuse", needle)
    for flag, value in (("--max-rank", "33"), ("--max-nodes", "0"), ("--max-model-bytes", "3G"),
                        ("--max-tensor-file-bytes", "12Q"), ("--max-nesting", "-1")):
        s.add("limits_usage" + flag[5:].replace("-", "_"), "%s %s is past the constant or not a size" % (flag, value),
              base + [flag, value], "usage", flag + " expects")


def chain_cases(s):
    # Quadratic passes and planner: > 30 s (Identity: > 4 min) before.
    x = RNG.standard_normal((1, 4)).astype(np.float32)
    for name, what, m, want in (
            ("chain_relu_200k", "200,000 Relu in a row", chain_model("Relu", 200000), np.maximum(x, 0)),
            ("chain_identity_200k", "200,000 Identity in a row", chain_model("Identity", 200000), x),
            ("chain_unsqueeze_squeeze_200k", "200,000 Unsqueeze/Squeeze alternating",
             chain_model(None, 200000, ["ax"], [numpy_helper.from_array(np.array([0], np.int64), "ax")],
                         alternate=["Unsqueeze", "Squeeze"]), x)):
        mp = s.save(name, m)
        f = s.file(name, "x.npy", x)
        # One thread: with two, each of the 200k tiny steps is an OpenMP region, and under CPU
        # contention libgomp's spinning barrier made one run take 100 s (the spin-wait issue in
        # NOTES.md); this case is about load and planning.
        s.add(name, what + " loads, plans and runs",
              ["run", mp, "--threads", "1", "--input", "x=" + f, "--output-dir", "@OUT"], "answer",
              expect={"y.npy": want}, timeout=20)


def wide_cases(s):
    # 60,000 values alive at once (Split -> Relu each -> one Concat): the planner compared every
    # pair, > 2 min before; now the linear-time allocator path.
    n = 60000
    m = model([], [vi("x", [n])], [vi("y", None)])
    split = m.graph.node.add()
    split.op_type = "Split"
    split.input.append("x")
    split.output.extend(["s%d" % i for i in range(n)])
    split.attribute.extend([helper.make_attribute("axis", 0)])
    for i in range(n):
        r = m.graph.node.add()
        r.op_type = "Relu"
        r.input.append("s%d" % i)
        r.output.append("r%d" % i)
    cat = m.graph.node.add()
    cat.op_type = "Concat"
    cat.input.extend(["r%d" % i for i in range(n)])
    cat.output.append("y")
    cat.attribute.extend([helper.make_attribute("axis", 0)])
    name = "wide_split_relu_concat_60k"
    mp = s.save(name, m)
    x = RNG.standard_normal(n).astype(np.float32)
    f = s.file(name, "x.npy", x)
    s.add(name, "Split into 60,000 -> Relu each -> Concat (60k values alive at once)",
          ["run", mp, "--threads", "1", "--input", "x=" + f, "--output-dir", "@OUT"], "answer",
          expect={"y.npy": np.maximum(x, 0)}, timeout=20)


def name_cases(s):
    # Names from the model reach stderr: control characters escaped, lengths capped, and a message
    # quoting two names still names both.
    evil = "a\rb\x1b[31mred\x07bell\x1b]0;title\x07"

    def refuse(name, what, m, needle, extra=()):
        mp = s.save(name, m)
        s.add(name, what, ["run", mp, *extra, "--output-dir", "@OUT"], "refuse", needle)

    refuse("name_control_chars", "a node name with CR, ESC sequences and BEL (unsupported op)",
           model([helper.make_node("NoSuchOp", ["x"], ["y"], name=evil)], [vi("x", [4])], [vi("y", None)]),
           "\\x1B[31mred\\x07bell")
    refuse("name_100k", "a 100 KB node name (unsupported op): the line is capped",
           model([helper.make_node("NoSuchOp", ["x"], ["y"], name="N" * 100000)], [vi("x", [4])], [vi("y", None)]),
           "message truncated")
    big = "o\x1b" * 50000
    refuse("output_names_100k_collide", "two 100 KB output names (with ESC) that collide once sanitized",
           model([helper.make_node("Relu", ["x"], [big + "/b"]), helper.make_node("Neg", ["x"], [big + "_b"])],
                 [vi("x", [4])], [vi(big + "/b", None), vi(big + "_b", None)]), "bytes)' would both be written")
    refuse("output_names_dotdot_collide", "outputs '..' and '__' collide once sanitized",
           model([helper.make_node("Relu", ["x"], [".."]), helper.make_node("Neg", ["x"], ["__"])],
                 [vi("x", [4])], [vi("..", None), vi("__", None)]), "outputs '..' and '__' would both be written")
    refuse("input_name_control_chars", "--input naming an input the model lacks, with ESC and CR",
           model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [4])], [vi("y", None)]), "\\x1B",
           ("--input", "no\x1b[2Jsuch\r=/nonexistent.npy"))


def verbose_name_cases(s):
    # --verbose prints a line per step with the node's name, and bench's progress line (on a
    # terminal) the model's path: both escaped and capped like the error lines.
    evil = "v\rb\x1b[31mred\x07bell\x1b]0;title\x07" + "N" * 100000
    m = model([helper.make_node("Relu", ["x"], ["y"], name=evil)], [vi("x", [1, 4])], [vi("y", None)])
    name = "verbose_hostile_node_name"
    mp = s.save(name, m)
    s.add(name, "--verbose with a 100 KB node name holding CR, ESC sequences and BEL",
          ["run", mp, "--verbose", "--output-dir", "@OUT"], "lines", "\\x1B[31mred\\x07bell")
    name = "bench_progress_hostile_path"
    relu = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 4])], [vi("y", None)])
    mp = s.save(name, relu, fname="m\x1b]0;pwned\x07\r.onnx")
    s.add(name, "bench on a terminal, the model path holding ESC, BEL and CR",
          ["bench", mp, "--iterations", "3", "--warmup", "1"], "lines", "\\x1B]0;pwned\\x07", tty=True)


def calib_cache_cases(s):
    # fuzz_calib_cache: an amax finite as a double but past FLT_MAX was accepted and became an
    # Inf scale in the quantized model; the cache is checked against the model's sha256 first,
    # so this one matches the model.
    import hashlib
    import json
    w = numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])],
              [vi("x", [1, 3, 8, 8])], [vi("y", None)], [w])
    name = "calib_cache_amax_past_float"
    mp = s.save(name, m)
    sha = hashlib.sha256(open(mp, "rb").read()).hexdigest()
    cache = {"format": "infera-calibration-cache-1", "model_sha256": sha, "method": "minmax",
             "tensors": {"x": {"amax": 1.1e72}, "y": {"amax": 2.0}}}
    cf = s.file(name, "cache.json", json.dumps(cache).encode())
    s.add(name, "a calibration cache whose amax (1.1e72) overflows a float",
          ["quantize", mp, "--calib-cache", cf, "-o", "@OUT/q.onnx"], "refuse", "at most 3.4e38")


def rlimit_cases(s):
    # Worker stacks that RLIMIT_AS cannot hold: libgomp ended the process with its own message.
    relu = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [4])], [vi("y", None)])
    name = "threads_stacks_over_rlimit_as"
    mp = s.save(name, relu)
    s.add(name, "2 threads with 1 GiB stacks under RLIMIT_AS 600 MiB", ["run", mp, "--threads", "2", "--output-dir", "@OUT"],
          "refuse", "worker stacks of 1000 MiB", rlimits={resource.RLIMIT_AS: 600 << 20, resource.RLIMIT_STACK: 1000 << 20})
    name = "omp_stacksize_over_rlimit_as"
    mp = s.save(name, relu)
    s.add(name, "OMP_STACKSIZE=2G under RLIMIT_AS 600 MiB", ["run", mp, "--threads", "2", "--output-dir", "@OUT"],
          "refuse", "worker stacks of 2048 MiB", rlimits={resource.RLIMIT_AS: 600 << 20}, env={"OMP_STACKSIZE": "2G"})
    # An FP16 elementwise op widens to float32 copies (2^28 elements: 1 GiB each) under 1.5 GiB.
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["c"], value=numpy_helper.from_array(np.array([1.0], np.float16))),
             helper.make_node("Sigmoid", ["c"], ["g"]), helper.make_node("Slice", ["g", "st", "en"], ["y"])]
    m = model(nodes, [vi("s", [1], I64)], [vi("y", None, TensorProto.FLOAT16)],
              [numpy_helper.from_array(np.array([0], np.int64), "st"), numpy_helper.from_array(np.array([2], np.int64), "en")])
    name = "fp16_widening_over_rlimit_as"
    mp = s.save(name, m)
    f = s.file(name, "s.npy", np.array([2 ** 28], np.int64))
    s.add(name, "Sigmoid on a 2^28-element FP16 runtime tensor under RLIMIT_AS 1.5 GiB",
          ["run", mp, "--threads", "1", "--input", "s=" + f, "--output-dir", "@OUT"], "refuse", "out of memory",
          rlimits={resource.RLIMIT_AS: 1536 << 20})


def gemm_chain_cases(s):
    # fuse_conv_activation counted uses by scanning the graph per Gemm/Conv head and rewrote the
    # reader list of the shared weight per fusion: 66,667 MatMul+Add+Relu (200k nodes) > 60 s.
    n = 66667
    m = model([], [vi("x", [1, 4])], [vi("y", None)],
              [numpy_helper.from_array((np.eye(4) * 0.5).astype(np.float32), "w"),
               numpy_helper.from_array(np.full(4, 0.25, np.float32), "b")])
    prev = "x"
    for i in range(n):
        for op, ins, out in (("MatMul", [prev, "w"], "m%d" % i), ("Add", ["m%d" % i, "b"], "a%d" % i),
                             ("Relu", ["a%d" % i], "y" if i == n - 1 else "r%d" % i)):
            node = m.graph.node.add()
            node.op_type = op
            node.input.extend(ins)
            node.output.append(out)
        prev = "r%d" % i
    x = RNG.standard_normal((1, 4)).astype(np.float32)
    want = x
    for _ in range(60):  # 0.5 y + 0.25 converges to 0.5 (exact in float32 long before n steps)
        want = np.maximum(want * np.float32(0.5) + np.float32(0.25), 0).astype(np.float32)
    name = "chain_matmul_add_relu_200k"
    mp = s.save(name, m)
    f = s.file(name, "x.npy", x)
    s.add(name, "66,667 MatMul+Add+Relu in a row (200k nodes: Gemm fusion)",
          ["run", mp, "--threads", "1", "--no-dnnl", "--input", "x=" + f, "--output-dir", "@OUT"], "answer",
          expect={"y.npy": want}, timeout=20)  # --no-dnnl: this case is the passes, not 66k oneDNN primitives


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--infera", default="build/infera")
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each case's stderr and time")
    ap.add_argument("--time-scale", type=float, default=1.0,
                    help="multiply every time limit (sanitizer builds are slower)")
    ap.add_argument("--sanitized", action="store_true",
                    help="the binary is ASan-built: cases under RLIMIT_AS are skipped (and counted as skipped), "
                         "since ASan's shadow memory needs terabytes of address space")
    args = ap.parse_args()
    if not (os.path.isfile(args.infera) and os.access(args.infera, os.X_OK)):
        sys.stderr.write("run_hostile.py: %s is not an executable; build infera first\n" % args.infera)
        return 1
    passed = failed = skipped = 0
    with tempfile.TemporaryDirectory(prefix="infera-hostile-") as root:
        s = Suite(root, os.path.abspath(args.infera))
        for make in (npy_cases, bool_cases, omitted_output_cases, symlink_cases, limit_cases, session_limit_cases,
                     chain_cases, wide_cases, name_cases, verbose_name_cases, calib_cache_cases, gemm_chain_cases,
                     rlimit_cases):
            make(s)
        for c in s.cases:
            if args.k and args.k not in c["name"]:
                continue
            if args.sanitized and resource.RLIMIT_AS in c["rlimits"]:
                skipped += 1
                print("SKIP %-36s %s  -> RLIMIT_AS and ASan do not mix" % (c["name"], c["what"]), flush=True)
                continue
            c["timeout"] = int(c["timeout"] * args.time_scale)
            why, err, secs = s.run_case(c)
            ok = why is None
            passed += ok
            failed += not ok
            print("%s %-36s %s%s" % ("PASS" if ok else "FAIL", c["name"], c["what"], "" if ok else "  -> " + why),
                  flush=True)
            first = err.strip().splitlines()[0][:200] if err.strip() else ""
            if args.verbose or not ok:
                print("       %.1f s%s" % (secs, ("; stderr: " + first) if first else ""))
    print("%d passed, %d failed" % (passed, failed) + (", %d skipped" % skipped if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
