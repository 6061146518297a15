#!/usr/bin/env python3
"""Run infera on malformed models and inputs: each must fail cleanly, never crash or hang.

Run with the PATH python3 (PyPI onnx + numpy, for the generator):
    python3 tests/badinput/run_bad_inputs.py [--infera build/infera] [--cases DIR] [--timeout 10]
Without --cases, tests/badinput/make_bad_inputs.py writes the cases into a temporary folder.

Each case is one infera command (see cases.json). A malformed case passes iff, within the timeout:
  - the exit code is exactly 1 (no signal, no 2, no 0),
  - stderr is exactly one non-empty line ending in a newline (kind "check": the test may instead be
    counted on stdout as failed, `0 passed, M failed` with M >= 1; stderr then has at most one line),
  - nothing in stdout/stderr looks like a crash: "terminate called", "Segmentation", "Aborted",
    "core dumped", "Traceback", "AddressSanitizer", "std::bad_alloc".
Positive controls (expect 0) must exit 0 with no crash text. Prints PASS/FAIL per case and last
`N passed, M failed`; exit 1 on any failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

CRASH = ["terminate called", "Segmentation", "Aborted", "core dumped", "Traceback", "AddressSanitizer",
         "std::bad_alloc", "runtime error:", "stack smashing"]
COUNT = re.compile(r"^(\d+) passed, (\d+) failed")


def judge(case, rc, out, err):
    """Returns None if the case passed, else the reason."""
    expect = case["expect"]
    text = out + err
    for c in CRASH:
        if c in text:
            return "crash text %r in output" % c
    if rc < 0:
        return "killed by signal %d" % -rc
    if rc != expect:
        return "exit %d, expected %d" % (rc, expect)
    if expect == 0:
        return None
    err_lines = err.splitlines()
    one_line = len(err_lines) == 1 and err.endswith("\n") and err.strip() != ""
    if case["kind"] == "check":
        last = out.strip().splitlines()[-1] if out.strip() else ""
        m = COUNT.match(last)
        counted = m is not None and int(m.group(1)) == 0 and int(m.group(2)) >= 1
        if not (counted or one_line):
            return "neither a counted failure on stdout nor a one-line error on stderr"
        if len(err_lines) > 1:
            return "stderr has %d lines" % len(err_lines)
        return None
    if not err.strip():
        return "stderr is empty"
    if not one_line:
        return "stderr has %d lines%s" % (len(err_lines), "" if err.endswith("\n") else ", no final newline")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--infera", default="build/infera")
    ap.add_argument("--cases", help="folder written by make_bad_inputs.py (default: generate one)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per case (10)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each case's stderr")
    args = ap.parse_args()
    if not (os.path.isfile(args.infera) and os.access(args.infera, os.X_OK)):
        sys.stderr.write("run_bad_inputs.py: %s is not an executable; build infera first\n" % args.infera)
        return 1
    infera = os.path.abspath(args.infera)

    tmp = None
    cases_dir = args.cases
    if not cases_dir:
        tmp = tempfile.TemporaryDirectory(prefix="infera-badinput-")
        cases_dir = os.path.join(tmp.name, "cases")
        gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "make_bad_inputs.py")
        subprocess.run([sys.executable, gen, "--out", cases_dir], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(cases_dir, "cases.json")) as f:
        cases = json.load(f)

    passed = failed = 0
    for case in cases:
        cmd = [infera] + case["args"]
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=args.timeout, stdin=subprocess.DEVNULL,
                               cwd=cases_dir)
            out = p.stdout.decode("utf-8", "replace")
            err = p.stderr.decode("utf-8", "replace")
            why = judge(case, p.returncode, out, err)
        except subprocess.TimeoutExpired:
            why, err = "no answer within %g s (hang?)" % args.timeout, ""
        ok = why is None
        passed += ok
        failed += not ok
        first = err.strip().splitlines()[0][:160] if err.strip() else ""
        print("%s %-38s %s%s" % ("PASS" if ok else "FAIL", case["name"], case["what"],
                                 "" if ok else "  -> " + why), flush=True)
        if (args.verbose or not ok) and first:
            print("       stderr: %s" % first)
    if tmp:
        tmp.cleanup()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
