"""SessionOptions, RunOptions and the provider names, shaped like ONNX Runtime's (see docs/python.md)."""
import enum
import os
import warnings

from . import _infera


class GraphOptimizationLevel(enum.IntEnum):
    """ONNX Runtime's levels. Infera runs all its graph passes unless ORT_DISABLE_ALL."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for compatibility: infera runs a plan's steps in order (threads inside each op)."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """Options of an InferenceSession (ONNX Runtime's names where ORT has the concept).

    ORT fields with an effect: ``intra_op_num_threads`` (threads per run; 0 = all cores),
    ``graph_optimization_level`` (``ORT_DISABLE_ALL`` turns infera's graph passes off).
    ORT fields accepted without effect (they tune ORT's own scheduler and allocator):
    ``inter_op_num_threads``, ``execution_mode``, ``log_severity_level``, ``log_verbosity_level``,
    ``logid``, ``enable_cpu_mem_arena``, ``enable_mem_pattern``, ``enable_mem_reuse``,
    ``use_deterministic_compute`` (infera's runs are deterministic) and config entries.
    ORT fields refused when set (infera cannot do what they ask): ``enable_profiling`` (use
    ``RunOptions.profile``), ``optimized_model_filepath``.

    Infera's own: ``precision`` ("fp32", or "fp16" on a GPU), ``backends`` (priority list, e.g.
    ["dnnl", "ref"]), ``max_cached_plans`` (plans per input-shape signature, LRU),
    ``max_run_contexts`` (concurrent runs kept warm per plan; 0 = cores), ``allow_tf32``,
    ``vendor_libraries`` (cuDNN/cuBLASLt candidates on the GPU), ``enable_graph`` (GPU graphs:
    None = auto, True, False), ``verbose`` (-1: from INFERA_VERBOSE; 1: print each plan).
    ``perf_db``: the performance database of algorithm choices (a path; None = the default file,
    $XDG_CACHE_HOME/infera/perfdb.json; "none" = no database), as ``infera --perf-db``.
    ``memory_budget_bytes``: the most one run may hold on the device (0 = none on the CPU, the GPU's
    memory on a GPU); a larger batch runs in chunks that fit (docs/memory.md).
    ``arena_extend_strategy``: "kSameAsRequested" (default) or "kNextPowerOfTwo" (ORT's names):
    how the session's arena blocks are sized.
    """

    __slots__ = ("intra_op_num_threads", "inter_op_num_threads", "graph_optimization_level", "execution_mode",
                 "log_severity_level", "log_verbosity_level", "logid", "enable_cpu_mem_arena", "enable_mem_pattern",
                 "enable_mem_reuse", "use_deterministic_compute", "enable_profiling", "optimized_model_filepath",
                 "precision", "backends", "max_cached_plans", "max_run_contexts", "allow_tf32", "vendor_libraries",
                 "enable_graph", "verbose", "memory_budget_bytes", "arena_extend_strategy", "perf_db", "_config")

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.use_deterministic_compute = False
        self.enable_profiling = False
        self.optimized_model_filepath = ""
        self.precision = "fp32"
        self.backends = []
        self.max_cached_plans = 8
        self.max_run_contexts = 0
        self.allow_tf32 = False
        self.vendor_libraries = True
        self.enable_graph = None
        self.verbose = -1
        self.memory_budget_bytes = 0
        self.arena_extend_strategy = "kSameAsRequested"
        self.perf_db = None
        self._config = {}

    def add_session_config_entry(self, key, value):
        """Stores an ORT config entry (accepted for compatibility; infera reads none)."""
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        """The value stored by add_session_config_entry (KeyError-free: "" when unset)."""
        return self._config.get(str(key), "")

    def __repr__(self):
        return "SessionOptions(%s)" % ", ".join(
            "%s=%r" % (k, getattr(self, k)) for k in self.__slots__ if not k.startswith("_"))

    def _core_kwargs(self, device):
        """The keyword arguments of _infera.load; raises InvalidInput/Unsupported for bad values."""
        def integer(name, lo=0):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise _infera.InvalidInput("SessionOptions.%s must be an int >= %d, found %r" % (name, lo, v))
            return v

        if self.enable_profiling:
            raise _infera.Unsupported("SessionOptions.enable_profiling: infera profiles per run "
                                      "(RunOptions.profile = True fills RunOptions.profile_result)")
        if self.optimized_model_filepath:
            raise _infera.Unsupported("SessionOptions.optimized_model_filepath: infera does not write "
                                      "optimized models")
        if self.arena_extend_strategy not in ("kSameAsRequested", "kNextPowerOfTwo"):
            raise _infera.InvalidInput("SessionOptions.arena_extend_strategy must be \"kSameAsRequested\" or "
                                       "\"kNextPowerOfTwo\", found %r" % (self.arena_extend_strategy,))
        perf_db = "" if self.perf_db is None else self.perf_db
        if isinstance(perf_db, os.PathLike):
            perf_db = os.fspath(perf_db)
        if not isinstance(perf_db, str):
            raise _infera.InvalidInput("SessionOptions.perf_db must be None, a path or \"none\", found %r"
                                       % (self.perf_db,))
        graph = {None: "auto", True: "on", False: "off"}.get(self.enable_graph)
        if graph is None:
            raise _infera.InvalidInput("SessionOptions.enable_graph must be None, True or False, found %r"
                                       % (self.enable_graph,))
        try:
            level = GraphOptimizationLevel(self.graph_optimization_level)
        except ValueError:
            raise _infera.InvalidInput("SessionOptions.graph_optimization_level: %r is not a "
                                       "GraphOptimizationLevel" % (self.graph_optimization_level,)) from None
        backends = list(self.backends) if self.backends else []
        if not all(isinstance(b, str) for b in backends):
            raise _infera.InvalidInput("SessionOptions.backends must be a list of names, found %r" % (self.backends,))
        if not isinstance(self.precision, str):
            raise _infera.InvalidInput("SessionOptions.precision must be a str (\"fp32\", \"fp16\"), found %r"
                                       % (self.precision,))
        verbose = self.verbose
        if isinstance(verbose, bool) or not isinstance(verbose, int):
            raise _infera.InvalidInput("SessionOptions.verbose must be an int, found %r" % (verbose,))
        return dict(device=device, precision=self.precision, backends=backends,
                    num_threads=integer("intra_op_num_threads"), optimize=level != GraphOptimizationLevel.ORT_DISABLE_ALL,
                    max_cached_plans=integer("max_cached_plans", 1), max_run_contexts=integer("max_run_contexts"),
                    allow_tf32=bool(self.allow_tf32), vendor_libraries=bool(self.vendor_libraries), gpu_graphs=graph,
                    verbose=verbose, perf_db=perf_db, memory_budget_bytes=integer("memory_budget_bytes"),
                    arena_extend=self.arena_extend_strategy)


class RunOptions:
    """Options of one run. ``profile = True`` fills ``profile_result`` with one StepTiming
    (node, op, backend, ms) per executed step. ``terminate = True`` makes the run refuse to start.
    ``log_severity_level``, ``log_verbosity_level``, ``logid`` and ``run_tag`` are accepted for
    compatibility with ONNX Runtime and have no effect."""

    __slots__ = ("log_severity_level", "log_verbosity_level", "logid", "run_tag", "terminate", "profile",
                 "profile_result")

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.terminate = False
        self.profile = False
        self.profile_result = []


# ORT provider names -> infera device kinds.
_GPU_PROVIDERS = ("GPU", "CUDAExecutionProvider", "ROCMExecutionProvider", "MIGraphXExecutionProvider")
_CPU_PROVIDERS = ("CPU", "CPUExecutionProvider")
_GPU_OPTION_KEYS_USED = ("device_id",)


def gpu_provider_name():
    """The ORT name of this build's GPU provider ("CUDAExecutionProvider" or "ROCMExecutionProvider")."""
    return "ROCMExecutionProvider" if _infera.gpu_build() == "hip" else "CUDAExecutionProvider"


def get_available_providers():
    """Providers this build can run, in ORT's order (GPU first): the GPU only in a GPU build with a
    usable device."""
    gpu = any(b["device"].startswith("gpu") and b["available"] for b in _infera.available_backends())
    return ([gpu_provider_name()] if gpu else []) + ["CPUExecutionProvider"]


def get_all_providers():
    """Every provider name InferenceSession accepts."""
    return list(_GPU_PROVIDERS + _CPU_PROVIDERS)


def parse_providers(providers, provider_options):
    """[(device string, ORT name)] in priority order from ORT-style providers (names or
    (name, options) tuples) and the optional parallel provider_options list."""
    if providers is None:
        return [("cpu", "CPUExecutionProvider")]
    if isinstance(providers, (str, tuple)):
        providers = [providers]
    providers = list(providers)
    if provider_options is not None and len(provider_options) != len(providers):
        raise _infera.InvalidInput("provider_options has %d entries for %d providers"
                                   % (len(provider_options), len(providers)))
    out = []
    for i, p in enumerate(providers):
        opts = dict(provider_options[i]) if provider_options is not None else {}
        if isinstance(p, tuple):
            if len(p) != 2 or not isinstance(p[0], str) or not isinstance(p[1], dict):
                raise _infera.InvalidInput("provider %r: expected a name or (name, {options})" % (p,))
            p, more = p
            opts.update(more)
        if not isinstance(p, str):
            raise _infera.InvalidInput("provider %r: expected a name or (name, {options})" % (p,))
        if p in _CPU_PROVIDERS:
            out.append(("cpu", "CPUExecutionProvider"))
        elif p in _GPU_PROVIDERS:
            dev = opts.get("device_id", 0)
            try:
                dev = int(dev)
            except (TypeError, ValueError):
                raise _infera.InvalidInput("provider %s: device_id must be an int, found %r" % (p, dev)) from None
            if dev < 0:
                raise _infera.InvalidInput("provider %s: device_id must be >= 0, found %d" % (p, dev))
            ignored = sorted(k for k in opts if k not in _GPU_OPTION_KEYS_USED)
            if ignored:
                warnings.warn("infera: provider %s options %s have no infera equivalent and are ignored"
                              % (p, ", ".join(ignored)), stacklevel=3)
            out.append(("gpu:%d" % dev, gpu_provider_name() if p == "GPU" else p))
        else:
            raise _infera.InvalidInput("unknown provider %r (infera accepts %s)" % (p, ", ".join(get_all_providers())))
    if not out:
        raise _infera.InvalidInput("providers is empty: give at least one (e.g. [\"CPUExecutionProvider\"])")
    return out
