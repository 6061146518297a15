"""infera check: every dtype compared (a wrong value fails), NaN, counts and first element, data-file
names, --skip-file, --json."""
import json
import os
import re

import numpy as np
from onnx import TensorProto, helper

from cli_util import backend_test, expect, make_model, ok, one_line_error, small_model, vi, write_pb

CRASH = ("terminate called", "Aborted", "Segmentation", "core dumped", "out_of_range", "std::")

DTYPES = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
          "bfloat16": TensorProto.BFLOAT16, "int8": TensorProto.INT8, "int16": TensorProto.INT16,
          "int32": TensorProto.INT32, "int64": TensorProto.INT64, "uint8": TensorProto.UINT8,
          "uint16": TensorProto.UINT16, "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64,
          "bool": TensorProto.BOOL}


def identity_model(dtype, dims):
    return make_model([helper.make_node("Identity", ["x"], ["y"])], [vi("x", dtype, dims)], [vi("y", dtype, dims)])


def tensor(name, dtype, dims, vals):
    if dtype == TensorProto.BOOL:
        vals = [bool(v) for v in vals]
    return helper.make_tensor(name, dtype, dims, vals)


def results(out):
    """{test name: (PASS|FAIL|SKIP, rest of the line)} from infera check's stdout."""
    r = {}
    for line in out.splitlines():
        m = re.match(r"^(PASS|FAIL|SKIP) (test_\w+):?\s*(.*)$", line)
        if m:
            r[m.group(2)] = (m.group(1), m.group(3))
    return r


def add(c, ort, x1):
    # One folder with a right and a wrong expected output per dtype, run by one `infera check`.
    root = c.mkdir("dtypes")
    for name, dt in DTYPES.items():
        vals = ([1, 0, 1, 1, 0, 1] if name == "bool" else [100, 200, 300, 400, 5, 6] if "float" in name
                else [10, 20, 30, 40, 5, 6])
        wrong = list(vals)
        wrong[4] = 1 - vals[4] if name == "bool" else 7
        for kind, want in (("right", vals), ("wrong", wrong)):
            backend_test(root, "test_%s_%s" % (name, kind), identity_model(dt, [2, 3]),
                         [tensor("x", dt, [2, 3], vals)], [tensor("y", dt, [2, 3], want)])
    big = 2 ** 53
    backend_test(root, "test_int64_beyond_2p53_wrong", identity_model(TensorProto.INT64, [2]),
                 [tensor("x", TensorProto.INT64, [2], [big, 1])], [tensor("y", TensorProto.INT64, [2], [big + 1, 1])])
    nan = float("nan")
    backend_test(root, "test_nan_where_finite_wrong", identity_model(TensorProto.FLOAT, [3]),
                 [tensor("x", TensorProto.FLOAT, [3], [1, nan, 3])], [tensor("y", TensorProto.FLOAT, [3], [1, 2, 3])])
    backend_test(root, "test_nan_where_nan_right", identity_model(TensorProto.FLOAT, [3]),
                 [tensor("x", TensorProto.FLOAT, [3], [1, nan, 3])], [tensor("y", TensorProto.FLOAT, [3], [1, nan, 3])])
    inf = float("inf")
    backend_test(root, "test_inf_sign_wrong", identity_model(TensorProto.FLOAT, [2]),
                 [tensor("x", TensorProto.FLOAT, [2], [inf, 1])], [tensor("y", TensorProto.FLOAT, [2], [-inf, 1])])
    cache = {}

    def run_dtypes():
        if "r" not in cache:
            rc, out, err = c.sh("check", root)
            cache["r"] = (rc, out, err, results(out))
        return cache["r"]

    def dtype_case(name):
        def t():
            rc, out, err, r = run_dtypes()
            expect(r.get("test_%s_right" % name, ("?",))[0] == "PASS", "right %s values: %r" %
                   (name, r.get("test_%s_right" % name)))
            status, why = r.get("test_%s_wrong" % name, ("?", ""))
            expect(status == "FAIL", "a wrong %s value %s (want FAIL): %s" % (name, status, why))
            expect("1/6 elements" in why and "first at [1,1]" in why, "failure does not count and locate: " + why)
            w = "want true" if name == "bool" else "want 7"
            expect(w in why, "failure does not give the wanted value (%s): %s" % (w, why))
        return t
    for name in DTYPES:
        c.test("check: a wrong %s value fails" % name, dtype_case(name))

    def special(name, want, words=()):
        def t():
            rc, out, err, r = run_dtypes()
            status, why = r.get(name, ("?", ""))
            expect(status == want, "%s: %s, want %s (%s)" % (name, status, want, why))
            for w in words:
                expect(w in why, "%s: reason %r lacks %r" % (name, why, w))
        return t
    c.test("check: int64 values beyond 2^53 compared exactly", special("test_int64_beyond_2p53_wrong", "FAIL",
                                                                       ("got 9007199254740992",)))
    c.test("check: NaN where a finite value is wanted fails", special("test_nan_where_finite_wrong", "FAIL",
                                                                      ("got nan, want 2",)))
    c.test("check: NaN where NaN is wanted passes", special("test_nan_where_nan_right", "PASS"))
    c.test("check: -inf is not +inf", special("test_inf_sign_wrong", "FAIL"))

    def counts_and_exit():
        rc, out, err, r = run_dtypes()
        n_fail = len(DTYPES) + 3
        expect(out.strip().splitlines()[-1] == "%d passed, %d failed" % (len(DTYPES) + 1, n_fail),
               "last line %r" % out.strip().splitlines()[-1])
        expect(rc == 1, "exit %d with failures" % rc)
    c.test("check: counts and exit code over the dtype tests", counts_and_exit)

    def message_format():
        rc, out, err, r = run_dtypes()
        why = r["test_float32_wrong"][1]
        expect("1/6 elements outside atol 1e-5 + rtol 1e-3\u00b7|ref|; first at [1,1]: got 5, want 7" in why,
               "float failure message: %r" % why)
    c.test("check: failure says how many, the tolerance and the first", message_format)

    def check_ok():
        expect(ort is not None, "onnxruntime is not installed: this comparison cannot run")
        base = c.mkdir("checkdir")
        t = backend_test(base, "test_small", small_model(), [x1], [])
        ref = ort.InferenceSession(os.path.join(t, "model.onnx"), providers=["CPUExecutionProvider"]).run(
            None, {"input": x1})[0]
        write_pb(os.path.join(t, "test_data_set_0", "output_0.pb"), ref, "output")
        t2 = os.path.join(base, "test_skipped")
        os.makedirs(t2)
        os.symlink(os.path.join(t, "model.onnx"), os.path.join(t2, "model.onnx"))
        os.symlink(os.path.join(t, "test_data_set_0"), os.path.join(t2, "test_data_set_0"))
        rc, out, err = c.sh("check", t)
        ok(rc, out, err)
        expect(out.strip().splitlines()[-1] == "1 passed, 0 failed", "last line %r" % out.strip()[-80:])
        skips = c.path("skips.txt")
        with open(skips, "w") as f:
            f.write("# header\n\ntest_skipped  # demo reason\n")
        rc, out, err = c.sh("check", base, "--skip-file", skips, "--rtol", "1e-3", "--atol", "1e-5")
        ok(rc, out, err)
        last = out.strip().splitlines()[-1]
        expect(last == "1 passed, 0 failed, 1 skipped", "last line %r, want '1 passed, 0 failed, 1 skipped'" % last)
    c.test("check: pass vs ORT, folder of tests, --skip-file", check_ok)

    def lists_every_output():
        two = make_model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["x"], ["n"])],
                         [vi("x", TensorProto.FLOAT, [3])], [vi("r", TensorProto.FLOAT, [3]),
                                                              vi("n", TensorProto.FLOAT, [3])])
        x = np.array([-1, 0, 2], np.float32)
        t = backend_test(c.mkdir("two_out"), "test_two", two, [x], [np.maximum(x, 0), -x])
        rc, out, err = c.sh("check", t)
        ok(rc, out, err)
        for o in ("output 0 'r' float32 [3]", "output 1 'n' float32 [3]"):
            expect(o in out, "a pass does not list %s:\n%s" % (o, out))
    c.test("check: a pass lists every output", lists_every_output)

    def data_file(fname, words):
        def t():
            x = np.array([1, 2], np.float32)
            d = backend_test(c.mkdir("df_" + fname.replace(".", "_")), "test_df", identity_model(TensorProto.FLOAT, [2]),
                             [x], [x])
            os.rename(os.path.join(d, "test_data_set_0", "input_0.pb"), os.path.join(d, "test_data_set_0", fname))
            rc, out, err = c.sh("check", d)
            for crash in CRASH:
                expect(crash not in out + err, "crash text %r: %s" % (crash, (out + err)[-300:]))
            expect(rc == 1, "exit %d, want 1" % rc)
            status, why = results(out).get("test_df", ("?", ""))
            expect(status == "FAIL", "test %s, want FAIL" % status)
            for w in words:
                expect(w in why, "reason %r lacks %r" % (why, w))
            expect(len(err.splitlines()) <= 1, "stderr has %d lines" % len(err.splitlines()))
        return t
    c.test("check: input_99999999999.pb -> one clear failure, no abort",
           data_file("input_99999999999.pb", ("input_99999999999.pb", "out of range")))
    c.test("check: input_1.pb without input_0.pb fails", data_file("input_1.pb", ("without input_0.pb",)))

    def skip_file_dir():
        one_line_error(*c.sh("check", root, "--skip-file", c.work), 1, "--skip-file", "is a folder")
    c.test("check --skip-file DIR refused", skip_file_dir)

    def skip_file_missing():
        one_line_error(*c.sh("check", root, "--skip-file", c.path("nope.txt")), 1, "--skip-file")
    c.test("check --skip-file missing refused", skip_file_missing)

    def check_json():
        d = os.path.join(root, "test_float32_wrong")
        j = c.path("check.json")
        rc, out, err = c.sh("check", d, "--json", j)
        expect(rc == 1, "exit %d" % rc)
        data = json.load(open(j))
        expect(data["passed"] == 0 and data["failed"] == 1, "counts %r" % data)
        t = data["tests"][0]
        expect(t["name"] == "test_float32_wrong" and t["status"] == "fail" and "1/6 elements" in t["reason"],
               "test entry %r" % t)
        expect(t["outputs"][0]["outside"] == 1 and t["outputs"][0]["elements"] == 6, "output entry %r" % t["outputs"])
        rc, out, err = c.sh("check", os.path.join(root, "test_float32_right"), "--json", "-")
        expect(rc == 0, "exit %d" % rc)
        data = json.loads(out)
        expect(data["passed"] == 1 and data["tests"][0]["outputs"][0]["max_abs"] == 0, "JSON on stdout %r" % data)
        expect("1 passed, 0 failed" in err, "with --json - the report should be on stderr")
    c.test("check --json FILE and --json -", check_json)
