"""Legacy ``neuronxcc.nki.isa``: the NKI 0.1 value-returning instruction calls.

Each call returns a new tile (PSUM for matmul and Tensor-engine transposes, SBUF otherwise);
assigning it to a view (``psum[...] += nisa.nc_matmul(a, b)``) writes the instruction straight
into the view, accumulating for ``+=``. Same instructions and checks as ``nki.isa``.
"""

import numpy as np

from nki import _ops
from nki._tensor import IndexExpr, NkiTensor
from nki.isa import (
    NkiCapacityError,
    NkiValidationError,
    dge_mode,
    engine,
    get_nc_version,
    gpsimd_engine,
    matmul_perf_mode,
    nc_version,
    oob_mode,
    reduce_cmd,
    scalar_engine,
    tensor_engine,
    unknown_engine,
    vector_engine,
)

__all__ = [
    "NkiCapacityError", "NkiValidationError", "activation", "activation_reduce", "affine_select",
    "dge_mode", "engine", "get_nc_version", "gpsimd_engine", "iota", "matmul_perf_mode", "memset",
    "nc_matmul", "nc_transpose", "nc_version", "oob_mode", "reciprocal", "reduce_cmd",
    "scalar_engine", "scalar_tensor_tensor", "tensor_copy", "tensor_engine", "tensor_partition_reduce",
    "tensor_reduce", "tensor_scalar", "tensor_scalar_reduce", "tensor_tensor", "unknown_engine",
    "vector_engine",
]  # fmt: skip


def nc_matmul(
    stationary,
    moving,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    tile_position=(),
    tile_size=(),
    mask=None,
    **kwargs,
):
    """stationary.T @ moving on the Tensor engine, as a new float32 PSUM tile."""
    if is_transpose:
        return _ops.transpose(stationary, api="nc_matmul")
    return _ops.matmul(stationary, moving)


def nc_transpose(data, engine=None, dtype=None, mask=None, **kwargs):
    return _ops.transpose(data, engine=engine, dtype=dtype)


def tensor_copy(src, engine=None, dtype=None, mask=None, **kwargs):
    return _ops.copy_value(src, dtype=dtype, engine=engine, mask=mask, api="tensor_copy")


def tensor_tensor(data1, data2, op, dtype=None, mask=None, engine=None, **kwargs):
    return _ops.binary(
        _ops.alu_name(op), data1, data2, dtype=dtype, mask=mask, engine=engine, api="tensor_tensor"
    )


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
    engine=None,
    **kwargs,
):
    return _ops.tensor_scalar(
        data,
        op0,
        operand0,
        reverse0,
        op1,
        operand1,
        reverse1,
        dtype=dtype,
        mask=mask,
        engine=engine,
    )


def tensor_scalar_reduce(
    data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None, mask=None, **kwargs
):
    return _ops.tensor_scalar(
        data,
        op0,
        operand0,
        reverse0,
        dtype=dtype,
        mask=mask,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        api="tensor_scalar_reduce",
    )


def scalar_tensor_tensor(
    data,
    op0,
    operand0,
    op1,
    operand1,
    reverse0=False,
    reverse1=False,
    dtype=None,
    mask=None,
    **kwargs,
):
    """(data op0 operand0) op1 operand1, operand1 a tile (two instructions here)."""
    first = _ops.tensor_scalar(
        data, op0, operand0, reverse0, dtype="float32", api="scalar_tensor_tensor"
    )
    a, b = (operand1, first) if reverse1 else (first, operand1)
    return _ops.binary(
        _ops.alu_name(op1), a, b, dtype=dtype or data.dtype, mask=mask, api="scalar_tensor_tensor"
    )


def tensor_reduce(op, data, axis, dtype=None, negate=False, keepdims=False, mask=None, **kwargs):
    return _ops.tensor_reduce(
        op, data, axis, dtype=dtype, negate=negate, keepdims=keepdims, mask=mask
    )


def tensor_partition_reduce(op, data, dtype=None, mask=None, **kwargs):
    return _ops.partition_reduce(op, data, dtype=dtype)


def activation(
    op,
    data,
    bias=None,
    scale=1.0,
    reduce_op=None,
    reduce_res=None,
    reduce_cmd=None,
    dtype=None,
    mask=None,
    **kwargs,
):
    return _ops.activation(
        op,
        data,
        bias=bias,
        scale=scale,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        dtype=dtype,
        mask=mask,
    )


def activation_reduce(
    op, data, reduce_op, reduce_res, bias=None, scale=1.0, dtype=None, mask=None, **kwargs
):
    return _ops.activation(
        op,
        data,
        bias=bias,
        scale=scale,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        dtype=dtype,
        mask=mask,
        api="activation_reduce",
    )


def reciprocal(data, dtype=None, mask=None, **kwargs):
    return _ops.activation(
        "reciprocal", data, dtype=dtype, mask=mask, engine="vector", api="reciprocal"
    )


def affine_select(pred, on_true_tile, on_false_value, dtype=None, mask=None, **kwargs):
    return _ops.select(pred, on_true_tile, on_false_value, dtype=dtype, mask=mask)


def memset(shape, value, dtype, mask=None, engine=None, **kwargs):
    tile = _ops.fresh(shape, dtype, api="memset")
    index = _ops.memset(tile, value, engine=engine, mask=mask)
    return _ops._finish(tile, index, "compute", None) if index is not None else _ops._skipped(tile)


def iota(expr, dtype, mask=None, **kwargs):
    """A tile holding the values of an affine index expression (``nl.arange(n)[None, :]``)."""
    if not isinstance(expr, IndexExpr):
        raise TypeError("iota takes an nl.arange / nl.mgrid index expression")
    values = expr.values if expr.ndim >= 2 else expr.values[:, None]
    p, f = values.shape[0], int(np.prod(values.shape[1:]))
    flat = values.reshape(p, f)
    offset = int(flat[0, 0])
    cm = int(flat[1, 0] - flat[0, 0]) if p > 1 else 0
    step = int(flat[0, 1] - flat[0, 0]) if f > 1 else 1
    expected = offset + cm * np.arange(p)[:, None] + step * np.arange(f)[None, :]
    if not np.array_equal(flat, expected):
        raise NotImplementedError("iota of a non-affine index expression")
    tile = _ops.fresh((p, f), dtype, api="iota")
    return _ops.iota(tile, [(step, f)], offset, cm)


def _is_tile(x):
    return isinstance(x, NkiTensor)
