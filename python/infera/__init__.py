"""infera: a C++ inference engine for convolutional networks, with ONNX Runtime's Python session API.

Switching from ONNX Runtime is one line::

    import infera as ort                      # was: import onnxruntime as ort
    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    outs = sess.run(None, {sess.get_inputs()[0].name: x})

Inputs are NumPy arrays or any object with ``__dlpack__`` (PyTorch, CuPy, JAX), read in place when
they already fit; ``run_with_dlpack`` returns outputs that ``torch.from_dlpack`` takes without a copy.
``run`` releases the GIL, and one session may run in many threads at once. Errors are
``infera.InferaError`` subclasses carrying the library's status ``code`` and message.
The CLI is bundled: ``python -m infera run|bench|info|check|doctor ...``. See docs/python.md.
"""
from . import _infera
from ._infera import (DeviceError, InferaError, InternalError, InvalidInput, InvalidModel, IoError, OutOfMemory,
                      Unsupported)
from ._options import (ExecutionMode, GraphOptimizationLevel, RunOptions, SessionOptions, get_all_providers,
                       get_available_providers)
from ._session import InferenceSession, IoBinding, ModelMetadata, NodeArg, StepTiming

__version__ = _infera.version()

__all__ = ["InferenceSession", "SessionOptions", "RunOptions", "IoBinding", "NodeArg", "ModelMetadata", "StepTiming",
           "GraphOptimizationLevel", "ExecutionMode", "InferaError", "InvalidModel", "InvalidInput", "Unsupported",
           "OutOfMemory", "DeviceError", "IoError", "InternalError", "get_available_providers", "get_all_providers",
           "get_device", "available_backends", "cli_path", "quantize", "__version__"]


def get_device():
    """"GPU" when this build can run on a GPU here, else "CPU" (ORT's get_device)."""
    return "GPU" if len(get_available_providers()) > 1 else "CPU"


def available_backends():
    """infera's backends: a list of dicts (name, device, available, version, details), as `infera doctor`."""
    return _infera.available_backends()


def quantize(model_path, output_path, calibration_data, method="minmax", num_threads=0):
    """INT8 post-training quantization, as `infera quantize`: runs the float model over
    ``calibration_data`` (an iterable of arrays, each a batch for the model's single input),
    keeps one range per activation by ``method`` ("minmax", "percentile:99.99" or "entropy"),
    and writes a QDQ model (per-channel int8 weights, int8 activations) to ``output_path``, which
    infera runs as int8 on the CPU and ONNX Runtime runs too. Returns the calibration table:
    ``{"method": str, "amax": {tensor name: float}}``. Errors are infera exceptions naming the
    sample or tensor at fault (an empty set, NaN/Inf in a sample, a shape the model refuses)."""
    import os
    samples = list(calibration_data)
    return _infera.quantize(os.fspath(model_path), os.fspath(output_path), samples, str(method), int(num_threads))


def cli_path():
    """The path of the bundled `infera` command-line tool (python -m infera runs it)."""
    import os
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "infera")


for _cls in (InferenceSession, IoBinding, ModelMetadata, NodeArg, StepTiming, SessionOptions, RunOptions,
             GraphOptimizationLevel, ExecutionMode):
    _cls.__module__ = "infera"  # help() and reprs name the public module
del _cls
