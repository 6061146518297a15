"""infera tune / profile / doctor and the algorithm-search flags: the perf db filled and found
(a second tune times nothing), two tunes writing one file at once, corrupt and foreign-version
files refused with one warning line, forced algorithms, profile's CSV/JSON (shares sum to 100%),
doctor --json with verdicts. Every command gets its own XDG_CACHE_HOME: nothing is written to the
user's cache."""
import csv
import json
import os
import re
import subprocess

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from cli_util import RNG, expect, make_model, ok, save, vi


def wino_model(channels=32, size=14):
    """Two 3x3 stride-1 convs C -> C (+ bias + relu): oneDNN has both direct and Winograd for them."""
    w1 = numpy_helper.from_array((RNG.standard_normal((channels, channels, 3, 3)) * 0.05).astype(np.float32), "W1")
    b1 = numpy_helper.from_array(RNG.standard_normal(channels).astype(np.float32), "B1")
    w2 = numpy_helper.from_array((RNG.standard_normal((channels, channels, 3, 3)) * 0.05).astype(np.float32), "W2")
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "W2"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    dims = ["batch", channels, size, size]
    return make_model(nodes, [vi("x", TensorProto.FLOAT, dims)], [vi("y", TensorProto.FLOAT, dims)], [w1, b1, w2])


def tune_counts(out):
    """[(batch, timed, found)] from tune's per-batch lines."""
    return [tuple(map(int, m)) for m in
            re.findall(r"^batch (\d+)\s+\d+ choices: (\d+) timed \(added\), (\d+) found", out, re.M)]


def add(c, small):
    model = save(wino_model(), c.path("wino.onnx"))
    model2 = save(wino_model(48, 10), c.path("wino2.onnx"))
    home = c.mkdir("cache")
    env = {"XDG_CACHE_HOME": home}
    db = os.path.join(home, "infera", "perfdb.json")

    def tune_fills_then_finds():
        rc, out, err = c.sh("tune", model, "--batch", "1,2", "--threads", "1", env=env)
        ok(rc, out, err)
        counts = tune_counts(out)
        expect([b for b, _, _ in counts] == [1, 2], "a line per batch: " + out)
        if not c.cpu_winograd():  # one algorithm per conv here: nothing to time, nothing stored
            expect(all(t == 0 and f == 0 for _, t, f in counts) and not os.path.exists(db), "nothing to tune: " + out)
            return
        expect(all(t >= 1 for _, t, _ in counts), "the first tune times every new layer: " + out)
        expect(db in out and "entries added" in out, "tune names the database and the entries added: " + out)
        with open(db) as f:
            d = json.load(f)
        expect(d["format"] == "infera-perfdb" and d["version"] == 1, "versioned header: %s" % list(d)[:3])
        added = sum(t for _, t, _ in counts)
        expect(len(d["entries"]) == added, "%d entries for %d timed" % (len(d["entries"]), added))
        e = d["entries"][0]
        expect(e["op"] == "conv" and "oneDNN" in e["libs"] and e["device"].startswith("cpu: "), "key fields: %s" % e)
        expect({x["name"] for x in e["candidates"]} == {"direct", "winograd"} and e["winner"] in ("direct", "winograd"),
               "both candidates timed: %s" % e)
        rc, out, err = c.sh("tune", model, "--batch", "1,2", "--threads", "1", env=env)
        ok(rc, out, err)
        expect(all(t == 0 and f >= 1 for _, t, f in tune_counts(out)), "a second tune times nothing: " + out)
        expect("0 entries added" in out, out)
    c.test("tune: fills the perf db, a second tune times nothing", tune_fills_then_finds)

    def run_finds_everything():
        rc, out, err = c.sh("run", model, "--batch", "2", "--threads", "1", "--verbose", "--output-dir", c.path("o"),
                            env=env)
        ok(rc, out, err)
        m = re.search(r"perf db (\S+): (\d+) choices found, (\d+) timed", err)
        if not c.cpu_winograd():
            expect(m and m.group(2) == "0" and m.group(3) == "0", "no choices on this CPU: " + err[-400:])
            return
        expect(m and m.group(1) == db and int(m.group(2)) >= 1 and m.group(3) == "0",
               "run after tune: found, none timed: %s" % (m.group(0) if m else err[-400:]))
        expect(re.search(r"\[(direct|winograd): perf db [0-9.]+ ms\]", err), "the step names the db's choice: " + err)
    c.test("run --verbose after tune: every choice found, 0 timed", run_finds_everything)

    def progress_only_when_asked():
        e2 = {"XDG_CACHE_HOME": c.mkdir("cache_progress")}
        rc, out, err = c.sh("tune", model, "--threads", "1", env=e2)
        ok(rc, out, err)
        expect("[" not in err, "no progress bar when stderr is not a terminal: " + err)
        rc, out, err = c.sh("tune", model, "--threads", "1", "--batch", "1,3", "--progress", env=e2)
        ok(rc, out, err)
        expect("2/2 batch 3 done" in err and "[=====" in err, "--progress draws the bar on stderr: " + err)
    c.test("tune: progress bar on a TTY or with --progress only", progress_only_when_asked)

    def two_tunes_at_once():
        e2 = {"XDG_CACHE_HOME": c.mkdir("cache_two")}
        env_all = dict(os.environ, **e2)
        procs = [subprocess.Popen([c.infera, "tune", m, "--batch", "1,2,3", "--threads", "1"], env=env_all,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for m in (model, model2)]
        timed = 0
        for p in procs:
            out, err = p.communicate(timeout=300)
            ok(p.returncode, out, err)
            timed += sum(t for _, t, _ in tune_counts(out))
        if not c.cpu_winograd():
            expect(timed == 0, "nothing to time on this CPU")
            return
        with open(os.path.join(e2["XDG_CACHE_HOME"], "infera", "perfdb.json")) as f:
            entries = json.load(f)["entries"]
        shapes = {e["shape"].split()[0] for e in entries}
        expect(len(entries) == timed, "%d entries in the file, %d timed by the two processes" % (len(entries), timed))
        expect(any("x1x48" in s for s in shapes) and any("x1x32" in s for s in shapes),
               "both models' layers are in the file: %s" % sorted(shapes))
    c.test("tune: two processes writing one perf db lose nothing", two_tunes_at_once)

    def corrupt_db_warns_once():
        bad = c.path("corrupt.json")
        with open(bad, "w") as f:
            f.write('{"format": "infera-perfdb", "version": 1, "entries": [{"device": ')
        if not c.cpu_winograd():  # a run reads the db only for a choice (none here): doctor reads it
            rc, out, err = c.sh("doctor", "--perf-db", bad)
            ok(rc, out, err)
            expect(re.search(r"^warn: perf db .*JSON", out, re.M), "doctor warns about the corrupt file: " + out)
            foreign = c.path("foreign.json")
            with open(foreign, "w") as f:
                f.write('{"format": "infera-perfdb", "version": 99, "entries": []}')
            rc, out, err = c.sh("doctor", "--perf-db", foreign)
            ok(rc, out, err)
            expect(re.search(r"^warn: perf db .*version 99", out, re.M), "doctor warns about it: " + out)
            return
        rc, out, err = c.sh("run", model, "--perf-db", bad, "--threads", "1", "--output-dir", c.path("o"))
        ok(rc, out, err)
        lines = [ln for ln in err.splitlines() if "warning" in ln]
        expect(len(lines) == 1 and "perf db " + bad in lines[0] and "JSON" in lines[0] and
               "empty database" in lines[0], "one warning line naming the file and the fault: " + err)
        with open(bad) as f:
            expect(json.load(f)["version"] == 1, "the corrupt file is rewritten whole")
        foreign = c.path("foreign.json")
        text = '{"format": "infera-perfdb", "version": 99, "entries": []}'
        with open(foreign, "w") as f:
            f.write(text)
        rc, out, err = c.sh("run", model, "--perf-db", foreign, "--threads", "1", "--output-dir", c.path("o"))
        ok(rc, out, err)
        expect("version 99; this infera reads version 1" in err and "left as it is" in err, err)
        with open(foreign) as f:
            expect(f.read() == text, "a file of another version is never overwritten")
        rc, out, err = c.sh("doctor", "--perf-db", foreign)
        ok(rc, out, err)
        expect(re.search(r"^warn: perf db .*version 99", out, re.M), "doctor warns about it: " + out)
    c.test("perf db: corrupt / foreign-version file -> one warning line", corrupt_db_warns_once)

    def flags():
        e2 = {"XDG_CACHE_HOME": c.mkdir("cache_flags")}
        rc, out, err = c.sh("run", model, "--no-perf-db", "--threads", "1", "--verbose", "--output-dir", c.path("o"),
                            env=e2)
        ok(rc, out, err)
        expect("perf db (in memory)" in err, err[-300:])
        expect(not os.path.exists(os.path.join(e2["XDG_CACHE_HOME"], "infera")), "--no-perf-db writes nothing")
        rc, out, err = c.sh("run", model, "--conv-algo", "direct", "--threads", "1", "--verbose", "--output-dir",
                            c.path("o"), env=e2)
        ok(rc, out, err)
        expect(err.count("[direct: forced]") == 2, "both convs forced to direct: " + err[-600:])
        rc, out, err = c.sh("run", model, "--conv-algo", "implicit_gemm", "--threads", "1", "--verbose",
                            "--output-dir", c.path("o"), env=e2)
        ok(rc, out, err)
        expect("--conv-algo implicit_gemm cannot do this layer" in err, "says why it fell back: " + err[-600:])
        rc, out, err = c.sh("run", model, "--winograd", "on", "--threads", "1", "--verbose", "--output-dir",
                            c.path("o"), env=e2)
        ok(rc, out, err)
        if c.cpu_winograd():
            expect(err.count("[winograd: forced]") == 2, "--winograd on forces it: " + err[-600:])
        else:
            expect(err.count("[direct: no Winograd on this ISA]") == 2, "--winograd on, none here: " + err[-600:])
        rc, out, err = c.sh("run", model, "--search", "off", "--threads", "1", "--verbose", "--output-dir",
                            c.path("o"), env=e2)
        ok(rc, out, err)
        expect("0 choices found, 0 timed" in err and "ms of:" not in err, "--search off times nothing: " + err[-400:])
        for args, word in ((["--conv-algo", "fft"], "--conv-algo expects one of auto, implicit_gemm"),
                           (["--winograd", "maybe"], "--winograd expects one of on, off, auto"),
                           (["--search", "slow"], "--search expects one of fast, exhaustive, off"),
                           (["--perf-db", "x.json", "--no-perf-db"], "contradict")):
            rc, out, err = c.sh("run", model, *args)
            expect(rc == 2 and word in err and len(err.strip().splitlines()) == 1, "%s: %d %s" % (args, rc, err))
        rc, out, err = c.sh("tune", model, "--search", "off")
        expect(rc == 2 and "would time nothing" in err, err)
        for cmd in ("run", "bench", "check", "profile", "tune", "info"):
            rc, out, err = c.sh(cmd, "--help")
            expect(rc == 0 and "--perf-db PATH" in out and "--conv-algo A" in out and "--search MODE" in out,
                   cmd + " --help lacks the search flags")
    c.test("search flags: --no-perf-db, --conv-algo, --winograd, --search", flags)

    def profile():
        e2 = {"XDG_CACHE_HOME": c.mkdir("cache_profile")}
        csv_p, json_p = c.path("p.csv"), c.path("p.json")
        rc, out, err = c.sh("profile", model, "--batch", "2", "--runs", "3", "--warmup", "1", "--top", "2",
                            "--threads", "1", "--csv", csv_p, "--json", json_p, env=e2)
        ok(rc, out, err)
        expect("without GPU graphs" in out, "states that profiling runs without graphs")
        expect(re.search(r"^peak\s+[0-9.]+ GFLOP/s, estimate: 1 threads x", out, re.M), "the peak and how: " + out)
        expect("by op kind" in out and "Conv" in out, out)
        table = out.split("node / kernel\n")[1].split("\n\n")[0].splitlines()
        expect(len([ln for ln in table if re.match(r"^\s*\d+ ", ln)]) == 2, "--top 2 rows: %s" % table)
        with open(json_p) as f:
            d = json.load(f)
        expect(d["gpu_graphs"] is False and d["batch"] == 2 and d["runs"] == 3, "json header: %s" % d)
        shares = sum(s["share_pct"] for s in d["steps"])
        expect(abs(shares - 100) < 0.1, "shares sum to %.3f%%" % shares)
        convs = [s for s in d["steps"] if "Conv" in s["op"]]
        # 2 * N * K * C * 3 * 3 * H * W
        expect(len(convs) == 2 and all(s["flops"] == 2 * 2 * 32 * 32 * 9 * 14 * 14 for s in convs),
               "conv FLOPs from the shapes: %s" % [s["flops"] for s in convs])
        expect(all(s["algorithm"] in ("direct", "winograd") and s["gflops_per_s"] > 0 and s["bytes"] > 0
                   for s in convs), "algorithm, FLOP/s and bytes per conv: %s" % convs)
        expect(sum(k["steps"] for k in d["by_op"]) == len(d["steps"]), "by_op covers every step")
        with open(csv_p) as f:
            rows = list(csv.DictReader(f))
        expect(len(rows) == len(d["steps"]), "a CSV row per step")
        expect(abs(sum(float(r["share_pct"]) for r in rows) - 100) < 0.1, "CSV shares sum to 100%")
        expect(all(r["kernel"] for r in rows if "Conv" in r["op"]), "the CSV names each conv's kernel")
    c.test("profile: per-step table, --top, CSV and JSON (shares 100%)", profile)

    def doctor_json():
        rc, out, err = c.sh("doctor", "--json", env=env)
        ok(rc, out, err)
        d = json.loads(out)
        for k in ("cpu", "backends", "gpu", "perf_db", "verdicts"):
            expect(k in d, "doctor --json lacks '%s'" % k)
        expect(d["verdicts"] and all(v["level"] in ("ok", "warn", "fail") and v["message"] for v in d["verdicts"]),
               "verdicts: %s" % d["verdicts"])
        least = 1 if c.cpu_winograd() else 0  # filled by the tune above where there was a choice
        expect(d["perf_db"]["path"] == db and d["perf_db"]["entries"] >= least and
               d["perf_db"]["entries_this_machine"] == d["perf_db"]["entries"], "perf db: %s" % d["perf_db"])
        expect(any("perf db" in v["message"] for v in d["verdicts"]), "a perf db verdict")
        rc, out, err = c.sh("doctor", env=env)
        ok(rc, out, err)
        verdicts = [ln for ln in out.splitlines() if re.match(r"^(ok|warn|fail): ", ln)]
        expect(len(verdicts) == len(d["verdicts"]), "one text line per verdict: %s" % verdicts)
        if not d["gpu"]["devices"]:
            expect(re.search(r"^gpu\s+none found: .*NVML", out, re.M) and "no GPU here" in out,
                   "without a GPU it says so: " + out)
    c.test("doctor: --json parses, verdicts ok|warn|fail, perf db", doctor_json)
