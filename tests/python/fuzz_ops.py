"""The op catalogue of the differential fuzz suite: each family makes one random statement.

A family's `make(gen)` picks operands among the program's variables (or new inputs), writes a
statement and tags it `family.op:dtypes|flags`. It returns None when it has nothing to work on;
the CPU decides what is valid (a statement the CPU rejects either ends the program, to check
that the device raises the same exception type, or is dropped).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Callable

import torch
from fuzz_programs import FLOATS, INTS, ProgramGenerator, Stmt, dname, fmt_value


@dataclasses.dataclass
class Family:
    name: str
    weight: float
    make: Callable[[ProgramGenerator], Stmt | None]
    large: bool = False


def _flags(t: torch.Tensor) -> str:
    flags = []
    if t.dim() == 0:
        flags.append("0d")
    if t.numel() == 0:
        flags.append("empty")
    if not t.is_contiguous():
        flags.append("noncontig")
    if t._base is not None:
        flags.append("view")
    if t.numel() > 1 and torch._debug_has_internal_overlap(t) == 1:
        flags.append("internaloverlap")  # expanded: several elements share memory
    return "|".join(flags)


def _pick(gen: ProgramGenerator, pred=None) -> str | None:
    names = gen.tensors(pred)
    return gen.rng.choice(names) if names else None


def _dim(gen: ProgramGenerator, t: torch.Tensor) -> int:
    n = max(t.dim(), 1)
    d = gen.rng.randrange(n)
    return d - n if gen.rng.random() < 0.3 else d


def _assign(gen, expr, feature) -> Stmt:
    return Stmt(f"{gen.name()} = {expr}", "assign", feature)


# -- views -------------------------------------------------------------------------------------


def _slice_expr(gen, size: int) -> str:
    r = gen.rng
    start = r.choice((None, 0, 1, -1, -2, size // 2))
    stop = r.choice((None, size, -1, 1, size + 2))
    step = r.choice((None, 1, 2, 3))
    parts = ["" if start is None else str(start), "" if stop is None else str(stop)]
    text = ":".join(parts)
    if step is not None:
        text += f":{step}"
    return text


def make_view(gen: ProgramGenerator) -> Stmt | None:
    x = _pick(gen)
    if x is None:
        return None
    t = gen.value(x)
    r = gen.rng
    nd = t.dim()
    ops = ["slice", "unsqueeze", "flatten", "reshape", "view_dtype", "expand"]
    if nd >= 1:
        ops += ["select", "narrow", "squeeze", "split", "unbind", "as_strided", "unfold", "flip"]
    if nd >= 2:
        ops += ["transpose", "permute", "mT", "diagonal", "movedim", "view"]
    if t.is_complex():
        ops += ["real", "imag", "view_as_real", "conj"]
    if t.dtype == torch.float32 and nd >= 1 and t.shape[-1] == 2:
        ops += ["view_as_complex"]
    op = r.choice(ops)
    if op == "slice":
        idx = []
        for d in range(nd):
            choice = r.random()
            if choice < 0.6:
                idx.append(_slice_expr(gen, t.shape[d]))
            elif choice < 0.75 and t.shape[d] > 0:
                idx.append(str(r.randrange(-t.shape[d], t.shape[d])))
            elif choice < 0.85:
                idx.append("None")
            else:
                idx.append(":")
        if nd and r.random() < 0.2:
            idx = ["..."] + idx[1:]
        expr = f"{x}[{', '.join(idx) if idx else '...'}]"
    elif op == "select":
        d = _dim(gen, t)
        size = t.shape[d]
        expr = f"{x}.select({d}, {r.randrange(-size, size) if size else 0})"
    elif op == "narrow":
        d = _dim(gen, t)
        size = t.shape[d]
        start = r.randint(0, size)
        expr = f"{x}.narrow({d}, {start}, {r.randint(0, size - start)})"
    elif op == "unsqueeze":
        expr = f"{x}.unsqueeze({r.randint(-nd - 1, nd)})"
    elif op == "squeeze":
        expr = f"{x}.squeeze({_dim(gen, t)})" if r.random() < 0.6 else f"{x}.squeeze()"
    elif op == "flatten":
        expr = f"{x}.flatten()"
    elif op in ("reshape", "view"):
        shape = list(t.shape)
        if t.numel() > 0 and r.random() < 0.7:
            shape = [-1] + ([shape[-1]] if shape and r.random() < 0.5 else [])
        else:
            r.shuffle(shape)
        expr = f"{x}.{op}({tuple(shape)!r})"
    elif op == "view_dtype":
        # Integers as other integers only. Reinterpreting floats would compare NaN bit
        # patterns, which IEEE leaves open (the CPU itself gives 0x7FC0 or 0xFFFF for a bfloat16
        # NaN depending on the tensor's length); so would integers viewed as floats, once
        # arithmetic writes NaN through the view into the integers.
        targets = (torch.int32, torch.int16, torch.uint8, torch.int8, torch.int64)
        same = [d for d in targets if d.itemsize == t.dtype.itemsize and d != t.dtype]
        if t.dtype not in INTS or not same:
            return None
        expr = f"{x}.view(torch.{dname(r.choice(same))})"
    elif op == "expand":
        shape = [s if s != 1 or r.random() < 0.5 else r.randint(2, 4) for s in t.shape]
        if r.random() < 0.3:
            shape = [r.randint(1, 3)] + shape
        expr = f"{x}.expand({tuple(shape)!r})"
    elif op == "split":
        d = _dim(gen, t)
        expr = f"{x}.split({r.randint(1, 3)}, {d})[{r.choice((0, -1))}]"
    elif op == "unbind":
        d = _dim(gen, t)
        if t.shape[d] == 0:
            return None
        expr = f"{x}.unbind({d})[{r.randrange(t.shape[d])}]"
    elif op == "as_strided":
        storage = t.untyped_storage().nbytes() // t.element_size()
        ndim = r.randint(1, 3)
        size = [r.randint(1, 3) for _ in range(ndim)]
        stride = [r.randint(0, 3) for _ in range(ndim)]
        span = sum((s - 1) * st for s, st in zip(size, stride))
        hi = storage - 1 - span
        offset = r.randint(0, hi) if hi >= 0 else 0
        expr = f"{x}.as_strided({tuple(size)!r}, {tuple(stride)!r}, {offset})"
    elif op == "unfold":
        d = _dim(gen, t)
        expr = f"{x}.unfold({d}, {r.randint(1, 3)}, {r.randint(1, 2)})"
    elif op == "flip":
        expr = f"{x}.flip({_dim(gen, t)})"  # a copy, not a view, but shape work all the same
    elif op == "transpose":
        expr = f"{x}.transpose({_dim(gen, t)}, {_dim(gen, t)})"
    elif op == "permute":
        perm = list(range(nd))
        r.shuffle(perm)
        expr = f"{x}.permute({tuple(perm)!r})"
    elif op == "mT":
        expr = f"{x}.mT"
    elif op == "diagonal":
        expr = f"{x}.diagonal({r.randint(-1, 1)}, {_dim(gen, t)}, {_dim(gen, t)})"
    elif op == "movedim":
        expr = f"{x}.movedim({_dim(gen, t)}, {_dim(gen, t)})"
    elif op in ("real", "imag"):
        expr = f"{x}.{op}"
    elif op == "view_as_real":
        expr = f"torch.view_as_real({x})"
    elif op == "conj":
        expr = f"{x}.conj()"
    else:  # view_as_complex
        expr = f"torch.view_as_complex({x})"
    return _assign(gen, expr, f"view.{op}:{dname(t.dtype)}|{_flags(t)}")


# -- elementwise -------------------------------------------------------------------------------

UNARY = (
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
    "floor", "ceil", "round", "trunc", "sign", "reciprocal", "bitwise_not", "logical_not",
    "isnan", "isinf", "isfinite", "nan_to_num", "square", "log1p", "expm1", "erf", "frac",
    "exp2", "signbit", "angle",
)  # fmt: skip


def make_unary(gen: ProgramGenerator) -> Stmt | None:
    x = _pick(gen)
    if x is None:
        return None
    t = gen.value(x)
    r = gen.rng
    op = r.choice(
        UNARY
        + ("clamp", "gelu", "silu", "softmax", "log_softmax", "to", "contiguous", "clone", "where")
    )
    if op == "clamp":
        lo, hi = gen.scalar_value(t.dtype if not t.is_complex() else torch.float32), None
        if r.random() < 0.5:
            hi = gen.scalar_value(t.dtype if not t.is_complex() else torch.float32)
        expr = f"torch.clamp({x}, {fmt_value(lo)}, {fmt_value(hi) if hi is not None else 'None'})"
    elif op in ("gelu", "silu"):
        expr = f"torch.nn.functional.{op}({x})"
    elif op in ("softmax", "log_softmax"):
        expr = f"torch.{op}({x}, {_dim(gen, t)})"
    elif op == "to":
        dtype = gen.pick_dtype()
        expr = f"{x}.to(torch.{dname(dtype)})"
        op = f"to_{dname(dtype)}"
    elif op in ("contiguous", "clone"):
        expr = f"{x}.{op}()"
    elif op == "where":
        expr = f"torch.where({x} > 0, {x}, {fmt_value(gen.scalar_value(t.dtype) if not t.is_complex() else 0)})"
    else:
        expr = f"torch.{op}({x})"
    return _assign(gen, expr, f"unary.{op}:{dname(t.dtype)}|{_flags(t)}")


BINARY = (
    "add", "sub", "mul", "div", "div_floor", "div_trunc", "floor_divide", "remainder", "fmod",
    "pow", "atan2", "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge",
    "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor",
    "hypot", "copysign", "add_alpha", "sub_alpha",
)  # fmt: skip


def _operand(gen: ProgramGenerator, t: torch.Tensor) -> tuple[str, str] | None:
    """A second operand for |t|: a tensor variable that broadcasts, a new input of a
    broadcastable shape, a 0-d tensor, or a Python number. Returns (expression, dtype tag)."""
    r = gen.rng
    choice = r.random()
    if choice < 0.3:
        names = gen.tensors(lambda v: _broadcasts(v.shape, t.shape))
        if names:
            y = r.choice(names)
            return y, dname(gen.value(y).dtype) + _partner_flags(gen.value(y))
    if choice < 0.75:
        shape = gen.broadcast_partner_shape(tuple(t.shape))
        if r.random() < 0.15:
            shape = ()
        y = gen.new_input(shape, t.dtype if r.random() < 0.4 else None)
        if y is None:
            return None
        return y, dname(gen.value(y).dtype) + _partner_flags(gen.value(y))
    kind = r.choice(
        (torch.bool, torch.int64, torch.float32, torch.complex64)
        if r.random() < 0.2
        else (torch.int64, torch.float32)
    )
    value = gen.scalar_value(kind)
    return (
        fmt_value(value),
        f"py{ {torch.bool: 'bool', torch.int64: 'int', torch.float32: 'float', torch.complex64: 'complex'}[kind] }",
    )


def _partner_flags(v: torch.Tensor) -> str:
    return ("|0dpartner" if v.dim() == 0 else "") + ("|emptypartner" if v.numel() == 0 else "")


def _broadcasts(a, b) -> bool:
    try:
        torch.broadcast_shapes(a, b)
        return True
    except RuntimeError:
        return False


def make_binary(gen: ProgramGenerator) -> Stmt | None:
    x = _pick(gen)
    if x is None:
        return None
    t = gen.value(x)
    operand = _operand(gen, t)
    if operand is None:
        return None
    y, ytag = operand
    r = gen.rng
    op = r.choice(BINARY + ("lerp", "addcmul", "addcdiv", "where3"))
    if op in ("div_floor", "div_trunc"):
        expr = f"torch.div({x}, {y}, rounding_mode='{op[4:]}')"
    elif op in ("add_alpha", "sub_alpha"):
        alpha = fmt_value(
            gen.scalar_value(torch.int64 if not t.is_floating_point() else torch.float32, 0)
        )
        expr = f"torch.{op[:3]}({x}, {y}, alpha={alpha})"
    elif op == "lerp":
        expr = f"torch.lerp({x}, {y}, {fmt_value(round(r.random(), 2))})"
    elif op in ("addcmul", "addcdiv"):
        expr = f"torch.{op}({x}, {y}, {x}, value={fmt_value(r.choice((1, 0.5, 2, -1)))})"
    elif op == "where3":
        expr = f"torch.where({x} != 0, {x}, {y})"
    elif r.random() < 0.15 and not y[0].isalpha():
        expr = f"torch.{op}({y}, {x})" if op not in ("div", "floor_divide") else f"{y} / {x}"
        return _assign(gen, expr, f"binary.{op}:{dname(t.dtype)},{ytag}|{_flags(t)}|rscalar")
    else:
        expr = f"torch.{op}({x}, {y})"
    return _assign(gen, expr, f"binary.{op}:{dname(t.dtype)},{ytag}|{_flags(t)}")


CHAIN_UNARY = (
    "neg",
    "abs",
    "exp",
    "sigmoid",
    "tanh",
    "relu",
    "sqrt",
    "sin",
    "reciprocal",
    "square",
)
CHAIN_BINARY = ("+", "-", "*", "/")


def make_chain(gen: ProgramGenerator) -> Stmt | None:
    """One statement of 2-6 elementwise ops: what Adaptive Eager Execution fuses, with
    temporaries no tensor refers to once the statement ends."""
    x = _pick(gen, lambda v: v.dtype in FLOATS or v.dtype in INTS)
    if x is None:
        return None
    t = gen.value(x)
    r = gen.rng
    partners = gen.tensors(lambda v: v.shape == t.shape or _broadcasts(v.shape, t.shape))
    expr = x
    flags = [_flags(t)]
    for _ in range(r.randint(2, 6)):
        if r.random() < 0.4:
            unary = r.choice(CHAIN_UNARY)
            expr = f"{expr}.{unary}()"
            if unary == "relu":
                flags.append("relu")
        else:
            other = (
                r.choice(partners)
                if partners and r.random() < 0.5
                else fmt_value(r.choice((2, 0.5, -1.5, 3)))
            )
            op = r.choice(CHAIN_BINARY)
            if other in partners:
                o = gen.value(other)
                if op == "-" and o.dtype == torch.bool:
                    flags.append("boolsub")
                if o.dim() == 0 and o.dtype != t.dtype:
                    flags.append("0dpartner")
                if o.dtype != t.dtype and {o.dtype, t.dtype} & {torch.float16, torch.bfloat16}:
                    flags.append("mixedhalf")
                if o.dtype != t.dtype:
                    flags.append(f"with_{dname(o.dtype)}")
            expr = f"({expr} {op} {other})"
    return _assign(gen, expr, f"chain.elementwise:{dname(t.dtype)}|{'|'.join(flags)}")


def make_matmul(gen: ProgramGenerator) -> Stmt | None:
    x = _pick(gen, lambda v: v.dim() in (1, 2, 3) and v.dtype in FLOATS + (torch.complex64,))
    if x is None:
        return None
    t = gen.value(x)
    r = gen.rng
    k = t.shape[-1]
    if t.dim() == 1:
        shape = (k,) if r.random() < 0.5 else (k, r.randint(0, 4))
    elif t.dim() == 2:
        shape = (k, r.randint(0, 5)) if r.random() < 0.8 else (k,)
    else:
        shape = (t.shape[0], k, r.randint(1, 4))
    y = gen.new_input(shape, t.dtype if r.random() < 0.8 else None)
    if y is None:
        return None
    op = r.choice(("matmul", "mm", "bmm", "addmm")) if t.dim() >= 2 else "matmul"
    if op == "addmm":
        bias = gen.new_input((shape[-1],), t.dtype)
        if bias is None:
            return None
        expr = f"torch.addmm({bias}, {x}, {y}, beta={r.choice((1, 0.5))}, alpha={r.choice((1, 2))})"
    else:
        expr = f"torch.{op}({x}, {y})"
    return _assign(
        gen, expr, f"matmul.{op}:{dname(t.dtype)},{dname(gen.value(y).dtype)}|{_flags(t)}"
    )


# -- reductions --------------------------------------------------------------------------------

REDUCTIONS = (
    "sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "any", "all",
    "std", "var", "norm", "logsumexp", "cumsum", "cumprod", "count_nonzero", "nansum",
)  # fmt: skip


def _reduction_expr(gen, x: str, t: torch.Tensor) -> tuple[str, str]:
    """A reduction of |x| and its tag (`op` or `op|flag|...`)."""
    r = gen.rng
    op = r.choice(REDUCTIONS)
    op_flags: list[str] = []
    nd = t.dim()
    dims = r.random()
    if op in ("cumsum", "cumprod", "logsumexp"):
        dim_arg = f"{_dim(gen, t)}"
    elif dims < 0.35 or nd == 0:
        dim_arg = None
    elif dims < 0.75 or op in ("max", "min", "argmax", "argmin"):
        dim_arg = f"{_dim(gen, t)}"
    else:
        k = r.randint(1, max(nd, 1))
        chosen = sorted({_dim(gen, t) for _ in range(k)}, key=lambda d: d % max(nd, 1))
        if len({d % max(nd, 1) for d in chosen}) < len(chosen):
            op_flags.append("dupdims")
        dim_arg = repr(tuple(chosen))
    args = [] if dim_arg is None else [dim_arg]
    kwargs = []
    if dim_arg is not None and op not in ("cumsum", "cumprod") and r.random() < 0.4:
        kwargs.append("keepdim=True")
    if op in ("sum", "cumsum", "prod", "mean", "nansum") and r.random() < 0.25:
        out = r.choice((torch.float32, torch.int64, torch.float64, torch.bfloat16))
        kwargs.append(f"dtype=torch.{dname(out)}")
        op_flags.append(f"to_{dname(out)}")
    if op in ("std", "var") and r.random() < 0.5:
        kwargs.append(f"correction={r.choice((0, 1, 2))}")
    if op == "norm" and r.random() < 0.5:
        args.insert(0, fmt_value(r.choice((1, 2, 3, math.inf, 0))))
        if dim_arg is None:
            args.insert(1, "None")
    expr = f"torch.{op}({x}{''.join(', ' + a for a in args)}{''.join(', ' + k for k in kwargs)})"
    if op in ("max", "min") and dim_arg is not None:
        expr += r.choice((".values", ".indices"))
    return expr, "|".join([op] + op_flags)


def make_reduction(gen: ProgramGenerator) -> Stmt | None:
    x = _pick(gen)
    if x is None:
        return None
    t = gen.value(x)
    expr, op = _reduction_expr(gen, x, t)
    op, _, op_flags = op.partition("|")
    return _assign(gen, expr, f"reduce.{op}:{dname(t.dtype)}|{_flags(t)}|{op_flags}")


def make_large_reduction(gen: ProgramGenerator) -> Stmt | None:
    """A reduction over up to 10^7 elements, made fresh (inputs stay small otherwise)."""
    r = gen.rng
    n = r.choice((10**5, 10**6, 3 * 10**6, 10**7, 2**23 + 5))
    dtype = r.choice(
        (
            torch.float32,
            torch.float32,
            torch.bfloat16,
            torch.float16,
            torch.int32,
            torch.int64,
            torch.bool,
            torch.float64,
        )
    )
    shape = (n,) if r.random() < 0.5 else (n // 1000, 1000)
    x = gen.new_input(shape, dtype)
    if x is None:
        return None
    t = gen.value(x)
    if r.random() < 0.3 and t.dim() == 2:
        x2 = gen.name()
        if gen.emit(Stmt(f"{x2} = {x}.mT", "assign", f"view.mT:{dname(dtype)}|large")) != "ok":
            return None
        x, t = x2, gen.value(x2)
    expr, op = _reduction_expr(gen, x, t)
    op, _, op_flags = op.partition("|")
    if op in ("cumprod", "prod", "logsumexp", "std", "var", "norm") and r.random() < 0.7:
        expr, op, op_flags = f"torch.sum({x})", "sum", ""
    return _assign(gen, expr, f"reduce.{op}:{dname(t.dtype)}|large|{op_flags}")


# -- in-place ----------------------------------------------------------------------------------

INPLACE = ("add_", "sub_", "mul_", "div_", "clamp_", "fill_", "zero_", "copy_", "masked_fill_",
           "setitem", "neg_", "abs_", "exp_", "relu_", "pow_", "addcmul_", "lerp_", "index_fill_",
           "index_put_", "overlap")  # fmt: skip


def make_inplace(gen: ProgramGenerator) -> Stmt | None:
    x = _pick(gen)
    if x is None:
        return None
    t = gen.value(x)
    r = gen.rng
    op = r.choice(INPLACE)
    ytag = ""
    if op in ("add_", "sub_", "mul_", "div_", "copy_", "addcmul_", "lerp_"):
        operand = _operand(gen, t)
        if operand is None:
            return None
        y, ytag = operand
        if op == "copy_" and not y[0] == "v":
            return None
        if op == "addcmul_":
            code = f"{x}.addcmul_({y}, {y}, value={r.choice((1, -0.5))})"
        elif op == "lerp_":
            code = f"{x}.lerp_({y}, 0.25)"
        else:
            code = f"{x}.{op}({y})"
    elif op == "clamp_":
        code = f"{x}.clamp_({fmt_value(gen.scalar_value(t.dtype if not t.is_complex() else torch.float32))}, None)"
    elif op == "fill_":
        code = f"{x}.fill_({fmt_value(gen.scalar_value(t.dtype))})"
    elif op in ("zero_", "neg_", "abs_", "exp_", "relu_"):
        code = f"{x}.{op}()"
    elif op == "pow_":
        exponent = r.choice((2, 3, 0.5, -1))
        code = f"{x}.pow_({exponent})"
        ytag = f"exp{exponent}"
    elif op == "masked_fill_":
        code = (
            f"{x}.masked_fill_({x} > 0, {fmt_value(gen.scalar_value(t.dtype))})"
            if not t.is_complex()
            else f"{x}.masked_fill_({x} != 0, 1)"
        )
    elif op == "setitem":
        if t.dim() == 0:
            return None
        d0 = t.shape[0]
        idx = r.choice((_slice_expr(gen, d0), "...", str(r.randrange(-d0, d0)) if d0 else "0"))
        value = r.choice(("scalar", "tensor"))
        if value == "scalar":
            code = f"{x}[{idx}] = {fmt_value(gen.scalar_value(t.dtype))}"
        else:
            y = gen.new_input(gen.broadcast_partner_shape(tuple(t.shape[1:])), None)
            if y is None:
                return None
            code = f"{x}[{idx}] = {y}"
            ytag = dname(gen.value(y).dtype)
    elif op == "index_fill_":
        if t.dim() == 0 or t.shape[0] == 0:
            return None
        code = f"{x}.index_fill_(0, torch.tensor([{r.randrange(t.shape[0])}], device=DEV), {fmt_value(gen.scalar_value(t.dtype))})"
    elif op == "index_put_":
        if t.dim() == 0 or t.shape[0] == 0:
            return None
        idx = [r.randrange(-t.shape[0], t.shape[0]) for _ in range(r.randint(1, 3))]
        code = f"{x}.index_put_((torch.tensor({idx}, device=DEV),), torch.tensor({fmt_value(gen.scalar_value(t.dtype))}, dtype={x}.dtype, device=DEV), accumulate={r.random() < 0.5})"
    else:  # overlap: the written-to tensor and the input share memory partially
        if t.dim() == 0 or t.shape[0] < 2:
            return None
        code = f"{x}[1:].add_({x}[:-1])"
    flags = _flags(t)
    ptr = t.untyped_storage().data_ptr()
    for name in set(re.findall(r"\bv\d+\b", code)) - {x}:
        other = gen.env.get(name)
        if isinstance(other, torch.Tensor) and other.untyped_storage().data_ptr() == ptr:
            flags += "|alias"  # the written-to tensor shares memory with an operand
            break
    if op == "overlap":
        flags += "|alias"
    return Stmt(code, "inplace", f"inplace.{op}:{dname(t.dtype)},{ytag}|{flags}")


# -- indexing, shapes, factories ---------------------------------------------------------------


def make_index(gen: ProgramGenerator) -> Stmt | None:
    x = _pick(gen, lambda v: v.dim() >= 1)
    if x is None:
        return None
    t = gen.value(x)
    r = gen.rng
    d = _dim(gen, t)
    size = t.shape[d]
    op = r.choice(
        (
            "index_select",
            "gather",
            "advanced",
            "mask",
            "masked_select",
            "take",
            "nonzero",
            "embedding",
        )
    )
    idx = (
        [r.randrange(-size if op == "advanced" else 0, size) for _ in range(r.randint(0, 4))]
        if size
        else []
    )
    if op == "index_select":
        expr = f"torch.index_select({x}, {d}, torch.tensor({idx}, dtype=torch.int64, device=DEV))"
    elif op == "gather":
        shape = list(t.shape)
        shape[d] = r.randint(0, 3)
        if size == 0:
            return None
        n = math.prod(shape)
        vals = [r.randrange(size) for _ in range(n)]
        expr = f"torch.gather({x}, {d}, torch.tensor({vals}, device=DEV).reshape({tuple(shape)!r}))"
    elif op == "advanced":
        expr = f"{x}[{':, ' * (d % t.dim())}torch.tensor({idx}, dtype=torch.int64, device=DEV)]"
    elif op == "mask":
        expr = (
            f"{x}[{x} != 0]" if r.random() < 0.5 or t.dtype == torch.bool else f"{x}[{x}.abs() > 1]"
        )
    elif op == "masked_select":
        expr = f"torch.masked_select({x}, {x} != 0)"
    elif op == "take":
        n = t.numel()
        if n == 0:
            return None
        expr = (
            f"torch.take({x}, torch.tensor({[r.randrange(-n, n) for _ in range(3)]}, device=DEV))"
        )
    elif op == "nonzero":
        expr = f"torch.nonzero({x})"
    else:
        if t.dim() != 2 or size == 0:
            return None
        rows = t.shape[0]
        expr = f"torch.nn.functional.embedding(torch.tensor({[r.randrange(rows) for _ in range(3)] if rows else []}, device=DEV), {x})"
    return _assign(gen, expr, f"index.{op}:{dname(t.dtype)}|{_flags(t)}")


def make_shape(gen: ProgramGenerator) -> Stmt | None:
    x = _pick(gen)
    if x is None:
        return None
    t = gen.value(x)
    r = gen.rng
    op = r.choice(
        (
            "cat",
            "stack",
            "roll",
            "repeat",
            "tril",
            "triu",
            "item",
            "tolist",
            "broadcast_to",
            "sort",
            "topk",
            "cummax",
        )
    )
    if op in ("cat", "stack"):
        names = gen.tensors(lambda v: v.shape == t.shape)
        y = r.choice(names)
        d = _dim(gen, t) if t.dim() else 0
        expr = f"torch.{op}([{x}, {y}], {d})"
        op += f":{dname(t.dtype)},{dname(gen.value(y).dtype)}"
    elif op == "roll":
        expr = f"torch.roll({x}, {r.randint(-3, 3)}, {_dim(gen, t) if t.dim() else 0})"
    elif op == "repeat":
        expr = f"{x}.repeat({tuple(r.randint(1, 2) for _ in range(t.dim() + r.randint(0, 1)))!r})"
    elif op in ("tril", "triu"):
        expr = f"torch.{op}({x}, {r.randint(-1, 1)})"
    elif op == "item":
        if t.numel() != 1:
            return None
        expr = f"{x}.item()"
    elif op == "tolist":
        if t.numel() > 16:
            return None
        expr = f"{x}.tolist()"
    elif op == "broadcast_to":
        expr = f"torch.broadcast_to({x}, {(2,) + tuple(t.shape)!r})"
    elif op == "sort":
        expr = f"torch.sort({x}, {_dim(gen, t) if t.dim() else 0}, stable=True).values"
    elif op == "topk":
        if t.dim() == 0:
            return None
        d = _dim(gen, t)
        expr = f"torch.topk({x}, {r.randint(0, t.shape[d])}, {d}).values"
    else:
        expr = f"torch.cummax({x}, {_dim(gen, t) if t.dim() else 0}).values"
    return _assign(gen, expr, f"shape.{op}:{dname(t.dtype)}|{_flags(t)}")


def make_factory(gen: ProgramGenerator) -> Stmt | None:
    r = gen.rng
    dtype = gen.pick_dtype()
    dt = f"torch.{dname(dtype)}"
    shape = gen.pick_shape()
    op = r.choice(
        (
            "zeros",
            "ones",
            "full",
            "arange",
            "linspace",
            "eye",
            "empty_fill",
            "tensor",
            "full_like",
            "ones_like",
        )
    )
    if op in ("zeros", "ones"):
        expr = f"torch.{op}({shape!r}, dtype={dt}, device=DEV)"
    elif op == "full":
        expr = (
            f"torch.full({shape!r}, {fmt_value(gen.scalar_value(dtype))}, dtype={dt}, device=DEV)"
        )
    elif op == "arange":
        start = r.choice((0, -3, 1, 0.5))
        end = start + r.choice((0, 1, 5, 7.5, -2))
        step = r.choice((1, 2, 0.5, -1))
        expr = (
            f"torch.arange({start}, {end}, {step}, dtype={dt}, device=DEV)"
            if r.random() < 0.7
            else f"torch.arange({start}, {end}, {step}, device=DEV)"
        )
    elif op == "linspace":
        expr = f"torch.linspace({r.randint(-3, 3)}, {r.randint(-3, 5)}, {r.randint(0, 7)}, dtype={dt}, device=DEV)"
    elif op == "eye":
        expr = f"torch.eye({r.randint(0, 4)}, {r.randint(0, 4)}, dtype={dt}, device=DEV)"
    elif op == "empty_fill":
        expr = f"torch.empty({shape!r}, dtype={dt}, device=DEV).fill_({fmt_value(gen.scalar_value(dtype))})"
    elif op == "tensor":
        values = [
            gen.scalar_value(r.choice((torch.int64, torch.float32, torch.bool)))
            for _ in range(r.randint(0, 4))
        ]
        expr = f"torch.tensor([{', '.join(fmt_value(v) for v in values)}], device=DEV)"
        dt = "infer"
    else:
        x = _pick(gen)
        if x is None:
            return None
        if op == "full_like":
            expr = f"torch.full_like({x}, {fmt_value(gen.scalar_value(dtype))}, dtype={dt})"
        else:
            expr = f"torch.ones_like({x}, dtype={dt})"
    return _assign(gen, expr, f"factory.{op}:{dt.removeprefix('torch.')}")


FAMILIES = (
    Family("view", 5, make_view),
    Family("unary", 3, make_unary),
    Family("binary", 5, make_binary),
    Family("chain", 3, make_chain),
    Family("matmul", 1, make_matmul),
    Family("reduce", 3, make_reduction),
    Family("inplace", 4, make_inplace),
    Family("index", 2, make_index),
    Family("shape", 1.5, make_shape),
    Family("factory", 1, make_factory),
    Family("large-reduce", 1, make_large_reduction, large=True),
)
