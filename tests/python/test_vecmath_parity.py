"""Transcendental ops on `neuron` against torch's own CPU results, over every input that matters.

The executor computes exp, expm1, log, log1p, tanh, sin, cos (and the exp of sigmoid, silu
and the tanh GELU) with SLEEF's vector functions, the ones ATen's vectorized CPU kernels call,
and a bfloat16 or float16 op computes in float32 and rounds once. ATen's own kernels for
float32 exp, log, sqrt, sin, cos and tanh call MKL's VML instead, which libtorch_cpu exports;
vtrn computes those six ops with the same functions. So:

  * bfloat16 and float16: every one of the 65,536 values of the type (NaNs, infinities,
    subnormals, the largest magnitudes) gives the CPU's result bit for bit, on an odd length
    too (a tail shorter than a vector);
  * float32, where ATen's kernel takes SLEEF too (expm1, log1p; sigmoid, silu and pow on
    whole vectors of 32, glibc's libm for the rest of the tensor, as the executor does): bit
    for bit over random float32 bit patterns and edge values, and on short tensors;
  * float32 exp, log, sqrt, sin, cos and tanh, where ATen calls MKL's VML: bit for bit on the
    same inputs, at every length and in strided and in-place forms;
  * pow, a binary op, on random pairs rather than every one: bit for bit in every type;
  * erf and the exact GELU, which both compute by a rational/polynomial of their own, and the
    tanh GELU's float32 tail: within the tolerances OpInfo's parity tests use
    (torch.testing's float32 defaults), on the same inputs.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

OPS = {
    "exp": torch.exp,
    "expm1": torch.expm1,
    "log": torch.log,
    "log1p": torch.log1p,
    "tanh": torch.tanh,
    "sin": torch.sin,
    "cos": torch.cos,
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}
F32_BITWISE = ["expm1", "log1p", "sigmoid", "silu"]
F32_ATEN_VML = {
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "sin": torch.sin,
    "cos": torch.cos,
    "tanh": torch.tanh,
}
F32_TOLERANCE = {
    "erf": torch.erf,
    "gelu": F.gelu,
    "gelu_tanh": OPS["gelu_tanh"],
}


def every_value(dtype: torch.dtype) -> torch.Tensor:
    return torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)


def float32_inputs(n: int = 1 << 16) -> torch.Tensor:
    """Random bit patterns (a third NaN/inf/huge/tiny/subnormal by construction) and the
    edges: +-0, +-inf, NaN, subnormals, the largest and smallest normals, exp's and tanh's
    overflow and saturation points. The length is a multiple of 32 (ATen's vector step)."""
    g = torch.Generator().manual_seed(20)
    bits = torch.randint(-(2**31), 2**31 - 1, (n,), generator=g, dtype=torch.int64)
    rand = bits.to(torch.int32).view(torch.float32)
    fi = torch.finfo(torch.float32)
    edges = [
        0.0,
        -0.0,
        float("inf"),
        float("-inf"),
        float("nan"),
        fi.tiny,
        -fi.tiny,
        fi.smallest_normal / 8,
        -fi.smallest_normal / 1024,
        1.4e-45,
        fi.max,
        -fi.max,
        88.72,
        88.73,
        -87.3,
        -103.9,
        -104.0,
        9.0,
        -9.0,
        1e-8,
        -1e-8,
        0.5,
        1.0,
        -1.0,
    ]
    normal = torch.randn(n - len(edges), generator=g) * 6
    x = torch.cat([torch.tensor(edges), normal, rand])
    return x[: x.numel() // 32 * 32].contiguous()


def assert_bitwise(got: torch.Tensor, want: torch.Tensor, x: torch.Tensor, what: str):
    g, w = got.float(), want.float()
    same = (g.view(torch.int32) == w.view(torch.int32)) | (g.isnan() & w.isnan())
    if not bool(same.all()):
        i = int((~same).nonzero()[0])
        raise AssertionError(
            f"{what}: {int((~same).sum())} of {same.numel()} results differ from the CPU's; "
            f"first at x={x[i].item()!r}: neuron {g[i].item()!r}, cpu {w[i].item()!r}"
        )


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", list(OPS))
def test_reduced_types_match_the_cpu_bit_for_bit_on_every_value(name, dtype):
    op, x = OPS[name], every_value(dtype)
    assert_bitwise(op(x.to("neuron")).cpu(), op(x), x, f"{name} {dtype}")
    odd = x[3:-2].contiguous()  # 65531 values: a tail after every vector width
    assert_bitwise(op(odd.to("neuron")).cpu(), op(odd), odd, f"{name} {dtype}, odd length")


@pytest.mark.parametrize("name", F32_BITWISE)
def test_float32_matches_the_cpu_bit_for_bit_where_aten_uses_sleef(name):
    op = OPS[name]
    x = float32_inputs()
    if name in ("log1p",):
        x = torch.cat([x, -x])  # log1p's domain starts at -1
    assert_bitwise(op(x.to("neuron")).cpu(), op(x), x, f"{name} float32")


@pytest.mark.parametrize("n", [1, 4, 37, 100, 1000])
@pytest.mark.parametrize("name", F32_BITWISE)
def test_float32_short_tensors_split_vectors_and_tail_as_aten(name, n):
    op = OPS[name]
    x = torch.randn(n, generator=torch.Generator().manual_seed(n)) * 6
    assert_bitwise(op(x.to("neuron")).cpu(), op(x), x, f"{name} float32, {n} values")
    if name == "sigmoid":  # pow's tail as well
        e = torch.full((n,), 1.7)
        base = x.abs()
        got = torch.pow(base.to("neuron"), e.to("neuron")).cpu()
        assert_bitwise(got, torch.pow(base, e), base, f"pow float32, {n} values")


def test_the_aten_vml_functions_are_installed_where_torch_has_mkl():
    import vtrn

    assert torch.backends.mkl.is_available(), "torch==2.13.0's x86 wheel links MKL"
    installed = vtrn._C._aten_mkl_functions()
    assert {"vmsExp", "vmsLn", "vmsSqrt", "vmsSin", "vmsCos", "vmsTanh"} <= set(installed)


@pytest.mark.parametrize("name", list(F32_ATEN_VML))
def test_float32_matches_the_cpu_bit_for_bit_where_aten_uses_mkl(name):
    op = F32_ATEN_VML[name]
    x = float32_inputs()
    if name in ("log", "sqrt"):
        x = torch.cat([x, x.abs()])
    assert_bitwise(op(x.to("neuron")).cpu(), op(x), x, f"{name} float32")
    # Lengths around vector widths, a strided view, an in-place update, an odd offset.
    for n in (1, 7, 33, 1000):
        assert_bitwise(op(x[:n].to("neuron")).cpu(), op(x[:n]), x[:n], f"{name}, {n} values")
    m = x[: 64 * 64].reshape(64, 64)
    assert_bitwise(op(m.to("neuron").t()).cpu(), op(m.t()), m.t().reshape(-1), f"{name} strided")
    d = x[5:1005].to("neuron")
    getattr(d, name + "_")()
    assert_bitwise(d.cpu(), op(x[5:1005]), x[5:1005], f"{name}_ in place")


def test_the_same_functions_inside_other_ops_stay_aten_vectorized_ones():
    """torch.sigmoid's exp and torch.rsqrt's sqrt are not torch.exp's and torch.sqrt's on the
    CPU: vtrn must keep them apart (common-subexpression elimination must not merge them)."""
    x = float32_inputs()
    xn = x.to("neuron")
    got_exp, got_sigmoid = torch.exp(xn).cpu(), torch.sigmoid(xn).cpu()
    assert_bitwise(got_exp, torch.exp(x), x, "exp")
    assert_bitwise(got_sigmoid, torch.sigmoid(x), x, "sigmoid")
    pos = x.abs()
    pn = pos.to("neuron")
    assert_bitwise(torch.sqrt(pn).cpu(), torch.sqrt(pos), pos, "sqrt")
    assert_bitwise(torch.rsqrt(pn).cpu(), torch.rsqrt(pos), pos, "rsqrt")
    # One compiled graph holding both: the two exps must stay two.
    both = torch.compile(lambda t: (torch.exp(t), torch.sigmoid(t)), backend="neuron")
    ge, gs = both(xn)
    assert_bitwise(ge.cpu(), torch.exp(x), x, "compiled exp")
    assert_bitwise(gs.cpu(), torch.sigmoid(x), x, "compiled sigmoid")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_pow_matches_the_cpu_bit_for_bit(dtype):
    g = torch.Generator().manual_seed(5)
    n = 1 << 16
    base = torch.cat([torch.rand(n, generator=g) * 20, -torch.rand(n, generator=g) * 20])
    expo = torch.cat([torch.randn(n, generator=g) * 4, torch.randint(-6, 7, (n,), generator=g)])
    edges = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0, 2.0])
    base = torch.cat([base, edges.repeat_interleave(8)]).to(dtype)
    expo = torch.cat([expo, edges.repeat(8)]).to(dtype)
    got = torch.pow(base.to("neuron"), expo.to("neuron")).cpu()
    assert_bitwise(got, torch.pow(base, expo), base, f"pow {dtype}")
    for e in (2.7, -1.3, 0.25):  # a Python exponent the CPU kernel has no shortcut for
        x = base.abs()
        assert_bitwise(torch.pow(x.to("neuron"), e).cpu(), torch.pow(x, e), x, f"pow(x, {e})")
    # The exponents it has one for: 0.5 is torch.sqrt's kernel (MKL's on float32, which on some
    # CPUs is not correctly rounded: HF CLIP's x.pow(0.5) matched half the elements). (Not
    # bfloat16's -0.5: the CPU's scalar loop, which runs at each thread's chunk's tail, rounds
    # the square root to bfloat16 before dividing, its vector loop does not.)
    for e in (0.5, -0.5, -1.0, 2.0, 3.0, -2.0) if dtype == torch.float32 else (0.5, 2.0, 3.0):
        x = base.abs()
        assert_bitwise(torch.pow(x.to("neuron"), e).cpu(), torch.pow(x, e), x, f"pow(x, {e})")


@pytest.mark.parametrize("name", list(F32_TOLERANCE))
def test_float32_within_opinfo_tolerances_elsewhere(name):
    op = F32_TOLERANCE[name]
    x = float32_inputs()
    if name == "gelu":
        # ATen's exact GELU forms x * (1 + erf) before halving it: inf beyond 1.7e38 and NaN at
        # inf, an overflow of its own rather than of the math library; neuron gives x there.
        x = x[~(x.abs() > 1e38)]
    got, want = op(x.to("neuron")).cpu(), op(x)
    torch.testing.assert_close(got, want, equal_nan=True, msg=lambda m: f"{name} float32: {m}")
    if name in ("erf", "gelu", "gelu_tanh"):
        return  # formulas around the library functions: a zero of theirs may be a tiny value
    # the library functions' special values are exact: NaN where the CPU has NaN, infinities
    # and zeros (exp's underflow, log(1), sin(0)) where it has them
    special = want.isnan() | want.isinf() | (want == 0)
    assert_bitwise(
        got[special & ~x.isnan()].abs(),
        want[special & ~x.isnan()].abs(),
        x[special & ~x.isnan()],
        f"{name} float32 special values",
    )
