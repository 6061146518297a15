#!/usr/bin/env python3
"""The `infera` command-line contract: commands, flags, help, shapes, files written, exit codes.

Run with the PATH python3 (PyPI onnx, onnxruntime, numpy):
    python3 tests/cli/test_cli.py [--infera build/infera]
Builds small models with onnx.helper in a temporary folder. Prints PASS/FAIL per check and last
`N passed, M failed`; exit 1 on any failure. The comparisons with ONNX Runtime FAIL (never skip)
when onnxruntime is missing. Malformed models/inputs are tests/badinput's job.

  cases_usage.py   usage errors, help of every command, did-you-mean, numeric ranges
  cases_run.py     run and info: inputs, outputs, --shape/--batch, free and fixed dims, output files
  cases_bench.py   bench: configuration, rows, statistics, memory, JSON, --profile
  cases_check.py   check: every dtype compared, NaN, messages, data-file names, --skip-file, --json
  cases_tune_profile_doctor.py   tune, profile, doctor and the algorithm-search flags (perf db)
  cases_build.py   build and saved plans: run/bench/info of a .iplan, refusals
  cases_quant.py   int8: a quantize_static model vs ONNX Runtime
  cases_images.py  int8: calibration from a folder of JPEG/PNG images vs torchvision; bad images
  cases_mixed_top1.py  int8: mixed precision under a top-1 budget (--calib-labels) on the Fashion model
"""
import argparse
import os
import sys
import tempfile

import numpy as np
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases_bench  # noqa: E402
import cases_build  # noqa: E402
import cases_check  # noqa: E402
import cases_images  # noqa: E402
import cases_mixed_top1  # noqa: E402
import cases_quant  # noqa: E402
import cases_run  # noqa: E402
import cases_tune_profile_doctor  # noqa: E402
import cases_usage  # noqa: E402
from cli_util import RNG, Cli, doctor_case, save, small_model  # noqa: E402

try:
    import onnxruntime as ort
except ImportError:
    ort = None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--infera", default="build/infera")
    args = ap.parse_args()
    if not (os.path.isfile(args.infera) and os.access(args.infera, os.X_OK)):
        sys.stderr.write("test_cli.py: %s is not an executable; build infera first\n" % args.infera)
        return 1
    tmp = tempfile.TemporaryDirectory(prefix="infera-cli-")
    c = Cli(os.path.abspath(args.infera), tmp.name)
    if ort is None:
        print("note: onnxruntime is not installed: the comparisons with it will FAIL", flush=True)
    small = save(small_model(), c.path("small.onnx"))
    x1 = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(c.path("x1.npy"), x1)
    with open(c.path("x1.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x1, "input").SerializeToString())

    cases_usage.add(c, small)
    cases_run.add(c, ort, small, x1)
    cases_bench.add(c, small)
    cases_check.add(c, ort, x1)
    cases_tune_profile_doctor.add(c, small)
    cases_build.add(c)
    cases_quant.add(c, ort)
    cases_images.add(c, ort)
    cases_mixed_top1.add(c, ort)
    c.test("doctor: oneDNN, cores, ISA, GPU line", doctor_case(c))

    tmp.cleanup()
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
