"""NKI kernels as PyTorch operators, the way TorchNeuron exposes them.

``wrap_nki(kernel)[grid](*args)`` calls the higher-order operator ``nki_kernel_wrapper``. The
operator is functional: it returns the kernel's results followed by the new values of the
inputs the kernel writes, and the caller copies those back (``copy_``), so functionalization
and tracing see ordinary ops. It has a dense implementation (the C++ interpreter), a fake one
(result shapes from a trace of the kernel, no execution), a proxy one (one graph node) and a
functionalization one.

``nki_op(name, mutates_args=...)`` makes a ``torch.library.custom_op`` whose body calls
``wrap_nki`` kernels; the body doubles as the fake implementation, and ``register_autograd``
gives it a backward. Outside tracing the body runs its kernels directly.
"""

import contextlib
import hashlib
import inspect
import threading

import numpy as np
import torch
import torch.utils._pytree as pytree
from torch._C import DispatchKey
from torch._library.custom_ops import custom_op
from torch._library.infer_schema import infer_schema
from torch._ops import HigherOrderOperator
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import (
    ProxyTorchDispatchMode,
    disable_proxy_modes_tracing,
    track_tensor_tree,
)

from nki import _dtypes, _kernel, _torch_bridge

_enabled = threading.local()


def is_wrap_nki_enabled() -> bool:
    """Whether wrap_nki calls go through the higher-order operator (else straight to the
    kernel, as inside an nki_op body outside tracing)."""
    return getattr(_enabled, "value", True)


@contextlib.contextmanager
def set_wrap_nki_enabled(enabled: bool):
    prev = is_wrap_nki_enabled()
    _enabled.value = enabled
    try:
        yield
    finally:
        _enabled.value = prev


class _Registry:
    """Kernels and their non-tensor arguments, referred to by index from graph nodes."""

    def __init__(self):
        self.kernels = []
        self.constants = []
        self.constant_keys = {}  # frozen constants -> index, so repeated calls reuse traces

    def add_kernel(self, kernel) -> int:
        for i, k in enumerate(self.kernels):
            if k.func is kernel.func and k.grid == kernel.grid:
                return i
        self.kernels.append(kernel)
        return len(self.kernels) - 1

    def add_constants(self, constants: dict) -> int:
        try:
            key = _kernel._freeze(constants)
        except TypeError:
            key = None
        if key is not None and key in self.constant_keys:
            return self.constant_keys[key]
        self.constants.append(constants)
        if key is not None:
            self.constant_keys[key] = len(self.constants) - 1
        return len(self.constants) - 1


registry = _Registry()


def _placeholder(t: torch.Tensor) -> np.ndarray:
    """A NumPy array with |t|'s shape and dtype that owns no memory (for tracing only)."""
    dtype = _dtypes.numpy_type(_dtypes.dtype_name(t.dtype))
    return np.broadcast_to(np.zeros(1, dtype=dtype), tuple(t.shape))


_signature_cache = {}


def kernel_signature(kernel_idx, grid, tensors, names, constants_key):
    """(result shapes and dtypes, names of the inputs the kernel writes), from a trace."""
    key = (
        kernel_idx,
        tuple(grid),
        constants_key,
        tuple((n, tuple(t.shape), t.dtype) for n, t in zip(names, tensors)),
    )
    if key in _signature_cache:
        return _signature_cache[key]
    kernel = registry.kernels[kernel_idx][tuple(grid)] if grid else registry.kernels[kernel_idx]
    arguments = dict(registry.constants[constants_key])
    arguments.update({n: _placeholder(t) for n, t in zip(names, tensors)})
    bound = kernel.sign.bind(**arguments)
    bound.apply_defaults()
    traced = _kernel._trace(kernel, bound, _kernel._target())
    outputs = [(s.shape, _dtypes.torch_dtype(s.dtype)) for s in traced.outputs]
    arg_names = list(bound.arguments)
    mutated = [arg_names[i] for i, s in traced.inputs if s.id in traced.tracer.mutated]
    returns = traced.returns
    result = (outputs, mutated, returns)
    _signature_cache[key] = result
    _traces[key] = (traced, [arg_names[i] for i, _ in traced.inputs])
    return result


_traces = {}  # kernel_signature's key -> (its trace, the traced tensor arguments' names)
_registered = {}  # kernel_signature's key -> the key of the registered program


def registered_key(kernel_idx, grid, tensors, names, constants_key):
    """The content hash under which this call's traced program is registered for
    ``custom_call @vtrn.nki`` (registering it on first use): the SHA-256 of the program's
    instructions, tensors and target and of how the call's tensors bind to it. None when the
    kernel takes a tensor argument it does not trace as a kernel input."""
    _, mutated, _ = kernel_signature(kernel_idx, grid, tensors, names, constants_key)
    key = (
        kernel_idx,
        tuple(grid),
        constants_key,
        tuple((n, tuple(t.shape), t.dtype) for n, t in zip(names, tensors)),
    )
    if key in _registered:
        return _registered[key]
    traced, traced_names = _traces[key]
    if sorted(traced_names) != sorted(names):
        _registered[key] = None
        return None
    storage = {n: s for n, (_, s) in zip(traced_names, traced.inputs)}
    inputs = [storage[n].id for n in names]
    results = [s.id for s in traced.outputs]
    positions = [names.index(n) for n in mutated]
    program = traced.tracer.program
    digest = hashlib.sha256(program.fingerprint())
    digest.update(repr((inputs, results, positions)).encode())
    content = digest.hexdigest()
    program.register(content, inputs, results, positions)
    _registered[key] = content
    return content


# Torch dtypes whose bytes a kernel argument keeps as they are (64-bit types narrow on the way
# into a kernel, so they take the copying path).
_DEVICE_DTYPES = (
    torch.float32, torch.bfloat16, torch.float16, torch.int8, torch.int16, torch.int32,
    torch.uint8, torch.bool,
)  # fmt: skip


def _in_graph_capture(args) -> bool:
    """Whether this call runs inside a compiled graph on `neuron` (the backend's capture is
    open), with arguments the custom call can take as they are."""
    if not args or not all(
        t.device.type == "neuron" and t.dtype in _DEVICE_DTYPES and t.dim() > 0 for t in args
    ):
        return False
    from vtrn import _C

    return _C._graph_capture_active()


class NKIKernelWrapper(HigherOrderOperator):
    def __init__(self):
        super().__init__("nki_kernel_wrapper", cacheable=True)

    def __call__(self, kernel_idx, grid, args, arg_names, constants_key):
        return super().__call__(
            kernel_idx=kernel_idx,
            grid=grid,
            args=args,
            arg_names=arg_names,
            constants_key=constants_key,
        )


nki_kernel_wrapper = NKIKernelWrapper()


def _dense(kernel_idx, grid, args, arg_names, constants_key):
    if _in_graph_capture(args):
        # One lowered op in the graph's module: `custom_call @vtrn.nki` naming the program.
        key = registered_key(kernel_idx, grid, args, list(arg_names), constants_key)
        if key is not None:
            return tuple(torch.ops.vtrn.nki_call([t.contiguous() for t in args], key))
    kernel = registry.kernels[kernel_idx]
    kernel = kernel[tuple(grid)] if grid else kernel
    _, mutated, _ = kernel_signature(kernel_idx, grid, args, arg_names, constants_key)
    arguments = dict(registry.constants[constants_key])
    # Work on copies of the inputs the kernel writes: the operator itself is functional.
    arguments.update({n: (t.clone() if n in mutated else t) for n, t in zip(arg_names, args)})
    results = _torch_bridge.launch(kernel, (), arguments)
    outputs, _, returns = kernel_signature(kernel_idx, grid, args, arg_names, constants_key)
    flat = _flatten_results(results, returns)
    return tuple(flat) + tuple(arguments[n] for n in mutated)


def _flatten_results(results, returns):
    """The kernel's shared_hbm results in output order (what the fake implementation makes)."""
    if returns is None:
        return []
    kind, refs = returns
    values = [results] if kind == "one" else list(results)
    refs = [refs] if kind == "one" else refs
    out = {}
    for ref, value in zip(refs, values):
        if ref[0] == "out":
            out[ref[1]] = value
    return [out[i] for i in sorted(out)]


@nki_kernel_wrapper.py_impl(DispatchKey.CompositeExplicitAutograd)
def _nki_dense(*, kernel_idx, grid, args, arg_names, constants_key):
    return _dense(kernel_idx, grid, args, arg_names, constants_key)


@nki_kernel_wrapper.py_impl(FakeTensorMode)
def _nki_fake(mode, *, kernel_idx, grid, args, arg_names, constants_key):
    outputs, mutated, _ = kernel_signature(kernel_idx, grid, args, arg_names, constants_key)
    device = args[0].device if args else torch.device("cpu")
    with mode:
        results = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in outputs]
        by_name = dict(zip(arg_names, args))
        results += [torch.empty_like(by_name[n]) for n in mutated]
    return tuple(results)


@nki_kernel_wrapper.py_impl(ProxyTorchDispatchMode)
def _nki_proxy(mode, *, kernel_idx, grid, args, arg_names, constants_key):
    node_args = {
        "kernel_idx": kernel_idx, "grid": grid, "args": args, "arg_names": arg_names, "constants_key": constants_key,
    }  # fmt: skip
    with disable_proxy_modes_tracing():
        out = nki_kernel_wrapper(**node_args)
    proxy_args = pytree.tree_map(mode.tracer.unwrap_proxy, node_args)
    out_proxy = mode.tracer.create_proxy(
        "call_function",
        nki_kernel_wrapper,
        (),
        proxy_args,
        name=f"nki_{registry.kernels[kernel_idx].__name__}",
    )
    return track_tensor_tree(out, out_proxy, constant=None, tracer=mode.tracer)


@nki_kernel_wrapper.py_functionalize_impl
def _nki_functionalize(ctx, *, kernel_idx, grid, args, arg_names, constants_key):
    unwrapped = ctx.unwrap_tensors(args)
    with ctx.redispatch_to_next():
        out = nki_kernel_wrapper(
            kernel_idx=kernel_idx,
            grid=grid,
            args=unwrapped,
            arg_names=arg_names,
            constants_key=constants_key,
        )
    return ctx.wrap_tensors(out)


for _key in (
    DispatchKey.PythonDispatcher,
    DispatchKey.PythonTLSSnapshot,
    DispatchKey.ADInplaceOrView,
    DispatchKey.BackendSelect,
    DispatchKey.AutocastCPU,
    DispatchKey.AutocastPrivateUse1,
    DispatchKey.AutogradCPU,
    DispatchKey.AutogradPrivateUse1,
):
    nki_kernel_wrapper.fallthrough(_key)


# Kernels pass into compiled_call as constants (Dynamo guards on them by equality).
pytree.register_constant(_kernel.Kernel)


@torch._dynamo.nonstrict_trace
def compiled_call(kernel, grid, args, kwargs):
    """A kernel call inside a function torch.compile traces: Dynamo keeps it as one opaque node
    (it cannot trace the kernel's tracer), and AOT Autograd traces into it, where it is the
    nki_kernel_wrapper operator."""
    return NKIHOPCaller(kernel, grid)(*args, **kwargs)


class NKIHOPCaller:
    """``wrap_nki(kernel)``: index it with a grid, call it with the kernel's arguments."""

    def __init__(self, kernel, grid=()):
        self.kernel = kernel
        self.grid = tuple(grid)
        self.arg_names = list(kernel.sign.parameters)

    def __getitem__(self, grid):
        grid = grid if isinstance(grid, (tuple, list)) else (grid,)
        return NKIHOPCaller(self.kernel, tuple(int(g) for g in grid))

    def __call__(self, *args, **kwargs):
        if torch.compiler.is_dynamo_compiling():
            return compiled_call(self.kernel._root, self.grid, args, kwargs)
        kernel = self.kernel[self.grid] if self.grid else self.kernel
        if not is_wrap_nki_enabled():
            return _kernel.launch(kernel, args, kwargs)
        bound = self.kernel.sign.bind(*args, **kwargs)
        bound.apply_defaults()
        tensors, names, constants = [], [], {}
        for name, value in bound.arguments.items():
            if isinstance(value, torch.Tensor):
                tensors.append(value)
                names.append(name)
            else:
                constants[name] = value
        kernel_idx = registry.add_kernel(self.kernel)
        constants_key = registry.add_constants(constants)
        outputs, mutated, returns = kernel_signature(
            kernel_idx, self.grid, tensors, names, constants_key
        )
        flat = nki_kernel_wrapper(
            kernel_idx=kernel_idx, grid=list(self.grid), args=tuple(tensors), arg_names=tuple(names),
            constants_key=constants_key,
        )  # fmt: skip
        results, updates = flat[: len(outputs)], flat[len(outputs) :]
        by_name = dict(zip(names, tensors))
        for name, new in zip(mutated, updates):
            by_name[name].copy_(new)
        return _rebuild(returns, results, by_name, list(bound.arguments))


def _rebuild(returns, results, by_name, arg_names):
    if returns is None:
        return None
    kind, refs = returns

    def value(ref):
        if ref[0] == "out":
            return results[ref[1]]
        return by_name[arg_names[ref[1]]]

    if kind == "one":
        return value(refs)
    return tuple(value(r) for r in refs)


def wrap_nki(kernel, **kwargs):
    """Wraps an @nki.jit kernel so torch.compile and functionalization can trace its calls."""
    if not isinstance(kernel, _kernel.Kernel):
        kernel = _kernel.Kernel(kernel)
    return NKIHOPCaller(kernel)


def nki_op(name, fn=None, mutates_args=()):
    """A torch custom op backed by NKI kernels (``@nki_op("mylib::add", mutates_args={})``).

    The body must allocate outputs with torch and call wrap_nki kernels, so it works on fake
    tensors too; it becomes the op's fake implementation. Returns a CustomOpDef: use
    ``.register_autograd(backward, setup_context=...)`` for training."""

    def dec(fn):
        def backend_fn(*args, **kwargs):
            with set_wrap_nki_enabled(False):
                return fn(*args, **kwargs)

        backend_fn.__signature__ = inspect.signature(fn)
        backend_fn.__name__ = fn.__name__
        op = custom_op(
            name,
            backend_fn,
            mutates_args=mutates_args,
            schema=infer_schema(fn, mutates_args=mutates_args),
        )
        op.register_fake(fn)
        from torch._subclasses.functional_tensor import FunctionalTensorMode

        def functional_decomp(mode, op_, types, args, kwargs):
            unrecognized = [
                t
                for t in types
                if not issubclass(t, torch._subclasses.FakeTensor)
                and t not in (torch.Tensor, torch._subclasses.functional_tensor.FunctionalTensor)
            ]
            if unrecognized:
                return NotImplemented
            with mode:
                return fn(*args, **kwargs)

        op.register_torch_dispatch(FunctionalTensorMode, functional_decomp)
        return op

    return dec if fn is None else dec(fn)
