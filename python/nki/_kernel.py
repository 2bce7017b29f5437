"""Kernels: tracing a launch into a native program, running it, and reporting its modeled time.

A launch traces every SPMD instance of the grid into one program (instances run one after the
other on one NeuronCore, sharing its engines), checks it (hardware rules while tracing, on-chip
capacity after), models its time, and runs it in C++ on the caller's arrays. Programs are
cached per grid, target, argument shapes and dtypes and non-tensor argument values, so a
training loop traces once.
"""

import dataclasses
import functools
import inspect
import itertools
import time

import numpy as np

from nki import _dtypes, _tracer
from nki._tensor import NkiTensor, Storage, hbm


@dataclasses.dataclass
class KernelRun:
    """What one launch did and what it would take on the modeled NeuronCore."""

    kernel: str
    target: str
    grid: tuple
    instructions: int
    latency_us: float  # modeled time from the first instruction to the last one's completion
    engine_busy_us: dict  # per engine
    engine_instructions: dict
    sbuf_peak_bytes_per_partition: int
    psum_peak_bytes_per_partition: int
    matmul_flops: float
    dma_bytes: float
    trace_s: float  # wall time spent tracing (0 when the program came from the cache)
    run_s: float  # wall time of the C++ interpreter
    program: object = dataclasses.field(repr=False, default=None)

    def timeline(self):
        """Per instruction: (api, origin, engine, start_us, end_us, done_us)."""
        return [
            (api, where, engine, start * 1e6, end * 1e6, done * 1e6)
            for api, where, engine, start, end, done in self.program.timeline()
        ]


_last_run = None


def last_run():
    """The KernelRun of the most recent launch in this process (None before the first)."""
    return _last_run


class _Traced:
    def __init__(self, tracer, inputs, outputs, returns, schedule, trace_s):
        self.tracer = tracer
        self.inputs = inputs  # [(arg index, Storage)]
        self.outputs = outputs  # [Storage] of returned shared_hbm tensors, in return order
        self.returns = (
            returns  # structure: None, ("one", k), ("tuple", [k...]); k = ("out", i) / ("in", j)
        )
        self.schedule = schedule
        self.trace_s = trace_s


def _freeze(value):
    """A hashable key for a non-tensor argument, or raise TypeError."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    hash(value)
    return (type(value).__qualname__, value)


class Kernel:
    """An @nki.jit kernel. ``kernel[g0, g1](...)`` launches an SPMD grid."""

    def __init__(self, func, grid=(), legacy=False, mode=None, **options):
        self.func = func
        self.grid = grid
        self.legacy = legacy
        self.mode = mode
        self.options = options
        self._cache = {}  # traced programs; shared with the kernel's grid variants
        self._root = self  # the kernel its grid variants were indexed from
        self.last_run = None
        functools.update_wrapper(self, func)

    # Kernels are equal when they launch the same function on the same grid (torch.compile
    # guards on kernels it treats as constants with these).
    def __eq__(self, other):
        return (
            isinstance(other, Kernel)
            and self.func is other.func
            and self.grid == other.grid
            and self.legacy == other.legacy
        )

    def __hash__(self):
        return hash((id(self.func), self.grid, self.legacy))

    @property
    def sign(self):
        return inspect.signature(self.func)

    signature = sign

    def __getitem__(self, grid):
        if not isinstance(grid, tuple):
            grid = (grid,)
        grid = tuple(int(g) for g in grid)
        for g in grid:
            if g < 1:
                raise ValueError(f"SPMD grid {grid} has a dimension below 1")
        k = Kernel(self.func, grid, self.legacy, self.mode, **self.options)
        k._cache = self._cache
        k._root = self._root
        return k

    def __call__(self, *args, **kwargs):
        if _tracer.current() is not None:
            if self.grid:
                raise RuntimeError(
                    "Calling a NKI kernel with a SPMD grid from another NKI kernel is not supported."
                )
            return self.func(*args, **kwargs)  # a helper kernel: inlined into the caller's trace
        if _has_torch_tensor(args, kwargs) and _dynamo_compiling():
            # Inside torch.compile: the same operator wrap_nki calls, opaque to Dynamo.
            from nki import _torch_hop

            return _torch_hop.compiled_call(self._root, self.grid, args, kwargs)
        return launch(self, args, kwargs)


def _target():
    from nki import language as nl

    return nl.target()


def _trace(kernel: Kernel, bound: inspect.BoundArguments, target: str):
    start = time.perf_counter()
    tracer = _tracer.Tracer(target, kernel.grid, kernel.legacy)
    params = list(bound.arguments.items())
    with tracer:
        inputs = []
        values = {}
        for index, (name, value) in enumerate(params):
            if isinstance(value, np.ndarray):
                dtype = _dtypes.dtype_name(value.dtype)
                storage = Storage(
                    tracer, name, hbm, dtype, value.shape or (1,), external=True, is_input=True
                )
                inputs.append((index, storage))
                values[name] = NkiTensor(storage)
            else:
                values[name] = value
        grid_points = list(itertools.product(*(range(g) for g in kernel.grid))) or [()]
        returned = None
        for pid in grid_points:
            tracer.pid = pid
            tracer.shared_cursor = 0
            result = kernel.func(**values)
            if returned is None:
                returned = result
        outputs, returns = _returns(returned, inputs)
        # Results are shared_hbm tensors; at run time they live in arrays the caller gets back.
        for storage in outputs:
            tracer.program.set_external(storage.id)
        schedule = tracer.program.schedule()
    return _Traced(tracer, inputs, outputs, returns, schedule, time.perf_counter() - start)


def _returns(returned, inputs):
    outputs = []
    input_ids = {s.id: j for j, (_, s) in enumerate(inputs)}

    def ref(t):
        if not isinstance(t, NkiTensor):
            raise TypeError(f"a kernel returns NKI tensors in HBM, got {type(t).__name__}")
        if t.on_chip:
            raise TypeError(
                f"kernel returns `{t.name}` from {t._storage.memory}; allocate results with "
                "buffer=nl.shared_hbm and store into them"
            )
        if t._storage.id in input_ids:
            return ("in", input_ids[t._storage.id])
        if t._storage not in outputs:
            outputs.append(t._storage)
        return ("out", outputs.index(t._storage))

    if returned is None:
        return outputs, None
    if isinstance(returned, (tuple, list)):
        return outputs, ("tuple", [ref(t) for t in returned])
    return outputs, ("one", ref(returned))


def launch(kernel: Kernel, args, kwargs):
    """Runs |kernel| on NumPy arrays or torch tensors and returns the same kind."""
    if _has_torch_tensor(args, kwargs):
        from nki import _torch_bridge

        return _torch_bridge.launch(kernel, args, kwargs)
    return run_numpy(kernel, args, kwargs)


def _dynamo_compiling():
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_dynamo_compiling()


def _has_torch_tensor(args, kwargs):
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return False
    return any(isinstance(v, torch.Tensor) for v in itertools.chain(args, kwargs.values()))


def run_numpy(kernel: Kernel, args, kwargs, arrays_out=None):
    """Runs the kernel on NumPy arrays. Inputs the kernel writes are updated in place."""
    global _last_run
    bound = kernel.sign.bind(*args, **kwargs)
    bound.apply_defaults()
    target = _target()
    prepared = {}
    for name, value in bound.arguments.items():
        if isinstance(value, np.ndarray):
            dtype = _dtypes.numpy_type(_dtypes.dtype_name(value.dtype))
            arr = (
                value
                if (value.dtype == dtype and value.flags.c_contiguous and value.flags.writeable)
                else np.ascontiguousarray(value, dtype=dtype)
            )
            prepared[name] = arr
    key_parts = [kernel.grid, target]
    cacheable = True
    for name, value in bound.arguments.items():
        if name in prepared:
            key_parts.append((name, prepared[name].shape, str(prepared[name].dtype)))
        else:
            try:
                key_parts.append((name, _freeze(value)))
            except TypeError:
                cacheable = False
    key = tuple(key_parts) if cacheable else None
    traced = kernel._cache.get(key) if key is not None else None
    trace_s = 0.0
    if traced is None:
        shadow = inspect.BoundArguments(bound.signature, bound.arguments.copy())
        for name, arr in prepared.items():
            shadow.arguments[name] = arr
        traced = _trace(kernel, shadow, target)
        trace_s = traced.trace_s
        if key is not None:
            kernel._cache[key] = traced
    names = list(bound.arguments)
    bindings = []
    for index, storage in traced.inputs:
        bindings.append((storage.id, prepared[names[index]], False))
    outs = []
    for storage in traced.outputs:
        out = np.empty(storage.shape, dtype=_dtypes.numpy_type(storage.dtype))
        outs.append(out)
        bindings.append((storage.id, out, True))
    start = time.perf_counter()
    traced.tracer.program.run(bindings)
    run_s = time.perf_counter() - start
    # Inputs the kernel wrote: copy back where the kernel worked on a converted copy.
    for index, storage in traced.inputs:
        name = names[index]
        original = bound.arguments[name]
        if storage.id in traced.tracer.mutated and prepared[name] is not original:
            np.copyto(original, prepared[name], casting="unsafe")
    s = traced.schedule
    run = KernelRun(
        kernel=getattr(kernel.func, "__name__", "kernel"),
        target=target,
        grid=kernel.grid,
        instructions=len(traced.tracer.program),
        latency_us=s["latency_s"] * 1e6,
        engine_busy_us={k: v * 1e6 for k, v in s["engine_busy_s"].items()},
        engine_instructions=dict(s["engine_instructions"]),
        sbuf_peak_bytes_per_partition=s["sbuf_peak_bytes_per_partition"],
        psum_peak_bytes_per_partition=s["psum_peak_bytes_per_partition"],
        matmul_flops=s["matmul_flops"],
        dma_bytes=s["dma_bytes"],
        trace_s=trace_s,
        run_s=run_s,
        program=traced.tracer.program,
    )
    kernel.last_run = run
    _last_run = run
    if arrays_out is not None:
        arrays_out.update(
            {"prepared": prepared, "mutated": traced.tracer.mutated, "inputs": traced.inputs}
        )
    return _results(traced, outs, prepared, names)


def _results(traced, outs, prepared, names):
    if traced.returns is None:
        return None

    def value(ref):
        kind, i = ref
        if kind == "out":
            return outs[i]
        index, _ = traced.inputs[i]
        return prepared[names[index]]

    kind, refs = traced.returns
    if kind == "one":
        return value(refs)
    return tuple(value(r) for r in refs)
