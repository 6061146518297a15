"""infera bench: configuration first, rows as batches finish, statistics, measured memory, JSON."""
import datetime
import hashlib
import json
import os
import re
import subprocess
import time

import numpy as np

from cli_util import RNG, clean, conv_model, expect, ok, one_line_error, save

ROW_KEYS = {"batch", "shapes", "count", "latency_ms_p50", "latency_ms_p90", "latency_ms_p99", "latency_ms_mean",
            "latency_ms_min", "latency_ms_max", "latency_ms_stddev", "throughput_per_s", "peak_memory_bytes",
            "session_allocated_bytes", "io_bytes", "planned_bytes", "peak_rss_bytes", "build_ms"}
META_KEYS = {"infera_version", "date", "command", "model", "device", "precision", "backends", "optimize", "threads",
             "warmup_runs", "iterations", "duration_s", "inputs", "memory_note", "results"}


def check_rows(rows, batches, count=None):
    expect([r.get("batch") for r in rows] == batches, "batches %r, want %r" % ([r.get("batch") for r in rows], batches))
    for r in rows:
        missing = ROW_KEYS - set(r)
        expect(not missing, "row misses keys %s" % sorted(missing))
        if count is not None:
            expect(r["count"] == count, "count %r, want %d" % (r["count"], count))
        expect(r["latency_ms_min"] <= r["latency_ms_p50"] <= r["latency_ms_p90"] <= r["latency_ms_max"],
               "min <= p50 <= p90 <= max does not hold: %r" % r)
        expect(r["latency_ms_min"] <= r["latency_ms_mean"] <= r["latency_ms_max"], "mean outside [min, max]")
        expect(r["latency_ms_stddev"] >= 0 and r["throughput_per_s"] > 0 and r["latency_ms_min"] > 0,
               "zero latency or throughput: %r" % r)
        expect(r["count"] >= 100 or r["latency_ms_p99"] is None,
               "p99 given from %d samples (needs >= 100)" % r["count"])
        expect(r["session_allocated_bytes"] > 0 and r["io_bytes"] > 0 and r["peak_rss_bytes"] > 1 << 20,
               "memory not measured: %r" % {k: r[k] for k in r if k.endswith("bytes")})
        expect(r["peak_memory_bytes"] == r["session_allocated_bytes"] + r["io_bytes"],
               "peak_memory_bytes is not session + io bytes")


def add(c, small):
    free = save(conv_model(["batch", 3, "height", "width"], ["batch", 4, "height", "width"]), c.path("bfree.onnx"))

    def bench_json():
        j = c.path("bench.json")
        rc, out, err = c.sh("bench", small, "--batch", "1,2", "--warmup", 1, "--iterations", 5, "--json", j,
                            "--quiet", "--threads", 1)
        ok(rc, out, err)
        clean(out + err, "bench --quiet output")
        expect(out == "", "--quiet printed %r" % out[:200])
        data = json.load(open(j))
        missing = META_KEYS - set(data)
        expect(not missing, "JSON misses metadata %s" % sorted(missing))
        version = c.sh("--version")[1].split()[-1]
        expect(data["infera_version"] == version, "version %r, infera --version says %r" %
               (data["infera_version"], version))
        sha = hashlib.sha256(open(small, "rb").read()).hexdigest()
        expect(data["model"]["sha256"] == sha, "model sha256 %r, want %r" % (data["model"]["sha256"], sha))
        expect(data["model"]["path"] == small and data["model"]["bytes"] == os.path.getsize(small), "model path/bytes")
        expect(data["device"] == "cpu" and data["threads"] == 1 and data["iterations"] == 5 and
               data["duration_s"] is None and data["warmup_runs"] == 1, "device/threads/iterations: %r" %
               {k: data[k] for k in ("device", "threads", "iterations", "duration_s", "warmup_runs")})
        d = datetime.datetime.strptime(data["date"], "%Y-%m-%dT%H:%M:%SZ")
        expect(abs((datetime.datetime.utcnow() - d).total_seconds()) < 600, "date %r is not now" % data["date"])
        expect(data["inputs"][0]["source"] == "random" and data["inputs"][0]["name"] == "input", "inputs %r" %
               data["inputs"])
        check_rows(data["results"], [1, 2], count=5)
        expect(data["results"][1]["shapes"] == {"input": [2, 3, 8, 8]}, "shapes %r" % data["results"][1]["shapes"])
    c.test("bench --json: metadata, statistics, measured memory", bench_json)

    def json_stdout():
        rc, out, err = c.sh("bench", small, "--iterations", 3, "--warmup", 0, "--json", "-")
        ok(rc, out, err)
        data = json.loads(out)  # stdout is the JSON and nothing else
        check_rows(data["results"], [1], count=3)
        expect("batch" in err and "p50" in err, "with --json - the table should go to stderr: %r" % err[:300])
    c.test("bench --json -: JSON alone on stdout, table on stderr", json_stdout)

    def json_checked_first():
        t0 = time.time()
        one_line_error(*c.sh("bench", small, "--duration", 30, "--json", c.path("no", "such", "dir", "b.json")), 1,
                       "--json", "No such file or directory")
        expect(time.time() - t0 < 20, "the JSON path was checked only after timing")
        os.makedirs(c.path("jsondir"))
        one_line_error(*c.sh("bench", small, "--duration", 30, "--json", c.path("jsondir")), 1, "is a folder")
    c.test("bench --json path checked before timing", json_checked_first)

    def p99_from_100():
        rc, out, err = c.sh("bench", small, "--iterations", 100, "--warmup", 0, "--json", "-", "--quiet")
        ok(rc, out, err)
        r = json.loads(out)["results"][0]
        expect(r["count"] == 100 and isinstance(r["latency_ms_p99"], float), "100 runs: p99 %r" % r["latency_ms_p99"])
        rc, out, err = c.sh("bench", small, "--iters", 7, "--warmup", 0)
        ok(rc, out, err)
        row = [l for l in out.splitlines() if re.match(r"^\s+1\s+7\s", l)]
        expect(row, "no row with batch 1 and 7 runs (--iters alias):\n" + out)
        expect(row[0].split()[5] == "-", "p99 column of 7 runs is %r, want '-'" % row[0].split()[5])
    c.test("bench: p99 only from 100 runs, '-' below", p99_from_100)

    def config_first():
        rc, out, err = c.sh("bench", small, "--batch", "1,2", "--duration", 0.2, "--warmup", 2, "--threads", 1)
        ok(rc, out, err)
        lines = out.splitlines()
        header = [i for i, l in enumerate(lines) if re.match(r"^\s*batch\s+runs\s+mean", l)]
        expect(header, "no table header:\n" + out)
        before = "\n".join(lines[:header[0]])
        for words in ("threads    1", "2 warmup", "0.2 s", "input      input float32 [batch,3,8,8]: random (seed 0)",
                      "batch 2: input [2,3,8,8]", "device     cpu", "precision fp32", "memory     measured"):
            expect(words in before, "the configuration before the table does not say %r:\n%s" % (words, before))
        for col in ("runs", "min ms", "max ms", "stddev", "p99 ms", "items/s", "memory MiB", "RSS MiB"):
            expect(col in lines[header[0]], "table header lacks %r" % col)
    c.test("bench: configuration first, count/min/max/stddev columns", config_first)

    def rows_as_they_finish():
        p = subprocess.Popen([c.infera, "bench", small, "--batch", "1,2", "--duration", "2", "--warmup", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        try:
            still_running = None
            for line in p.stdout:
                if re.match(r"^\s+1\s+\d+\s", line):
                    still_running = p.poll() is None
                    break
            p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
        expect(still_running is not None, "no batch-1 row")
        expect(still_running, "the batch-1 row appeared only when bench ended")
        expect(p.returncode == 0, "exit %d" % p.returncode)
    c.test("bench: each row printed as its batch finishes", rows_as_they_finish)

    def bench_input_file():
        x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
        np.save(c.path("bx2.npy"), x)
        rc, out, err = c.sh("bench", small, "--input", "input=" + c.path("bx2.npy"), "--iterations", 3, "--json", "-",
                            "--quiet")
        ok(rc, out, err)
        data = json.loads(out)
        expect(data["inputs"][0]["source"] == "file" and data["inputs"][0]["path"] == c.path("bx2.npy"),
               "inputs %r" % data["inputs"])
        check_rows(data["results"], [2], count=3)
        one_line_error(*c.sh("bench", small, "--input", c.path("bx2.npy"), "--batch", "2,4", "--iterations", 1), 1,
                       "has batch 2", "--batch 4 is impossible")
    c.test("bench --input NAME=PATH times real data (its batch)", bench_input_file)

    def bench_shapes():
        rc, out, err = c.sh("bench", free, "--shape", "input=batchx3x16x16", "--batch", "1,3", "--iterations", 2,
                            "--json", "-", "--quiet")
        ok(rc, out, err)
        rows = json.loads(out)["results"]
        expect([r["shapes"]["input"] for r in rows] == [[1, 3, 16, 16], [3, 3, 16, 16]], "shapes %r" %
               [r["shapes"] for r in rows])
    c.test("bench --shape NAME=batchx3x16x16 --batch 1,3", bench_shapes)

    def bench_duration():
        rc, out, err = c.sh("bench", small, "--batch", "1", "--duration", "0.5", "--threads", 1)
        ok(rc, out, err)
        row = [l for l in out.splitlines() if re.match(r"^\s+1\s+\d+\s", l)]
        expect(row and int(row[0].split()[1]) >= 3, "no row with at least 3 runs:\n" + out)
    c.test("bench --duration prints a row of >= 3 runs", bench_duration)

    def profile():
        rc, out, err = c.sh("bench", small, "--iterations", 4, "--warmup", 0, "--profile", "--top", 2)
        ok(rc, out, err)
        m = re.search(r"^profile, batch 1: .* over 4 timed runs; top 2 of (\d+) nodes\n.*\n(.*)\n(.*)\n", out, re.M)
        expect(m, "no profile table:\n" + out)
        first = m.group(2).split()
        expect(float(first[0]) >= float(m.group(3).split()[0]),
               "profile rows not sorted by time:\n" + out)
        rc, out, err = c.sh("bench", small, "--iterations", 4, "--profile", "--json", "-", "--quiet")
        ok(rc, out, err)
        prof = json.loads(out)["results"][0].get("profile")
        expect(prof and {"node", "op", "backend", "ms_per_run"} <= set(prof[0]), "JSON profile %r" % prof)
        expect(all(prof[i]["ms_per_run"] >= prof[i + 1]["ms_per_run"] for i in range(len(prof) - 1)),
               "JSON profile not sorted")
        ops = {p["op"] for p in prof}
        expect("Gemm" in ops or "com.infera.FusedGemm" in ops, "profile lacks the Gemm node: %r" % ops)
    c.test("bench --profile: per-node table, sorted, top N", profile)

    c.test("bench --top without --profile is a usage error",
           lambda: one_line_error(*c.sh("bench", small, "--top", 3), 2, "--profile"))

    def memory_budget():
        # The plan's memory in the JSON; a budget of half of it runs the batch in chunks.
        rc, out, err = c.sh("bench", small, "--batch", 16, "--iterations", 3, "--warmup", 0, "--json", "-", "--quiet")
        ok(rc, out, err)
        pm = json.loads(out)["results"][0]["plan_memory"]
        expect(pm["peak_bytes"] == pm["weight_bytes"] + pm["arena_bytes"] + pm["scratch_bytes"] and pm["arena_bytes"] > 0,
               "plan_memory %r" % pm)
        expect(pm["chunks"] == 0, "no budget, yet chunks: %r" % pm)
        budget = pm["weight_bytes"] + pm["arena_bytes"] // 2
        rc, out, err = c.sh("bench", small, "--batch", 16, "--iterations", 3, "--warmup", 0, "--json", "-", "--quiet",
                            "--memory-budget", budget)
        ok(rc, out, err)
        pm2 = json.loads(out)["results"][0]["plan_memory"]
        expect(pm2["chunks"] >= 2 and 1 <= pm2["chunk_batch"] < 16 and pm2["peak_bytes"] <= budget,
               "budget %d: plan_memory %r" % (budget, pm2))
        rc, out, err = c.sh("bench", small, "--batch", 16, "--iterations", 3, "--memory-budget", budget)
        ok(rc, out, err)
        expect(re.search(r"plan memory, batch 16 on cpu: .* in \d+ chunks of at most \d+", out),
               "the table's memory line does not give the chunks:\n" + out)
        one_line_error(*c.sh("bench", small, "--batch", 4, "--iterations", 3, "--memory-budget", 256), 1,
                       "too small for batch 1", "256 bytes")
        one_line_error(*c.sh("bench", small, "--memory-budget", "12Q"), 2, "--memory-budget")
        one_line_error(*c.sh("bench", small, "--memory-budget", "0"), 2, "--memory-budget")
    c.test("bench --memory-budget: plan memory in the JSON, chunks that fit, too small is one line", memory_budget)

    def run_chunked_equal():
        x = RNG.standard_normal((16, 3, 8, 8)).astype(np.float32)
        src = c.path("chunk_in.npy")
        np.save(src, x)
        ys = []
        for extra in ([], ["--memory-budget", "24K"]):
            d = c.mkdir("chunk_out%d" % len(ys))
            ok(*c.sh("run", small, "--input", "input=" + src, "--output-dir", d, "--search", "off", *extra))
            ys.append(np.load(os.path.join(d, "output.npy")))
        expect(ys[0].shape == ys[1].shape == (16, 2), "shapes %r" % [y.shape for y in ys])
        expect(np.allclose(ys[0], ys[1], rtol=1e-5, atol=1e-5), "chunked run differs by %g" %
               float(np.abs(ys[0] - ys[1]).max()))
        rc, out, err = c.sh("info", small, "--batch", 16, "--memory-budget", "24K", "--search", "off")
        ok(rc, out, err)
        expect(re.search(r"runs in \d+ chunks of at most \d+", out), "24K does not split batch 16:\n" + out)
    c.test("run --memory-budget: the chunked batch equals the whole one", run_chunked_equal)

    def streams():
        rc, out, err = c.sh("bench", small, "--batch", 2, "--streams", "1,2", "--iterations", 4, "--warmup", 0,
                            "--json", "-", "--quiet", "--arena-extend", "next_power_of_two")
        ok(rc, out, err)
        rows = json.loads(out)["results"]
        expect([r["streams"] for r in rows] == [1, 2], "streams %r" % [r["streams"] for r in rows])
        expect(rows[1]["count"] == 8, "2 streams of 4 runs: count %r" % rows[1]["count"])
        one_line_error(*c.sh("bench", small, "--streams", "0"), 2, "--streams")
        one_line_error(*c.sh("bench", small, "--streams", "2", "--profile"), 2, "--profile")
        one_line_error(*c.sh("bench", small, "--arena-extend", "doubling"), 2, "--arena-extend",
                       "next_power_of_two")
    c.test("bench --streams 1,2 and --arena-extend", streams)

    def device_list():
        # Two engines on the CPU stand in for two GPUs: the rows of a latency-mode run are the
        # single device's, the JSON has the scaling and each device's share.
        x = RNG.standard_normal((5, 3, 8, 8)).astype(np.float32)
        src = c.path("multi_in.npy")
        np.save(src, x)
        ys = []
        for extra in ([], ["--device", "cpu,cpu"], ["--device", "cpu,cpu", "--multi", "throughput"]):
            d = c.mkdir("multi_out%d" % len(ys))
            ok(*c.sh("run", small, "--input", "input=" + src, "--output-dir", d, "--search", "off", *extra))
            ys.append(np.load(os.path.join(d, "output.npy")))
        for y in ys[1:]:
            expect(y.shape == (5, 2) and np.allclose(ys[0], y, rtol=1e-5, atol=1e-6),
                   "a device-list run differs from one device by %g" % float(np.abs(ys[0] - y).max()))
        for mode in ("latency", "throughput"):
            rc, out, err = c.sh("bench", small, "--device", "cpu,cpu", "--multi", mode, "--batch", "1,4",
                                "--iterations", 3, "--warmup", 1, "--json", "-", "--quiet")
            ok(rc, out, err)
            j = json.loads(out)
            expect(j["mode"] == mode and j["devices"] == "cpu, cpu", "header %r" % {k: j[k] for k in ("mode", "devices")})
            rows = j["rows"]
            expect([r["batch"] for r in rows] == [1, 4], "batches %r" % [r["batch"] for r in rows])
            for r in rows:
                expect(r["one_items_per_s"] > 0 and r["all_items_per_s"] > 0 and r["scaling"] > 0, "row %r" % r)
                expect(len(r["per_device"]) == 2, "per_device %r" % r["per_device"])
                rows_run = sum(d["rows"] for d in r["per_device"])
                want = r["all_runs"] * r["batch"]
                expect(rows_run == want, "devices ran %d rows, %d runs of %d make %d" %
                       (rows_run, r["all_runs"], r["batch"], want))
            if mode == "latency":  # batch 4 in two blocks of 2; batch 1 on the first device only
                expect(rows[1]["per_device"][0]["rows"] == rows[1]["per_device"][1]["rows"], "blocks %r" % rows[1])
                expect(rows[0]["per_device"][1]["rows"] == 0, "batch 1 used the second device: %r" % rows[0])
        one_line_error(*c.sh("bench", small, "--device", "cpu,cpu", "--streams", "2"), 2, "--streams",
                       "device list")
        one_line_error(*c.sh("bench", small, "--device", "cpu,,cpu"), 2, "--device", "empty entry")
        one_line_error(*c.sh("info", small, "--device", "cpu,cpu"), 2, "--device", "run and bench")
        one_line_error(*c.sh("run", small, "--multi", "latency"), 2, "--multi", "device list")
        one_line_error(*c.sh("run", small, "--device", "cpu,cpu", "--multi", "fastest"), 2, "--multi")
    c.test("run and bench on a device list (two CPU engines): equal outputs, scaling, per-device rows",
           device_list)
