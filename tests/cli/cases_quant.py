"""int8 (issue 11): a model quantized by ONNX Runtime's quantize_static runs in infera as int8 (the
quantize_qdq pass + oneDNN int8 convolutions) and agrees with ONNX Runtime within one quantization
step for >= 99% of the elements (tests/quant/qdq_vs_ort.py prints the measured mismatch)."""
import os
import subprocess
import sys

from cli_util import expect

HERE = os.path.dirname(os.path.abspath(__file__))


def add(c, ort):
    def qdq_vs_ort():
        expect(ort is not None, "needs onnxruntime")
        script = os.path.join(HERE, "..", "quant", "qdq_vs_ort.py")
        p = subprocess.run([sys.executable, script, "--infera", c.infera, "--keep", c.mkdir("qdq_vs_ort")],
                           capture_output=True, text=True, timeout=300)
        lines = [l for l in p.stdout.splitlines() if l.startswith("qdq_vs_ort:")]
        expect(p.returncode == 0 and lines and lines[-1].endswith("PASS"),
               "exit %d: %s" % (p.returncode, " | ".join(lines) or p.stderr.strip()[-300:]))
        expect(any("5 QConv" in l for l in lines), "not every conv ran as QConv: %s" % lines)

    c.test("int8: quantize_static QDQ model vs ONNX Runtime", qdq_vs_ort)
