"""InferenceSession and IoBinding: ONNX Runtime's session API over infera's C++ Session."""
import collections
import os
import warnings

from . import _infera
from ._options import RunOptions, SessionOptions, parse_providers

StepTiming = collections.namedtuple("StepTiming", "node op backend ms")
StepTiming.__doc__ = "One executed step of a profiled run: node name ('' for inserted steps), op, backend, ms."


class NodeArg:
    """A model input or output, as ORT's NodeArg: ``name``, ``type`` ("tensor(float)") and ``shape``
    (ints for static dims, the symbol's name for symbolic ones, None for unknown; None when the model
    declares no shape). ``dtype`` is infera's name ("float32")."""

    __slots__ = ("name", "type", "shape", "dtype")

    def __init__(self, name, type, shape, dtype):  # noqa: A002 (ORT's field name)
        self.name, self.type, self.shape, self.dtype = name, type, shape, dtype

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)

    def __eq__(self, other):
        return isinstance(other, NodeArg) and (self.name, self.type, self.shape) == (other.name, other.type, other.shape)

    __hash__ = None


class ModelMetadata:
    """The model's own metadata, as ORT's ModelMetadata: producer_name, graph_name, domain,
    description, graph_description, version and custom_metadata_map (metadata_props)."""

    __slots__ = ("producer_name", "graph_name", "domain", "description", "graph_description", "version",
                 "custom_metadata_map")

    def __init__(self, summary):
        for k in self.__slots__:
            setattr(self, k, summary[k])

    def __repr__(self):
        return "ModelMetadata(%s)" % ", ".join("%s=%r" % (k, getattr(self, k)) for k in self.__slots__)


class InferenceSession:
    """An ONNX model loaded, checked, optimized and ready to run, ONNX Runtime's way::

        sess = infera.InferenceSession("model.onnx", so, providers=["CPUExecutionProvider"])
        outs = sess.run(None, {"input": x})          # list of numpy arrays

    ``path_or_bytes``: a path (str, os.PathLike) or the model's bytes. ``providers``: names in
    priority order ("CPU", "GPU", "CPUExecutionProvider", "CUDAExecutionProvider",
    "ROCMExecutionProvider", "MIGraphXExecutionProvider") or (name, {"device_id": N}) tuples;
    None means the CPU. The session runs on the first provider's device; when that is a GPU
    this build or machine lacks and a CPU provider follows, it falls back to the CPU with a
    warning (get_providers() tells which ran), else the load error is raised.

    One session serves many input shapes (a cached plan each) and many Python threads at once:
    ``run`` releases the GIL. Errors raise infera.InferaError subclasses (InvalidModel,
    InvalidInput, Unsupported, OutOfMemory, DeviceError) with the library's message.
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        if kwargs:
            raise _infera.InvalidInput("InferenceSession: unknown argument(s) %s" % ", ".join(sorted(kwargs)))
        if sess_options is None:
            sess_options = SessionOptions()
        elif not isinstance(sess_options, SessionOptions):
            raise _infera.InvalidInput("sess_options must be an infera.SessionOptions, found %s"
                                       % type(sess_options).__name__)
        self._options = sess_options
        if isinstance(path_or_bytes, (bytearray, memoryview)):
            path_or_bytes = bytes(path_or_bytes)
        elif isinstance(path_or_bytes, os.PathLike):
            path_or_bytes = os.fspath(path_or_bytes)
        model_dir = os.getcwd() if isinstance(path_or_bytes, bytes) else ""
        self._model_path = path_or_bytes if isinstance(path_or_bytes, str) else None
        choices = parse_providers(providers, provider_options)
        error = None
        for k, (device, name) in enumerate(choices):
            try:
                self._core = _infera.load(path_or_bytes, model_dir, **sess_options._core_kwargs(device))
            except (_infera.Unsupported, _infera.DeviceError) as e:
                later_cpu = any(d == "cpu" for d, _ in choices[k + 1:])
                if device == "cpu" or not later_cpu:
                    raise
                error = e
                continue
            if error is not None:
                warnings.warn("infera: %s unavailable (%s); running on the CPU" % (choices[0][1], error), stacklevel=2)
            self._providers = [name] + (["CPUExecutionProvider"] if device != "cpu" else [])
            self._device = device
            break
        self._inputs = [NodeArg(*t) for t in self._core.inputs()]
        self._outputs = [NodeArg(*t) for t in self._core.outputs()]

    # ---- ORT's introspection
    def get_inputs(self):
        """The model's inputs (list of NodeArg), in model order."""
        return list(self._inputs)

    def get_outputs(self):
        """The model's outputs (list of NodeArg), in model order."""
        return list(self._outputs)

    def get_overridable_initializers(self):
        """ORT API; infera does not let feeds override initializers: always []."""
        return []

    def get_providers(self):
        """The providers in use, ORT's names: ["CPUExecutionProvider"], or the GPU's then the CPU's."""
        return list(self._providers)

    def get_provider_options(self):
        """ORT API: {provider: {option: value}} of the providers in use."""
        dev = self._device
        return {p: ({"device_id": dev.split(":")[1]} if p != "CPUExecutionProvider" else {}) for p in self._providers}

    def get_session_options(self):
        """The SessionOptions this session was made with."""
        return self._options

    def get_modelmeta(self):
        """The model's metadata (ModelMetadata)."""
        return ModelMetadata(self._core.summary())

    # ---- infera's additions
    @property
    def device(self):
        """The device the session runs on: "cpu" or "gpu:N"."""
        return self._device

    def summary(self):
        """infera's model summary: opset, IR version, node counts, op histogram, parameters, metadata."""
        return self._core.summary()

    def prepare(self, input_shapes):
        """Makes (or finds) the plan for {input name: shape}; returns its report (arena, weight and
        scratch bytes, also per device; steps per backend; build ms; perf db choices found / timed;
        weights in backend formats reused / converted; peak bytes and chunking; output dims)."""
        return self._core.prepare({k: [int(d) for d in v] for k, v in input_shapes.items()})

    def save_plan(self, path, input_shapes):
        """Writes a saved plan (.iplan, docs/saved_plans.md) with the plans of each of
        ``input_shapes`` (a list of {input name: shape}): the optimized graph, its weights and the
        algorithm choices, for this device and these libraries. InferenceSession(path) loads it
        without optimizing or searching; a plan for another device or library is refused."""
        shapes = [{str(k): [int(d) for d in v] for k, v in dict(s).items()} for s in input_shapes]
        self._core.save_plan(os.fspath(path), shapes)

    def allocated_bytes(self):
        """Bytes the session holds now: weights, arenas and scratch of every run context."""
        return self._core.allocated_bytes()

    def cached_plan_count(self):
        """Plans held now (one per input-shape signature, at most SessionOptions.max_cached_plans)."""
        return self._core.cached_plan_count()

    def close(self):
        """Frees the session's memory now; later calls raise infera.InvalidInput. Runs in flight
        in other threads finish first (they hold the session)."""
        self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- running
    def run(self, output_names, input_feed, run_options=None, output_type="numpy"):
        """Runs the model: ``output_names`` (None = all, or a list of names), ``input_feed``
        {name: array}. Arrays are NumPy arrays or objects with ``__dlpack__`` (PyTorch, CuPy,
        JAX) on the CPU or the session's GPU: read in place when C-contiguous, aligned and of the
        model's dtype, else copied once (never read wrongly). A dtype other than the model's raises
        InvalidInput (no silent cast, as ORT). Returns a list of NumPy arrays (``output_type=
        "numpy"``) or of DLPack-capable arrays (``"dlpack"``: GPU outputs stay on the device).
        The GIL is released while the model runs."""
        if run_options is None and output_type == "numpy":
            return self._core.run(output_names, input_feed)
        if output_type not in ("numpy", "dlpack"):
            raise _infera.InvalidInput("output_type must be \"numpy\" or \"dlpack\", found %r" % (output_type,))
        profile = None
        if run_options is not None:
            if not isinstance(run_options, RunOptions):
                raise _infera.InvalidInput("run_options must be an infera.RunOptions, found %s"
                                           % type(run_options).__name__)
            if run_options.terminate:
                raise _infera.InvalidInput("run_options.terminate is set: the run was not started")
            if run_options.profile:
                profile = []
        outs = self._core.run(output_names, input_feed, output_type == "dlpack", profile)
        if profile is not None:
            run_options.profile_result = [StepTiming(*p) for p in profile]
        return outs

    def profile(self, input_feed, runs=10, warmup=2):
        """Per-layer times, as ``infera profile``: runs the inputs ``warmup`` times, then ``runs``
        times with every step timed (device events on a GPU), and returns one dict per step kind
        and node, slowest first: ``node``, ``op``, ``backend``, ``ms`` (mean per run), ``share``
        (of the summed step time) and ``calls`` (per run). GPU graphs are not used while profiling
        (steps are timed one by one), so the sum may exceed a graph replay's time."""
        if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
            raise _infera.InvalidInput("profile: runs must be an int >= 1, found %r" % (runs,))
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise _infera.InvalidInput("profile: warmup must be an int >= 0, found %r" % (warmup,))
        for _ in range(warmup):
            self.run(None, input_feed)
        ro = RunOptions()
        ro.profile = True
        rows = collections.OrderedDict()
        for _ in range(runs):
            self.run(None, input_feed, ro)
            for t in ro.profile_result:
                key = (t.node, t.op, t.backend)
                ms, calls = rows.get(key, (0.0, 0))
                rows[key] = (ms + t.ms, calls + 1)
        total = sum(ms for ms, _ in rows.values()) or 1.0
        out = [{"node": k[0] or "(inserted %s)" % k[1], "op": k[1], "backend": k[2], "ms": ms / runs,
                "share": ms / total, "calls": calls / runs} for k, (ms, calls) in rows.items()]
        out.sort(key=lambda r: -r["ms"])
        return out

    def run_with_dlpack(self, output_names, input_feed, run_options=None):
        """run(..., output_type="dlpack"): outputs with ``__dlpack__``/``__dlpack_device__``, so that
        ``torch.from_dlpack(out)`` or ``numpy.from_dlpack(out)`` takes them without a copy."""
        return self.run(output_names, input_feed, run_options, output_type="dlpack")

    def io_binding(self):
        """An IoBinding: inputs and preallocated outputs bound once, run with run_with_iobinding."""
        return IoBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        """Runs with the inputs and outputs bound in ``iobinding``; bound output buffers are written
        in place (no copy)."""
        if not isinstance(iobinding, IoBinding) or iobinding._session is not self:
            raise _infera.InvalidInput("run_with_iobinding: the IoBinding must come from this session's io_binding()")
        if run_options is not None and getattr(run_options, "terminate", False):
            raise _infera.InvalidInput("run_options.terminate is set: the run was not started")
        iobinding._run()

    def __repr__(self):
        state = "closed" if self._core.closed else self._device
        return "infera.InferenceSession(%r, %s)" % (self._model_path or "<bytes>", state)


class IoBinding:
    """ORT's IoBinding: bind inputs (``bind_input`` / ``bind_cpu_input``) and outputs
    (``bind_output(name, buffer)`` with a writable, C-contiguous array of the output's dtype and
    shape: written in place; or ``bind_output(name)`` / ``bind_output(name, "cuda")``: allocated by
    the run, on the device for a device type other than "cpu"), then
    ``session.run_with_iobinding(binding)`` and ``get_outputs()`` (bound outputs in binding order)."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}
        self._outputs = collections.OrderedDict()  # name -> buffer or None
        self._device_outputs = False
        self._results = None

    def bind_input(self, name, value, *args, **kwargs):
        """Binds an input: an array or object with __dlpack__ (ORT's raw-pointer form is not supported)."""
        if args or kwargs:
            raise _infera.Unsupported("bind_input: pass the array itself (infera reads it in place when it can)")
        self._inputs[name] = value

    bind_cpu_input = bind_input

    def bind_output(self, name, buffer=None, device_id=0, element_type=None, shape=None, buffer_ptr=None):
        """Binds an output to ``buffer`` (written in place), or to a fresh output on ``buffer``'s
        device type when it is a str ("cpu", "cuda"); None: a host array."""
        if buffer_ptr is not None or element_type is not None or shape is not None:
            raise _infera.Unsupported("bind_output: raw pointers are not supported; pass the array: "
                                      "bind_output(name, numpy.empty(shape, dtype))")
        if name not in [o.name for o in self._session._outputs]:
            raise _infera.InvalidInput("bind_output: unknown output %r (model outputs: %s)"
                                       % (name, ", ".join(repr(o.name) for o in self._session._outputs)))
        if isinstance(buffer, str):
            self._device_outputs = self._device_outputs or buffer != "cpu"
            buffer = None
        self._outputs[name] = buffer

    def clear_binding_inputs(self):
        self._inputs = {}

    def clear_binding_outputs(self):
        self._outputs = collections.OrderedDict()
        self._device_outputs = False

    def synchronize_inputs(self):
        """ORT API; a no-op: infera's runs are synchronous."""

    def synchronize_outputs(self):
        """ORT API; a no-op: infera's runs are synchronous."""

    def _run(self):
        names = [o.name for o in self._session._outputs]
        bound = [self._outputs.get(n) for n in names]
        outs = self._session._core.run_bound(self._inputs, bound, self._device_outputs)
        by_name = dict(zip(names, outs))
        self._results = [by_name[n] for n in (self._outputs or names)]

    def get_outputs(self):
        """The outputs of the last run: bound ones in binding order (all when none were bound)."""
        if self._results is None:
            raise _infera.InvalidInput("IoBinding.get_outputs: run_with_iobinding has not run")
        return list(self._results)

    def copy_outputs_to_cpu(self):
        """The last run's outputs as NumPy arrays (host outputs only)."""
        import numpy as np
        return [np.asarray(o) if isinstance(o, np.ndarray) else np.from_dlpack(o) for o in self.get_outputs()]


class MultiDeviceSession:
    """One model on several devices at once, data-parallel (docs/multi_device.md)::

        sess = infera.MultiDeviceSession("model.onnx", devices="gpu:all")
        outs = sess.run(None, {"input": x})          # list of numpy arrays, rows in input order

    ``devices``: "gpu:all", "gpu:0,1", "gpu:0,0" (two engines on one GPU), "cpu,cpu". ``mode``:
    "latency" (each run's batch split into one block of rows per device, run at once; the model's
    samples must be independent) or "throughput" (each run goes whole to the next device in turn:
    call ``run`` from several threads). ``sess_options`` as for InferenceSession (its device is
    replaced by each entry of ``devices``). ``run`` takes host arrays and releases the GIL."""

    def __init__(self, path, devices="gpu:all", mode="latency", sess_options=None):
        if sess_options is None:
            sess_options = SessionOptions()
        elif not isinstance(sess_options, SessionOptions):
            raise _infera.InvalidInput("sess_options must be an infera.SessionOptions, found %s"
                                       % type(sess_options).__name__)
        if not isinstance(devices, str) or not isinstance(mode, str):
            raise _infera.InvalidInput("devices and mode must be str")
        self._core = _infera.load_multi(os.fspath(path), devices, mode, **sess_options._core_kwargs("cpu"))
        self._inputs = [NodeArg(*t) for t in self._core.inputs()]
        self._outputs = [NodeArg(*t) for t in self._core.outputs()]
        self.mode = mode

    def get_inputs(self):
        """The model's inputs (list of NodeArg), in model order."""
        return list(self._inputs)

    def get_outputs(self):
        """The model's outputs (list of NodeArg), in model order."""
        return list(self._outputs)

    @property
    def device_count(self):
        """How many engines (devices, with repeats) the session runs on."""
        return self._core.device_count()

    def run(self, output_names, input_feed):
        """Runs on {input name: array}; returns the outputs named (None: all) as numpy arrays."""
        return self._core.run(output_names, input_feed)

    def stats(self):
        """Per device since load or reset_stats(): device, numa_node, pinned, runs, rows, busy_ms."""
        return self._core.stats()

    def reset_stats(self):
        self._core.reset_stats()
