"""infera run and info: inputs, outputs, shapes (--shape, --batch, free and fixed dims), output files."""
import os
import re

import numpy as np

from cli_util import (CONV_FLOPS_PER_PIXEL, RNG, clean, conv_model, expect, ok, one_line_error, relu_outputs_model,
                      save, small_model, threaded_model, two_input_model)


def ort_run(ort, model_path, feeds):
    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def add(c, ort, small, x1):
    thr = save(threaded_model(), c.path("threaded.onnx"))
    free = save(conv_model(["batch", 3, "height", "width"], ["batch", 4, "height", "width"]), c.path("free.onnx"))
    fixed = save(conv_model([1, 3, 8, 8], [1, 4, 8, 8]), c.path("fixed.onnx"))
    two = save(two_input_model(), c.path("two.onnx"))

    def info():
        rc, out, err = c.sh("info", small)
        ok(rc, out, err)
        for word in ("input", "output", "Conv", "Gemm"):
            expect(word in out, "info does not mention %s" % word)
        expect(re.search(r"batch", out), "info does not show the symbolic dim 'batch'")
        clean(out + err, "info output")
    c.test("info: inputs, outputs, ops", info)

    def info_passes():
        rc, out, err = c.sh("info", small, "--passes")
        ok(rc, out, err)
        expect(re.search(r"pass|fold|fuse", out, re.I), "info --passes names no pass")
    c.test("info --passes", info_passes)

    def info_histogram_and_params():
        rc, out, err = c.sh("info", small)
        ok(rc, out, err)
        # Conv + Relu fuse into one FusedConv: the histogram shows both sides.
        expect(re.search(r"^  Conv\s+1 -> 0$", out, re.M), "no 'Conv 1 -> 0' in the op histogram:\n" + out)
        expect(re.search(r"^  com\.infera\.FusedConv\s+0 -> 1$", out, re.M), "no 'FusedConv 0 -> 1':\n" + out)
        rc, out, err = c.sh("info", thr)
        ok(rc, out, err)
        params = 64 * 16 * 9 + 64 * 64 + 10 * 64
        expect(re.search(r"^parameters\s+14\.0 k \(%d " % params, out, re.M), "parameters not shown as "
               "'14.0 k (%d ...)':\n%s" % (params, out))
    c.test("info: op histogram before/after, parameters as 14.0 k", info_histogram_and_params)

    def info_concrete():
        rc, out, err = c.sh("info", free, "--shape", "input=batchx3x224x224", "--batch", "2")
        ok(rc, out, err)
        expect(re.search(r"^  output\s+float32\s+\[2,4,224,224\]$", out, re.M),
               "info does not show the concrete output shape [2,4,224,224]:\n" + out)
        want = CONV_FLOPS_PER_PIXEL * 224 * 224 / 1e9
        m = re.search(r"^flops\s+([0-9.]+) GFLOPs per sample", out, re.M)
        expect(m and abs(float(m.group(1)) - want) < 1e-3, "FLOPs per sample %s, want %.4f" %
               (m and m.group(1), want))
    c.test("info --shape/--batch: output shapes, FLOPs per sample", info_concrete)

    def info_free_dims():
        rc, out, err = c.sh("info", free)
        ok(rc, out, err)  # info is how one learns the names: it still answers, and says what is missing
        expect("input 'input' has free dims height, width; give --shape input=Nx3xHxW" in out,
               "info on a free-dims model does not ask for --shape:\n" + out)
        expect(not re.search(r"^flops", out, re.M), "info printed FLOPs for guessed shapes")
    c.test("info: free dims -> asks for --shape, no guessed FLOPs", info_free_dims)

    def info_plan():
        rc, out, err = c.sh("info", small, "--plan")
        ok(rc, out, err)
        expect("plan steps" in out, "info --plan prints no plan section")
        expect("not available in this build" in out or re.search(r"FusedConv\s+dnnl", out),
               "info --plan neither lists steps nor says they are not available:\n" + out)
    c.test("info --plan", info_plan)

    def run_random(batch):
        def t():
            d = c.mkdir("run_random_%d" % batch)
            rc, out, err = c.sh("run", small, "--batch", batch, "--output-dir", d)
            ok(rc, out, err)
            y = np.load(os.path.join(d, "output.npy"))
            expect(y.shape == (batch, 2) and y.dtype == np.float32, "output.npy is %s %s" % (y.dtype, y.shape))
            expect(np.all(np.isfinite(y)), "output has NaN/Inf")
            clean(out + err, "run output")
        return t
    c.test("run: random input, batch 1 -> output.npy", run_random(1))
    c.test("run: random input, batch 3 -> output.npy", run_random(3))

    def run_input(spec, d):
        def t():
            expect(ort is not None, "onnxruntime is not installed: this comparison cannot run")
            rc, out, err = c.sh("run", small, "--input", spec, "--output-dir", c.mkdir(d))
            ok(rc, out, err)
            y = np.load(c.path(d, "output.npy"))
            expect(y.shape == (1, 2), "shape %s" % (y.shape,))
            ref = ort_run(ort, small, {"input": x1})[0]
            err_n = float(np.max(np.abs(y - ref)) / max(np.max(np.abs(ref)), 1e-30))
            expect(err_n <= 1e-4, "differs from onnxruntime: normalized error %.3g" % err_n)
        return t
    c.test("run --input NAME=x.npy matches ORT", run_input("input=" + c.path("x1.npy"), "in_named"))
    c.test("run --input x.npy (single input) matches ORT", run_input(c.path("x1.npy"), "in_plain"))
    c.test("run --input NAME=x.pb (TensorProto) matches ORT", run_input("input=" + c.path("x1.pb"), "in_pb"))

    def free_dims_refused(cmd):
        def t():
            extra = ["--iterations", 1] if cmd == "bench" else ["--output-dir", c.mkdir("free_" + cmd)]
            one_line_error(*c.sh(cmd, free, *extra), 1,
                           "input 'input' has free dims height, width; give --shape input=Nx3xHxW")
        return t
    c.test("run: free dims refused, not guessed", free_dims_refused("run"))
    c.test("bench: free dims refused, not guessed", free_dims_refused("bench"))

    def run_shape(flag, spec):
        def t():
            d = c.mkdir("shape_" + flag.strip("-"))
            rc, out, err = c.sh("run", free, flag, spec, "--output-dir", d)
            ok(rc, out, err)
            y = np.load(os.path.join(d, "output.npy"))
            expect(y.shape == (1, 4, 16, 12), "output shape %s, want (1, 4, 16, 12)" % (y.shape,))
        return t
    c.test("run --shape input=1x3x16x12", run_shape("--shape", "input=1x3x16x12"))
    c.test("run --shapes input:1x3x16x12 (trtexec style)", run_shape("--shapes", "input:1x3x16x12"))

    def run_shape_batch():
        d = c.mkdir("shape_batch")
        ok(*c.sh("run", free, "--shape", "input=batchx3x5x6", "--batch", 3, "--output-dir", d))
        y = np.load(os.path.join(d, "output.npy"))
        expect(y.shape == (3, 4, 5, 6), "output shape %s, want (3, 4, 5, 6)" % (y.shape,))
    c.test("run --shape input=batchx3x5x6 --batch 3", run_shape_batch)

    c.test("run --shape with a numeric batch and another --batch", lambda: one_line_error(
        *c.sh("run", free, "--shape", "input=2x3x8x8", "--batch", 4), 1, "has batch 2", "--batch 4 is impossible"))
    c.test("run --shape contradicting a fixed dim", lambda: one_line_error(
        *c.sh("run", fixed, "--shape", "input=1x3x9x8"), 1, "dim 2 is fixed at 8"))
    c.test("run --shape for an input the model lacks", lambda: one_line_error(
        *c.sh("run", free, "--shape", "img=1x3x8x8"), 1, "no input 'img'", "'input' [batch,3,height,width]"))
    c.test("run --shape with a bad dim", lambda: one_line_error(
        *c.sh("run", free, "--shape", "input=1x3xHx8"), 2, "'H' is not a dim"))

    def fixed_batch(cmd):
        def t():
            args = [cmd, fixed, "--batch", "1,4" if cmd == "bench" else 4]
            args += ["--iterations", 2] if cmd == "bench" else ["--output-dir", c.mkdir("fixed_" + cmd)]
            rc, out, err = c.sh(*args)
            one_line_error(rc, out, err, 1, "input 'input' has fixed batch 1; --batch 4 is impossible")
            expect(not re.search(r"^\s+1\s+\d+\s", out, re.M), "bench timed batch 1 before refusing batch 4")
        return t
    c.test("run --batch 4 on a fixed-batch-1 model refused", fixed_batch("run"))
    c.test("bench --batch 1,4 on a fixed-batch-1 model refused", fixed_batch("bench"))

    def fixed_batch_ok():
        d = c.mkdir("fixed_ok")
        ok(*c.sh("run", fixed, "--batch", 1, "--output-dir", d))
        expect(np.load(os.path.join(d, "output.npy")).shape == (1, 4, 8, 8), "wrong output shape")
    c.test("run --batch 1 on a fixed-batch-1 model", fixed_batch_ok)

    def batch_vs_input_file():
        np.save(c.path("x2.npy"), RNG.standard_normal((2, 3, 8, 8)).astype(np.float32))
        one_line_error(*c.sh("run", small, "--input", c.path("x2.npy"), "--batch", 4, "--output-dir",
                             c.mkdir("bvf")), 1, "has batch 2", "--batch 4 is impossible")
    c.test("run --batch 4 beside a batch-2 --input refused", batch_vs_input_file)

    def some_inputs_only():
        np.save(c.path("a3.npy"), RNG.standard_normal((3, 4)).astype(np.float32))
        one_line_error(*c.sh("run", two, "--input", "a=" + c.path("a3.npy"), "--output-dir", c.mkdir("two_in")), 1,
                       "input 'b' has no --input")
        np.save(c.path("b2.npy"), RNG.standard_normal((2, 4)).astype(np.float32))
        one_line_error(*c.sh("run", two, "--input", "a=" + c.path("a3.npy"), "--input", "b=" + c.path("b2.npy")), 1,
                       "'batch'", "3", "2")
    c.test("run: --input for some inputs only is refused", some_inputs_only)

    def wrong_input_name():
        one_line_error(*c.sh("run", small, "--input", "img=" + c.path("x1.npy")), 1, "no input 'img'",
                       "'input' [batch,3,8,8]")
    c.test("run --input with a wrong name lists the inputs", wrong_input_name)

    def duplicate_input():
        one_line_error(*c.sh("run", small, "--input", c.path("x1.npy"), "--input", "input=" + c.path("x1.pb")), 1,
                       "input 'input' given twice")
    c.test("run: a duplicate --input refused", duplicate_input)

    def nhwc():
        np.save(c.path("nhwc.npy"), RNG.standard_normal((1, 8, 8, 3)).astype(np.float32))
        one_line_error(*c.sh("run", small, "--input", c.path("nhwc.npy")), 1, "looks like NHWC", "NCHW",
                       "[1,3,8,8]")
    c.test("run: NHWC data for an NCHW model says so", nhwc)

    def wrong_dtype():
        np.save(c.path("x64.npy"), x1.astype(np.float64))
        one_line_error(*c.sh("run", small, "--input", c.path("x64.npy")), 1, "takes float32", "float64")
    c.test("run: wrong input dtype names both", wrong_dtype)

    def sanitized():
        d = c.mkdir("sanitized")
        ok(*c.sh("run", thr, "--output-dir", d))
        files = sorted(os.listdir(d))
        expect(files == ["logits_out_0.npy"], "output 'logits/out:0' written as %s, want logits_out_0.npy" % files)
    c.test("run: output file name sanitized", sanitized)

    def collide(names, words):
        def t():
            m = save(relu_outputs_model(names), c.path("collide_%d.onnx" % len(os.listdir(c.work))))
            d = c.mkdir("collide_%s" % "_".join(n.replace("/", "s").replace(".", "d") for n in names))
            one_line_error(*c.sh("run", m, "--output-dir", d), 1, *words)
            expect(os.listdir(d) == [], "files written although the names collide: %s" % os.listdir(d))
        return t
    c.test("run: outputs 'a/b' and 'a_b' collide -> error", collide(["a/b", "a_b"], ("'a/b'", "'a_b'", "a_b.npy")))
    c.test("run: outputs '.' and '_' collide -> error", collide([".", "_"], ("'.'", "'_'")))

    def dots():
        m = save(relu_outputs_model([".", ".."]), c.path("dots.onnx"))
        d = c.mkdir("dots")
        ok(*c.sh("run", m, "--output-dir", d))
        expect(sorted(os.listdir(d)) == ["_.npy", "__.npy"], "outputs '.' and '..' written as %s" % os.listdir(d))
        expect(not os.path.exists(c.path("dots.npy")) and not os.path.exists(c.path(".npy")), "a file escaped DIR")
    c.test("run: outputs '.' and '..' stay inside DIR", dots)

    def output_dir_recursive():
        d = c.path("deep", "a", "b", "c")
        ok(*c.sh("run", small, "--output-dir", d))
        expect(os.path.isfile(os.path.join(d, "output.npy")), "--output-dir a/b/c not created")
    c.test("run --output-dir a/b/c is created", output_dir_recursive)

    def output_dir_error():
        with open(c.path("afile"), "w") as f:
            f.write("x")
        one_line_error(*c.sh("run", small, "--output-dir", c.path("afile", "sub")), 1, "Not a directory")
    c.test("run --output-dir error gives the errno text", output_dir_error)

    def symlink_not_followed():
        d = c.mkdir("symlink")
        victim = c.path("victim.txt")
        with open(victim, "w") as f:
            f.write("keep")
        os.symlink(victim, os.path.join(d, "output.npy"))
        ok(*c.sh("run", small, "--output-dir", d))
        expect(open(victim).read() == "keep", "run wrote through a symlink planted at the output path")
        expect(not os.path.islink(os.path.join(d, "output.npy")), "the output is still the symlink")
        expect(np.load(os.path.join(d, "output.npy")).shape == (1, 2), "output.npy unreadable")
    c.test("run: a symlink at the output path is replaced, not followed", symlink_not_followed)

    def deterministic():
        xb = RNG.standard_normal((4, 16, 32, 32)).astype(np.float32)
        np.save(c.path("xb.npy"), xb)
        outs = []
        threads = min(2, os.cpu_count())
        for k in range(2):
            d = c.mkdir("det%d" % k)
            ok(*c.sh("run", thr, "--input", "x=" + c.path("xb.npy"), "--threads", threads, "--output-dir", d))
            with open(os.path.join(d, "logits_out_0.npy"), "rb") as f:
                outs.append(f.read())
        expect(outs[0] == outs[1], "two runs with --threads %d gave different bytes" % threads)
    c.test("run: same input and threads -> identical bytes", deterministic)

    def verbose():
        d = c.mkdir("verbose")
        rc, out, err = c.sh("run", small, "--output-dir", d)
        ok(rc, out, err)
        expect(err == "", "run printed to stderr without --verbose: %r" % err[:200])
        rc, out, err = c.sh("run", small, "--verbose", "--output-dir", d)
        ok(rc, out, err)
        expect(re.search(r"dnnl|step|FusedConv", err), "--verbose printed nothing about the plan: %r" % err[:300])
    c.test("run --verbose prints the plan's steps", verbose)
