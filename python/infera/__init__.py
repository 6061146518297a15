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
             fp32_layers=(), int8_layers=(), labels=None, preprocess=None, batch=None, max_image_pixels=None):
    """INT8 post-training quantization, as `infera quantize`: runs the float model over
    ``calibration_data``, keeps one range per activation by ``method`` ("minmax", "percentile:99.99"
    or "entropy"), and writes a QDQ model (per-channel int8 weights, int8 activations) to
    ``output_path``, which infera runs as int8 on the CPU and ONNX Runtime runs too. Returns the
    calibration table: ``{"method": str, "amax": {tensor name: float}}``.

    ``calibration_data`` is an iterable of arrays, each a batch for the model's single input, or a
    path read as ``infera quantize --calibration PATH`` reads it (the same C++ code): an .npy array
    [N, ...] (batches of ``batch``, default 32; a batch the model fixes wins), a folder of .npy files,
    or with ``preprocess`` a folder of JPEG/PNG images (sorted by name) turned into samples by that
    spec, the syntax of ``--calib-preprocess`` (docs/int8.md), e.g.
    ``"resize=256,crop=224,mean=0.485:0.456:0.406,std=0.229:0.224:0.225,layout=nchw"``;
    ``max_image_pixels`` lowers the pixel limit of one image (default and most 2^26).

    With ``accuracy_budget`` (a relative output error, e.g. 0.01) the mix is chosen as
    ``infera quantize --precision mixed`` does: the layers most sensitive to int8 stay float until
    the measured error fits (``fp32_layers`` / ``int8_layers`` force layers by node name); the
    result then also has ``layers`` (layer, precision, sensitivity, why), ``measure``
    ("relative_error") and the errors with all layers int8, estimated and measured. With ``labels``
    (integers >= 0, one class per calibration sample row in order: ``--calib-labels``) the mix is
    measured as top-1 on them instead: ``accuracy_budget`` and the errors are top-1 points lost
    (0..100), ``measure`` is "top1", and ``float_top1`` (0..1) and ``rows`` are added. Errors are
    infera exceptions naming the sample or tensor at fault (an empty set, NaN/Inf in a sample, a
    shape the model refuses, an unknown layer, a bad spec or label)."""
    import os
    is_path = isinstance(calibration_data, (str, bytes, os.PathLike))
    path = os.fsdecode(calibration_data) if is_path else ""
    if is_path and not path:
        raise InvalidInput("calibration_data: an empty path")
    samples = [] if is_path else list(calibration_data)
    budget = -1.0 if accuracy_budget is None else float(accuracy_budget)
    if accuracy_budget is not None and not budget >= 0:
        raise InvalidInput("accuracy_budget must be a number >= 0, found %r" % (accuracy_budget,))
    if preprocess is not None and not isinstance(preprocess, str):
        raise InvalidInput("preprocess must be a spec str (as --calib-preprocess), found %r" % (preprocess,))
    if not is_path and (preprocess is not None or batch is not None):
        raise InvalidInput("preprocess and batch apply to calibration data read from a path (a folder of images, "
                           "an .npy file or folder); the arrays of a list are batches already")
    if max_image_pixels is not None and preprocess is None:
        raise InvalidInput("max_image_pixels limits calibration images: give preprocess=SPEC")
    batch = 32 if batch is None else _int_arg("batch", batch, 1, 65536)
    pixels = 0 if max_image_pixels is None else _int_arg("max_image_pixels", max_image_pixels, 1, 2**63 - 1)
    if labels is not None:
        if accuracy_budget is None:
            raise InvalidInput("labels measure the mixed-precision choice as top-1: give accuracy_budget (points)")
        if budget > 100:
            raise InvalidInput("accuracy_budget with labels is in points of top-1, 0..100, found %r"
                               % (accuracy_budget,))
        labels = _labels_arg(labels)
    return _infera.quantize(os.fspath(model_path), os.fspath(output_path), path, samples, str(method),
                            int(num_threads), budget, [str(x) for x in fp32_layers], [str(x) for x in int8_layers],
                            labels, preprocess, batch, pixels)


def _int_arg(name, v, lo, hi):
    import operator
    try:
        n = operator.index(v)
    except TypeError:
        raise InvalidInput("%s must be an int, found %r" % (name, v)) from None
    if not lo <= n <= hi:
        raise InvalidInput("%s must be in %d..%d, found %d" % (name, lo, hi, n))
    return n


def _labels_arg(labels):
    """Labels as a list of ints: one dimension, an integer dtype, every value >= 0."""
    import numpy as np
    y = np.asarray(labels)
    if y.ndim != 1:
        raise InvalidInput("labels must be one-dimensional (one class per calibration sample row), found shape %s"
                           % (list(y.shape),))
    if y.dtype.kind not in "iu":
        raise InvalidInput("labels must be integers (class indices), found dtype %s" % y.dtype)
    if y.size and y.min() < 0:
        i = int(np.argmin(y))
        raise InvalidInput("labels[%d] is %d: labels are class indices >= 0" % (i, int(y[i])))
    if y.size and int(y.max()) > np.iinfo(np.int64).max:
        raise InvalidInput("labels[%d] is %d: past int64" % (int(np.argmax(y)), int(y.max())))
    return [int(v) for v in y.tolist()]


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
