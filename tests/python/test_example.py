"""examples/python/classify.py runs: exports a torchvision model on the fly (Debian's torch in a
subprocess), classifies an image with infera, prints the top-5 and the time, matches torch."""
import os
import re
import subprocess
import sys

from conftest import ROOT


def test_classify_example():
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "classify.py"), "--runs", "3"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(re.findall(r"^\s+\d+: 0\.\d{4}$", p.stdout, re.M)) == 5, p.stdout
    assert re.search(r"run [0-9.]+ ms \(median of 3\)", p.stdout), p.stdout
    assert "top-5 identical" in p.stdout, p.stdout
