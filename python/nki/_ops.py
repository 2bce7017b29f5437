"""The instructions behind nki.language and nki.isa, shared by both API generations.

Every function here emits native instructions into the active trace. Functions take an
optional destination: the new API passes one (``nisa.tensor_tensor(dst=...)``), the legacy
API does not and gets a fresh tile back. A fresh result assigned to a view
(``x[...] = nl.exp(y)``) is written straight into the view, as the NKI compiler does.
"""

import numbers

import numpy as np

from nki import _dtypes, _tracer
from nki._native import native
from nki._tensor import (
    BlockTensor,
    NkiTensor,
    Storage,
    as_buffer,
    check_bounds,
    mask_array,
    par_dim,
    psum,
    sbuf,
    shared_hbm,
)

OVERWRITE, AUTO, ADD = 0, -1, 1

# ---------------------------------------------------------------------------------------------
# Operator names


_ALU_BY_NUMPY = {
    np.add: "add",
    np.subtract: "subtract",
    np.multiply: "multiply",
    np.divide: "divide",
    np.maximum: "maximum",
    np.minimum: "minimum",
    np.max: "maximum",
    np.min: "minimum",
    np.amax: "maximum",
    np.amin: "minimum",
    np.power: "power",
    np.mod: "mod",
    np.fmod: "mod",
    np.equal: "equal",
    np.not_equal: "not_equal",
    np.greater: "greater",
    np.greater_equal: "greater_equal",
    np.less: "less",
    np.less_equal: "less_equal",
    np.logical_and: "logical_and",
    np.logical_or: "logical_or",
    np.logical_xor: "logical_xor",
    np.bitwise_and: "bitwise_and",
    np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor",
    np.left_shift: "left_shift",
    np.right_shift: "right_shift",
    np.sum: "add",
    np.prod: "multiply",
}
_ACT_BY_NUMPY = {
    np.exp: "exp",
    np.log: "log",
    np.sqrt: "sqrt",
    np.square: "square",
    np.tanh: "tanh",
    np.sin: "sin",
    np.cos: "cos",
    np.abs: "abs",
    np.sign: "sign",
    np.negative: "negative",
    np.arctan: "arctan",
    np.reciprocal: "reciprocal",
    np.copy: "copy",
}


def alu_name(op) -> str:
    if op is None:
        return "bypass"
    if isinstance(op, str):
        return op
    name = getattr(op, "_nki_alu", None) or _ALU_BY_NUMPY.get(op)
    if name is None:
        raise TypeError(
            f"{op!r} is not an NKI ALU operator; use nl.add, nl.multiply, nl.maximum, ..."
        )
    return name


def act_name(op) -> str:
    if op is None:
        return "copy"
    if isinstance(op, str):
        return op
    name = getattr(op, "_nki_act", None) or _ACT_BY_NUMPY.get(op)
    if name is None:
        raise TypeError(
            f"{op!r} is not an NKI activation function; use nl.exp, nl.tanh, nl.copy, ..."
        )
    return name


def engine_name(engine) -> str:
    if engine is None:
        return "auto"
    return getattr(engine, "value", engine) if not isinstance(engine, str) else engine


def is_scalar(x) -> bool:
    return isinstance(x, (numbers.Number, np.number, np.bool_)) and not isinstance(x, NkiTensor)


# ---------------------------------------------------------------------------------------------
# Allocation


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(shape)


def allocate(shape, dtype, buffer=None, name=None, api="ndarray"):
    """nl.ndarray: a tensor in |buffer|; legacy shapes with blocks before par_dim give a
    BlockTensor whose blocks are separate tiles."""
    tracer = _tracer.require(api)
    buffer = as_buffer(buffer)
    shape = _shape(shape)
    dtype = _dtypes.dtype_name(dtype)
    name = name or _tracer.assigned_name(api)
    pdim = next((i for i, d in enumerate(shape) if isinstance(d, par_dim)), 0)
    if buffer.memory == "hbm":
        return _hbm_tensor(tracer, shape, dtype, buffer, name)
    if pdim == 0:
        return NkiTensor(Storage(tracer, name, buffer, dtype, shape))
    block_shape, tile_shape = shape[:pdim], shape[pdim:]
    blocks = np.empty(block_shape, dtype=object)
    for idx in np.ndindex(*block_shape):
        label = f"{name}[{', '.join(map(str, idx))}]"
        blocks[idx] = NkiTensor(Storage(tracer, label, buffer, dtype, tile_shape))
    return BlockTensor(blocks, tile_shape, dtype, buffer)


def _hbm_tensor(tracer, shape, dtype, buffer, name):
    if buffer is shared_hbm:
        # Every SPMD instance allocates the same shared tensors in the same order.
        if tracer.shared_cursor < len(tracer.shared):
            t = tracer.shared[tracer.shared_cursor]
            tracer.shared_cursor += 1
            if t.shape != shape or t._storage.dtype != dtype:
                raise ValueError(
                    f"SPMD instance {tracer.pid} allocates shared_hbm tensor {name}{list(shape)} "
                    f"{dtype} where instance 0 allocated {t.name}{list(t.shape)} {t._storage.dtype}"
                )
            return NkiTensor(t._storage)
        t = NkiTensor(Storage(tracer, name, buffer, dtype, shape))
        tracer.shared.append(t)
        tracer.shared_cursor += 1
        return t
    return NkiTensor(Storage(tracer, name, buffer, dtype, shape))


def fresh(shape, dtype, buffer=sbuf, api="result"):
    """A new tile for an expression's value."""
    tracer = _tracer.require(api)
    shape = tuple(int(d) for d in shape)
    if len(shape) == 1:
        shape = shape + (1,)
    t = NkiTensor(
        Storage(
            tracer, _tracer.assigned_name(api), as_buffer(buffer), _dtypes.dtype_name(dtype), shape
        )
    )
    t._storage.is_temp = True
    return t


class _Skipped(NkiTensor):
    """The value of an instruction whose mask disabled everything: assigning it does nothing."""


def _finish(result, index, kind, mask):
    result._producer = index
    result._kind = kind
    result._mask = mask
    return result


def _skipped(result):
    result.__class__ = _Skipped
    return result


# ---------------------------------------------------------------------------------------------
# Assignment and accumulation


def _retarget(value: NkiTensor, dst: NkiTensor, mode: int) -> bool:
    tracer = _tracer.current()
    if (
        value._producer is None
        or value._producer != len(tracer.program) - 1
        or not value._storage.is_temp
        or not value._is_whole()
        or not dst.on_chip
        or value._storage is dst._storage
    ):
        return False
    kind = getattr(value, "_kind", None)
    if kind in ("matmul", "pe_transpose") and dst._storage.memory != "psum":
        return False
    try:
        tracer.program.retarget(value._producer, dst._access(), mode)
    except native.NkiValidationError:
        return False
    if dst._storage.is_input:
        tracer.mutated.add(dst._storage.id)
    value._alias(dst)
    return True


def assign(dst, value):
    """dst[...] = value."""
    if isinstance(dst, BlockTensor):
        for tile in dst.tiles():
            assign(tile, value)
        return
    if isinstance(value, _Skipped):
        return
    if is_scalar(value):
        if not dst.on_chip:
            tmp = fresh(dst.shape, dst._storage.dtype, sbuf, "store")
            memset(tmp, value, api="store")
            dma(dst, tmp, api="store")
            return
        memset(dst, value, api="assign")
        return
    if not isinstance(value, NkiTensor):
        raise TypeError(f"cannot assign {type(value).__name__} to an NKI tensor")
    if dst._same_region(value):
        return
    if _retarget(value, dst, OVERWRITE):
        return
    mask = getattr(value, "_mask", None)
    if not dst.on_chip:
        store(dst, value, api="store")
    elif not value.on_chip:
        dma(dst, value, mask=mask, api="load")
    else:
        copy(dst, _broadcast_like(value, dst.shape), mask=mask, api="assign")


def accumulate(dst: NkiTensor, other):
    """dst += other: a matmul result accumulates in PSUM; anything else is an add."""
    if isinstance(other, NkiTensor) and getattr(other, "_kind", None) == "matmul":
        if dst._storage.memory == "psum" and _retarget(other, dst, AUTO):
            return dst
    binary("add", dst, other, dst=dst, api="iadd")
    return dst


def _broadcast_like(value: NkiTensor, shape) -> NkiTensor:
    if value.shape == tuple(shape):
        return value
    if value.ndim == len(shape) and all(a == b or a == 1 for a, b in zip(value.shape, shape)):
        return value.broadcast_to(shape)
    return value


# ---------------------------------------------------------------------------------------------
# Data movement


def _to_sbuf(x: NkiTensor, api: str) -> NkiTensor:
    """|x| itself when in SBUF, else a copy of it there (the compiler's extra copy)."""
    if x._storage.memory == "sbuf":
        return x
    tmp = fresh(x.shape, x._storage.dtype, sbuf, api)
    if x.on_chip:
        copy(tmp, x, api=api)
    else:
        dma(tmp, x, api=api)
    return tmp


def dma(dst: NkiTensor, src: NkiTensor, mask=None, api="dma_copy"):
    tracer = _tracer.require(api)
    m = mask_array(mask, dst.shape) if not isinstance(mask, np.ndarray) else mask
    if m is False:
        return None
    check_bounds(src, m)
    check_bounds(dst, m)
    return tracer.emit("dma_copy", api, dst, src=src._access(), mask=m)


def load(src, mask=None, dtype=None, dst=None, api="load"):
    _tracer.require(api)
    if not isinstance(src, NkiTensor):
        raise TypeError(f"{api}: src must be an NKI tensor in HBM, got {type(src).__name__}")
    if src.on_chip:
        raise TypeError(
            f"Expected operand 'src' of '{api}' to be in address space 'hbm', but got a tile in "
            f"'{src._storage.memory}' instead."
        )
    if dst is None:
        dst = fresh(src.shape, dtype or src._storage.dtype, sbuf, api)
    m = mask_array(mask, dst.shape)
    if m is False:
        return _skipped(dst)
    return _finish(dst, dma(dst, src, mask=m, api=api), "dma", m)


def store(dst, value, mask=None, api="store"):
    _tracer.require(api)
    if not isinstance(dst, NkiTensor) or dst.on_chip:
        where = dst._storage.memory if isinstance(dst, NkiTensor) else type(dst).__name__
        raise TypeError(
            f"Expected operand 'dst' of '{api}' to be in address space 'hbm', but got a tile in "
            f"'{where}' instead."
        )
    m = mask_array(mask, dst.shape)
    if m is False or isinstance(value, _Skipped):
        return None
    if is_scalar(value):
        tmp = fresh(dst.shape, dst._storage.dtype, sbuf, api)
        memset(tmp, value, api=api)
        value = tmp
    value = _to_sbuf(value, api)
    return dma(dst, value, mask=m, api=api)


def copy(dst, src, engine=None, mask=None, api="tensor_copy"):
    tracer = _tracer.require(api)
    m = mask_array(mask, dst.shape) if not isinstance(mask, np.ndarray) else mask
    if m is False:
        return None
    return tracer.emit(
        "tensor_copy", api, dst, src=src._access(), engine=engine_name(engine), mask=m
    )


def copy_value(src, dtype=None, engine=None, mask=None, dst=None, buffer=sbuf, api="copy"):
    if dst is None:
        dst = fresh(src.shape, dtype or src._storage.dtype, buffer, api)
    m = mask_array(mask, dst.shape)
    if m is False:
        return _skipped(dst)
    if not src.on_chip:
        return _finish(dst, dma(dst, src, mask=m, api=api), "dma", m)
    return _finish(dst, copy(dst, src, engine=engine, mask=m, api=api), "compute", m)


def memset(dst, value, engine=None, mask=None, api="memset"):
    tracer = _tracer.require(api)
    if isinstance(dst, BlockTensor):
        for tile in dst.tiles():
            memset(tile, value, engine, mask, api)
        return None
    if not dst.on_chip:
        raise ValueError("Creating HBM tensor with init value is not supported.")
    m = mask_array(mask, dst.shape)
    if m is False:
        return None
    return tracer.emit("memset", api, dst, value=float(value), engine=engine_name(engine), mask=m)


# ---------------------------------------------------------------------------------------------
# Elementwise arithmetic


def _result_dtype(x, y, dtype):
    if dtype is not None:
        return _dtypes.dtype_name(dtype)
    tx = x._storage.dtype if isinstance(x, NkiTensor) else None
    ty = y._storage.dtype if isinstance(y, NkiTensor) else None
    if tx and ty:
        return _dtypes.promote(tx, ty)
    return tx or ty


def _free_is_one(t: NkiTensor) -> bool:
    return all(c == 1 for c in t.shape[1:])


def binary(op, x, y, dtype=None, mask=None, dst=None, engine=None, api=None):
    """x op y with NumPy-style broadcasting along free dimensions."""
    api = api or op
    tracer = _tracer.require(api)
    if not isinstance(x, NkiTensor) and not isinstance(y, NkiTensor):
        return float(native_alu(op, x, y))
    if is_scalar(y) or (
        isinstance(y, NkiTensor)
        and isinstance(x, NkiTensor)
        and _free_is_one(y)
        and not _free_is_one(x)
    ):
        return tensor_scalar(x, op, y, dtype=dtype, mask=mask, dst=dst, engine=engine, api=api)
    if is_scalar(x) or (isinstance(x, NkiTensor) and _free_is_one(x) and not _free_is_one(y)):
        return tensor_scalar(
            y, op, x, reverse0=True, dtype=dtype, mask=mask, dst=dst, engine=engine, api=api
        )
    x = _on_chip(x, api)
    y = _on_chip(y, api)
    shape = _broadcast_shape(x, y, api)
    if dst is None:
        dst = fresh(shape, _result_dtype(x, y, dtype), sbuf, api)
    m = mask_array(mask, dst.shape)
    if m is False:
        return _skipped(dst)
    xb, yb = _broadcast_like(x, shape), _broadcast_like(y, shape)
    if x._storage.memory == "psum" and y._storage.memory == "psum":
        yb = _to_sbuf(yb, api)
    i = tracer.emit(
        "tensor_tensor",
        api,
        dst,
        data1=xb._access(),
        data2=yb._access(),
        op=op,
        engine=engine_name(engine),
        mask=m,
    )
    return _finish(dst, i, "compute", m)


def _broadcast_shape(x, y, api):
    if x.ndim != y.ndim:
        return x.shape if x.size >= y.size else y.shape
    out = []
    for a, b in zip(x.shape, y.shape):
        out.append(max(a, b) if (a == b or a == 1 or b == 1) else a)
    return tuple(out)


def native_alu(op, a, b):
    import operator

    fns = {
        "add": operator.add,
        "subtract": operator.sub,
        "multiply": operator.mul,
        "divide": operator.truediv,
        "maximum": max,
        "minimum": min,
        "power": operator.pow,
    }
    return fns[op](a, b)


def _on_chip(x, api):
    if isinstance(x, NkiTensor) and not x.on_chip:
        raise TypeError(
            f"Expected operand 'x' of '{api}' to be in address space 'psum|sbuf', but got a tile in 'hbm' instead."
        )
    return x


def tensor_scalar(
    data,
    op0,
    operand0,
    reverse0=False,
    op1=None,
    operand1=None,
    reverse1=False,
    dtype=None,
    mask=None,
    dst=None,
    engine=None,
    reduce_op=None,
    reduce_res=None,
    api="tensor_scalar",
):
    tracer = _tracer.require(api)
    _on_chip(data, api)
    if dst is None:
        dst = fresh(data.shape, dtype or data._storage.dtype, sbuf, api)
    m = mask_array(mask, dst.shape)
    if m is False:
        return _skipped(dst)

    def operand(v):
        if v is None:
            return None
        if isinstance(v, NkiTensor):
            return v._access()
        return float(v)

    i = tracer.emit(
        "tensor_scalar",
        api,
        dst,
        data=data._access(),
        op0=alu_name(op0),
        operand0=operand(operand0),
        reverse0=bool(reverse0),
        op1=alu_name(op1),
        operand1=operand(operand1),
        reverse1=bool(reverse1),
        reduce_op=None if reduce_op is None else alu_name(reduce_op),
        reduce_res=None if reduce_res is None else reduce_res._access(),
        engine=engine_name(engine),
        mask=m,
    )
    return _finish(dst, i, "compute", m)


def activation(
    func,
    data,
    bias=None,
    scale=1.0,
    reduce_op=None,
    reduce_res=None,
    dtype=None,
    mask=None,
    dst=None,
    engine=None,
    api="activation",
):
    tracer = _tracer.require(api)
    _on_chip(data, api)
    if dst is None:
        dst = fresh(data.shape, dtype or data._storage.dtype, sbuf, api)
    m = mask_array(mask, dst.shape)
    if m is False:
        return _skipped(dst)
    if isinstance(bias, NkiTensor) and bias.ndim == 1:
        bias = bias.reshape((bias.shape[0], 1))
    i = tracer.emit(
        "activation",
        api,
        dst,
        data=data._access(),
        func=act_name(func),
        bias=None if bias is None else bias._access(),
        scale=scale._access() if isinstance(scale, NkiTensor) else float(scale),
        reduce_op=None if reduce_op is None else alu_name(reduce_op),
        reduce_res=None if reduce_res is None else reduce_res._access(),
        engine=engine_name(engine),
        mask=m,
    )
    return _finish(dst, i, "compute", m)


def _axes(axis, ndim, api):
    if axis is None:
        axes = list(range(1, ndim))
    elif isinstance(axis, (int, np.integer)):
        axes = [int(axis)]
    else:
        axes = [int(a) for a in axis]
    axes = [a + ndim if a < 0 else a for a in axes]
    for a in axes:
        if a == 0:
            raise ValueError(
                f"{api}: reducing along the partition dimension (axis 0) is not supported by "
                "tensor_reduce; use nisa.tensor_partition_reduce or transpose first"
            )
    return sorted(set(axes))


def tensor_reduce(
    op,
    data,
    axis,
    dtype=None,
    negate=False,
    keepdims=False,
    mask=None,
    dst=None,
    engine=None,
    api="tensor_reduce",
):
    tracer = _tracer.require(api)
    _on_chip(data, api)
    axes = _axes(axis, data.ndim, api)
    if dst is None:
        if keepdims:
            shape = tuple(1 if d in axes else n for d, n in enumerate(data.shape))
        else:
            shape = tuple(n for d, n in enumerate(data.shape) if d not in axes)
        dst = fresh(shape, dtype or data._storage.dtype, sbuf, api)
    m = mask_array(mask, dst.shape)
    if m is False:
        return _skipped(dst)
    i = tracer.emit(
        "tensor_reduce",
        api,
        dst,
        data=data._access(),
        op=alu_name(op),
        axes=axes,
        negate=bool(negate),
        engine=engine_name(engine),
        mask=m,
    )
    return _finish(dst, i, "compute", m)


def partition_reduce(op, data, dtype=None, dst=None, api="tensor_partition_reduce"):
    tracer = _tracer.require(api)
    if dst is None:
        dst = fresh((1,) + tuple(data.shape[1:]), dtype or data._storage.dtype, sbuf, api)
    i = tracer.emit("partition_reduce", api, dst, data=data._access(), op=alu_name(op))
    return _finish(dst, i, "compute", None)


# ---------------------------------------------------------------------------------------------
# Tensor engine


def matmul(stationary, moving, dst=None, accumulate=AUTO, api="nc_matmul"):
    tracer = _tracer.require(api)
    if dst is None:
        dst = fresh(
            (
                stationary.shape[-1]
                if stationary.ndim == 2
                else int(np.prod(stationary.shape[1:])),
                int(np.prod(moving.shape[1:])),
            ),
            "float32",
            psum,
            api,
        )
        accumulate = OVERWRITE
    i = tracer.emit(
        "matmul",
        api,
        dst,
        stationary=stationary._access(),
        moving=moving._access(),
        accumulate=int(accumulate),
    )
    return _finish(dst, i, "matmul", None)


def transpose(data, dst=None, engine=None, dtype=None, api="nc_transpose"):
    tracer = _tracer.require(api)
    on_tensor = engine_name(engine) in ("auto", "tensor", "unknown")
    if dst is None:
        p, f = data.shape[0], int(np.prod(data.shape[1:]))
        dtype = dtype or ("float32" if on_tensor else data._storage.dtype)
        dst = fresh((f, p), dtype, psum if on_tensor else sbuf, api)
    i = tracer.emit(
        "transpose",
        api,
        dst,
        data=data._access(),
        engine="tensor" if on_tensor else engine_name(engine),
    )
    return _finish(dst, i, "pe_transpose" if on_tensor else "compute", None)


def select(
    pred, on_true, on_false_value, dtype=None, mask=None, dst=None, engine=None, api="affine_select"
):
    tracer = _tracer.require(api)
    if dst is None:
        dst = fresh(on_true.shape, dtype or on_true._storage.dtype, sbuf, api)
    m = mask_array(mask, dst.shape)
    if m is False:
        return _skipped(dst)
    values = pred.values if hasattr(pred, "values") else np.asarray(pred, dtype=bool)
    p = np.ascontiguousarray(np.broadcast_to(values, dst.shape), dtype=np.uint8).reshape(-1)
    if m is not None:
        # Elements the mask disables keep their value: select them from the destination.
        raise NotImplementedError(f"{api} with a partial mask")
    i = tracer.emit(
        "select",
        api,
        dst,
        on_true=on_true._access(),
        pred=p,
        on_false=float(on_false_value),
        engine=engine_name(engine),
    )
    return _finish(dst, i, "compute", m)


def iota(dst, pattern, offset=0, channel_multiplier=0, api="iota"):
    tracer = _tracer.require(api)
    flat = [int(v) for pair in pattern for v in pair]
    i = tracer.emit(
        "iota",
        api,
        dst,
        pattern=flat,
        offset=float(offset),
        channel_multiplier=float(channel_multiplier),
    )
    return _finish(dst, i, "compute", None)
