"""The ``neuron`` Dynamo backend.

Dynamo captures an FX graph; AOT Autograd splits it into forward and backward graphs of ATen
ops; each of those graphs runs on ``neuron`` inside a graph capture: the ops go through the
same lowering registry as eager mode and are held in one group that becomes one StableHLO
module, compiled once and kept in the same compile cache as eager executables (see
docs/compile.md).
"""

import dataclasses
import functools
import hashlib
import logging
import os
import re
import threading
import time

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

from vtrn.compile import device_interface, records
from vtrn.compile._random import rewrite_random_ops

log = logging.getLogger(__name__)
aten = torch.ops.aten

# Options TorchNeuron's backend takes; anything else is a mistake worth naming.
KNOWN_OPTIONS = ("fallback_execution", "dynamic")

# Ops that must stay whole in the graphs: vtrn lowers them natively (one node, one lowering),
# while the core ATen table would split them into many small ops.
KEEP_WHOLE = (
    "silu",
    "silu_backward",
    "linear",
    "t",
    "_fused_rms_norm",
    "native_layer_norm",
    "native_layer_norm_backward",
    "scaled_dot_product_attention",
    "_scaled_dot_product_fused_attention_overrideable",
    "_scaled_dot_product_fused_attention_overrideable_backward",
    "_scaled_dot_product_flash_attention_for_cpu",
    "mm",
    "bmm",
    "addmm",
    "matmul",
    "gelu",
    "gelu_backward",
    "_softmax",
    "_log_softmax",
    "_softmax_backward_data",
    "_log_softmax_backward_data",
    "nll_loss_forward",
    "nll_loss_backward",
    "embedding_dense_backward",
    "slice_backward",
)


@dataclasses.dataclass
class CompileMetrics:
    """Counters of the neuron backend, as TorchNeuron's ``get_dynamo_metrics()`` reports them."""

    graphs: int = 0  # Dynamo graphs the backend received
    compiles: int = 0  # graphs whose first run compiled at least one executable
    cache_hits: int = 0  # graphs whose first run found every executable in the compile cache
    compile_time_s: float = 0.0  # seconds spent lowering and compiling graph modules
    executions: int = 0  # compiled-graph calls
    fallbacks: int = 0  # op calls inside compiled graphs that ran on the CPU fallback


_lock = threading.Lock()
_metrics = CompileMetrics()
# Per AOT graph name: the executables its last run took (1 when the whole graph lowered).
_modules: dict[str, int] = {}


def get_dynamo_metrics() -> dict:
    """The backend's counters since the process started (or reset_dynamo_metrics())."""
    with _lock:
        return dataclasses.asdict(_metrics)


def reset_dynamo_metrics() -> None:
    """Sets every counter of get_dynamo_metrics() back to zero and forgets graph_modules()."""
    global _metrics
    with _lock:
        _metrics = CompileMetrics()
        _modules.clear()
    records.reset_dynamo_metrics()


def graph_modules() -> dict:
    """AOT graph name -> the number of executables its last run took (forward, backward and
    inference graphs; 1 means the whole graph ran as one module)."""
    with _lock:
        return dict(_modules)


def decomposition_table() -> dict:
    """Core ATen decompositions, less the ops vtrn lowers whole."""
    from torch._decomp import core_aten_decompositions

    table = dict(core_aten_decompositions())
    for name in KEEP_WHOLE:
        packet = getattr(aten, name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            table.pop(getattr(packet, overload), None)
    return table


def _source_line(node) -> str:
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', trace)
    if not frames:
        return "unknown source line"
    path, line, fn, code = frames[-1]
    return f"{path}:{line} in {fn}: {code.strip()}"


def _dynamic_dims(gm, example_inputs):
    found = []
    for i, x in enumerate(example_inputs):
        if isinstance(x, torch.SymInt):
            found.append(f"input {i}: {x}")
        elif isinstance(x, torch.Tensor):
            for d, s in enumerate(x.shape):
                if isinstance(s, torch.SymInt):
                    found.append(f"input {i} dim {d}: {s}")
    return found


def _check_static(gm, example_inputs):
    found = _dynamic_dims(gm, example_inputs)
    if not found:
        return
    where = ""
    for node in gm.graph.nodes:
        if node.op == "placeholder" and node.meta.get("stack_trace"):
            where = f" Source: {_source_line(node)}."
            break
    raise RuntimeError(
        "Dynamic shapes detected in the model, but torch-neuronx requires static shapes. "
        f"Found {len(found)} dynamic dimension(s): {found}.{where}\n"
        "To fix this issue:\n"
        "  1. Pass dynamic=False to torch.compile (each new shape then compiles once);\n"
        "  2. remove torch._dynamo.mark_dynamic() calls on the inputs;\n"
        "  3. pad inputs to a few fixed sizes (buckets) so shapes repeat."
    )


def _unlowerable(gm) -> list:
    """(op name, node) for each call the neuron device has no kernel for (it would run on the
    CPU fallback)."""
    keys = ("PrivateUse1", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
    bad = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        name = node.target.name()
        if not any(torch._C._dispatch_has_kernel_for_dispatch_key(name, k) for k in keys):
            bad.append((name, node))
    return bad


def _cannot_lower(kind, items):
    lines = [f"  {name} at {_source_line(node)}" for name, node in items]
    return RuntimeError(
        f"neuron backend: the {kind} graph holds op(s) vtrn cannot lower:\n"
        + "\n".join(lines)
        + '\nPass options={"fallback_execution": True} to torch.compile to run them on the '
        "CPU fallback, or compute them outside the compiled region."
    )


def _view_or_copy(x, shape):
    """aten.view, or a view of a dense copy when |x|'s strides don't allow it: a kernel's
    result may be laid out differently from what its meta function told the tracer."""
    try:
        return aten.view.default(x, shape)
    except RuntimeError:
        return aten.view.default(aten.alias_copy.default(x), shape)


def _writes_back_input(node) -> bool:
    """Whether |node| is the copy_ that writes a mutated graph input's new value back into it
    (keep_inference_input_mutations), with the value's own shape and dtype."""
    dst, src = node.args[:2]
    if not (isinstance(dst, torch.fx.Node) and dst.op == "placeholder"):
        return False
    if not isinstance(src, torch.fx.Node):
        return False
    a, b = dst.meta.get("val"), src.meta.get("val")
    return (
        isinstance(a, torch.Tensor)
        and isinstance(b, torch.Tensor)
        and a.shape == b.shape
        and a.dtype == b.dtype
        and a.is_contiguous()
    )


def _filled(shape, dtype, device, value):
    """full / full_like / scalar_tensor as vtrn::fill, one lowered op (eager mode runs them as
    a native fill, which would end the capture's group). The empty tensor only gives the type."""
    return torch.ops.vtrn.fill.default(torch.empty(shape, dtype=dtype, device=device), value)


def _arange(start, end, step, dtype, device, numel):
    """arange into an out tensor of its final size (arange's own out tensor is resized, a
    native call that would end the capture's group), then a dense copy: views of a functional
    op's result stay in the group, views of an out= tensor end it."""
    out = torch.empty(numel, dtype=dtype, device=device)
    return aten.alias_copy.default(aten.arange.start_out(start, end, step, out=out))


FACTORIES = {
    aten.full.default: lambda n: n.args[1],
    aten.full_like.default: lambda n: n.args[1],
    aten.scalar_tensor.default: lambda n: n.args[0],
}
ARANGES = {
    aten.arange.default: lambda n: (0, n.args[0], 1),
    aten.arange.start: lambda n: (n.args[0], n.args[1], 1),
    aten.arange.start_step: lambda n: (n.args[0], n.args[1], n.args[2] if len(n.args) > 2 else 1),
}


def _on_device(node) -> bool:
    """Whether |node|'s result is a dense tensor on neuron."""
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.device.type == "neuron" and val.is_contiguous()


def _is_lowered_batch_norm(node) -> bool:
    """A training _native_batch_norm_legit_functional that vtrn::batch_norm computes in one
    lowered op (float input of rank >= 2 on neuron, with running statistics): the same five
    results (output, saved mean and inverse std, new running mean and variance)."""
    if len(node.args) != 8 or node.args[5] is not True:
        return False
    vals = [a.meta.get("val") if isinstance(a, torch.fx.Node) else None for a in node.args[:5]]
    x, rm, rv = vals[0], vals[3], vals[4]
    floats = (torch.float32, torch.bfloat16, torch.float16)
    return (
        all(isinstance(v, torch.Tensor) for v in (x, rm, rv))
        and x.device.type == "neuron"
        and x.dtype in floats
        and x.dim() >= 2
        and x.numel() > 0
        and all(v is None or (v.dtype in floats and v.device == x.device) for v in vals[1:])
    )


def _is_device_convert(node) -> bool:
    """A _to_copy that only changes the dtype of a neuron tensor (vtrn::convert lowers it;
    _to_copy itself is a native copy in eager mode, which would end the capture's group)."""
    if set(node.kwargs) - {"dtype", "layout", "device", "memory_format", "non_blocking"}:
        return False
    if len(node.args) != 1 or not isinstance(node.args[0], torch.fx.Node):
        return False
    x, val = node.args[0].meta.get("val"), node.meta.get("val")
    if not (isinstance(x, torch.Tensor) and isinstance(val, torch.Tensor)):
        return False
    return (
        x.device.type == "neuron"
        and val.device == x.device
        and node.kwargs.get("layout") in (None, torch.strided)
        and val.is_contiguous()
    )


def _is_same_type_copy(node) -> bool:
    """A functional copy(dst, src) whose result is just src's values (same shape, dtype and
    device, dense): functionalization writes an in-place update of an intermediate (a kernel
    writing into a tensor the graph allocated) this way."""
    if len(node.args) < 2 or node.kwargs.get("non_blocking"):
        return False
    dst, src = node.args[:2]
    if not (isinstance(dst, torch.fx.Node) and isinstance(src, torch.fx.Node)):
        return False
    a, b = dst.meta.get("val"), src.meta.get("val")
    return (
        isinstance(a, torch.Tensor)
        and isinstance(b, torch.Tensor)
        and a.shape == b.shape
        and a.dtype == b.dtype
        and a.device == b.device
        and _on_device(node)
    )


def _dense_copies(gm):
    """Rewrites calls that eager mode runs natively (each would end the capture's group) into
    lowered ones: clone -> alias_copy (the same dense copy); dtype-only _to_copy ->
    vtrn::convert; full, full_like, scalar_tensor -> vtrn::fill; arange -> arange.out into a
    tensor of its size; constant_pad_nd -> vtrn::constant_pad; training batch norm ->
    vtrn::batch_norm (eager mode's lowering of it); view -> _view_or_copy; a functional copy
    of a same-typed value -> alias_copy; and the
    copy_ that writes a mutated input back -> alias_copy.out into the input, so the module's
    result is written into the input's buffer (input/output aliasing) inside the one
    executable."""
    changed = False
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is aten.clone.default:
            node.target = aten.alias_copy.default
            node.kwargs = {}
            changed = True
        elif node.target in (aten.view.default, aten._unsafe_view.default):
            node.target = _view_or_copy
            changed = True
        elif node.target is aten._to_copy.default and _is_device_convert(node):
            node.target = torch.ops.vtrn.convert.default
            node.args = (node.args[0], node.meta["val"].dtype)
            node.kwargs = {}
            changed = True
        elif node.target in FACTORIES and _on_device(node):
            val = node.meta["val"]
            value = FACTORIES[node.target](node)
            node.target = _filled
            node.args = (tuple(val.shape), val.dtype, val.device, value)
            node.kwargs = {}
            changed = True
        elif node.target in ARANGES and _on_device(node) and node.meta["val"].numel() > 0:
            val = node.meta["val"]
            start, end, step = ARANGES[node.target](node)
            node.target = _arange
            node.args = (start, end, step, val.dtype, val.device, val.numel())
            node.kwargs = {}
            changed = True
        elif (
            node.target is aten.constant_pad_nd.default
            and _on_device(node)
            and all(p >= 0 for p in node.args[1])
        ):
            value = node.args[2] if len(node.args) > 2 else node.kwargs.get("value", 0)
            node.target = torch.ops.vtrn.constant_pad.default
            node.args = (node.args[0], list(node.args[1]), value)
            node.kwargs = {}
            changed = True
        elif node.target is aten._native_batch_norm_legit_functional.default and (
            _is_lowered_batch_norm(node)
        ):
            node.target = torch.ops.vtrn.batch_norm.default
            changed = True
        elif node.target is aten.copy.default and _is_same_type_copy(node):
            node.target = aten.alias_copy.default
            node.args = (node.args[1],)
            node.kwargs = {}
            changed = True
        elif node.target is aten.copy_.default and _writes_back_input(node):
            dst, src = node.args[:2]
            node.target = aten.alias_copy.out
            node.args = (src,)
            node.kwargs = {"out": dst}
            changed = True
    if changed:
        gm.recompile()
    return gm


# The functional collectives a module can hold, with how their arguments read:
# (kind, index of reduce_op or None for "sum", index of group_size or None, index of group_name).
_COLLECTIVES = {
    "all_gather_into_tensor": ("all_gather", None, 1, 2),
    "reduce_scatter_tensor": ("reduce_scatter", 1, 2, 3),
    "all_reduce": ("all_reduce", 1, None, 2),
}
_REDUCE_OPS = ("sum", "avg", "product", "min", "max", "band", "bor", "bxor")
_COLLECTIVE_DTYPES = (
    torch.float32,
    torch.bfloat16,
    torch.float16,
    torch.int32,
    torch.int64,
    torch.int8,
    torch.uint8,
)


def _neuron_group(name):
    """The neuron c10d backend of the process group named |name|, or None."""
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _resolve_process_group

    from vtrn import _C

    if not dist.is_available() or not dist.is_initialized():
        return None
    try:
        backend = _resolve_process_group(name)._get_backend(torch.device("neuron"))
    except (RuntimeError, ValueError):
        return None
    return backend if isinstance(backend, _C.NeuronBackend) else None


def _as_module_collective(node):
    """The arguments of vtrn::collective for a functional collective the module can hold (a
    dense neuron tensor of a dtype Gloo moves, on a group with a neuron backend), or None."""
    functional = getattr(torch.ops, "_c10d_functional", None)
    if functional is None or not isinstance(node.target, torch._ops.OpOverload):
        return None
    if node.target.namespace != "_c10d_functional" or node.target._overloadname != "default":
        return None
    spec = _COLLECTIVES.get(node.target.__name__.split(".")[0])
    if spec is None or node.kwargs:
        return None
    kind, reduce_at, size_at, name_at = spec
    x, out = node.args[0], node.meta.get("val")
    val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
    if not (
        isinstance(val, torch.Tensor)
        and isinstance(out, torch.Tensor)
        and val.device.type == "neuron"
        and val.is_contiguous()
        and val.dtype in _COLLECTIVE_DTYPES
        and val.numel() > 0
    ):
        return None
    reduce_op = "sum" if reduce_at is None else str(node.args[reduce_at]).lower()
    name = node.args[name_at]
    backend = _neuron_group(name) if isinstance(name, str) else None
    if reduce_op not in _REDUCE_OPS or backend is None:
        return None
    size = backend.size()
    if size_at is not None and node.args[size_at] != size:
        return None
    seconds = backend.module_collective_seconds(
        kind, reduce_op, val.dtype, val.numel(), out.numel()
    )
    return (x, kind, reduce_op, size, name, seconds)


def _collectives_in_module(gm):
    """Functional collectives (DTensor's, FSDP2's when traced, user calls of
    torch.distributed._functional_collectives) become vtrn::collective, one op of the module
    that the runtime runs through the process group's neuron backend, in graph order on the
    device's stream; their wait_tensor becomes the value itself. Collectives the module
    cannot hold stay native calls (each ends the module) with their waits."""
    changed = False
    rewritten = set()
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        args = _as_module_collective(node)
        if args is not None:
            node.target = torch.ops.vtrn.collective.default
            node.args = args
            node.kwargs = {}
            rewritten.add(node)
            changed = True
    for node in list(gm.graph.nodes):
        if (
            node.op == "call_function"
            and node.target is getattr(torch.ops, "_c10d_functional", None).wait_tensor.default
            and node.args[0] in rewritten
        ):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
            changed = True
    if changed:
        gm.recompile()
    return gm


def _device_of(args):
    for a in args:
        if isinstance(a, torch.Tensor) and a.device.type == "neuron":
            return a.device.index or 0
    return torch.neuron.current_device() if hasattr(torch, "neuron") else 0


def _graph_id(gm, example_inputs) -> str:
    """A key of the graph: its code and its inputs' shapes and dtypes (the composed module's
    own cache key is only known inside the runtime)."""
    h = hashlib.sha256(gm.code.encode())
    for x in example_inputs:
        if isinstance(x, torch.Tensor):
            h.update(f"{tuple(x.shape)}{x.dtype};".encode())
        else:
            h.update(f"{x!r};".encode())
    return h.hexdigest()[:32]


def _has_collectives(gm) -> bool:
    return any(
        node.op == "call_function"
        and ("_c10d_functional" in str(node.target) or "vtrn.collective" in str(node.target))
        for node in gm.graph.nodes
    )


def _graph_compiler(kind, options, gm, example_inputs):
    """AOT compiler for one forward, backward or inference graph."""
    from torch._functorch._aot_autograd.logging_utils import get_aot_graph_name

    from vtrn import _C

    passes_start = time.perf_counter()
    try:
        name = get_aot_graph_name()
    except Exception:  # noqa: BLE001 - outside an AOT trace (direct calls)
        name = f"graph_{id(gm)}"
    name = f"{name}_{kind}" if kind not in name else name
    fallback = bool(options.get("fallback_execution", False))
    gm = rewrite_random_ops(_collectives_in_module(_dense_copies(gm)))
    bad = _unlowerable(gm)
    if bad and not fallback:
        raise _cannot_lower(kind, bad)
    autocopy = os.environ.get("TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY") != "1"
    state = {"first": True}
    record = records.NeuronCompilationMetrics(
        graph_id=_graph_id(gm, example_inputs),
        graph_name=name,
        model_name=name.split("__")[0],
        has_collectives=_has_collectives(gm),
        graph_node_count=len(gm.graph.nodes),
        timestamp=time.strftime("%Y-%m-%dT%H:%M:%S"),
        torch_neuronx_fx_passes_us=int((time.perf_counter() - passes_start) * 1e6),
    )

    def run(*args):
        device = _device_of(args)
        if autocopy:
            args = [
                a.to(f"neuron:{device}")
                if isinstance(a, torch.Tensor) and a.is_cpu and a.dim()
                else a
                for a in args
            ]
        else:
            for i, a in enumerate(args):
                if isinstance(a, torch.Tensor) and a.is_cpu and a.dim():
                    raise RuntimeError(
                        f"Input tensor at index {i} is on cpu device, expected neuron. "
                        "Move tensor to Neuron device first with tensor.to('neuron')"
                    )
        before = _C._metrics()
        fallbacks_before = set(_C.get_fallback_ops())
        start = time.perf_counter()
        _C._begin_graph_capture()
        try:
            out = gm(*args)
        finally:
            _C._end_graph_capture(device)
        after = _C._metrics()
        fell_back = after["fallbacks"] - before["fallbacks"]
        if fell_back and not fallback:
            ops = sorted(set(_C.get_fallback_ops()) - fallbacks_before)
            raise RuntimeError(
                f"neuron backend: the {kind} graph {name} ran {fell_back} op call(s) on the CPU "
                f"fallback ({', '.join(ops) or 'ops seen before'}): vtrn cannot lower them for "
                'these inputs. Pass options={"fallback_execution": True} to torch.compile to '
                "allow it."
            )
        compiles = after["compiles"] - before["compiles"]
        with _lock:
            _metrics.executions += 1
            _metrics.fallbacks += fell_back
            _modules[name] = after["executed_kernels"] - before["executed_kernels"]
            if state["first"]:
                _metrics.compiles += 1 if compiles else 0
                _metrics.cache_hits += 1 if compiles == 0 else 0
                _metrics.compile_time_s += time.perf_counter() - start
        if state["first"]:
            # The first run lowers, composes and compiles the module (and runs it).
            record.torch_neuronx_compile_us = int((time.perf_counter() - start) * 1e6)
            record.planned_scratch_bytes = (
                after["planned_scratch_bytes"] - before["planned_scratch_bytes"]
            )
            record.intermediate_bytes = after["intermediate_bytes"] - before["intermediate_bytes"]
            records.record_compilation(record)
        state["first"] = False
        return out

    return make_boxed_func(run)


def neuron_backend(gm, example_inputs, *, mode=None, options=None):
    """``torch.compile(model, backend="neuron", mode=..., options=...)``.

    Options: ``fallback_execution`` (default False): run ops vtrn cannot lower on the CPU
    fallback instead of failing the compile.
    """
    options = dict(options or {})
    unknown = sorted(set(options) - set(KNOWN_OPTIONS))
    if unknown:
        raise ValueError(
            f"neuron backend: unknown option(s) {unknown}; the backend takes {list(KNOWN_OPTIONS)}"
        )
    if mode not in (None, "default"):
        log.warning(
            "Neuron backend does not support mode='%s', falling back to default mode.", mode
        )
    if options.get("dynamic"):
        raise RuntimeError(
            "neuron backend: dynamic=True is not supported; torch-neuronx requires static "
            "shapes. Pass dynamic=False (each new shape compiles once)."
        )
    if _dynamic_dims(gm, example_inputs) and _specializable(gm, example_inputs):
        return _per_concrete_shape(gm, options)
    _check_static(gm, example_inputs)
    return _compile_static(gm, example_inputs, options)


def _compile_static(gm, example_inputs, options):
    with _lock:
        _metrics.graphs += 1
    backend = aot_autograd(
        fw_compiler=functools.partial(_graph_compiler, "forward", options),
        bw_compiler=functools.partial(_graph_compiler, "backward", options),
        inference_compiler=functools.partial(_graph_compiler, "inference", options),
        decompositions=decomposition_table(),
        keep_inference_input_mutations=True,
    )
    return backend(gm, example_inputs)


def _specializable(gm, example_inputs) -> bool:
    """A graph Dynamo made symbolic on its own (automatic dynamic shapes, after a second shape
    with the default dynamic=None): the backend compiles it per concrete shape, as torch_xla's
    does. dynamic=True (Dynamo then assumes nothing static), a mark_dynamic()ed input and
    unbacked sizes (.item(), nonzero) keep TorchNeuron's error."""
    import torch._dynamo.config as dynamo_config

    if not dynamo_config.assume_static_by_default:
        return False
    for x in example_inputs:
        if isinstance(x, torch.Tensor) and getattr(x, "_dynamo_dynamic_indices", None):
            return False
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        sizes = value.shape if isinstance(value, torch.Tensor) else (value,)
        for s in sizes:
            if (
                isinstance(s, torch.SymInt)
                and s.node.expr.free_symbols
                and any(str(sym).startswith("u") for sym in s.node.expr.free_symbols)
            ):
                return False
    return True


def _per_concrete_shape(gm, options):
    """A callable that compiles |gm| for each tuple of concrete sizes it is called with: the
    SymInt inputs arrive as ints, so the graph traces static."""
    compiled = {}
    lock = threading.Lock()

    def run(*args):
        key = tuple(
            (tuple(a.shape), tuple(a.stride()), a.dtype, a.device.type, a.requires_grad)
            if isinstance(a, torch.Tensor)
            else (type(a), a)
            for a in args
        )
        with lock:
            fn = compiled.get(key)
        if fn is None:
            fn = _compile_static(gm, list(args), options)
            with lock:
                compiled.setdefault(key, fn)
        return fn(*args)

    return run


device_interface.register()
