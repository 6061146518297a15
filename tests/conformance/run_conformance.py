#!/usr/bin/env python3
"""ONNX node conformance of infera's operators, through `infera check`.

Run through tests/conformance/run_conformance.sh (it picks the Python), or with the PATH python3:
    python3 tests/conformance/run_conformance.py [--only debian|onnx] [--verbose] [--keep DIR]

Sources (select_tests.py picks the tests of infera's ops from each):
  debian  Debian's libonnx-testdata node tests (onnx 1.12, /usr/share/libonnx-testdata/data/node)
  onnx    the node tests of the onnx wheel, generated here; the wheel's version is pinned in
          expected_counts.txt and any other version is refused (another version is another test set)
What makes the result trustworthy:
  - Each distinct test runs once: a test that is byte-identical in both sources (model and data)
    is one test, and the counts are of distinct tests.
  - Skipped tests (skips.txt, each with its reason) run too: a skipped test that passes is stale
    and fails the suite (remove its line); a skip naming no selected test fails the suite.
  - The number of selected tests per source is recorded in expected_counts.txt: a different
    number fails the suite until that file is changed in the commit that explains why. The number
    of byte-identical duplicates is recorded too but only noted when it differs: whether a generated
    test's bytes equal Debian's depends on unpinned packages of the generator (protobuf, ml_dtypes).
Full logs go to $LOG_DIR (default build/test-logs). Last line: `N passed, M failed, K skipped`
(K: declared skips, run and still failing as declared).
"""
import argparse
import collections
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIPS = os.path.join(HERE, "skips.txt")
EXPECTED = os.path.join(HERE, "expected_counts.txt")
SOURCES = ("debian", "onnx")
RESULT = re.compile(r"^(PASS|FAIL) (\S+?)(?:: (.*))?$")


class Report:
    def __init__(self):
        self.failed = 0

    def fail(self, msg):
        self.failed += 1
        print("conformance: " + msg, flush=True)


def read_expected(path):
    """expected_counts.txt: `key value` lines (# comments); returns {key: value}."""
    exp = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                key, _, value = line.rpartition(" ")
                exp[key.strip()] = value.strip()
    return exp


def read_skips(path, rep):
    """skips.txt -> {(source, name): reason}; an unqualified name is a skip in both sources."""
    skips = {}
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition("#")
            name, reason = name.strip(), reason.strip()
            where = "skips.txt:%d" % n
            if not reason:
                rep.fail("%s: skip of %s gives no reason (write `name  # reason`)" % (where, name))
            src, sep, test = name.partition(":")
            srcs = [src] if sep else list(SOURCES)
            if not sep:
                test = name
            elif src not in SOURCES:
                rep.fail("%s: unknown source '%s' (debian: or onnx:)" % (where, src))
                continue
            for s in srcs:
                if (s, test) in skips:
                    rep.fail("%s: %s:%s is skipped twice" % (where, s, test))
                skips[(s, test)] = (reason, where)
    return skips


def content_hash(test_dir):
    """sha256 over the relative path and bytes of every file of a test folder (symlinks followed)."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(test_dir, followlinks=True):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            h.update(os.path.relpath(p, test_dir).encode() + b"\0")
            with open(p, "rb") as fh:
                data = fh.read()
            h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def select(source, out, log_dir):
    """Selects (debian) or generates (onnx) the tests of infera's ops into out; returns the names."""
    sys.path.insert(0, HERE)
    import select_tests  # noqa: E402  (needs onnx; imported late so that the version check comes first)
    os.makedirs(out)
    if source == "debian":
        src = os.environ.get("ONNX_TESTDATA", "/usr/share/libonnx-testdata/data/node")
        if not os.path.isdir(src):
            raise RuntimeError("no folder %s (install libonnx-testdata)" % src)
        chosen, tests = select_tests.from_debian(src, out, None)
        where = src
    else:
        chosen, tests = select_tests.from_wheel(out, None)
        where = "onnx %s wheel" % select_tests.onnx.__version__
    with open(os.path.join(log_dir, "conformance-%s-selected.txt" % source), "w") as f:
        f.write("\n".join(chosen) + "\n")
    print("conformance[%s]: selected %d of %d node tests from %s" % (source, len(chosen), len(tests), where),
          flush=True)
    return chosen


def run_check(infera, run_dir, log_path, timeout):
    """infera check on every test of run_dir; returns {folder name: (PASS|FAIL, why)} and its exit."""
    with open(log_path, "w") as log:
        try:
            p = subprocess.run([infera, "check", run_dir], stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout after %d s" % timeout
    results = {}
    with open(log_path, errors="replace") as log:
        for line in log:
            m = RESULT.match(line.rstrip("\n"))
            if m:
                results[m.group(2)] = (m.group(1), m.group(3) or "")
    return results, rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=SOURCES, help="one source only (its counts are checked; the dedup is not)")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every test's result")
    ap.add_argument("--keep", metavar="DIR", help="write the selected tests here (replaced) and keep them")
    ap.add_argument("--infera", default=os.environ.get("INFERA", "build/infera"))
    ap.add_argument("--timeout", type=int, default=1500, help="seconds for infera check (1500)")
    args = ap.parse_args()
    os.chdir(ROOT)
    log_dir = os.environ.get("LOG_DIR", "build/test-logs")
    os.makedirs(log_dir, exist_ok=True)
    rep = Report()
    exp = read_expected(EXPECTED)
    sources = [args.only] if args.only else list(SOURCES)

    if not (os.path.isfile(args.infera) and os.access(args.infera, os.X_OK)):
        print("conformance: %s is not built" % args.infera)
        print("0 passed, 1 failed")
        return 1
    if "onnx" in sources:
        try:
            import onnx
        except ImportError as e:
            print("conformance: needs PyPI onnx==%s in %s: %s" % (exp["onnx_version"], sys.executable, e))
            print("0 passed, 1 failed")
            return 1
        if onnx.__version__ != exp["onnx_version"]:
            print("conformance: the onnx-wheel tests are generated from onnx %s (pinned in %s), but %s has "
                  "onnx %s: another version is another test set. Install the pinned one "
                  "(pip install onnx==%s; scripts/setup_debian.sh does) or change the pin in a commit that "
                  "updates the counts." % (exp["onnx_version"], os.path.relpath(EXPECTED), sys.executable,
                                           onnx.__version__, exp["onnx_version"]))
            print("0 passed, 1 failed")
            return 1

    if args.keep:
        work = os.path.abspath(args.keep)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="infera-conformance-")
        work = tmp.name

    # Select, then group the tests of all sources by content.
    selected = {}
    for s in sources:
        try:
            selected[s] = select(s, os.path.join(work, s), log_dir)
        except Exception as e:  # a source that cannot be read is a failure, never a smaller suite
            rep.fail("[%s] selecting tests failed: %s: %s" % (s, type(e).__name__, e))
            selected[s] = []
    groups = collections.OrderedDict()  # hash -> [(source, name)]
    for s in sources:
        for name in selected[s]:
            groups.setdefault(content_hash(os.path.join(work, s, name)), []).append((s, name))
    duplicates = sum(len(g) - 1 for g in groups.values())

    # Counts against the committed expectation.
    found = {"selected %s" % s: len(selected[s]) for s in sources}
    if not args.only and (exp.get("duplicates") is None or int(exp["duplicates"]) != duplicates):
        # Which generated tests are byte-identical to Debian's depends on the generating packages
        # (protobuf, ml_dtypes: not pinned); every selected test runs either way, so this is a note.
        print("conformance: note: %d byte-identical duplicates (expected_counts.txt says %s): the generated "
              "files' bytes depend on the wheel's dependencies; every selected test runs once either way"
              % (duplicates, exp.get("duplicates")))
    for key, n in found.items():
        want = exp.get(key)
        if want is None or int(want) != n:
            rep.fail("%s: %d, expected %s (%s): a change in the test selection must be explained; update "
                     "that file in the commit that causes it" % (key, n, want, os.path.relpath(EXPECTED)))

    # Skips: each must name a selected test of its source.
    skips = read_skips(SKIPS, rep)
    for (s, name), (reason, where) in sorted(skips.items()):
        if s in sources and name not in selected[s]:
            rep.fail("%s: skip %s:%s names no selected test of %s (renamed, or not one of infera's ops): "
                     "remove or fix the line" % (where, s, name, s))

    # One folder per distinct test; all of them run, skipped ones included.
    run_dir = os.path.join(work, "distinct")
    os.makedirs(run_dir)
    folder_of = {}
    for h, members in groups.items():
        s, name = members[0]
        folder = "%s.%s" % (s, name)
        os.symlink(os.path.realpath(os.path.join(work, s, name)), os.path.join(run_dir, folder))
        folder_of[h] = folder
    log_path = os.path.join(log_dir, "conformance-check.log")  # conformance.log is test_all.sh's
    results, rc = run_check(args.infera, run_dir, log_path, args.timeout) if groups else ({}, 0)

    passed = failed_tests = known = 0
    per_source = {s: collections.Counter() for s in sources}
    for h, members in groups.items():
        folder = folder_of[h]
        names = " = ".join("%s:%s" % m for m in members)
        skipped = [m for m in members if m in skips]
        status, why = results.get(folder, (None, ""))
        if status is None:
            outcome = "no result (infera check: exit %s; log %s)" % (rc, log_path)
        elif skipped and len(skipped) != len(members):
            outcome = "%s is skipped but the identical %s is not: skip both or neither" % (
                "/".join("%s:%s" % m for m in skipped),
                "/".join("%s:%s" % m for m in members if m not in skipped))
        elif skipped and status == "PASS":
            outcome = "stale skip: %s passes now; remove its line from skips.txt (%s)" % (
                names, ", ".join(skips[m][1] for m in skipped))
        elif skipped:
            outcome = None
            known += 1
            for m in members:
                per_source[m[0]]["skipped"] += 1
            if args.verbose:
                print("SKIP %s (still fails: %s)" % (names, why[:200]))
            continue
        elif status == "FAIL":
            outcome = why
        else:
            passed += 1
            for m in members:
                per_source[m[0]]["passed"] += 1
            if args.verbose:
                print("PASS %s" % names)
            continue
        failed_tests += 1
        for m in members:
            per_source[m[0]]["failed"] += 1
        print("FAIL %s: %s" % (names, outcome), flush=True)
    if groups and not isinstance(rc, int):
        rep.fail("infera check: %s (log %s)" % (rc, log_path))

    for s in sources:
        c = per_source[s]
        print("conformance[%s]: %d selected: %d passed, %d failed, %d skipped (counted once per source)"
              % (s, len(selected[s]), c["passed"], c["failed"], c["skipped"]))
    print("conformance: %d distinct tests (%s, %d byte-identical in both run once): %d passed, %d failed, "
          "%d skipped (run, still failing as declared); log %s"
          % (len(groups), " + ".join("%d %s" % (len(selected[s]), s) for s in sources), duplicates, passed,
             failed_tests, known, log_path))
    if args.keep:
        print("conformance: tests kept in %s (distinct/ holds one link per distinct test)" % work)
    total_failed = failed_tests + rep.failed
    print("%d passed, %d failed, %d skipped" % (passed, total_failed, known))
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
