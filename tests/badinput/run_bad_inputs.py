#!/usr/bin/env python3
"""Run infera on malformed models and inputs: each must fail cleanly, never crash or hang.

Run with the PATH python3 (PyPI onnx + numpy, for the generator):
    python3 tests/badinput/run_bad_inputs.py [--infera build/infera] [--cases DIR] [--timeout 10]
Without --cases, tests/badinput/make_bad_inputs.py writes the cases into a temporary folder.

Each case is one infera command (see cases.json). A malformed case passes iff, within the timeout:
  - the exit code is exactly 1 (no signal, no 2, no 0),
  - stderr is exactly one non-empty line ending in a newline (kind "check": the test may instead be
    counted on stdout as failed, `0 passed, M failed` with M >= 1; stderr then has at most one line),
  - that error line (for a counted check, its `FAIL test: why` line) contains every word the case
    states (`says`: the file, node or tensor and the expected vs found value); the cases' directory
    is cut from the line first, so a word cannot match a case's path; a check case whose model is
    valid must not fail in loading it (no "model.onnx:" in the line),
  - nothing in stdout/stderr looks like a crash: "terminate called", "Segmentation", "Aborted",
    "core dumped", "Traceback", "AddressSanitizer", "std::bad_alloc".
Positive controls (expect 0) must exit 0 with no crash text.
Known gaps (tests/badinput/known_gaps.txt, each with its reason): cases whose message lacks its
words. They must pass every other check; their word check must still fail (a gap that passes is
stale and fails the suite, as does a gap naming no case). Prints PASS/FAIL/KNOWN per case, the
malformed and control counts, and last `N passed, M failed, K known failures`; exit 1 on any failure.
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
KNOWN_GAPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_gaps.txt")


def read_known_gaps(path):
    gaps = {}
    with open(path) as f:
        for line in f:
            name, _, reason = line.partition("#")
            if line.strip().startswith("#") or not name.strip():
                continue
            gaps[name.strip()] = reason.strip()
    return gaps


def missing_words(case, line, root):
    """The stated words (case["says"]) that the error line lacks; a tuple is "one of these"."""
    text = line.replace(root + "/", "").replace(root, "")
    lacks = []
    for w in case.get("says", []):
        alts = w if isinstance(w, list) else [w]  # JSON turns the tuples into lists
        if not any(a in text for a in alts):
            lacks.append(" or ".join(repr(a) for a in alts))
    if case.get("model_valid") and "model.onnx:" in text:
        lacks.append("(a valid model must load: the test failed in loading it)")
    return lacks


def judge(case, rc, out, err, root):
    """Returns (None, None) if the case passed, else (the reason, which check failed: "words" or "")."""
    why = judge_exit(case, rc, out, err)
    if why or case["expect"] == 0:
        return why, ""
    fails = [l for l in out.splitlines() if l.startswith("FAIL ")]
    line = fails[0] if case["kind"] == "check" and fails and not err.strip() else err.strip()
    lacks = missing_words(case, line, root)
    if lacks:
        return "error line lacks %s" % ", ".join(lacks), "words"
    return None, ""


def judge_exit(case, rc, out, err):
    """Exit code, one line, no crash: returns None if fine, else the reason."""
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
    gaps = read_known_gaps(KNOWN_GAPS)
    root = os.path.abspath(cases_dir)

    count = {k: {"passed": 0, "failed": 0, "known": 0} for k in ("malformed", "controls")}
    names = {c["name"] for c in cases}
    stale = ["known_gaps.txt names %s, which is no case" % g for g in gaps if g not in names]
    for case in cases:
        cmd = [infera] + case["args"]
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=args.timeout, stdin=subprocess.DEVNULL,
                               cwd=cases_dir)
            out = p.stdout.decode("utf-8", "replace")
            err = p.stderr.decode("utf-8", "replace")
            why, which = judge(case, p.returncode, out, err, root)
        except subprocess.TimeoutExpired:
            why, which, out, err = "no answer within %g s (hang?)" % args.timeout, "", "", ""
        kind = "controls" if case["expect"] == 0 else "malformed"
        gap = gaps.get(case["name"])
        if gap is not None and why is None:
            status, why = "FAIL", "stale known gap: the error line has its words now; remove its line from " \
                "known_gaps.txt"
        elif gap is not None and which == "words":
            status = "KNOWN"
        else:
            status = "PASS" if why is None else "FAIL"
        count[kind][{"PASS": "passed", "FAIL": "failed", "KNOWN": "known"}[status]] += 1
        msg = err.strip() or next((l for l in out.splitlines() if l.startswith("FAIL ")), "")
        first = msg.splitlines()[0].replace(root + "/", "")[:200] if msg else ""
        note = {"PASS": "", "FAIL": "  -> " + (why or ""), "KNOWN": "  -> known gap (%s): %s" % (gap, why)}[status]
        print("%-5s %-38s %s%s" % (status, case["name"], case["what"], note), flush=True)
        if (args.verbose or status != "PASS") and first:
            print("       error: %s" % first)
    if tmp:
        tmp.cleanup()
    for s in stale:
        print("FAIL  " + s)
    m, c = count["malformed"], count["controls"]
    print("malformed cases: %d (%d passed, %d failed, %d known message gaps); positive controls: %d "
          "(%d passed, %d failed)" % (sum(m.values()), m["passed"], m["failed"], m["known"], sum(c.values()),
                                      c["passed"], c["failed"]))
    passed, failed = m["passed"] + c["passed"], m["failed"] + c["failed"] + len(stale)
    print("%d passed, %d failed, %d known failures" % (passed, failed, m["known"] + c["known"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
