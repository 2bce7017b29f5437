"""Binary ops whose numbers on `neuron` must be the CPU's, from PyTorch's test_binary_ufuncs.py.

remainder / floor_divide round a Python-number operand to the tensor's dtype first, as
TensorIterator's promoted copy does (a half tensor divided by 2.3 divides by 2.30078125).
ldexp of a float mantissa and an integer exponent is exact (the CPU's std::ldexp), also where
2^exponent itself is beyond the mantissa's dtype.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import make_tensor


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("op", [torch.remainder, torch.floor_divide, torch.fmod])
def test_python_float_operand_is_rounded_to_the_tensor_dtype(op, dtype):
    torch.manual_seed(0)
    x = make_tensor((10, 10), device="cpu", dtype=dtype, low=-9, high=9)
    for other in (2.3, 3, -0.7):
        torch.testing.assert_close(op(x.to("neuron"), other).cpu(), op(x, other), rtol=0, atol=0)
    if op is torch.remainder:  # remainder(Scalar, Tensor)
        d = make_tensor((10, 10), device="cpu", dtype=dtype, low=-9, high=9, exclude_zero=True)
        got = torch.remainder(3.14, d.to("neuron")).cpu()
        torch.testing.assert_close(got, torch.remainder(3.14, d), rtol=0, atol=0)


def test_remainder_half_of_this_value_needs_the_rounded_divisor():
    """The case that showed it: -0.0673828125 % 2.3 in half is 2.234375 on the CPU (the
    divisor is 2.30078125); with 2.3 unrounded it is 2.232421875."""
    x = torch.tensor([-0.0673828125], dtype=torch.float16)
    assert torch.remainder(x, 2.3).item() == 2.234375
    assert torch.remainder(x.to("neuron"), 2.3).item() == 2.234375


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("edtype", [torch.int64, torch.int32, torch.uint8])
def test_ldexp_matches_the_cpu(dtype, edtype):
    g = torch.Generator().manual_seed(0)
    m = torch.randn(257, generator=g).to(dtype)
    m[:4] = torch.tensor([0.0, -0.0, float("inf"), float("nan")])
    low = 0 if edtype == torch.uint8 else -160
    e = torch.randint(low, 160, (257,), generator=g).to(edtype)
    want = torch.ldexp(m, e)
    got = torch.ldexp(m.to("neuron"), e.to("neuron"))
    assert got.dtype == want.dtype == dtype
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True)
    # in place and out=
    t = m.to("neuron")
    t.ldexp_(e.to("neuron"))
    torch.testing.assert_close(t.cpu(), want, rtol=0, atol=0, equal_nan=True)
    out = torch.empty(257, dtype=dtype, device="neuron")
    torch.ldexp(m.to("neuron"), e.to("neuron"), out=out)
    torch.testing.assert_close(out.cpu(), want, rtol=0, atol=0, equal_nan=True)


def test_ldexp_half_beyond_the_range_of_two_to_the_exponent():
    """PyTorch's own bound check: 2^-10 * 2^20 is 1024 in half although 2^20 is not a half."""
    m = torch.tensor([-2, 2**-10], dtype=torch.half)
    e = torch.tensor([-25, 20])
    want = torch.tensor([-(2**-24), 2**10], dtype=torch.half)
    assert torch.equal(torch.ldexp(m, e), want)
    assert torch.equal(torch.ldexp(m.to("neuron"), e.to("neuron")).cpu(), want)


def test_ldexp_float_exponent_and_broadcast_follow_the_cpu():
    m = torch.tensor([[1.5], [-3.0]])
    for e in (torch.tensor([2.0, -1.5]), torch.tensor([[3, -2, 0]])):
        want = torch.ldexp(m, e)
        got = torch.ldexp(m.to("neuron"), e.to("neuron")).cpu()
        assert got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got, want)
