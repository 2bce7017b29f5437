"""Parity of the `neuron` device with the CPU on PyTorch's own OpInfo samples.

test_op_parity.py drives this module. It picks the OpInfos of
`torch.testing._internal.common_methods_invocations.op_db` that exercise the ops vtrn runs
natively (`vtrn._C._native_ops()`), runs their samples on the CPU (the oracle) and on
`neuron`, forward and backward, and records, per sample, which ops fell back to the CPU.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import types
import unittest

import torch
import torch.utils._pytree as pytree

import vtrn

DEVICE = "neuron"

# The dtypes the suite tests: the ones trn hardware computes in. float64 is computed as
# float32 on `neuron` (by design), so comparing it with the CPU's float64 would only measure
# that; complex is out of the registry's scope.
TESTED_DTYPES = (
    torch.float32,
    torch.bfloat16,
    torch.float16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
)
_DTYPE_BY_NAME = {str(d).removeprefix("torch."): d for d in TESTED_DTYPES}

# Samples per (OpInfo, dtype): the first MAX_SAMPLES reference samples the OpInfo yields
# (deterministic under a fixed random seed), then up to EXTRA_SAMPLES later ones whose argument kinds
# (tensor, 0-d tensor, Python scalar, None, kwargs) none of those had.
MAX_SAMPLES = int(os.environ.get("VTRN_PARITY_SAMPLES", "6"))
EXTRA_SAMPLES = int(os.environ.get("VTRN_PARITY_EXTRA_SAMPLES", "2"))
SEED = 1234

# ATen op (base name, no overload) -> OpInfos that reach it beyond the plain name match
# (`foo` -> OpInfo "foo", "nn.functional.foo", "linalg.foo", or aten_name "foo").
EXTRA_OPINFOS = {
    "_softmax": ["softmax", "nn.functional.softmax"],
    "_log_softmax": ["log_softmax", "nn.functional.log_softmax", "nn.functional.cross_entropy"],
    "_softmax_backward_data": ["softmax"],
    "_log_softmax_backward_data": ["log_softmax", "nn.functional.cross_entropy"],
    "nll_loss_forward": ["nn.functional.nll_loss", "nn.functional.cross_entropy"],
    "nll_loss_backward": ["nn.functional.nll_loss", "nn.functional.cross_entropy"],
    "nll_loss2d_forward": ["nn.functional.nll_loss"],
    "nll_loss2d_backward": ["nn.functional.nll_loss"],
    "embedding_dense_backward": ["nn.functional.embedding"],
    "embedding": ["nn.functional.embedding"],
    "threshold_backward": ["nn.functional.relu", "nn.functional.threshold"],
    "threshold": ["nn.functional.threshold"],
    "silu_backward": ["nn.functional.silu"],
    "sigmoid_backward": ["sigmoid"],
    "tanh_backward": ["tanh"],
    "gelu_backward": ["nn.functional.gelu"],
    "linalg_vector_norm": ["linalg.vector_norm"],
    "convolution_overrideable": [
        "nn.functional.conv1d",
        "nn.functional.conv2d",
        "nn.functional.conv3d",
        "nn.functional.conv_transpose1d",
        "nn.functional.conv_transpose2d",
    ],
    "convolution_backward_overrideable": ["nn.functional.conv2d", "nn.functional.conv_transpose2d"],
    "native_layer_norm": ["native_layer_norm"],
    "native_layer_norm_backward": ["native_layer_norm"],
    "native_group_norm": ["nn.functional.group_norm", "native_group_norm"],
    "native_group_norm_backward": ["nn.functional.group_norm"],
    "native_batch_norm": ["nn.functional.batch_norm", "native_batch_norm"],
    "native_batch_norm_backward": ["nn.functional.batch_norm"],
    "mm": ["mm", "matmul", "nn.functional.linear"],
    "addmm": ["addmm", "nn.functional.linear"],
    "bmm": ["bmm", "matmul"],
    "maximum": ["maximum", "max.binary"],
    "minimum": ["minimum", "min.binary"],
    "where": ["where"],
    # Found by running every op_db OpInfo once with op tracking: these reach overloads the
    # plainly named OpInfos do not (their samples pass tensors where these pass scalars).
    "clamp": ["clamp", "_unsafe_masked_index"],
    "clamp_": ["nn.functional.gaussian_nll_loss"],
    "clamp_min": ["clamp_min", "nn.functional.normalize"],
    "clamp_min_": ["nn.functional.hinge_embedding_loss"],
    "clamp_max": ["clamp_max"],
    "sum": ["sum", "logsumexp"],
    "rsub": ["rsub"],
    "_to_copy": [],
    "index": ["__getitem__"],
    "_index_put_impl_": ["index_put"],
    "nonzero": ["nonzero", "argwhere"],
    "masked_scatter_": ["masked_scatter"],
    "max_pool2d_with_indices": ["nn.functional.max_pool1d", "nn.functional.max_pool2d"],
    "max_pool2d_with_indices_backward": ["nn.functional.max_pool1d", "nn.functional.max_pool2d"],
    "max_pool3d_with_indices": ["nn.functional.max_pool3d"],
    "max_pool3d_with_indices_backward": ["nn.functional.max_pool3d"],
    "avg_pool2d": ["nn.functional.avg_pool1d"],
    "avg_pool2d_backward": ["nn.functional.avg_pool1d", "nn.functional.avg_pool2d"],
    "avg_pool3d_backward": ["nn.functional.avg_pool3d"],
    "_adaptive_avg_pool2d": [
        "nn.functional.adaptive_avg_pool1d",
        "nn.functional.adaptive_avg_pool2d",
    ],
    "_adaptive_avg_pool2d_backward": [
        "nn.functional.adaptive_avg_pool1d",
        "nn.functional.adaptive_avg_pool2d",
    ],
    "_adaptive_avg_pool3d": ["nn.functional.adaptive_avg_pool3d"],
    "_adaptive_avg_pool3d_backward": ["nn.functional.adaptive_avg_pool3d"],
    "adaptive_max_pool2d": ["nn.functional.adaptive_max_pool1d"],
    "adaptive_max_pool2d_backward": [
        "nn.functional.adaptive_max_pool1d",
        "nn.functional.adaptive_max_pool2d",
    ],
    "adaptive_max_pool3d_backward": ["nn.functional.adaptive_max_pool3d"],
    "_fused_rms_norm": ["nn.functional.rms_norm"],
    "_fused_rms_norm_backward": ["nn.functional.rms_norm"],
}

# OpInfo variants left out, with the reason (they duplicate a kept variant on the CPU).
EXCLUDED_VARIANTS = {
    "bmm.triton_optimized": "CUDA Triton shape sweep; the plain bmm OpInfo covers bmm on CPU",
    "addmm.decomposed": "runs addmm through mul/add in Python; the plain addmm OpInfo covers it",
    "softmax.with_dtype": "every sample passes dtype=torch.float64 (computed as float32 on neuron)",
    "log_softmax.with_dtype": "every sample passes dtype=torch.float64 (computed as float32 on "
    "neuron)",
    "nn.functional.silu.complex": "complex inputs only, outside the registry's dtypes",
}

# Native ops no OpInfo in op_db reaches, with the reason and where else they are tested.
NO_OPINFO = {
    "_fused_adamw_": "optimizer kernel: op_db has no optimizer OpInfos; "
    "test_op_parity.py::test_fused_optimizer_parity checks it through AdamW(fused=True)",
    "_fused_adam_": "optimizer kernel: op_db has no optimizer OpInfos; "
    "test_op_parity.py::test_fused_optimizer_parity checks it through Adam(fused=True)",
    "arange": "factory: its OpInfo samples pass Python numbers only, so nothing runs on neuron; "
    "test_index_sort_ops.py::test_arange checks every overload against the CPU",
    "eye": "factory: its OpInfo samples pass Python numbers only, so nothing runs on neuron; "
    "test_index_sort_ops.py::test_eye checks it against the CPU",
    "_grouped_mm": "op_db has no _grouped_mm OpInfo; test_grouped_mm.py checks its four layouts "
    "forward and backward against the CPU",
    "_foreach_norm": "every _foreach_norm OpInfo sample asks for dtype=float64; "
    "test_op_parity.py::test_foreach_norm_parity checks the float32/bfloat16/float16 calls "
    "clip_grad_norm_ makes",
}


def _load_op_db():
    """Imports op_db without PyTorch's test-only dependencies and without its side effects."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        # common_utils only needs expecttest.TestCase as a base class; nothing here uses it.
        stub = types.ModuleType("expecttest")
        stub.TestCase = unittest.TestCase
        stub.ACCEPT = False
        sys.modules["expecttest"] = stub
    backends_globals = torch.backends.flags_frozen.__globals__
    flags = backends_globals["__allow_nonbracketed_mutation_flag"]
    script_fn_call = torch._C.ScriptFunction.__call__
    script_meth_call = torch._C.ScriptMethod.__call__
    try:
        from torch.testing._internal import common_methods_invocations as cmi
        from torch.testing._internal import common_utils

        # Sample iterators seek a unittest.TestCase in inspect.stack(): 0.1 s each, never one here.
        common_utils.extract_test_fn = lambda: None
        # The _foreach_* ops have their own OpInfo lists (ForeachFuncInfo).
        op_db = list(cmi.op_db)
        for name in (
            "foreach_unary_op_db",
            "foreach_binary_op_db",
            "foreach_pointwise_op_db",
            "foreach_reduce_op_db",
            "foreach_other_op_db",
        ):
            op_db += list(getattr(cmi, name, []))
    finally:
        # common_utils freezes torch.backends flags and wraps TorchScript calls on import:
        # undo both so the rest of the test session is unaffected.
        backends_globals["__allow_nonbracketed_mutation_flag"] = flags
        torch._C.ScriptFunction.__call__ = script_fn_call
        torch._C.ScriptMethod.__call__ = script_meth_call
    return op_db


def native_ops_available() -> bool:
    return hasattr(getattr(vtrn, "_C", None), "_native_ops")


def native_registry() -> dict[str, tuple[frozenset[str], str]] | None:
    """{"add.out": ({"float32", ...}, "lowered"), ...} from the build, or None."""
    if not native_ops_available():
        return None
    entries = vtrn._C._native_ops()
    registry = {}
    for name, dtypes, kind in entries:
        name = name.removeprefix("aten::")
        old = registry.get(name, (frozenset(), kind))
        registry[name] = (old[0] | frozenset(str(d).removeprefix("torch.") for d in dtypes), kind)
    return registry


def base_name(aten_op: str) -> str:
    """ "aten::_softmax_backward_data.out" -> "_softmax_backward_data"."""
    return aten_op.removeprefix("aten::").split(".")[0]


def family(aten_op: str) -> str:
    """The op family of an overload: "add_.Tensor", "add.out" and "add.Tensor" -> "add"."""
    base = base_name(aten_op)
    return base.rstrip("_") or base


def opinfo_id(op) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def _name_candidates(base: str) -> set[str]:
    """OpInfo names (with variant) and aten_names an ATen base name plainly matches."""
    names = {base, base.rstrip("_")}
    stripped = base.lstrip("_").rstrip("_")
    names |= {stripped, "nn.functional." + stripped}
    if stripped.startswith("linalg_"):
        names.add("linalg." + stripped.removeprefix("linalg_"))
    if stripped.startswith("special_"):
        names.add("special." + stripped.removeprefix("special_"))
    for suffix in ("_backward_data", "_backward", "_forward"):
        if stripped.endswith(suffix):
            fwd = stripped.removesuffix(suffix)
            names |= {fwd, "nn.functional." + fwd}
    return names


@dataclasses.dataclass
class Selection:
    """OpInfos to test, with the dtypes the registry claims through the ops they reach."""

    ops: dict  # opinfo id -> OpInfo
    dtypes: dict  # opinfo id -> [torch.dtype]
    reaches: dict  # opinfo id -> sorted native op names it was selected for
    excluded: dict  # opinfo id -> reason
    dtype_skips: list  # (opinfo id, dtype name, reason)
    unmatched: dict  # native op -> reason (no OpInfo matched by name)


# Which kinds of native op the suite selects OpInfos for. Runtime ops (allocation, copies,
# views, fill, random numbers) are hand-written kernels with their own tests
# (test_native_kernels.py, test_rng.py); their random OpInfos cannot match the CPU's stream.
KINDS = tuple(os.environ.get("VTRN_PARITY_KINDS", "lowered").split(","))


def select(op_db, registry) -> Selection:
    by_id = {opinfo_id(op): op for op in op_db}
    by_name: dict[str, list] = {}
    for op in op_db:
        by_name.setdefault(op.name, []).append(op)
        if op.aten_name and op.aten_name != op.name:
            by_name.setdefault(op.aten_name, []).append(op)

    reaches: dict[str, set[str]] = {}
    claimed: dict[str, set[str]] = {}
    excluded = {}
    unmatched = {}
    for native, (dtypes, kind) in sorted(registry.items()):
        if kind not in KINDS:
            continue
        base = base_name(native)
        wanted = set()
        for cand in _name_candidates(base):
            wanted |= {opinfo_id(op) for op in by_name.get(cand, [])}
        for extra in EXTRA_OPINFOS.get(base, []):
            if extra in by_id:
                wanted.add(extra)
            else:
                wanted |= {opinfo_id(op) for op in by_name.get(extra, [])}
        for oid in sorted(wanted):
            if oid in EXCLUDED_VARIANTS:
                excluded[oid] = EXCLUDED_VARIANTS[oid]
                continue
            reaches.setdefault(oid, set()).add(native)
            claimed.setdefault(oid, set()).update(dtypes)
        if not wanted:
            unmatched[native] = NO_OPINFO.get(base, "no OpInfo matches by name or EXTRA_OPINFOS")

    ops, op_dtypes, dtype_skips = {}, {}, []
    for oid in sorted(reaches):
        op = by_id[oid]
        cpu_dtypes = op.supported_dtypes("cpu")
        chosen = []
        for name in sorted(claimed[oid]):
            dtype = _DTYPE_BY_NAME.get(name)
            if dtype is None:
                dtype_skips.append((oid, name, "dtype outside float32/bfloat16/float16/int/bool"))
            elif dtype not in cpu_dtypes:
                dtype_skips.append((oid, name, "the OpInfo does not support it on CPU"))
            else:
                chosen.append(dtype)
        chosen.sort(key=TESTED_DTYPES.index)
        if chosen:
            ops[oid] = op
            op_dtypes[oid] = chosen
    return Selection(
        ops, op_dtypes, {k: sorted(v) for k, v in reaches.items()}, excluded, dtype_skips, unmatched
    )


# --- running one sample -----------------------------------------------------------------


def _tensors(tree):
    return [t for t in pytree.tree_leaves(tree) if isinstance(t, torch.Tensor)]


def sample_skip_reason(sample) -> str | None:
    """Why a sample cannot be compared meaningfully, or None."""
    for t in _tensors((sample.input, sample.args, sample.kwargs)):
        if t.layout != torch.strided:
            return f"{t.layout} tensor in sample (neuron has strided tensors only)"
        if t.dtype == torch.float64:
            return "float64 tensor in sample (neuron computes float64 as float32)"
        if t.dtype.is_complex:
            return f"{t.dtype} tensor in sample (complex is outside the registry's dtypes)"
    for v in pytree.tree_leaves((sample.args, sample.kwargs)):
        if isinstance(v, torch.dtype) and (v == torch.float64 or v.is_complex):
            return f"sample asks for dtype={v} (neuron computes float64 as float32)"
    return None


def describe(sample) -> str:
    def one(v):
        if isinstance(v, torch.Tensor):
            return f"T{list(v.shape)}:{str(v.dtype).removeprefix('torch.')}"
        if isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in v):
            return "[" + ", ".join(one(x) for x in v) + "]"
        text = repr(v)
        return text if len(text) <= 40 else text[:37] + "..."

    parts = [one(sample.input)] + [one(a) for a in sample.args]
    parts += [f"{k}={one(v)}" for k, v in sample.kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _copy_to(sample, device):
    """A copy of |sample| on |device| whose tensors are fresh leaves (grad flag kept). A
    factory's device= argument names the device the sample was made for: it becomes |device|."""

    def move(v):
        if not isinstance(v, torch.Tensor):
            return v
        t = v.detach().to(device, copy=True)
        return t.requires_grad_(v.requires_grad)

    inp, args, kwargs = pytree.tree_map(move, (sample.input, sample.args, sample.kwargs))
    if "device" in kwargs:
        kwargs = {**kwargs, "device": device}
    return inp, args, kwargs


# Ops whose index output orders equal values as the implementation likes (torch.sort without
# stable=True, torch.topk): PyTorch promises no order among ties, and CUDA's differs from the
# CPU's. Their indices compare as equal when they select equal values, each index once.
TIE_ORDER_FREE = {"sort": 0, "topk": 1}  # OpInfo name -> position of dim in the sample's args


def _tie_free(op, sample, dev_out, cpu_out):
    """|dev_out| with its indices replaced by the CPU's where they pick the same values (see
    TIE_ORDER_FREE); |dev_out| unchanged otherwise."""
    pos = TIE_ORDER_FREE.get(op.name)
    if pos is None or sample.kwargs.get("stable") or not isinstance(cpu_out, tuple):
        return dev_out
    x = sample.input.detach().cpu()
    dim = sample.kwargs.get("dim", sample.args[pos] if len(sample.args) > pos else -1)
    if x.dim() == 0:
        return dev_out
    di, ci = dev_out[1].detach().cpu(), cpu_out[1]
    if di.shape != ci.shape or di.dtype != ci.dtype:
        return dev_out
    same = torch.equal(
        x.gather(dim, di).double().nan_to_num(7.5), x.gather(dim, ci).double().nan_to_num(7.5)
    )
    distinct = bool((di.sort(dim).values.diff(dim=dim) != 0).all()) if di.numel() else True
    if not (same and distinct):
        return dev_out
    return type(dev_out)((dev_out[0], ci.to(dev_out[1].device)))


def _grad_leaves(tree):
    return [t for t in _tensors(tree) if t.requires_grad and t.is_leaf]


HALF = (torch.float16, torch.bfloat16)


def _no_worse_than_cpu(d, c, r) -> bool:
    """For float16/bfloat16 (and float32 gradients, below): neuron's worst error against the
    float64 result |r| is no larger than the CPU's, give or take one rounding. The CPU kernels round some intermediates to the half type (in scalar tail
    loops, for instance), so the two can differ by more than the default tolerance while
    neuron is the more accurate; the float64 computation decides."""
    if r is None or c.dtype not in (*HALF, torch.float32) or d.shape != c.shape:
        return False
    if r.shape != c.shape:
        return False
    r = r.detach().double()
    d_err, c_err = (d.double() - r).abs(), (c.double() - r).abs()
    r_nan = r.isnan()
    if bool((d.double().isnan() & ~r_nan).any()):
        return False
    d_err, c_err = d_err.masked_fill(r_nan, 0.0), c_err.masked_fill(r_nan | c.double().isnan(), 0.0)
    # One rounding of the half type at the result's scale is the slack: on a few elements the
    # CPU's double rounding can land nearer by chance.
    slack = torch.finfo(c.dtype).eps * float(r.masked_fill(r_nan, 0.0).abs().max())
    return bool(d_err.max() <= c_err.max() + slack)


def _compare(dev, cpu, what: str, ref=None, notes=None):
    """assert_close with PyTorch's default tolerances for the dtype; a richer message. With
    |ref| (the op computed in float64 on the CPU), a float16/bfloat16 mismatch passes when
    neuron is at least as close to |ref| as the CPU is (recorded in |notes|)."""
    dev_leaves, dev_spec = pytree.tree_flatten(dev)
    cpu_leaves, cpu_spec = pytree.tree_flatten(cpu)

    def reference_leaves():  # |ref| may be a function: called only when a comparison fails
        nonlocal ref
        ref = ref() if callable(ref) else ref
        leaves = pytree.tree_flatten(ref)[0] if ref is not None else None
        return leaves if leaves is not None and len(leaves) == len(cpu_leaves) else None

    assert dev_spec == cpu_spec, f"{what}: output structure {dev_spec} != CPU's {cpu_spec}"
    for i, (d, c) in enumerate(zip(dev_leaves, cpu_leaves)):
        where = f"{what}[{i}]" if len(cpu_leaves) > 1 else what
        if not isinstance(c, torch.Tensor):
            if isinstance(d, torch.Tensor):
                raise AssertionError(f"{where}: neuron gave a tensor, CPU gave {c!r}")
            torch.testing.assert_close(d, c, equal_nan=True, msg=lambda m: f"{where}: {m}")
            continue
        if d is None or not isinstance(d, torch.Tensor):
            raise AssertionError(f"{where}: neuron gave {d!r}, CPU gave a tensor")
        if d.device.type != DEVICE:
            raise AssertionError(f"{where}: result is on {d.device}, not on {DEVICE}")
        d = d.detach().cpu()
        c = c.detach()
        try:
            torch.testing.assert_close(d, c, equal_nan=True)
        except AssertionError as e:
            leaves = reference_leaves()
            r = leaves[i] if leaves is not None else None
            if isinstance(r, torch.Tensor) and _no_worse_than_cpu(d, c, r):
                if notes is not None:
                    notes.append(
                        f"{where}: beyond the default tolerance of the CPU result, but at least "
                        "as close to the float64 result as the CPU"
                    )
                continue
            detail = f"{where}: shape {list(c.shape)} dtype {c.dtype}"
            if d.dtype != c.dtype:
                detail += f", neuron gave dtype {d.dtype}"
            if d.shape == c.shape and c.numel():
                diff = (d.double() - c.double()).abs()
                both_nan = d.double().isnan() & c.double().isnan()
                diff = diff.masked_fill(both_nan, 0.0)
                detail += f", max abs diff {diff.max().item():.6g} (all elements)"
            raise AssertionError(f"{detail}\n{e}") from None


@dataclasses.dataclass
class SampleResult:
    index: int
    desc: str
    status: str  # "pass", "fail", "skip"
    reason: str = ""
    forward_fallbacks: list = dataclasses.field(default_factory=list)
    backward_fallbacks: list = dataclasses.field(default_factory=list)
    executed: list = dataclasses.field(default_factory=list)
    backward_checked: bool = False
    note: str = ""  # set when a passing sample was compared only in part


def _sync():
    if hasattr(torch, "neuron") and hasattr(torch.neuron, "synchronize"):
        torch.neuron.synchronize()


def _strip(names):
    return sorted(n.removeprefix("aten::") for n in names)


def _detached(tree, device):
    """(input, args, kwargs) on |device|, device= retargeted as in _copy_to."""

    def move(v):
        return v.detach().to(device, copy=True) if isinstance(v, torch.Tensor) else v

    inp, args, kwargs = pytree.tree_map(move, tree)
    if "device" in kwargs:
        kwargs = {**kwargs, "device": device}
    return inp, args, kwargs


def _out_variant(op, sample, cpu_out, ref=None, notes=None):
    """Runs |op| with out= on both devices; returns (failure or "", note or "")."""
    outs = cpu_out if isinstance(cpu_out, (tuple, list)) else (cpu_out,)
    if not outs or not all(isinstance(t, torch.Tensor) for t in outs):
        return "", ""
    single = isinstance(cpu_out, torch.Tensor)
    results = {}
    for device in ("cpu", DEVICE):
        inp, args, kwargs = _detached((sample.input, sample.args, sample.kwargs), device)
        out = [torch.empty(t.shape, dtype=t.dtype, device=device) for t in outs]
        try:
            ret = op(inp, *args, **kwargs, out=out[0] if single else tuple(out))
            _sync()
        except Exception as e:
            if device == "cpu":
                return "", f"out= not compared, raises on CPU: {type(e).__name__}: {e}"
            return f"out= raises on neuron, not on CPU: {type(e).__name__}: {e}", ""
        results[device] = (ret, out)
    try:
        dev_outs = results[DEVICE][1]
        if len(dev_outs) == 2:
            dev_outs = list(_tie_free(op, sample, tuple(dev_outs), tuple(results["cpu"][1])))
        _compare(dev_outs, results["cpu"][1], "out=", ref, notes)
    except AssertionError as e:
        return f"out= mismatch: {e}", ""
    return "", ""


def _inplace_variant(op, sample, cpu_out, ref=None, notes=None):
    """Runs |op|'s in-place variant on both devices; returns (failure or "", note or "")."""
    if sample.broadcasts_input or not isinstance(sample.input, torch.Tensor):
        return "", ""
    if (
        not isinstance(cpu_out, torch.Tensor)
        or cpu_out.dtype != sample.input.dtype
        or cpu_out.shape != sample.input.shape
    ):
        return "", ""  # the in-place op would have to promote or resize: PyTorch rejects it
    results = {}
    for device in ("cpu", DEVICE):
        inp, args, kwargs = _detached((sample.input, sample.args, sample.kwargs), device)
        try:
            op.inplace_variant(inp, *args, **kwargs)
            _sync()
        except Exception as e:
            if device == "cpu":
                return "", f"in-place not compared, raises on CPU: {type(e).__name__}: {e}"
            return f"in-place raises on neuron, not on CPU: {type(e).__name__}: {e}", ""
        results[device] = inp
    try:
        _compare(results[DEVICE], results["cpu"], "in-place", ref, notes)
    except AssertionError as e:
        return f"in-place mismatch: {e}", ""
    return "", ""


def run_sample(
    op, sample, index: int, dtype: torch.dtype, check_backward: bool, variants: bool = True
) -> SampleResult:
    """Runs |sample| on the CPU and on neuron and compares outputs and gradients; with
    |variants|, also the out= and in-place variants of the op (forward only)."""
    desc = describe(sample)
    reason = sample_skip_reason(sample)
    if reason:
        return SampleResult(index, desc, "skip", reason)
    if not _tensors((sample.input, sample.args, sample.kwargs)):
        return SampleResult(index, desc, "skip", "no tensor arguments: nothing runs on neuron")

    cpu_in, cpu_args, cpu_kwargs = _copy_to(sample, "cpu")
    dev_in, dev_args, dev_kwargs = _copy_to(sample, DEVICE)
    try:
        cpu_out = op(cpu_in, *cpu_args, **cpu_kwargs)
    except Exception as e:  # the oracle itself rejects the sample
        return SampleResult(index, desc, "skip", f"sample raises on CPU: {type(e).__name__}: {e}")

    result = SampleResult(index, desc, "pass")
    failures, notes = [], []
    executed = set()

    def track(into):
        into.extend(f for f in _strip(vtrn.get_fallback_ops()) if f not in into)
        executed.update(vtrn.get_executed_ops())

    def finish():
        result.executed = _strip(executed)
        if failures:
            result.status, result.reason = "fail", "\n".join(failures)
        result.note = "; ".join(notes)
        return result

    vtrn.clear_op_tracking()
    try:
        dev_out = op(dev_in, *dev_args, **dev_kwargs)
        _sync()
    except Exception as e:
        track(result.forward_fallbacks)
        failures.append(f"forward raises on neuron, not on CPU: {type(e).__name__}: {e}")
        return finish()
    track(result.forward_fallbacks)
    reference = _reference(op, sample, dtype)
    try:
        _compare(_tie_free(op, sample, dev_out, cpu_out), cpu_out, "output", reference, notes)
    except AssertionError as e:
        failures.append(f"forward mismatch: {e}")

    if variants:
        for variant, wanted in (
            (_out_variant, op.supports_out),
            (_inplace_variant, op.inplace_variant is not None),
        ):
            if not wanted:
                continue
            vtrn.clear_op_tracking()
            failure, note = variant(op, sample, cpu_out, reference, notes)
            track(result.forward_fallbacks)
            if failure:
                failures.append(failure)
            if note:
                notes.append(note)

    if not check_backward:
        return finish()
    cpu_leaves = _grad_leaves((cpu_in, cpu_args, cpu_kwargs))
    dev_leaves = _grad_leaves((dev_in, dev_args, dev_kwargs))
    cpu_outs = [
        t
        for t in _tensors(sample.output_process_fn_grad(cpu_out))
        if t.requires_grad and (t.dtype.is_floating_point or t.dtype.is_complex)
    ]
    dev_outs = [
        t
        for t in _tensors(sample.output_process_fn_grad(dev_out))
        if t.requires_grad and (t.dtype.is_floating_point or t.dtype.is_complex)
    ]
    if not (cpu_leaves and cpu_outs and len(cpu_outs) == len(dev_outs)):
        return finish()
    gen = torch.Generator().manual_seed(SEED + index)
    cots = [torch.randn(t.shape, generator=gen, dtype=torch.float32).to(t.dtype) for t in cpu_outs]
    try:
        cpu_grads = torch.autograd.grad(cpu_outs, cpu_leaves, cots, allow_unused=True)
    except Exception as e:  # the oracle's backward rejects the sample
        notes.append(f"backward not compared, raises on CPU: {type(e).__name__}: {e}")
        return finish()
    vtrn.clear_op_tracking()
    try:
        dev_grads = torch.autograd.grad(
            dev_outs, dev_leaves, [c.to(DEVICE) for c in cots], allow_unused=True
        )
        _sync()
    except Exception as e:
        track(result.backward_fallbacks)
        failures.append(f"backward raises on neuron, not on CPU: {type(e).__name__}: {e}")
        return finish()
    track(result.backward_fallbacks)
    result.backward_checked = True
    ref_grads = _reference_grads(op, sample, dtype, cots)
    if ref_grads is not None and _gradient_is_zero(ref_grads):
        # normalize over a size-1 dim is sign(x): the exact gradient is 0, and both devices
        # return the half type's rounding noise of the cancelling terms (1-2 ulps of the inputs).
        notes.append(
            "grad: the float64 gradient is 0; neuron and CPU both return rounding noise, not compared"
        )
        return finish()
    if ref_grads is None and dtype == torch.float32:
        # A gradient is often a long sum (a convolution's weight gradient adds over every output
        # position), which neuron and the CPU add in different orders: where they differ by more
        # than the default tolerance, the float64 gradient decides which is nearer.
        ref_grads = lambda: _reference_grads(op, sample, dtype, cots)  # noqa: E731
    try:
        _compare(list(dev_grads), list(cpu_grads), "grad", ref_grads, notes)
    except AssertionError as e:
        failures.append(f"backward mismatch: {e}")
    return finish()


def _gradient_is_zero(grads) -> bool:
    ts = [g for g in grads if isinstance(g, torch.Tensor) and g.numel()]
    return bool(ts) and all(float(g.abs().max()) < 1e-12 for g in ts)


def _upcast(sample, requires_grad: bool, widened=HALF):
    """The sample on the CPU with its |widened| (float16/bfloat16) tensors as float64 leaves."""

    def move(v):
        if isinstance(v, torch.Tensor):
            t = v.detach().to("cpu")
            if t.dtype in widened:
                t = t.double()
            return t.requires_grad_(requires_grad and v.requires_grad and t.dtype.is_floating_point)
        return v

    return pytree.tree_map(move, (sample.input, sample.args, sample.kwargs))


def _reference(op, sample, dtype):
    """The op's outputs computed in float64 (only for half dtypes), or None."""
    if dtype not in HALF:
        return None
    try:
        with torch.no_grad():
            inp, args, kwargs = _upcast(sample, False)
            return op(inp, *args, **kwargs)
    except Exception:
        return None


def _reference_grads(op, sample, dtype, cots):
    """The gradients computed in float64 with the same cotangents (half dtypes and float32), or
    None."""
    if dtype not in (*HALF, torch.float32):
        return None
    try:
        inp, args, kwargs = _upcast(sample, True, (*HALF, torch.float32))
        out = op(inp, *args, **kwargs)
        outs = [
            t
            for t in _tensors(sample.output_process_fn_grad(out))
            if t.requires_grad and t.dtype.is_floating_point
        ]
        leaves = _grad_leaves((inp, args, kwargs))
        if len(outs) != len(cots) or not leaves:
            return None
        return list(
            torch.autograd.grad(outs, leaves, [c.double() for c in cots], allow_unused=True)
        )
    except Exception:
        return None


def _signature(sample):
    """The argument kinds of a sample: which are tensors, Python scalars, None, and kwargs."""

    def kind(v):
        if isinstance(v, torch.Tensor):
            return "T" if v.dim() else "T0"
        if isinstance(v, (list, tuple)):
            return tuple(kind(x) for x in v)
        return type(v).__name__

    return (
        kind(sample.input),
        tuple(kind(a) for a in sample.args),
        tuple(sorted((k, kind(v)) for k, v in sample.kwargs.items())),
    )


class SampleGenerationError(Exception):
    pass


def samples_for(
    op,
    dtype: torch.dtype,
    requires_grad: bool,
    limit: int = MAX_SAMPLES,
    extra: int = EXTRA_SAMPLES,
    scan: int = 64,
):
    """The first |limit| reference samples, then up to |extra| more of new argument kinds
    among the next |scan|.

    reference_inputs starts with sample_inputs and adds more (extremal values, broadcasting,
    scalar arguments); unary ops have a single plain sample. Returns (samples, note): note
    says why generation stopped early (some reference generators raise part way, e.g. on
    requires_grad with integral extra arguments), or is "".
    """
    torch.manual_seed(SEED)
    out, seen, note = [], set(), ""
    gen = op.reference_inputs("cpu", dtype, requires_grad=requires_grad)
    try:
        for i, sample in enumerate(gen):
            sig = _signature(sample)
            if len(out) < limit or (sig not in seen and len(out) < limit + extra):
                out.append(sample)
            seen.add(sig)
            if i + 1 >= limit + scan or len(out) >= limit + extra:
                break
    except Exception as e:
        note = f"reference_inputs raised after {len(out)} samples: {type(e).__name__}: {e}"
        if not out:
            torch.manual_seed(SEED)
            gen = op.sample_inputs("cpu", dtype, requires_grad=requires_grad)
            out = [s for _, s in zip(range(limit), gen)]
            note += "; used sample_inputs instead"
    return out, note


def wants_backward(op, dtype: torch.dtype) -> bool:
    return (
        bool(op.supports_autograd)
        and dtype.is_floating_point
        and dtype in op.supported_backward_dtypes("cpu")
    )
