# Adapted for the `neuron` device from torch_openreg's tests/test_rng.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""Generators and RNG state, and the random ops' contract against the CPU: the dtypes each one
accepts and refuses (and how), their ranges, and complex normal_/uniform_."""

import math
import warnings

import pytest
import torch


class TestRNG:
    def test_generator(self):
        generator = torch.Generator(device="neuron:1")
        assert generator.device.type == "neuron"
        assert generator.device.index == 1

    def test_rng_state(self):
        state = torch.neuron.get_rng_state(0)
        first = torch.randn(8, device="neuron:0").cpu()
        torch.neuron.set_rng_state(state, 0)
        assert torch.equal(torch.randn(8, device="neuron:0").cpu(), first)

        states = torch.neuron.get_rng_state_all()
        assert len(states) == torch.neuron.device_count()
        torch.neuron.set_rng_state_all(states)
        assert torch.equal(torch.neuron.get_rng_state(1), states[1])

    def test_manual_seed(self):
        torch.neuron.manual_seed_all(42)
        assert torch.neuron.initial_seed() == 42
        a = torch.rand(4, device="neuron:1").cpu()
        torch.neuron.manual_seed_all(42)
        assert torch.equal(torch.rand(4, device="neuron:1").cpu(), a)

    def test_seed(self):
        torch.neuron.seed_all()
        seed1 = torch.neuron.initial_seed()
        torch.neuron.seed_all()
        seed2 = torch.neuron.initial_seed()
        assert seed1 != seed2

    def test_create_generator_and_seed(self):
        generator = torch.Generator(device="neuron:0")
        generator.manual_seed(42)
        assert generator.initial_seed() == 42
        a = torch.randn(5, device="neuron", generator=generator).cpu()
        generator.manual_seed(42)
        assert torch.equal(torch.randn(5, device="neuron", generator=generator).cpu(), a)

    def test_offset(self):
        # openreg cannot move a generator's offset; neuron's Philox generator can, as CUDA's.
        generator = torch.Generator(device="neuron:0").manual_seed(7)
        generator.set_offset(8)
        assert generator.get_offset() == 8
        at_8 = torch.rand(4, device="neuron", generator=generator).cpu()
        generator.set_offset(8)
        assert torch.equal(torch.rand(4, device="neuron", generator=generator).cpu(), at_8)


ALL_DTYPES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint16,
    torch.uint32,
    torch.uint64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.complex64,
    torch.complex128,
]

RANDOM_OPS = {
    "random_": lambda t: t.random_(),
    "random_(to)": lambda t: t.random_(5),
    "random_(from, to)": lambda t: t.random_(1, 5),
    "random_(from, None)": lambda t: t.random_(1, None),
    "random_(min int64, None)": lambda t: t.random_(-(2**63), None),
    "uniform_": lambda t: t.uniform_(),
    "normal_": lambda t: t.normal_(),
    "bernoulli_": lambda t: t.bernoulli_(0.5),
}


def _outcome(op, dtype, device):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            RANDOM_OPS[op](torch.empty(16, dtype=dtype, device=device)).cpu()
        return "ok"
    except Exception as e:  # noqa: BLE001 - the type is the outcome
        return type(e).__name__


@pytest.mark.parametrize("op", sorted(RANDOM_OPS))
def test_random_ops_accept_the_dtypes_the_cpu_accepts(op):
    outcomes = {d: (_outcome(op, d, "neuron"), _outcome(op, d, "cpu")) for d in ALL_DTYPES}
    differ = {d: o for d, o in outcomes.items() if o[0] != o[1]}
    assert differ == {}, f"{op}: (neuron, cpu) outcomes differ: {differ}"


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32])
def test_random_from_without_to_covers_unsigned_types(dtype):
    # random_(from, None) draws from [from, max of the dtype]
    x = torch.empty(4096, dtype=dtype, device="neuron").random_(2**15, None).cpu().to(torch.int64)
    top = torch.iinfo(dtype).max
    assert x.min().item() >= 2**15
    assert x.max().item() <= top
    assert x.max().item() > top - (top - 2**15) // 64  # reaches close to the top


@pytest.mark.parametrize(
    "dtype, top",
    [
        (torch.bool, 1),
        (torch.uint8, 255),
        (torch.int16, 2**15 - 1),
        (torch.float16, 2**11),
        (torch.bfloat16, 2**8),
        (torch.float32, 2**24),
    ],
)
def test_random_full_range_is_the_cpus(dtype, top):
    # random_() draws integers in [0, top]: the type's max, or 2^digits for floating types
    x = torch.empty(20000, dtype=dtype, device="neuron").random_().cpu().to(torch.float64)
    assert x.min().item() >= 0 and x.max().item() <= top
    assert torch.equal(x, x.round())
    if top <= 255:
        assert set(x.unique().tolist()) == set(map(float, range(top + 1)))


def test_random_64_bit_range_uses_every_bit():
    x = torch.empty(4096, dtype=torch.int64, device="neuron").random_(-(2**63), None).cpu()
    assert (x < 0).any() and (x > 0).any()
    assert (x.abs() > 2**62).any()
    assert (x % 2 == 1).any()  # low bits are random too (no rounding through float64)
    y = torch.empty(4096, dtype=torch.int64, device="neuron").random_().cpu()
    assert y.min().item() >= 0 and (y % 1024 != 0).any()


def _error(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - compared
        return type(e), str(e)
    return None


@pytest.mark.parametrize(
    "call",
    [
        lambda d: torch.empty(3, dtype=torch.bool, device=d).random_(0, 5),
        lambda d: torch.empty(3, dtype=torch.uint8, device=d).random_(-1, 5),
        lambda d: torch.empty(3, device=d).random_(5, 5),
        lambda d: torch.empty(3, dtype=torch.float16, device=d).random_(70000, None),
        lambda d: torch.empty(3, dtype=torch.uint64, device=d).random_(0, None),
        lambda d: torch.empty(3, dtype=torch.float16, device=d).uniform_(0, 1e6),
        lambda d: torch.empty(3, dtype=torch.complex64, device=d).uniform_(2, 1),
        lambda d: torch.empty(3, dtype=torch.complex64, device=d).normal_(0, -1),
        lambda d: torch.empty(3, dtype=torch.int32, device=d).normal_(),
        lambda d: torch.empty(3, device=d).bernoulli_(1.5),
    ],
)
def test_random_argument_errors_are_the_cpus(call):
    cpu = _error(lambda: call("cpu"))
    assert cpu is not None
    neuron = _error(lambda: call("neuron"))
    assert neuron is not None
    assert neuron[0] is cpu[0]
    # the same message, but for the kernel's name ("..._cpu" / "..._neuron")
    assert neuron[1].replace("_neuron", "_cpu") == cpu[1]


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_normal_splits_the_std(dtype):
    # ATen draws the real and imaginary parts independently from N(mean, std/sqrt(2)), so
    # that E|z - mean|^2 = std^2.
    n = 200_000
    mean, std = 0.5, 2.0
    z = torch.empty(n, dtype=dtype, device="neuron").normal_(mean, std).cpu()
    parts = torch.view_as_real(z).to(torch.float64)
    part_std = std / math.sqrt(2)
    tol = 5 * part_std / math.sqrt(n)  # 5 standard errors
    assert abs(parts[:, 0].mean().item() - mean) < tol
    assert abs(parts[:, 1].mean().item() - mean) < tol
    assert parts[:, 0].std().item() == pytest.approx(part_std, rel=0.01)
    assert parts[:, 1].std().item() == pytest.approx(part_std, rel=0.01)
    assert ((parts - mean) ** 2).sum(1).mean().item() == pytest.approx(std**2, rel=0.01)
    assert abs(torch.corrcoef(parts.T)[0, 1].item()) < 0.01  # independent parts
    # the CPU draws the same distribution
    ref = torch.view_as_real(torch.empty(n, dtype=dtype).normal_(mean, std)).to(torch.float64)
    assert ref[:, 0].std().item() == pytest.approx(part_std, rel=0.01)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_uniform_draws_both_parts(dtype):
    n = 100_000
    z = torch.empty(n, dtype=dtype, device="neuron").uniform_(-1.0, 3.0).cpu()
    parts = torch.view_as_real(z).to(torch.float64)
    assert parts.min().item() >= -1.0 and parts.max().item() < 3.0
    for k in (0, 1):
        assert parts[:, k].mean().item() == pytest.approx(1.0, abs=0.03)
        assert parts[:, k].var().item() == pytest.approx(16 / 12, rel=0.02)
    assert abs(torch.corrcoef(parts.T)[0, 1].item()) < 0.02
    assert not torch.equal(parts[:, 0], parts[:, 1])


def test_complex_draws_follow_the_generator():
    g = torch.Generator(device="neuron").manual_seed(3)
    a = torch.empty(64, dtype=torch.complex64, device="neuron").normal_(generator=g).cpu()
    g.manual_seed(3)
    b = torch.empty(64, dtype=torch.complex64, device="neuron").normal_(generator=g).cpu()
    assert torch.equal(a, b)
    # a complex element consumes two draws: 64 complex values use the counters of 128 reals
    g.manual_seed(3)
    torch.empty(64, dtype=torch.complex64, device="neuron").uniform_(generator=g)
    after_complex = torch.rand(4, device="neuron", generator=g).cpu()
    g.manual_seed(3)
    torch.empty(128, device="neuron").uniform_(generator=g)
    assert torch.equal(torch.rand(4, device="neuron", generator=g).cpu(), after_complex)
