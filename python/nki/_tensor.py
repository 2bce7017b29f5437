"""NKI tensors as the kernel sees them: views (access patterns) over traced storage.

A view is an affine access pattern ``offset + sum(k_i * stride_i)`` over one tensor; indexing
with ints, slices, ``nl.ds`` or ``nl.arange``/``nl.mgrid`` index grids makes new views without
moving data, exactly as NKI tiles do. SBUF/PSUM views keep the partition dimension first.
"""

import numpy as np

from nki import _dtypes, _tracer
from nki._native import native

# ---------------------------------------------------------------------------------------------
# Buffers


class Buffer:
    def __init__(self, name: str, memory: str):
        self.name = name
        self.memory = memory

    def __repr__(self):
        return f"nl.{self.name}"


sbuf = Buffer("sbuf", "sbuf")
psum = Buffer("psum", "psum")
hbm = Buffer("hbm", "hbm")
private_hbm = Buffer("private_hbm", "hbm")
shared_hbm = Buffer("shared_hbm", "hbm")
_BUFFERS = {b.name: b for b in (sbuf, psum, hbm, private_hbm, shared_hbm)}


def as_buffer(buffer) -> Buffer:
    if buffer is None:
        return sbuf
    if isinstance(buffer, Buffer):
        return buffer
    if isinstance(buffer, str) and buffer in _BUFFERS:
        return _BUFFERS[buffer]
    raise TypeError(f"unknown NKI buffer {buffer!r}; use nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm")


class par_dim(int):
    """Marks the partition dimension of a legacy tile shape; dimensions before it are blocks."""

    def __repr__(self):
        return f"par_dim({int(self)})"


# ---------------------------------------------------------------------------------------------
# Index grids and masks (legacy nl.arange / nl.mgrid)


class IndexExpr:
    """An integer index grid: nl.arange(n)[:, None] and affine arithmetic on it."""

    __slots__ = ("values",)
    __array_priority__ = 100

    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.int64)

    @property
    def shape(self):
        return self.values.shape

    @property
    def ndim(self):
        return self.values.ndim

    def __getitem__(self, key):
        return IndexExpr(self.values[key])

    def _bin(self, other, fn):
        other = other.values if isinstance(other, IndexExpr) else other
        return IndexExpr(fn(self.values, other))

    def _cmp(self, other, fn):
        other = other.values if isinstance(other, IndexExpr) else other
        return MaskExpr(fn(self.values, other))

    __add__ = lambda s, o: s._bin(o, np.add)
    __radd__ = lambda s, o: s._bin(o, lambda a, b: b + a)
    __sub__ = lambda s, o: s._bin(o, np.subtract)
    __rsub__ = lambda s, o: s._bin(o, lambda a, b: b - a)
    __mul__ = lambda s, o: s._bin(o, np.multiply)
    __rmul__ = lambda s, o: s._bin(o, lambda a, b: b * a)
    __floordiv__ = lambda s, o: s._bin(o, np.floor_divide)
    __mod__ = lambda s, o: s._bin(o, np.mod)
    __neg__ = lambda s: IndexExpr(-s.values)
    __lt__ = lambda s, o: s._cmp(o, np.less)
    __le__ = lambda s, o: s._cmp(o, np.less_equal)
    __gt__ = lambda s, o: s._cmp(o, np.greater)
    __ge__ = lambda s, o: s._cmp(o, np.greater_equal)
    __eq__ = lambda s, o: s._cmp(o, np.equal)
    __ne__ = lambda s, o: s._cmp(o, np.not_equal)
    __hash__ = None

    def __bool__(self):
        raise ValueError("Cannot evaluate truth value of a multi-element tensor/array.")


class MaskExpr:
    """A predicate over a tile's elements (``i * 128 + ix < n``)."""

    __slots__ = ("values",)
    __array_priority__ = 100

    def __init__(self, values):
        self.values = np.asarray(values, dtype=bool)

    def _bin(self, other, fn):
        other = other.values if isinstance(other, MaskExpr) else other
        return MaskExpr(fn(self.values, other))

    __and__ = lambda s, o: s._bin(o, np.logical_and)
    __rand__ = __and__
    __or__ = lambda s, o: s._bin(o, np.logical_or)
    __ror__ = __or__
    __xor__ = lambda s, o: s._bin(o, np.logical_xor)
    __invert__ = lambda s: MaskExpr(~s.values)

    def __bool__(self):
        raise ValueError("Cannot evaluate truth value of a multi-element tensor/array.")


def arange(*args):
    return IndexExpr(np.arange(*args))


class _Grid(tuple):
    """nl.mgrid[...] result: unpacks into index grids, also as .p and .x."""

    @property
    def p(self):
        return self[0]

    @property
    def x(self):
        return self[1]


class _MGrid:
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        return _Grid(IndexExpr(v) for v in np.ogrid[key])


mgrid = _MGrid()


def ds(start, size):
    """nl.ds(start, size): the slice start:start+size."""
    return slice(int(start), int(start) + int(size))


def mask_array(mask, shape):
    """The mask as a flat uint8 array over |shape| (None: no mask; False: nothing runs)."""
    if mask is None or mask is True:
        return None
    if mask is False:
        return False
    values = mask.values if isinstance(mask, MaskExpr) else np.asarray(mask, dtype=bool)
    try:
        full = np.broadcast_to(values, shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {values.shape} does not broadcast to the tile shape {shape}"
        ) from None
    if full.all():
        return None
    if not full.any():
        return False
    return np.ascontiguousarray(full, dtype=np.uint8).reshape(-1)


# ---------------------------------------------------------------------------------------------
# Storage and views


class Storage:
    """One traced tensor: what the native program knows about it."""

    __slots__ = ("id", "name", "memory", "dtype", "shape", "is_input", "is_temp", "buffer")

    def __init__(
        self, tracer, name, buffer: Buffer, dtype: str, shape, external=False, is_input=False
    ):
        self.name = name
        self.buffer = buffer
        self.memory = buffer.memory
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)
        self.is_input = is_input
        self.is_temp = False
        self.id = tracer.program.add_tensor(
            name, self.memory, dtype, list(self.shape), _tracer.origin(), external
        )


def _row_major(shape):
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


class NkiTensor:
    """A view of traced storage. ``.shape``, ``.dtype`` and indexing behave as in NKI."""

    __array_priority__ = 100

    def __init__(self, storage: Storage, offset=0, dims=None, producer=None):
        self._storage = storage
        self._offset = int(offset)
        if dims is None:
            dims = list(zip(_row_major(storage.shape), storage.shape))
        self._dims = [(int(s), int(c)) for s, c in dims]
        self._producer = producer  # instruction index when this is a fresh expression result
        self._oob = None  # deferred out-of-bound check for masked index-grid accesses

    # -- description ---------------------------------------------------------------------------

    @property
    def shape(self):
        return tuple(c for _, c in self._dims)

    @property
    def dtype(self):
        return _dtypes.numpy_type(self._storage.dtype)

    @property
    def buffer(self):
        return self._storage.buffer

    @property
    def ndim(self):
        return len(self._dims)

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def name(self):
        return self._storage.name

    def __repr__(self):
        return f"NkiTensor({self._storage.name}, shape={self.shape}, dtype={self._storage.dtype}, buffer={self._storage.buffer.name})"

    def _access(self):
        return native.Access(self._storage.id, self._offset, self._dims)

    def _same_region(self, other) -> bool:
        return (
            isinstance(other, NkiTensor)
            and other._storage is self._storage
            and other._offset == self._offset
            and [c for _, c in other._dims if c != 1] == [c for _, c in self._dims if c != 1]
            and [s for s, c in other._dims if c != 1] == [s for s, c in self._dims if c != 1]
        )

    def _is_whole(self) -> bool:
        return self._offset == 0 and self._dims == list(
            zip(_row_major(self._storage.shape), self._storage.shape)
        )

    def _alias(self, other: "NkiTensor"):
        """After the expression that produced self was written straight into |other|."""
        self._storage = other._storage
        self._offset = other._offset
        self._dims = list(other._dims)
        self._producer = None

    @property
    def on_chip(self) -> bool:
        return self._storage.memory != "hbm"

    # -- indexing ------------------------------------------------------------------------------

    def __getitem__(self, key):
        return index(self, key)

    def __setitem__(self, key, value):
        from nki import _ops

        _ops.assign(index(self, key), value)

    def reshape(self, shape):
        shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if int(np.prod(shape)) != self.size:
            raise ValueError(f"cannot reshape {self.shape} ({self.size} elements) into {shape}")
        if not self._contiguous():
            raise ValueError(
                f"reshape needs a contiguous view; {self.name}{list(self.shape)} is strided"
            )
        return NkiTensor(self._storage, self._offset, list(zip(_row_major(shape), shape)))

    def _contiguous(self) -> bool:
        expect = 1
        for stride, count in reversed(self._dims):
            if count == 1:
                continue
            if stride != expect:
                return False
            expect *= count
        return True

    def broadcast_to(self, shape):
        shape = tuple(int(d) for d in shape)
        if len(shape) != self.ndim:
            raise ValueError(f"broadcast_to {shape}: rank differs from {self.shape}")
        dims = []
        for (stride, count), want in zip(self._dims, shape):
            if count == want:
                dims.append((stride, count))
            elif count == 1:
                dims.append((0, want))
            else:
                raise ValueError(f"cannot broadcast {self.shape} to {shape}")
        return NkiTensor(self._storage, self._offset, dims)

    # -- operators -----------------------------------------------------------------------------

    def _binary(self, other, op, reverse=False):
        from nki import language as nl

        fn = getattr(nl, op)
        return fn(other, self) if reverse else fn(self, other)

    __add__ = lambda s, o: s._binary(o, "add")
    __radd__ = lambda s, o: s._binary(o, "add", True)
    __sub__ = lambda s, o: s._binary(o, "subtract")
    __rsub__ = lambda s, o: s._binary(o, "subtract", True)
    __mul__ = lambda s, o: s._binary(o, "multiply")
    __rmul__ = lambda s, o: s._binary(o, "multiply", True)
    __truediv__ = lambda s, o: s._binary(o, "divide")
    __rtruediv__ = lambda s, o: s._binary(o, "divide", True)
    __pow__ = lambda s, o: s._binary(o, "power")
    __lt__ = lambda s, o: s._binary(o, "less")
    __le__ = lambda s, o: s._binary(o, "less_equal")
    __gt__ = lambda s, o: s._binary(o, "greater")
    __ge__ = lambda s, o: s._binary(o, "greater_equal")
    __and__ = lambda s, o: s._binary(o, "logical_and")
    __or__ = lambda s, o: s._binary(o, "logical_or")
    __hash__ = object.__hash__

    def __neg__(self):
        from nki import language as nl

        return nl.negative(self)

    def __iadd__(self, other):
        from nki import _ops

        return _ops.accumulate(self, other)

    def __bool__(self):
        raise ValueError(
            "Dynamic control-flow depending on tensor value is currently not supported by NKI."
        )


class BlockTensor:
    """A legacy tile with block dimensions before its partition dimension: an array of tiles,
    each allocated (and live) on its own, as the legacy compiler allocates blocks."""

    def __init__(self, blocks: np.ndarray, tile_shape, dtype: str, buffer: Buffer):
        self._blocks = blocks  # object array of NkiTensor
        self.shape = tuple(blocks.shape) + tuple(tile_shape)
        self._dtype = dtype
        self.buffer = buffer

    @property
    def dtype(self):
        return _dtypes.numpy_type(self._dtype)

    @property
    def ndim(self):
        return len(self.shape)

    def _split(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        nb = self._blocks.ndim
        block_key, rest = key[:nb], key[nb:]
        for k in block_key:
            if not isinstance(k, (int, np.integer)):
                raise NotImplementedError(
                    "a block dimension must be indexed with an integer; "
                    f"got {k!r} for a tensor with block dimensions {self._blocks.shape}"
                )
        return self._blocks[tuple(int(k) for k in block_key)], rest

    def __getitem__(self, key):
        tile, rest = self._split(key)
        if isinstance(tile, np.ndarray):
            raise NotImplementedError("index every block dimension of a block tensor")
        return tile[rest] if rest else tile

    def __setitem__(self, key, value):
        tile, rest = self._split(key)
        tile[rest if rest else ...] = value

    def tiles(self):
        return list(self._blocks.reshape(-1))


# ---------------------------------------------------------------------------------------------
# Indexing


def _is_index_expr(k):
    return isinstance(k, IndexExpr)


def index(t: NkiTensor, key) -> NkiTensor:
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = t.ndim - (len(key) - 1)
        key = key[:i] + (slice(None),) * fill + key[i + 1 :]
    if len(key) > t.ndim:
        raise IndexError(f"too many indices for {t.name}{list(t.shape)}: {len(key)}")
    key = key + (slice(None),) * (t.ndim - len(key))
    if any(_is_index_expr(k) for k in key):
        return _advanced_index(t, key)
    offset = t._offset
    dims = []
    for d, ((stride, count), k) in enumerate(zip(t._dims, key)):
        if isinstance(k, slice):
            start, stop, step = k.start, k.stop, k.step
            start = 0 if start is None else int(start)
            stop = count if stop is None else int(stop)
            step = 1 if step is None else int(step)
            if start < 0 or stop > count or step <= 0 or start >= stop:
                if stop > count or start < 0:
                    _out_of_bound(t, d, start, stop - 1, count)
                raise IndexError(
                    f"empty or reversed slice {k} of dimension {d} of {t.name}{list(t.shape)}"
                )
            offset += start * stride
            dims.append((stride * step, (stop - start + step - 1) // step))
        else:
            i = int(k)
            if i < 0 or i >= count:
                _out_of_bound(t, d, i, i, count)
            offset += i * stride
    if t.on_chip and len(dims) < 2:
        if not dims:
            dims = [(0, 1)]
        dims.append((1, 1))
    if not dims:
        dims = [(1, 1)]
    return NkiTensor(t._storage, offset, dims)


def _out_of_bound(t, dim, lo, hi, size):
    raise IndexError(
        f"Out-of-bound access for tensor `{t.name}` on dimension {dim}: index range "
        f"[{lo}, {hi}] exceed dimension size of {size}"
    )


def _advanced_index(t: NkiTensor, key) -> NkiTensor:
    arrays = []
    for k in key:
        if isinstance(k, slice):
            raise IndexError(
                "Mixing basic tensor indexing and advanced tensor indexing is not supported"
            )
        if isinstance(k, IndexExpr):
            if k.ndim == 1:
                raise IndexError(
                    "Indexing a NKI tensor with 1D arange is not supported. Use "
                    "nl.arange(n)[:, None] for the partition dimension and nl.arange(n)[None, :] "
                    "for a free dimension."
                )
            arrays.append(k.values)
        else:
            arrays.append(np.int64(int(k)))
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    flat = np.full(shape, t._offset, dtype=np.int64)
    oob = []
    for d, (a, (stride, count)) in enumerate(zip(arrays, t._dims)):
        a = np.broadcast_to(a, shape)
        if a.size and (a.min() < 0 or a.max() >= count):
            oob.append((d, a, count))
        flat = flat + a * stride
    # The grid must be affine in the tile coordinates: offset + sum(idx_i * stride_i).
    base = int(flat.reshape(-1)[0]) if flat.size else 0
    strides = []
    expected = np.full(shape, base, dtype=np.int64)
    for axis, n in enumerate(shape):
        if n > 1:
            unit = [0] * len(shape)
            unit[axis] = 1
            s = int(flat[tuple(unit)]) - base
        else:
            s = 0
        strides.append(s)
        view = [1] * len(shape)
        view[axis] = n
        expected = expected + np.arange(n, dtype=np.int64).reshape(view) * s
    if not np.array_equal(flat, expected):
        raise NotImplementedError(
            f"index grid on {t.name} is not affine (offset + sum of index * stride); vtrn supports "
            "affine nl.arange / nl.mgrid expressions"
        )
    dims = list(zip(strides, shape))
    if len(dims) < 2 and t.on_chip:
        dims.append((1, 1))
    view = NkiTensor(t._storage, base, dims)
    if oob:
        view._oob = oob
    return view


def check_bounds(view: NkiTensor, mask):
    """Raises the compiler's out-of-bound error unless |mask| disables every such element."""
    if view is None or view._oob is None:
        return
    keep = None if mask is None else np.asarray(mask, dtype=bool).reshape(view.shape)
    for dim, a, size in view._oob:
        vals = a if keep is None else a[np.broadcast_to(keep, a.shape)]
        if vals.size and (vals.min() < 0 or vals.max() >= size):
            _out_of_bound(view, dim, int(vals.min()), int(vals.max()), size)
