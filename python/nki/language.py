"""nki.language: tiles, memory, index grids, loops and tile-level arithmetic.

One module serves both API generations: ``neuronxcc.nki.language`` re-exports it (with the
legacy ``affine_range`` semantics). Value-returning calls allocate their result tile
(SBUF, or PSUM for ``matmul`` and ``transpose``), as NKI does.
"""

import os

import numpy as np

from nki import _dtypes, _ops, _tracer
from nki._native import native
from nki._tensor import (
    BlockTensor,
    IndexExpr,
    MaskExpr,
    NkiTensor,
    arange,
    ds,
    hbm,
    mgrid,
    par_dim,
    private_hbm,
    psum,
    sbuf,
    shared_hbm,
)

__all__ = [  # completed at the end of the module: every public name
    "BlockTensor", "IndexExpr", "MaskExpr", "NkiTensor", "arange", "ds", "hbm", "mgrid", "par_dim",
    "private_hbm", "psum", "sbuf", "shared_hbm",
]  # fmt: skip

# ---------------------------------------------------------------------------------------------
# Dtypes

bool_ = np.bool_
int8, int16, int32 = np.int8, np.int16, np.int32
uint8, uint16, uint32 = np.uint8, np.uint16, np.uint32
float16, float32 = np.float16, np.float32
bfloat16 = _dtypes.numpy_type("bfloat16")
float8_e4m3 = _dtypes.numpy_type("float8_e4m3")
float8_e4m3fn = _dtypes.numpy_type("float8_e4m3fn")
float8_e5m2 = _dtypes.numpy_type("float8_e5m2")
tfloat32 = _dtypes.tfloat32
fp32 = np.finfo(np.float32)
fp16 = np.finfo(np.float16)


def static_cast(array, dtype):
    """A NumPy copy of |array| in |dtype| (legacy test helper)."""
    return np.asarray(array).astype(_dtypes.numpy_type(_dtypes.dtype_name(dtype)))


# ---------------------------------------------------------------------------------------------
# Hardware constants


def target() -> str:
    """The NeuronCore generation kernels are checked and timed for: NEURON_PLATFORM_TARGET_OVERRIDE
    (trn1/gen2, trn2/gen3, trn3/gen4), else trn2."""
    tracer = _tracer.current()
    if tracer is not None:
        return tracer.target
    value = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip().lower()
    return value or "trn2"


class _TileSize:
    """nl.tile_size: the hardware tile limits of the current target."""

    def _arch(self):
        return native.core_arch(target())

    @property
    def pmax(self):
        return self._arch()["partitions"]

    @property
    def gemm_stationary_fmax(self):
        return self._arch()["gemm_stationary_fmax"]

    @property
    def gemm_moving_fmax(self):
        return self._arch()["gemm_moving_fmax"]

    @property
    def psum_bank_fmax(self):
        return self._arch()["psum_bank_bytes"] // 4

    psum_fmax = psum_bank_fmax

    @property
    def psum_bank_fmax_bytes(self):
        return self._arch()["psum_bank_bytes"]

    @property
    def psum_num_banks(self):
        return self._arch()["psum_banks"]

    @property
    def sbuf_size_bytes(self):
        return self._arch()["sbuf_bytes"]

    @property
    def total_available_sbuf_size(self):
        a = self._arch()
        return a["sbuf_bytes"] // a["partitions"]


tile_size = _TileSize()

# ---------------------------------------------------------------------------------------------
# SPMD


def program_id(axis=0):
    tracer = _tracer.require("program_id")
    if not tracer.grid:
        return 0
    if axis >= len(tracer.grid):
        raise ValueError(f"program_id({axis}) on a {len(tracer.grid)}-D SPMD grid {tracer.grid}")
    return tracer.pid[axis]


def num_programs(axes=0):
    tracer = _tracer.require("num_programs")
    if not tracer.grid:
        return 1
    if isinstance(axes, (tuple, list)):
        return int(np.prod([tracer.grid[a] for a in axes]))
    return tracer.grid[axes]


def program_ndim():
    return len(_tracer.require("program_ndim").grid)


# ---------------------------------------------------------------------------------------------
# Loops (fully unrolled, as the compiler's specialization does)


def affine_range(*args, **kwargs):
    return range(*args)


def sequential_range(*args, **kwargs):
    return range(*args)


def static_range(*args, **kwargs):
    return range(*args)


loop_reduce = sequential_range

# ---------------------------------------------------------------------------------------------
# Creation


def ndarray(shape, dtype, buffer=None, name="", **kwargs):
    return _ops.allocate(shape, dtype, buffer, name or None, "ndarray")


def full(shape, fill_value, dtype, buffer=None, name="", **kwargs):
    t = _ops.allocate(shape, dtype, buffer, name or None, "full")
    if isinstance(t, NkiTensor) and not t.on_chip:
        raise ValueError("Creating HBM tensor with init value is not supported.")
    _ops.memset(t, fill_value, api="full")
    return t


def zeros(shape, dtype, buffer=None, name="", **kwargs):
    return full(shape, 0, dtype, buffer, name)


def ones(shape, dtype, buffer=None, name="", **kwargs):
    return full(shape, 1, dtype, buffer, name)


def empty_like(a, dtype=None, buffer=None, name="", **kwargs):
    return ndarray(a.shape, dtype or a.dtype, buffer or a.buffer, name)


def zeros_like(a, dtype=None, buffer=None, name="", **kwargs):
    return zeros(a.shape, dtype or a.dtype, buffer or a.buffer, name)


def ones_like(a, dtype=None, buffer=None, name="", **kwargs):
    return ones(a.shape, dtype or a.dtype, buffer or a.buffer, name)


def full_like(a, fill_value, dtype=None, buffer=None, name="", **kwargs):
    return full(a.shape, fill_value, dtype or a.dtype, buffer or a.buffer, name)


# ---------------------------------------------------------------------------------------------
# Memory


def load(src, mask=None, dtype=None, **kwargs):
    return _ops.load(src, mask=mask, dtype=dtype)


def store(dst, value, mask=None, **kwargs):
    _ops.store(dst, value, mask=mask)


def load_transpose2d(src, mask=None, dtype=None, **kwargs):
    """The 2-D HBM tile |src| loaded transposed (a DMA with swapped strides)."""
    if src.ndim != 2:
        raise ValueError(f"load_transpose2d needs a 2-D tile, got {list(src.shape)}")
    view = NkiTensor(src._storage, src._offset, [src._dims[1], src._dims[0]])
    return _ops.load(view, mask=mask, dtype=dtype, api="load_transpose2d")


def copy(x, dtype=None, mask=None, **kwargs):
    return _ops.copy_value(x, dtype=dtype, mask=mask, api="copy")


def broadcast_to(x, shape):
    return x.broadcast_to(shape)


# ---------------------------------------------------------------------------------------------
# Matrix operations


def matmul(x, y, transpose_x=False, mask=None, **kwargs):
    """x @ y on the Tensor engine: x is (M, K), or (K, M) with transpose_x=True; the result is
    an (M, N) float32 tile in PSUM. Operands outside SBUF are copied there first."""
    if transpose_x:
        stationary = _ops._to_sbuf(x, "matmul")
    else:
        t = _ops.transpose(_ops._to_sbuf(x, "matmul"), api="matmul")
        stationary = _ops.copy_value(t, dtype=x._storage.dtype, api="matmul")
    moving = _ops._to_sbuf(y, "matmul")
    return _ops.matmul(stationary, moving, api="matmul")


def transpose(x, dtype=None, mask=None, **kwargs):
    """The 2-D tile |x| transposed on the Tensor engine; the result is in PSUM."""
    if x.ndim != 2:
        raise ValueError(
            f"parameter '{x.name}{list(x.shape)}' of 'transpose' exceed max supported number of dimensions of 2."
        )
    return _ops.transpose(_ops._to_sbuf(x, "transpose"), dtype=dtype, api="transpose")


# ---------------------------------------------------------------------------------------------
# Elementwise arithmetic


def _binary_fn(op):
    def fn(x, y, dtype=None, mask=None, **kwargs):
        return _ops.binary(op, x, y, dtype=dtype, mask=mask)

    fn.__name__ = op
    fn._nki_alu = op
    return fn


add = _binary_fn("add")
subtract = _binary_fn("subtract")
multiply = _binary_fn("multiply")
divide = _binary_fn("divide")
maximum = _binary_fn("maximum")
minimum = _binary_fn("minimum")
power = _binary_fn("power")
mod = _binary_fn("mod")
fmod = mod
equal = _binary_fn("equal")
not_equal = _binary_fn("not_equal")
greater = _binary_fn("greater")
greater_equal = _binary_fn("greater_equal")
less = _binary_fn("less")
less_equal = _binary_fn("less_equal")
logical_and = _binary_fn("logical_and")
logical_or = _binary_fn("logical_or")
logical_xor = _binary_fn("logical_xor")
bitwise_and = _binary_fn("bitwise_and")
bitwise_or = _binary_fn("bitwise_or")
bitwise_xor = _binary_fn("bitwise_xor")
left_shift = _binary_fn("left_shift")
right_shift = _binary_fn("right_shift")
abs_max = _binary_fn("abs_max")


def _unary_fn(func):
    def fn(x, dtype=None, mask=None, **kwargs):
        return _ops.activation(func, x, dtype=dtype, mask=mask, api=func)

    fn.__name__ = func
    fn._nki_act = func
    return fn


exp = _unary_fn("exp")
log = _unary_fn("log")
sqrt = _unary_fn("sqrt")
rsqrt = _unary_fn("rsqrt")
square = _unary_fn("square")
tanh = _unary_fn("tanh")
sigmoid = _unary_fn("sigmoid")
relu = _unary_fn("relu")
gelu = _unary_fn("gelu")
gelu_apprx_tanh = _unary_fn("gelu_apprx_tanh")
silu = _unary_fn("silu")
sin = _unary_fn("sin")
cos = _unary_fn("cos")
abs = _unary_fn("abs")  # noqa: A001 - NKI's name
sign = _unary_fn("sign")
softplus = _unary_fn("softplus")
mish = _unary_fn("mish")
erf = _unary_fn("erf")
arctan = _unary_fn("arctan")
negative = _unary_fn("negative")
reciprocal = _unary_fn("reciprocal")
copy._nki_act = "copy"
identity = copy
bypass = "bypass"

# ---------------------------------------------------------------------------------------------
# Reductions


def _reduce_fn(op, name):
    def fn(x, axis, dtype=None, mask=None, keepdims=False, **kwargs):
        return _ops.tensor_reduce(op, x, axis, dtype=dtype, mask=mask, keepdims=keepdims, api=name)

    fn.__name__ = name
    fn._nki_alu = op
    return fn


sum = _reduce_fn("add", "sum")  # noqa: A001 - NKI's name
max = _reduce_fn("maximum", "max")  # noqa: A001
min = _reduce_fn("minimum", "min")  # noqa: A001
prod = _reduce_fn("multiply", "prod")


def mean(x, axis, dtype=None, mask=None, keepdims=False, **kwargs):
    axes = _ops._axes(axis, x.ndim, "mean")
    n = int(np.prod([x.shape[a] for a in axes]))
    total = _ops.tensor_reduce(
        "add", x, axes, dtype="float32", mask=mask, keepdims=keepdims, api="mean"
    )
    return _ops.tensor_scalar(total, "multiply", 1.0 / n, dtype=dtype or x.dtype, api="mean")


# ---------------------------------------------------------------------------------------------
# Unsupported parts of the surface (clear errors instead of wrong results)


def _unsupported(name, instead):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"nl.{name} is not supported by vtrn's NKI interpreter; {instead}"
        )

    fn.__name__ = name
    return fn


dropout = _unsupported("dropout", "run with dropout_p=0")
random_seed = _unsupported("random_seed", "random numbers are not modeled")
rand = _unsupported("rand", "random numbers are not modeled")
shared_constant = _unsupported("shared_constant", "pass the constant as a kernel argument")


def device_print(prefix, x, **kwargs):
    """Accepted and ignored: values exist only when the traced program runs."""
    _tracer.require("device_print")


__all__ = sorted(
    {name for name in globals() if not name.startswith("_") and name not in ("os", "np", "native")}
)
