"""Every op that returns a view on the CPU returns a view on `neuron`: it shares its base's
storage, its `_base` is the base, and writes go through in both directions, as on the CPU.

The hand-written cases cover PyTorch's list of view ops ("Tensor Views" in the PyTorch docs);
test_opinfo_views_alias_as_on_cpu runs the samples of every OpInfo whose ATen op returns an
alias of its input (the schema's `Tensor(a)` return) and checks the same on each.
"""

from __future__ import annotations

import warnings

import opinfo_parity as P
import pytest
import torch
import torch.utils._pytree as pytree

DEVICE = "neuron"


def _real(shape=(4, 6)):
    return torch.arange(float(torch.Size(shape).numel())).reshape(shape) - 5.0


def _complex(shape=(3, 4)):
    real = _real(shape)
    return torch.complex(real, real * 0.5 + 1.0)


# name -> (base on the CPU, the view op). Every entry is a view on the CPU (asserted below).
VIEW_CASES = {
    "view_as_real": (_complex, torch.view_as_real),
    "view_as_complex": (lambda: _real((3, 2)), torch.view_as_complex),
    "view_as_complex_3d": (lambda: _real((2, 3, 2)), torch.view_as_complex),
    "real": (_complex, lambda z: z.real),
    "imag": (_complex, lambda z: z.imag),
    "real_of_conj": (_complex, lambda z: z.conj().real),
    "imag_of_conj": (_complex, lambda z: z.conj().imag),
    "conj": (_complex, torch.conj),
    "_conj": (_complex, torch._conj),
    "_neg_view": (_real, torch._neg_view),
    "unfold": (lambda: _real((12,)), lambda x: x.unfold(0, 3, 3)),
    "unfold_2d": (_real, lambda x: x.unfold(1, 2, 2)),
    "diagonal": (_real, torch.diagonal),
    "diagonal_offset": (_real, lambda x: x.diagonal(1)),
    "linalg_diagonal": (lambda: _real((2, 3, 3)), torch.linalg.diagonal),
    "as_strided": (_real, lambda x: x.as_strided((2, 2), (6, 1), 7)),
    "select": (_real, lambda x: x.select(1, 2)),
    "narrow": (_real, lambda x: x.narrow(1, 1, 3)),
    "slice": (_real, lambda x: x[1:3, ::2]),
    "basic_index": (_real, lambda x: x[2]),
    "unbind": (_real, torch.unbind),
    "split": (_real, lambda x: x.split(2, dim=1)),
    "split_with_sizes": (_real, lambda x: x.split([1, 5], dim=1)),
    "chunk": (_real, lambda x: x.chunk(3, dim=1)),
    "tensor_split": (_real, lambda x: x.tensor_split(4, dim=1)),
    "hsplit": (_real, lambda x: torch.hsplit(x, 2)),
    "vsplit": (_real, lambda x: torch.vsplit(x, 2)),
    "dsplit": (lambda: _real((2, 2, 4)), lambda x: torch.dsplit(x, 2)),
    "movedim": (lambda: _real((2, 3, 4)), lambda x: x.movedim(0, 2)),
    "moveaxis": (lambda: _real((2, 3, 4)), lambda x: torch.moveaxis(x, 2, 0)),
    "swapaxes": (lambda: _real((2, 3, 4)), lambda x: x.swapaxes(0, 2)),
    "swapdims": (lambda: _real((2, 3, 4)), lambda x: x.swapdims(1, 2)),
    "transpose": (_real, lambda x: x.transpose(0, 1)),
    "permute": (lambda: _real((2, 3, 4)), lambda x: x.permute(2, 0, 1)),
    "t": (_real, torch.t),
    "T": (_real, lambda x: x.T),
    "mT": (lambda: _real((2, 3, 4)), lambda x: x.mT),
    "H": (_complex, lambda x: x.H),
    "mH": (lambda: _complex((2, 3)), lambda x: x.mH),
    "adjoint": (_complex, torch.adjoint),
    "expand": (lambda: _real((1, 6)), lambda x: x.expand(4, 6)),
    "expand_as": (lambda: _real((4, 1)), lambda x: x.expand_as(torch.empty(4, 6))),
    "broadcast_to": (lambda: _real((6,)), lambda x: torch.broadcast_to(x, (3, 6))),
    "squeeze": (lambda: _real((1, 4, 1)), torch.squeeze),
    "squeeze_dim": (lambda: _real((1, 4, 1)), lambda x: x.squeeze(0)),
    "squeeze_dims": (lambda: _real((1, 4, 1)), lambda x: x.squeeze((0, 2))),
    "unsqueeze": (_real, lambda x: x.unsqueeze(1)),
    "view": (_real, lambda x: x.view(3, 8)),
    "view_dtype": (_real, lambda x: x.view(torch.int32)),
    "view_dtype_complex": (_real, lambda x: x.view(torch.complex64)),
    "view_as": (_real, lambda x: x.view_as(torch.empty(2, 12))),
    "reshape": (_real, lambda x: x.reshape(2, 12)),
    "reshape_as": (_real, lambda x: x.reshape_as(torch.empty(24))),
    "flatten": (lambda: _real((2, 3, 4)), torch.flatten),
    "unflatten": (_real, lambda x: x.unflatten(1, (2, 3))),
    "ravel": (_real, torch.ravel),
    "alias": (_real, torch.ops.aten.alias),
    "detach": (_real, torch.detach),
    "numpy_T": (lambda: _real((2, 3, 4)), torch.ops.aten.numpy_T),
}


def _outputs(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _shares_storage(view, base):
    return view.untyped_storage()._cdata == base.untyped_storage()._cdata


def _write_marker(view):
    """Distinct values for every element of |view|, whose dtype it has."""
    marker = torch.arange(view.numel(), dtype=torch.float32).reshape(view.shape) + 100.0
    if view.is_complex():
        marker = torch.complex(marker, -marker)
    return marker.to(view.dtype)


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_view_shares_storage_and_writes_through(name):
    make_base, op = VIEW_CASES[name]
    cpu_base = make_base()
    dev_base = cpu_base.to(DEVICE)
    cpu_views = _outputs(op(cpu_base))
    with warnings.catch_warnings():
        # A view that falls back to the CPU returns a copy, and PyTorch warns about it.
        warnings.simplefilter("error")
        dev_views = _outputs(op(dev_base))
    assert len(dev_views) == len(cpu_views)
    for i, (cpu_view, dev_view) in enumerate(zip(cpu_views, dev_views)):
        assert _shares_storage(cpu_view, cpu_base), f"{name}: not a view on the CPU either"
        assert dev_view.device.type == DEVICE
        assert _shares_storage(dev_view, dev_base), f"{name}[{i}] does not share its storage"
        assert dev_view.untyped_storage().data_ptr() == dev_base.untyped_storage().data_ptr()
        assert (dev_view._base is dev_base) == (cpu_view._base is cpu_base), name
        assert dev_view.shape == cpu_view.shape and dev_view.stride() == cpu_view.stride()
        assert dev_view.storage_offset() == cpu_view.storage_offset()
        assert (dev_view.is_conj(), dev_view.is_neg()) == (cpu_view.is_conj(), cpu_view.is_neg())
        torch.testing.assert_close(dev_view.cpu(), cpu_view, rtol=0, atol=0)

        # base -> view: an in-place change of the base shows through the view.
        cpu_base.add_(1)
        dev_base.add_(1)
        torch.testing.assert_close(dev_view.cpu(), cpu_view, rtol=0, atol=0)

        # view -> base, where the view has one element per memory location (an expanded view
        # cannot be written on the CPU either).
        if torch._debug_has_internal_overlap(cpu_view) == 0:
            cpu_view.copy_(_write_marker(cpu_view))
            dev_view.copy_(_write_marker(dev_view))
            torch.testing.assert_close(dev_base.cpu(), cpu_base, rtol=0, atol=0)


# In-place view ops: they change the tensor's metadata and keep its storage.
INPLACE_VIEW_CASES = {
    "squeeze_": (lambda: _real((1, 4, 1)), lambda x: x.squeeze_()),
    "squeeze__dim": (lambda: _real((1, 4, 1)), lambda x: x.squeeze_(2)),
    "unsqueeze_": (_real, lambda x: x.unsqueeze_(0)),
    "t_": (_real, lambda x: x.t_()),
    "transpose_": (lambda: _real((2, 3, 4)), lambda x: x.transpose_(0, 2)),
    "swapaxes_": (lambda: _real((2, 3, 4)), lambda x: x.swapaxes_(0, 1)),
    "as_strided_": (_real, lambda x: x.as_strided_((3, 2), (1, 6), 2)),
    "detach_": (_real, lambda x: x.detach_()),
    "resize_as_": (_real, lambda x: x.resize_as_(torch.empty(2, 3))),
}


@pytest.mark.parametrize("name", sorted(INPLACE_VIEW_CASES))
def test_inplace_view_op_keeps_storage_and_matches_cpu(name):
    make_base, op = INPLACE_VIEW_CASES[name]
    cpu = make_base()
    dev = cpu.to(DEVICE)
    storage = dev.untyped_storage()._cdata
    assert op(cpu) is cpu
    assert op(dev) is dev
    assert dev.untyped_storage()._cdata == storage
    assert (dev.shape, dev.stride(), dev.storage_offset()) == (
        cpu.shape,
        cpu.stride(),
        cpu.storage_offset(),
    )
    torch.testing.assert_close(dev.cpu(), cpu, rtol=0, atol=0)


def test_set_without_source_empties_the_tensor_on_its_device():
    t = torch.ones(3, device=DEVICE)
    t.set_()
    assert t.shape == (0,) and t.device.type == DEVICE
    assert t.untyped_storage().device.type == DEVICE and t.untyped_storage().nbytes() == 0
    t.resize_(2).fill_(4.0)
    assert t.cpu().tolist() == [4.0, 4.0]


def test_view_as_real_and_complex_do_not_warn():
    z = torch.zeros(4, dtype=torch.complex64, device=DEVICE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            torch.view_as_complex(torch.view_as_real(z))
            assert z.real.device == z.imag.device == z.device


def test_rotary_embedding_writes_through_view_as_complex():
    # Rotary embeddings rotate pairs of features in place through a complex view.
    x = torch.randn(2, 5, 8)
    angles = torch.randn(5, 4)
    rotation = torch.polar(torch.ones_like(angles), angles)
    dev_x = x.to(DEVICE)
    torch.view_as_complex(x.view(2, 5, 4, 2)).mul_(rotation)
    torch.view_as_complex(dev_x.view(2, 5, 4, 2)).mul_(rotation.to(DEVICE))
    torch.testing.assert_close(dev_x.cpu(), x)


def test_make_tensor_complex_is_initialized():
    # make_tensor fills a complex tensor through view_as_real: it must not stay uninitialized.
    torch.manual_seed(0)
    cpu = torch.testing.make_tensor((64,), dtype=torch.complex64, device="cpu", low=1, high=2)
    torch.manual_seed(0)
    dev = torch.testing.make_tensor((64,), dtype=torch.complex64, device=DEVICE, low=1, high=2)
    values = dev.cpu()
    assert bool(((values.real >= 1) & (values.real < 2)).all())
    assert bool(((values.imag >= 1) & (values.imag < 2)).all())
    assert values.shape == cpu.shape and values.dtype == cpu.dtype


def _cpu_error(fn, x):
    with pytest.raises(RuntimeError) as info:
        fn(x)
    return str(info.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: _real((3, 4))[:, ::2],  # last dimension of size 2 with stride 2
        lambda: _real((2, 3)),  # last dimension of size 3
        lambda: _real((4, 2)).t().contiguous().t(),  # last stride 4
        lambda: _real((3, 2)).view(-1)[1:5].view(2, 2),  # odd storage offset
        lambda: _real((5, 2)).as_strided((2, 2), (3, 1)),  # odd stride
        lambda: torch.zeros(()),  # no dimensions
        lambda: torch.zeros(3, 2, dtype=torch.int32),  # not a floating dtype
    ],
    ids=["stride2", "size3", "last_stride4", "odd_offset", "odd_stride", "0d", "int32"],
)
def test_view_as_complex_rejects_what_the_cpu_rejects(make):
    cpu = make()
    message = _cpu_error(torch.view_as_complex, cpu)
    dev = torch.empty(0, dtype=cpu.dtype, device=DEVICE).set_(
        cpu.untyped_storage()
        .__class__(cpu.untyped_storage().nbytes(), device=DEVICE)
        .copy_(cpu.untyped_storage()),
        cpu.storage_offset(),
        cpu.shape,
        cpu.stride(),
    )
    with pytest.raises(RuntimeError) as info:
        torch.view_as_complex(dev)
    assert str(info.value).splitlines()[0] == message.splitlines()[0]


def test_view_as_real_rejects_an_unresolved_conjugate_as_the_cpu_does():
    z = _complex()
    message = _cpu_error(torch.view_as_real, z.conj())
    with pytest.raises(RuntimeError) as info:
        torch.view_as_real(z.to(DEVICE).conj())
    assert str(info.value).splitlines()[0] == message.splitlines()[0]


# OpInfo samples.

# OpInfo names that are not the ATen op's name.
_ATEN_NAME = {"T": "numpy_T", "H": "matrix_H"}
# View-returning composites whose schema carries no alias annotation.
_EXTRA_VIEW_OPINFOS = {"atleast_1d", "atleast_2d", "atleast_3d", "meshgrid"}
# Ops whose tensor arguments (other than the input) are host-side indices and stay on the CPU.
_HOST_ARGS = {"tensor_split"}
# Ops whose result aliases its input only for some arguments, by their meaning: `to` returns a
# copy for another device, which a sample's device argument names.
_NOT_COMPARABLE = {"to"}


def _returns_alias(aten_name):
    packet = getattr(torch.ops.aten, aten_name, None)
    if packet is None or not hasattr(packet, "overloads"):
        return False
    for overload in packet.overloads():
        for ret in getattr(packet, overload)._schema.returns:
            if ret.alias_info is not None and not ret.alias_info.is_write:
                return True
    return False


def _view_opinfos():
    selected = []
    for op in P._load_op_db():
        if op.name in _NOT_COMPARABLE:
            continue
        names = [_ATEN_NAME.get(op.name), op.aten_name, op.name]
        if op.name in _EXTRA_VIEW_OPINFOS or any(n and _returns_alias(n) for n in names):
            selected.append(op)
    return selected


VIEW_OPINFOS = _view_opinfos()


def test_view_opinfos_cover_the_view_ops():
    names = {op.name for op in VIEW_OPINFOS}
    for expected in ["view_as_real", "view_as_complex", "real", "imag", "unfold", "diagonal"]:
        assert expected in names
    assert "nn.functional.unfold" not in names  # im2col: a new tensor


def _fresh(t, device):
    """A tensor on |device| with its own storage, laid out as |t|'s (offset and strides),
    so that ops which read the storage (as_strided) see the same bytes on both devices."""
    if t.is_conj() or t.is_neg():
        return t.clone().to(device)
    storage = torch.UntypedStorage(t.untyped_storage().nbytes(), device=device)
    storage.copy_(t.untyped_storage())
    return torch.empty(0, dtype=t.dtype, device=device).set_(
        storage, t.storage_offset(), t.shape, t.stride()
    )


def _alias_of(out, inputs):
    """Which input |out| shares storage with, and which input its `_base` is (-1: none)."""
    shared = [i for i, t in enumerate(inputs) if _shares_storage(out, t)]
    base = [i for i, t in enumerate(inputs) if out._base is t]
    kind = "none" if out._base is None else (base[0] if base else "other")
    return (shared[0] if shared else -1), kind


def _check_sample(op, sample):
    single = isinstance(sample.input, torch.Tensor)
    originals = [sample.input] if single else list(sample.input)
    cpu_inputs = [_fresh(t, "cpu") for t in originals]
    dev_inputs = [_fresh(t, DEVICE) for t in originals]
    cpu_arg = cpu_inputs[0] if single else cpu_inputs
    dev_arg = dev_inputs[0] if single else dev_inputs
    dev_sample = sample
    if op.name not in _HOST_ARGS:
        dev_sample = sample.transform(lambda t: t.to(DEVICE) if isinstance(t, torch.Tensor) else t)
    try:
        cpu_out = op(cpu_arg, *sample.args, **sample.kwargs)
    except Exception as e:  # noqa: BLE001 - the device must raise what the CPU raises
        with pytest.raises(type(e)):
            op(dev_arg, *dev_sample.args, **dev_sample.kwargs)
        return
    dev_out = op(dev_arg, *dev_sample.args, **dev_sample.kwargs)
    cpu_outs = [t for t in pytree.tree_leaves(cpu_out) if isinstance(t, torch.Tensor)]
    dev_outs = [t for t in pytree.tree_leaves(dev_out) if isinstance(t, torch.Tensor)]
    assert len(dev_outs) == len(cpu_outs)
    for c, d in zip(cpu_outs, dev_outs):
        where = _alias_of(c, cpu_inputs)
        assert _alias_of(d, dev_inputs) == where, f"{op.name}: {sample}"
        torch.testing.assert_close(d.cpu(), c, rtol=0, atol=0, equal_nan=True)
        if where[0] >= 0 and c.numel() > 0 and torch._debug_has_internal_overlap(c) == 0:
            c.copy_(_write_marker(c))
            d.copy_(_write_marker(d))
            for ci, di in zip(cpu_inputs, dev_inputs):
                torch.testing.assert_close(di.cpu(), ci, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("op", VIEW_OPINFOS, ids=lambda op: op.full_name)
def test_opinfo_views_alias_as_on_cpu(op):
    dtypes = [d for d in (torch.float32, torch.complex64) if d in op.supported_dtypes("cpu")]
    assert dtypes, op.name
    torch.manual_seed(0)
    ran = 0
    for dtype in dtypes:
        for sample in op.sample_inputs("cpu", dtype, requires_grad=False):
            _check_sample(op, sample)
            ran += 1
    assert ran > 0, op.name
