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
from ._session import InferenceSession, IoBinding, ModelMetadata, MultiDeviceSession, NodeArg, StepTiming

__version__ = _infera.version()

__all__ = ["InferenceSession", "MultiDeviceSession", "SessionOptions", "RunOptions", "IoBinding", "NodeArg", "ModelMetadata", "StepTiming",
           "GraphOptimizationLevel", "ExecutionMode", "InferaError", "InvalidModel", "InvalidInput", "Unsupported",
           "OutOfMemory", "DeviceError", "IoError", "InternalError", "get_available_providers", "get_all_providers",
           "get_device", "available_backends", "cli_path", "quantize", "build", "__version__"]


def get_device():
    """"GPU" when this build can run on a GPU here, else "CPU" (ORT's get_device)."""
    return "GPU" if len(get_available_providers()) > 1 else "CPU"


def available_backends():
    """infera's backends: a list of dicts (name, device, available, version, details), as `infera doctor`."""
    return _infera.available_backends()


def quantize(model_path, output_path, calibration_data, method="minmax", num_threads=0, accuracy_budget=None,
             fp32_layers=(), int8_layers=()):
    """INT8 post-training quantization, as `infera quantize`: runs the float model over
    ``calibration_data`` (an iterable of arrays, each a batch for the model's single input),
    keeps one range per activation by ``method`` ("minmax", "percentile:99.99" or "entropy"),
    and writes a QDQ model (per-channel int8 weights, int8 activations) to ``output_path``, which
    infera runs as int8 on the CPU and ONNX Runtime runs too. Returns the calibration table:
    ``{"method": str, "amax": {tensor name: float}}``.

    With ``accuracy_budget`` (a relative output error, e.g. 0.01) the mix is chosen as
    ``infera quantize --precision mixed`` does: the layers most sensitive to int8 stay float until
    the measured error fits (``fp32_layers`` / ``int8_layers`` force layers by node name); the
    result then also has ``layers`` (layer, precision, sensitivity, why) and the errors with all
    layers int8, estimated and measured. Errors are infera exceptions naming the sample or tensor
    at fault (an empty set, NaN/Inf in a sample, a shape the model refuses, an unknown layer)."""
    import os
    samples = list(calibration_data)
    budget = -1.0 if accuracy_budget is None else float(accuracy_budget)
    if accuracy_budget is not None and not budget >= 0:
        raise InvalidInput("accuracy_budget must be a number >= 0, found %r" % (accuracy_budget,))
    return _infera.quantize(os.fspath(model_path), os.fspath(output_path), samples, str(method), int(num_threads),
                            budget, [str(x) for x in fp32_layers], [str(x) for x in int8_layers])


def build(model_path, output_path, batches=(1,), sess_options=None, providers=None, input_shapes=None):
    """A saved plan, as `infera build MODEL -o OUT --batch LIST`: loads the model with these options
    and providers, prepares the plan of each batch size (the first dim of the model's one input; or
    the given ``input_shapes``, a list of {input name: shape}) and writes ``output_path``.
    Returns the InferenceSession that made it."""
    sess = InferenceSession(model_path, sess_options, providers=providers)
    if input_shapes is None:
        ins = sess.get_inputs()
        if len(ins) != 1 or not ins[0].shape:
            raise InvalidInput("build: give input_shapes for a model with %d inputs" % len(ins))
        rest = ins[0].shape[1:]
        if not all(isinstance(d, int) for d in rest):
            raise InvalidInput("build: input %r has free dims besides the batch: give input_shapes" % ins[0].name)
        input_shapes = [{ins[0].name: [int(b)] + list(rest)} for b in batches]
    sess.save_plan(output_path, input_shapes)
    return sess


def cli_path():
    """The path of the bundled `infera` command-line tool (python -m infera runs it)."""
    import os
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "infera")


for _cls in (InferenceSession, MultiDeviceSession, IoBinding, ModelMetadata, NodeArg, StepTiming, SessionOptions, RunOptions,
             GraphOptimizationLevel, ExecutionMode):
    _cls.__module__ = "infera"  # help() and reprs name the public module
del _cls
