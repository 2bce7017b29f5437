"""A fresh result has the CPU's layout (strides) and dtype.

The CPU's elementwise ops (TensorIterator) lay their result out like their inputs: a
transposed or channels_last input gives a transposed or channels_last result, and `cat` keeps
the memory format its inputs share. Code that checks `is_contiguous(memory_format=...)` or
passes strides on (PyTorch's own device-generic suites do) must see the same on `neuron`.
Each case runs on the CPU (the reference) and on `neuron` and compares strides and values.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import vtrn

torch.manual_seed(0)
X = torch.randn(3, 4).t()  # strides (1, 4)
NCHW = torch.randn(2, 3, 4, 5)
NHWC = NCHW.to(memory_format=torch.channels_last)
PERMUTED = torch.randn(2, 3, 4).permute(2, 0, 1)

CASES = {
    "unary on a transpose": (lambda a: a.exp(), (X,)),
    "scalar add on a transpose": (lambda a: a + 1, (X,)),
    "binary transpose + contiguous": (lambda a, b: a * b, (X, torch.randn(4, 3))),
    "unary on channels_last": (lambda a: a.neg(), (NHWC,)),
    "binary channels_last with a broadcast": (lambda a, b: a + b, (NHWC, torch.randn(5))),
    "where on a permutation": (lambda a: torch.where(a > 0, a, 0.0), (PERMUTED,)),
    "cast on a permutation": (lambda a: a.to(torch.bfloat16), (PERMUTED,)),
    "cat of channels_last": (lambda a, b: torch.cat([a, b], dim=1), (NHWC, NHWC)),
    "cat of mixed formats": (lambda a, b: torch.cat([a, b]), (NHWC, NCHW)),
    # Shape (4, 1, 3) with strides (6, 2, 2) permuted: is_contiguous() holds, yet the CPU's
    # result takes strides (3, 1, 1), not the default (3, 3, 1), for the size-1 dim.
    # (Sliced on each device: a copy to the device would lay the slice out densely.)
    "unary on a sliced permutation with a size-1 dim": (
        lambda a: a[:, :, ::2].permute(0, 2, 1).exp(),
        (torch.randn(4, 3, 2),),
    ),
    "matmul of a transpose stays contiguous": (lambda a: a @ a.t(), (torch.randn(3, 3).t(),)),
    # Operands sharing one dense layout run over memory in order (attention's q and k after
    # transpose(1, 2)); the result takes their strides.
    "binary of two heads-transposed tensors": (
        lambda a, b: a.transpose(1, 2) * b.transpose(1, 2),
        (torch.randn(2, 5, 3, 4), torch.randn(2, 5, 3, 4)),
    ),
    "lerp of two permutations with a scalar weight": (
        lambda a, b: torch.lerp(a, b, 0.75),
        (PERMUTED, torch.randn(2, 3, 4).permute(2, 0, 1)),
    ),
    "permutation with a 0-d tensor": (lambda a, b: a * b, (PERMUTED, torch.tensor(2.5))),
    "sigmoid of a transpose": (lambda a: torch.sigmoid(a), (X,)),
    # A read-only operand broadcast against a shared layout runs in memory order too (a rotary
    # table [seq, d] times q [b, heads, seq, d] stored [b, seq, heads, d]), in either order.
    "heads-transposed times a rotary table": (
        lambda a, t: a.transpose(1, 2) * t,
        (torch.randn(2, 5, 3, 4), torch.randn(5, 4)),
    ),
    "rotary table times heads-transposed": (
        lambda a, t: t - a.transpose(1, 2),
        (torch.randn(2, 5, 3, 4), torch.randn(5, 4)),
    ),
    "heads-transposed plus a per-row column": (
        lambda a, t: a.transpose(1, 2) + t,
        (torch.randn(2, 5, 3, 4), torch.randn(5, 1)),
    ),
    "permutation times a full-rank operand with size-1 dims": (
        lambda a, t: a * t,
        (PERMUTED, torch.randn(1, 2, 3)),
    ),
    "permutation times a table it reads transposed": (
        lambda a, t: a.permute(0, 2, 1) * t,
        (torch.randn(2, 3, 4), torch.randn(4, 3)),
    ),
    "transposed float times an integer table": (
        lambda a, t: a.transpose(1, 2) * t,
        (torch.randn(2, 5, 3, 4), torch.randint(-3, 4, (5, 4))),
    ),
    "where of a permutation with a broadcast mask": (
        lambda a, m: torch.where(m, a, -a),
        (PERMUTED, torch.randn(3) > 0),
    ),
    "addcmul of a transpose and two broadcasts": (
        lambda a, t, u: torch.addcmul(a.transpose(1, 2), t, u, value=0.5),
        (torch.randn(2, 5, 3, 4), torch.randn(5, 4), torch.randn(4)),
    ),
}


def test_in_place_and_out_on_a_shared_layout_write_the_arguments():
    base = torch.randn(2, 5, 3, 4)
    other = torch.randn(2, 5, 3, 4)
    results = {}
    for device in ("cpu", "neuron"):
        a = base.clone().to(device).transpose(1, 2)  # (to("cpu") would not copy)
        b = other.to(device).transpose(1, 2)
        out = torch.empty(2, 5, 3, 4, device=device).transpose(1, 2)
        returned = a.mul_(b)
        assert returned is a  # the argument itself, not a view of it
        sum_returned = torch.add(a, b, alpha=2, out=out)
        assert sum_returned is out
        assert a.stride() == out.stride() == (60, 4, 12, 1)
        results[device] = (a.cpu(), out.cpu())
    torch.testing.assert_close(results["neuron"], results["cpu"])


def test_in_place_and_out_with_a_broadcast_operand_write_the_arguments():
    base = torch.randn(2, 5, 3, 4)
    table = torch.randn(5, 4)
    results = {}
    for device in ("cpu", "neuron"):
        a = base.clone().to(device).transpose(1, 2)
        t = table.to(device)
        out = torch.empty(2, 5, 3, 4, device=device).transpose(1, 2)
        assert a.mul_(t) is a
        assert torch.sub(a, t, out=out) is out
        assert a.stride() == out.stride() == (60, 4, 12, 1)
        results[device] = (a.cpu(), out.cpu())
    torch.testing.assert_close(results["neuron"], results["cpu"], rtol=0, atol=0)


def test_a_broadcast_operand_is_not_written_in_place():
    # The in-place op's own argument must be the full shape: the CPU refuses to broadcast
    # into a smaller tensor, and so must neuron.
    for device in ("cpu", "neuron"):
        a = torch.randn(2, 5, 3, 4, device=device).transpose(1, 2)
        t = torch.randn(5, 4, device=device)
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            t.mul_(a)


def test_an_out_argument_that_is_also_an_input_is_not_resized():
    # TensorIterator does not resize an output that it also reads: out=t with t smaller than
    # the broadcast shape raises on the CPU, and must on neuron too, where it once resized t.
    a = torch.randn(2, 3, 5, 4)
    table = torch.randn(5, 4)
    vtrn.clear_op_tracking()
    for fn in (torch.mul, torch.add, torch.maximum):
        for device in ("cpu", "neuron"):
            t = table.clone().to(device)
            with pytest.raises(
                RuntimeError,
                match=r"output with shape \[5, 4\] doesn't match "
                r"the broadcast shape \[2, 3, 5, 4\]",
            ):
                fn(a.to(device), t, out=t)
            torch.testing.assert_close(t.cpu(), table, rtol=0, atol=0)
    assert vtrn.get_fallback_ops() == []  # refused on the device, not run on the CPU
    # Of the same shape, the output is written: the CPU's result, bit for bit.
    b = torch.randn(5, 4)
    results = {}
    for device in ("cpu", "neuron"):
        t = table.clone().to(device)  # (to("cpu") would not copy)
        assert torch.mul(b.to(device), t, out=t) is t
        results[device] = t.cpu()
    torch.testing.assert_close(results["neuron"], results["cpu"], rtol=0, atol=0)


@pytest.mark.parametrize("name", list(CASES))
def test_fresh_output_has_the_cpus_strides(name):
    fn, args = CASES[name]
    expected = fn(*args)
    got = fn(*(a.to("neuron") for a in args))
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert got.stride() == expected.stride(), f"{name}: {got.stride()} != {expected.stride()}"
    torch.testing.assert_close(got.cpu(), expected)


def test_channels_last_survives_a_chain_of_ops():
    expected = torch.relu(NHWC * 2 + 1)
    got = torch.relu(NHWC.to("neuron") * 2 + 1)
    assert got.is_contiguous(memory_format=torch.channels_last)
    assert got.stride() == expected.stride()
    torch.testing.assert_close(got.cpu(), expected)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_adding_an_imaginary_scalar_promotes_as_on_the_cpu(dtype):
    # float16 + 1j is complex32 (ComplexHalf) on the CPU, bfloat16 + 1j complex64.
    x = torch.tensor([1.5, -2.0, 0.25], dtype=dtype)
    # float16's "ComplexHalf support is experimental" is a warn-once: an earlier test in the
    # process may have used it up.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = x + 1j
        got = x.to("neuron") + 1j
    assert got.device.type == "neuron"
    assert got.dtype == expected.dtype
    # equal() has no ComplexHalf kernel on the CPU: compare the (real, imag) pairs.
    assert torch.equal(torch.view_as_real(got.cpu()), torch.view_as_real(expected))


# An elementwise out= that is a view into a larger buffer (offset, strided, transposed) and
# already has the result's shape is written where it lies on the device, as the CPU writes it:
# the buffer's other elements untouched, no fallback.
OUT_VIEW_CASES = {
    "add into rows": ((7, 4), lambda b: b[1:6], lambda x, y, o: torch.add(x, y, out=o)),
    "mul into every other column": (
        (5, 8),
        lambda b: b[:, ::2],
        lambda x, y, o: torch.mul(x, y, out=o),
    ),
    "sub alpha into a transpose": (
        (4, 5),
        lambda b: b.t(),
        lambda x, y, o: torch.sub(x, y, alpha=2, out=o),
    ),
    "exp into rows": ((7, 4), lambda b: b[2:7], lambda x, y, o: torch.exp(x, out=o)),
    "where into odd columns": (
        (5, 8),
        lambda b: b[:, 1::2],
        lambda x, y, o: torch.where(x > 0, x, y, out=o),
    ),
}


@pytest.mark.parametrize("name", list(OUT_VIEW_CASES))
def test_an_out_view_of_the_result_shape_is_written_in_place(name):
    shape, view, op = OUT_VIEW_CASES[name]
    x, y, base = torch.randn(5, 4), torch.randn(4), torch.randn(shape)
    results = {}
    vtrn.clear_op_tracking()
    for device in ("cpu", "neuron"):
        buf = base.clone().to(device)
        out = view(buf)
        assert op(x.to(device), y.to(device), out) is out
        results[device] = (buf.cpu(), out.stride())
    assert vtrn.get_fallback_ops() == []
    assert results["neuron"][1] == results["cpu"][1]
    torch.testing.assert_close(results["neuron"][0], results["cpu"][0], rtol=0, atol=0)


# Views that overlap an input, or that the op would resize, keep the CPU's behaviour: the same
# error, or the same bytes.
OUT_OVERLAP_CASES = {
    "partial overlap": lambda b: torch.add(b[0:5], 1, out=b[1:6]),
    "the same view": lambda b: torch.mul(b[1:6], 2, out=b[1:6]),
    "an expanded out": lambda b: torch.add(b[0, :4], 1, out=b[0:1].expand(3, 4)),
    "another argument's rows": lambda b: torch.add(b[0:3], b[3:6], out=b[3:6]),
    "resized": lambda b: torch.add(torch.ones(2, 3, 4, device=b.device), 1, out=b[1:4]),
    "an input's columns": lambda b: torch.add(b[:, 0:2], b[:, 2:4], out=b[:, 0:2]),
}


@pytest.mark.parametrize("name", list(OUT_OVERLAP_CASES))
def test_an_out_view_that_overlaps_or_resizes_behaves_as_on_the_cpu(name):
    def outcome(device):
        buf = torch.arange(24.0).reshape(6, 4).to(device)
        try:
            OUT_OVERLAP_CASES[name](buf)
        except RuntimeError as e:
            return "error", str(e).splitlines()[0]
        return "ok", buf.cpu()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the CPU's resize warning
        cpu, neuron = outcome("cpu"), outcome("neuron")
    assert neuron[0] == cpu[0], (cpu, neuron)
    if cpu[0] == "ok":
        torch.testing.assert_close(neuron[1], cpu[1], rtol=0, atol=0)
    else:
        assert neuron[1] == cpu[1]
