"""nki.isa (NKI 0.2+): engine instructions that write an explicit destination ``dst``.

The legacy, value-returning forms (``neuronxcc.nki.isa``) live in neuronxcc/nki/isa.py; both
emit the same instructions. Hardware-rule violations raise NkiValidationError, an
AssertionError as in the AWS simulator.
"""

import enum

from nki import _ops, _tracer
from nki._native import native

NkiValidationError = native.NkiValidationError
NkiCapacityError = native.NkiCapacityError


class engine(enum.Enum):
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    gpsimd = "gpsimd"
    dma = "dma"
    sync = "sync"
    unknown = "unknown"


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


class reduce_cmd(enum.Enum):
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class nc_version(enum.IntEnum):
    gen2 = 2
    gen3 = 3
    gen4 = 4


class oob_mode(enum.Enum):
    error = 0
    skip = 1


class dge_mode(enum.Enum):
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class matmul_perf_mode(enum.Enum):
    none = 0
    double_row = 1


def get_nc_version():
    from nki import language as nl

    return nc_version(int(native.core_arch(nl.target())["nc_gen"][-1]))


def _check_reduce_cmd(cmd, reduce_res):
    if reduce_res is not None and cmd not in (None, reduce_cmd.reset_reduce, reduce_cmd.idle):
        raise NotImplementedError(
            f"reduce_cmd={cmd}: vtrn models reset_reduce only (the reduction written to reduce_res)"
        )


def _accumulate_mode(accumulate):
    return {None: _ops.AUTO, False: _ops.OVERWRITE, True: _ops.ADD}[accumulate]


# ---------------------------------------------------------------------------------------------


def dma_copy(dst, src, oob_mode=None, dge_mode=None, engine=None, name=None, **kwargs):
    _tracer.require("dma_copy")
    _ops.dma(dst, src, api="dma_copy")


def tensor_copy(dst, src, engine=None, dtype=None, name=None, **kwargs):
    _ops.copy(dst, src, engine=engine, api="tensor_copy")


def tensor_tensor(dst, data1, data2, op, engine=None, name=None, **kwargs):
    if dst.shape != data1.shape or data1.shape != data2.shape:
        # The ISA form does not broadcast: shapes go to the native checks unchanged.
        pass
    tracer = _tracer.require("tensor_tensor")
    tracer.emit(
        "tensor_tensor",
        "tensor_tensor",
        dst,
        data1=data1._access(),
        data2=data2._access(),
        op=_ops.alu_name(op),
        engine=_ops.engine_name(engine),
    )


def tensor_scalar(
    dst,
    data,
    op0,
    operand0,
    reverse0=False,
    op1=None,
    operand1=None,
    reverse1=False,
    engine=None,
    name=None,
    **kwargs,
):
    _ops.tensor_scalar(
        data, op0, operand0, reverse0, op1, operand1, reverse1, dst=dst, engine=engine
    )


def tensor_scalar_reduce(
    dst, data, op0, operand0, reduce_op, reduce_res, reverse0=False, name=None, **kwargs
):
    _ops.tensor_scalar(
        data,
        op0,
        operand0,
        reverse0,
        dst=dst,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        api="tensor_scalar_reduce",
    )


def activation(
    dst,
    op,
    data,
    bias=None,
    scale=1.0,
    reduce_op=None,
    reduce_res=None,
    reduce_cmd=None,
    name=None,
    **kwargs,
):
    _check_reduce_cmd(reduce_cmd, reduce_res)
    _ops.activation(
        op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res, dst=dst
    )


def activation_reduce(
    dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None, **kwargs
):
    _ops.activation(
        op,
        data,
        bias=bias,
        scale=scale,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        dst=dst,
        api="activation_reduce",
    )


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None, **kwargs):
    _ops.tensor_reduce(op, data, axis, negate=negate, keepdims=keepdims, dst=dst)


def tensor_partition_reduce(dst, op, data, name=None, **kwargs):
    _ops.partition_reduce(op, data, dst=dst)


def nc_matmul(
    dst,
    stationary,
    moving,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    accumulate=None,
    tile_position=(),
    tile_size=(),
    perf_mode=None,
    name=None,
    **kwargs,
):
    if is_transpose:
        _ops.transpose(stationary, dst=dst, api="nc_matmul")
        return
    _ops.matmul(stationary, moving, dst=dst, accumulate=_accumulate_mode(accumulate))


def nc_transpose(dst, data, engine=None, name=None, **kwargs):
    _ops.transpose(data, dst=dst, engine=engine)


def memset(dst, value, engine=None, name=None, **kwargs):
    _ops.memset(dst, value, engine=engine)


def reciprocal(dst, data, name=None, **kwargs):
    _ops.activation("reciprocal", data, dst=dst, engine="vector", api="reciprocal")


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None, **kwargs):
    _ops.iota(dst, pattern, offset, channel_multiplier)


def affine_select(dst, pred, on_true_tile, on_false_value, name=None, **kwargs):
    _ops.select(pred, on_true_tile, on_false_value, dst=dst)
