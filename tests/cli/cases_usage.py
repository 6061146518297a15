"""Usage errors, help of every command, unknown options with did-you-mean, numeric ranges."""
import os
import re

from cli_util import expect, one_line_error

COMMANDS = ("run", "bench", "info", "check", "doctor", "build")
ENV_VARS = ("INFERA_VERBOSE", "INFERA_PROFILE", "INFERA_DNNL_WINOGRAD", "INFERA_SMALLSPATIAL_CONV", "INFERA_GPU_PDL")


def help_options(text):
    """The option names listed in a command's help (lines '  --name ...' of the options section)."""
    section = text.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    names = []
    for line in section.splitlines():
        m = re.match(r"^  (--[a-z0-9-]+)( [A-Z=]+)?", line)
        if m:
            names.append((m.group(1), m.group(2) is not None))
        m = re.search(r"\(also (--[a-z0-9-]+)\)", line)
        if m:
            names.append((m.group(1), True))
    return names


def add(c, small):
    def usage(*a, words=()):
        return lambda: one_line_error(*c.sh(*a), 2, *words)

    def bare():
        rc, out, err = c.sh()
        expect(rc == 2, "bare infera: exit %d, want 2 (nothing was done)" % rc)
        for cmd in COMMANDS:
            expect(re.search(r"^  %s\b" % cmd, out, re.M), "the overview does not list %s" % cmd)
        expect("--help" in out, "the overview does not say how to get a command's help")
    c.test("bare infera prints the overview (exit 2)", bare)

    def top_help():
        rc, out, err = c.sh("--help")
        expect(rc == 0 and err == "", "--help exit %d, stderr %r" % (rc, err))
        for cmd in COMMANDS:
            expect(cmd in out, "--help does not mention %s" % cmd)
    c.test("--help lists the commands", top_help)

    c.test("usage: unknown command", usage("frobnicate", words=("unknown command 'frobnicate'",)))
    c.test("usage: run without a model", usage("run", words=("MODEL",)))
    c.test("usage: run --batch abc", usage("run", small, "--batch", "abc", words=("[1, 1048576]",)))
    c.test("usage: run --batch 0", usage("run", small, "--batch", "0", words=("[1, 1048576]",)))
    c.test("usage: run --device warp9", usage("run", small, "--device", "warp9"))
    c.test("usage: run --precision fp7", usage("run", small, "--precision", "fp7"))
    c.test("usage: check without a folder", usage("check", words=("DIR",)))
    c.test("usage: check --rtol abc states the range", usage("check", c.work, "--rtol", "abc", words=("[0, 1e+09]",)))
    c.test("usage: bench --batch 1,x", usage("bench", small, "--batch", "1,x", words=("'x'",)))
    c.test("usage: bench --iterations and --duration",
           usage("bench", small, "--iterations", "5", "--duration", "1", words=("not both",)))
    c.test("usage: bench --warmup -1 states the range",
           usage("bench", small, "--warmup", "-1", words=("[0, 1000000]",)))
    c.test("usage: --threads 1024 states the range",
           usage("run", small, "--threads", "1024", words=("--threads", "[1, %d]" % os.cpu_count())))
    c.test("usage: --threads 0 is out of range", usage("bench", small, "--threads", "0", words=("[1, ",)))
    c.test("usage: a flag with a value", usage("run", small, "--quiet=1", words=("--quiet takes no value",)))
    c.test("usage: an option given twice", usage("run", small, "--batch", "2", "--batch", "3",
                                                  words=("--batch given twice",)))
    c.test("usage: unknown '-o' suggests --output-dir",
           usage("run", small, "-o", "x", words=("unknown option '-o'", "did you mean --output-dir?")))
    c.test("usage: misspelt --ouput-dir suggests --output-dir",
           usage("run", small, "--ouput-dir", "x", words=("unknown option '--ouput-dir'", "--output-dir?")))
    c.test("usage: unknown option without a near miss",
           usage("run", small, "--no-such-flag", words=("unknown option '--no-such-flag'",)))
    c.test("usage: trtexec's --warmUp (ms) is not our --warmup (runs)",
           usage("bench", small, "--warmUp", "200", words=("--warmUp", "milliseconds")))
    c.test("usage: info has no --threads (it runs nothing)",
           usage("info", small, "--threads", "2", words=("unknown option '--threads'",)))
    c.test("usage: doctor takes no arguments", usage("doctor", "extra"))
    c.test("input error: run a missing model -> 1",
           lambda: one_line_error(*c.sh("run", c.path("nope.onnx")), 1, "nope.onnx"))

    def cmd_help(cmd, flag):
        def t():
            rc, out, err = c.sh(cmd, flag)
            expect(rc == 0 and err == "", "%s %s: exit %d, stderr %r" % (cmd, flag, rc, err[:200]))
            expect(out.startswith("usage: infera %s" % cmd), "%s %s does not start with its usage: %r" %
                   (cmd, flag, out[:80]))
            opts = help_options(out)
            expect(cmd == "doctor" or len(opts) >= 5, "%s help lists only %s" % (cmd, opts))
            if cmd != "doctor":
                info_vars = ("INFERA_VERBOSE", "INFERA_DNNL_WINOGRAD", "INFERA_SMALLSPATIAL_CONV")
                for v in ENV_VARS if cmd != "info" else info_vars:
                    expect(v in out, "%s help does not name the environment variable %s" % (cmd, v))
            # Every option the help lists is one the command accepts (the table is the parser's).
            for name, takes_value in opts:
                args = [cmd, name] + (["1"] if takes_value else [])
                rc, o, e = c.sh(*args)
                expect("unknown option" not in e, "%s help lists %s but %s refuses it: %s" %
                       (cmd, name, cmd, e.strip()))
        return t
    for cmd in COMMANDS:
        c.test("help: %s --help" % cmd, cmd_help(cmd, "--help"))
        c.test("help: %s -h" % cmd, cmd_help(cmd, "-h"))
    c.test("help: run --help with a model and other options", lambda: expect(
        c.sh("run", small, "--batch", "2", "--help")[0] == 0, "--help among other options is not help"))

    def defaults_and_ranges():
        rc, out, err = c.sh("bench", "--help")
        cores = os.cpu_count()
        for words in ("--warmup N", "(default 5)", "--duration S", "(default 3)", "all %d logical cores" % cores,
                      "U[-1,1)", "--seed N", "(default 0)", "--iterations N", "--iters", "--json FILE",
                      "--profile", "--top N", "(default 20)", "--shape NAME=DIMS", "--shapes LIST", "--input NAME=PATH",
                      "--verbose", "GOMP_SPINCOUNT"):
            expect(words in out, "bench --help does not say %r" % words)
        for opt, rng in (("--warmup", "0..1000000"), ("--iterations", "1..100000000"), ("--duration", "0.001..86400"),
                         ("--threads", "1..%d" % cores), ("--batch", "1..1048576"), ("--top", "1..1000000"),
                         ("--seed", "0..4294967295")):
            line = [l for l in out.splitlines() if l.startswith("  " + opt + " ")]
            expect(line and rng in line[0], "bench --help: %s does not state its range %s: %r" % (opt, rng, line))
        rc, out, err = c.sh("check", "--help")
        for words in ("--rtol X", "0..1e9 (default 1e-3)", "--atol X", "(default 1e-5)", "--skip-file FILE", "--json"):
            expect(words in out, "check --help does not say %r" % words)
        rc, out, err = c.sh("run", "--help")
        for words in ("--output-dir DIR", "(default .)", "--batch N", "--shape", "--input NAME=PATH", "--seed N"):
            expect(words in out, "run --help does not say %r" % words)
        rc, out, err = c.sh("info", "--help")
        for words in ("--shape", "--batch N", "--passes", "--plan"):
            expect(words in out, "info --help does not say %r" % words)
        expect("--threads" not in out and "--quiet" not in out, "info --help lists options that do nothing there")
    c.test("help: defaults, ranges and env vars stated", defaults_and_ranges)
