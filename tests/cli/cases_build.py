"""infera build and saved plans: build writes a plan that run, bench and info load (outputs equal
to the ONNX model's, nothing timed, info shows the header); a foreign, corrupt, truncated or
other-options plan is one error line saying what to do. Every command gets its own XDG_CACHE_HOME."""
import re
import struct

import numpy as np

from cli_util import expect, ok, one_line_error, save
from cases_tune_profile_doctor import wino_model

MAGIC = b"\x89IPLAN\r\n"


def checksum(body):
    """saved_plan_checksum (src/runtime/saved_plan.cpp): 4-lane FNV-1a over 64-bit words."""
    prime, m = 1099511628211, (1 << 64) - 1
    basis = 14695981039346656037
    h = [basis, basis ^ 1, basis ^ 2, basis ^ 3]
    n = len(body)
    full = n - n % 32
    words = struct.unpack_from("<%dQ" % (full // 8), body, 0)
    for i in range(0, len(words), 4):
        for lane in range(4):
            h[lane] = ((h[lane] ^ words[i + lane]) * prime) & m
    r = basis
    for b in body[full:]:
        r = ((r ^ b) * prime) & m
    for x in h:
        r = ((r ^ x) * prime) & m
    return ((r ^ n) * prime) & m


def with_cpu_isa(plan, isa):
    """The plan with the HEAD section's CPU ISA replaced (lengths and checksum made right)."""
    body = plan[32:]
    tag, n = struct.unpack_from("<IQ", body, 0)
    head = body[12:12 + n]
    pos = 0
    fields = []
    for kind in ("s", "B", "i", "s", "s"):  # infera version, device kind, index, cpu device, cpu isa
        if kind == "s":
            ln, = struct.unpack_from("<Q", head, pos)
            fields.append((pos, 8 + ln))
            pos += 8 + ln
        else:
            pos += struct.calcsize("<" + kind)
    start, size = fields[-1]
    enc = isa.encode()
    head = head[:start] + struct.pack("<Q", len(enc)) + enc + head[start + size:]
    body = struct.pack("<IQ", tag, len(head)) + head + body[12 + n:]
    version, = struct.unpack_from("<I", plan, 8)  # kept: the file's own format version
    return MAGIC + struct.pack("<IIQQ", version, 0, len(body), checksum(body)) + body


def add(c):
    model = save(wino_model(), c.path("build_wino.onnx"))
    env = {"XDG_CACHE_HOME": c.mkdir("cache_build")}
    plan = c.path("wino.iplan")

    def build_writes_a_plan():
        rc, out, err = c.sh("build", model, "-o", plan, "--batch", "1,2", "--threads", "1", env=env)
        ok(rc, out, err)
        expect(re.search(r"^batch 1 .*timed", out, re.M) and re.search(r"^batch 2 ", out, re.M), out)
        expect("wrote" in out and "2 batch sizes" in out, out)
        with open(plan, "rb") as f:
            expect(f.read(8) == MAGIC, "the plan starts with its magic bytes")
    c.test("build: writes a saved plan for each --batch", build_writes_a_plan)

    def run_plan_equals_model():
        rc, out, err = c.sh("run", model, "--batch", "2", "--threads", "1", "--output-dir", c.path("bo1"), env=env)
        ok(rc, out, err)
        rc, out, err = c.sh("run", plan, "--batch", "2", "--threads", "1", "--verbose", "--output-dir",
                            c.path("bo2"), env={"XDG_CACHE_HOME": c.mkdir("cache_empty")})
        ok(rc, out, err)
        a, b = np.load(c.path("bo1", "y.npy")), np.load(c.path("bo2", "y.npy"))
        expect(a.tobytes() == b.tobytes(), "run of the plan differs from run of the model")
        counts = re.findall(r"perf db \(in memory\): (\d+) choices found, (\d+) timed", err)
        found_min = 1 if c.cpu_winograd() else 0  # no Winograd here: one algorithm, no choice saved
        expect(counts and all(int(f) >= found_min and t == "0" for f, t in counts),
               "loading the plan finds its choices and times nothing: %s" % (counts or err[-400:]))
        # Winograd weights come from the plan when a conv picked Winograd; the rest is reordered again.
        packed = re.findall(r"packed weights: (\d+) reused, (\d+) converted", err)
        expect(packed and all(int(r) + int(v) >= 1 for r, v in packed),
               "loading the plan reports its packed weights: %s" % (packed or err[-400:]))
    c.test("run FILE.iplan: the model's bits, nothing timed", run_plan_equals_model)

    def info_shows_header():
        rc, out, err = c.sh("info", plan, env=env)
        ok(rc, out, err)
        for words in ("saved plan   format 2", "  device     cpu", "  arch ", "  libraries  oneDNN",
                      "  options    precision fp32", "  shapes     x [1,32,14,14]; x [2,32,14,14]", "choices",
                      "weights in backend formats"):
            expect(words in out, "info of a plan does not say %r:\n%s" % (words, out))
        expect(re.search(r"nodes\s+3 imported, 2 after optimization", out), "imported node count kept: " + out)
    c.test("info FILE.iplan: saved plan and its header", info_shows_header)

    def bench_plan():
        rc, out, err = c.sh("bench", plan, "--batch", "2", "--warmup", 1, "--iterations", 3, "--threads", "1", env=env)
        ok(rc, out, err)
    c.test("bench FILE.iplan runs", bench_plan)

    def foreign_isa_refused():
        with open(plan, "rb") as f:
            data = f.read()
        p = c.path("foreign.iplan")
        with open(p, "wb") as f:
            f.write(with_cpu_isa(data, "sse41"))
        one_line_error(*c.sh("run", p, env=env), 1, "foreign.iplan", "made for the CPU architecture (oneDNN ISA) 'sse41'",
                       "rebuild it with `infera build` here")
    c.test("run: a plan for another CPU ISA is refused", foreign_isa_refused)

    def corrupt_refused():
        with open(plan, "rb") as f:
            data = bytearray(f.read())
        flipped, v3, cut = c.path("flipped.iplan"), c.path("v3.iplan"), c.path("cut.iplan")
        data[len(data) // 2] ^= 1
        with open(flipped, "wb") as f:
            f.write(data)
        one_line_error(*c.sh("run", flipped, env=env), 1, "checksum mismatch")
        data[len(data) // 2] ^= 1
        with open(v3, "wb") as f:
            f.write(data[:8] + struct.pack("<I", 3) + data[12:])
        one_line_error(*c.sh("info", v3, env=env), 1, "saved plan format version 3", "infera build")
        with open(cut, "wb") as f:
            f.write(data[:len(data) // 3])
        one_line_error(*c.sh("bench", cut, env=env), 1, "cut.iplan: truncated saved plan")
    c.test("run/info/bench: flipped, other-version, cut plans refused", corrupt_refused)

    def other_options_refused():
        one_line_error(*c.sh("run", plan, "--conv-algo", "winograd", env=env), 1,
                       "the plan was built with auto", "rebuild it with `infera build --conv-algo winograd`")
        one_line_error(*c.sh("run", plan, "--no-optimize", env=env), 1, "graph passes off",
                       "`infera build --no-optimize`")
    c.test("run: options that would make another plan are refused", other_options_refused)

    c.test("usage: build without -o", lambda: one_line_error(*c.sh("build", model), 2, "needs -o FILE"))
    c.test("usage: build --batch 0", lambda: one_line_error(*c.sh("build", model, "-o", plan, "--batch", "0"), 2,
                                                            "[1, 1048576]"))
    c.test("build: -o the model itself is refused",
           lambda: one_line_error(*c.sh("build", model, "-o", model), 1, "is the model itself"))
    c.test("build: a missing model is one error line",
           lambda: one_line_error(*c.sh("build", c.path("nope.onnx"), "-o", c.path("x.iplan")), 1, "nope.onnx"))
