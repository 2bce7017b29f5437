"""A reduction's result does not depend on the layout of its input.

PyTorch's own suite (test_reductions.py, test_noncontiguous_expanded) reduces a tensor expanded
with a stride-0 dim and the same data made contiguous, and expects the same result. Sums of
half and bfloat16 accumulate in float32 and round once at the end, whatever the layout (as CUDA
does): the CPU's nansum kernel instead rounds partial sums to half when the input is expanded,
which loses up to a percent when terms cancel, and is not the reference here; its result on the
contiguous copy, and float64 arithmetic, are.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import make_tensor

import vtrn

# 2x3 values in [-1, 1) whose sums over the expanded (2, 5, 3) tensor cancel: the CPU's nansum
# of the expanded tensor is off by 1.1% (0.4629 where the exact sum is 0.45776).
SEED = 19


def expanded_pair(dtype):
    torch.manual_seed(SEED)
    t = make_tensor((2, 3), dtype=dtype, device="cpu", low=-1, high=1)
    cpu = t.unsqueeze(1).expand(-1, 5, -1)
    dev = t.to("neuron").unsqueeze(1).expand(-1, 5, -1)
    assert dev.stride() == cpu.stride() == (3, 0, 1)
    return cpu, dev


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("op", [torch.nansum, torch.nanmean, torch.sum, torch.mean])
@pytest.mark.parametrize("dim", [None, 0, 1, (1, 2)])
def test_expanded_input_reduces_as_its_contiguous_copy(op, dtype, dim):
    cpu, dev = expanded_pair(dtype)
    kwargs = {} if dim is None else {"dim": dim}
    expanded = op(dev, **kwargs).cpu()
    contiguous = op(dev.contiguous(), **kwargs).cpu()
    torch.testing.assert_close(expanded, contiguous, rtol=0, atol=0)
    # The reference: the CPU on the contiguous copy, and the exact sum rounded to the dtype.
    torch.testing.assert_close(expanded, op(cpu.contiguous(), **kwargs))
    exact = op(cpu.double(), **kwargs).to(dtype)
    torch.testing.assert_close(expanded, exact)


def test_the_cpu_kernel_that_is_not_the_reference_differs_on_this_data():
    """The data above is a case where the layout matters to the CPU's nansum: without it the
    test above would not see a layout-dependent rounding."""
    cpu, _ = expanded_pair(torch.float16)
    exact = cpu.double().sum().half()
    assert torch.nansum(cpu.contiguous()) == exact
    assert abs(torch.nansum(cpu).item() - exact.item()) > 4e-3


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize(
    "kwargs", [{}, {"dim": 0}, {"dim": 1, "keepdim": True}, {"dim": []}, {"dtype": torch.float32}]
)
def test_nansum_counts_nan_as_zero_like_the_cpu(dtype, kwargs):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(17, 13, generator=g).to(dtype)
    x[torch.rand(17, 13, generator=g) < 0.3] = float("nan")
    x[0, :] = float("nan")  # a row of NaNs sums to 0
    want = torch.nansum(x, **kwargs)
    got = torch.nansum(x.to("neuron"), **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want)
    # nanmean of the row of NaNs is 0/0, NaN on both.
    got, want = torch.nanmean(x.to("neuron"), dim=1).cpu(), torch.nanmean(x, dim=1)
    assert got[0].isnan() and want[0].isnan()
    torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8, torch.bool])
def test_nansum_of_integers_is_their_sum_in_int64(dtype):
    x = make_tensor((6, 7), dtype=dtype, device="cpu", low=0, high=100)
    got = torch.nansum(x.to("neuron"), dim=0)
    assert got.dtype == torch.nansum(x, dim=0).dtype == torch.int64
    assert torch.equal(got.cpu(), torch.nansum(x, dim=0))


def test_nansum_runs_on_the_device_and_complex_raises_the_cpus_error():
    vtrn.clear_op_tracking()
    torch.nansum(torch.ones(4, 4, device="neuron"), dim=1).cpu()
    assert "aten::nansum" not in vtrn.get_fallback_ops()
    z = torch.ones(3, dtype=torch.complex64)
    with pytest.raises(RuntimeError) as want:
        torch.nansum(z)
    with pytest.raises(RuntimeError) as got:
        torch.nansum(z.to("neuron"))
    assert str(got.value) == str(want.value)
