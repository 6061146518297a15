"""Shared fixtures of the Python tests (tests/python): the package under test, small models, ORT."""
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))  # compare_models: the C++ tests' comparison

import tiny_models  # noqa: E402


@pytest.fixture(scope="session")
def models_dir():
    return os.environ.get("MODELS_DIR", os.path.join(ROOT, "models"))


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory):
    return tiny_models.save(tiny_models.tiny_convnet(), tmp_path_factory.mktemp("m") / "tiny.onnx")


@pytest.fixture(scope="session")
def two_path(tmp_path_factory):
    return tiny_models.save(tiny_models.two_inputs(), tmp_path_factory.mktemp("m") / "two.onnx")


@pytest.fixture(scope="session")
def tiny(tiny_path):
    import infera
    return infera.InferenceSession(tiny_path, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="session")
def ort_tiny(tiny_path):
    import onnxruntime as ort
    return ort.InferenceSession(tiny_path, providers=["CPUExecutionProvider"])


def rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def has_gpu():
    import infera
    return infera.get_device() == "GPU"


GPU_REASON = "no GPU on this machine (the GPU DLPack path runs only where infera.get_device() == 'GPU')"
