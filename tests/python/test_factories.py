"""Factories on `neuron` give the CPU's tensors for every dtype the device stores, and a bad
argument raises at the call, as on the CPU, not at a later synchronize.

float64 is stored as float64 and computed as float32 (the device policy): a float64 factory
that computes (arange, linspace, logspace) gives the CPU's float32 values, stored as float64,
which are the CPU's float64 values wherever float32 holds them exactly; one that stores a
given value (full, eye, zeros) gives the CPU's float64 values.
"""

from __future__ import annotations

import pytest
import torch

DEVICE = "neuron"

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
    torch.complex64,
]


def _out(shape, strides=None):
    def make(device, dtype):
        if strides is None:
            return torch.empty(shape, dtype=dtype, device=device)
        return torch.empty_strided(shape, strides, dtype=dtype, device=device)

    return make


# name -> fn(device, dtype) -> tensor. Each runs on the CPU (the reference) and on neuron.
FACTORIES = {
    "arange_end": lambda d, t: torch.arange(10, dtype=t, device=d),
    "arange_start_end": lambda d, t: torch.arange(0, 10, dtype=t, device=d),
    "arange_step": lambda d, t: torch.arange(1, 10, 3, dtype=t, device=d),
    "arange_negative_step": lambda d, t: torch.arange(10, 0, -2, dtype=t, device=d),
    "arange_long": lambda d, t: torch.arange(-3, 1000, 7, dtype=t, device=d),
    "arange_half_offset": lambda d, t: torch.arange(0.5, 5.5, dtype=t, device=d),
    "arange_fraction_step": lambda d, t: torch.arange(0, 1, 0.125, dtype=t, device=d),
    "arange_inexact_step": lambda d, t: torch.arange(0, 1, 0.1, dtype=t, device=d),
    "arange_empty": lambda d, t: torch.arange(3, 3, dtype=t, device=d),
    "arange_out_resized": lambda d, t: torch.arange(2, 9, out=_out(3)(d, t)),
    "arange_out_end": lambda d, t: torch.arange(9, out=_out(0)(d, t)),
    "arange_out_same_size": lambda d, t: torch.arange(4, out=_out(4)(d, t)),
    "linspace": lambda d, t: torch.linspace(-2, 7, 13, dtype=t, device=d),
    "linspace_one": lambda d, t: torch.linspace(3, 7, 1, dtype=t, device=d),
    "linspace_out": lambda d, t: torch.linspace(0, 1, 5, out=_out(2)(d, t)),
    "logspace": lambda d, t: torch.logspace(0, 3, 4, dtype=t, device=d),
    "logspace_base2": lambda d, t: torch.logspace(-2, 5, 8, base=2, dtype=t, device=d),
    "full": lambda d, t: torch.full((2, 3), 3, dtype=t, device=d),
    "full_fraction": lambda d, t: torch.full(
        (2, 3), 0.1 if t.is_floating_point else 1, dtype=t, device=d
    ),
    # One element: the CPU stores a float16 1e6 as inf, where a larger tensor raises.
    "full_single_large": lambda d, t: torch.full(
        (1,), 1e6 if t.is_floating_point else 1, dtype=t, device=d
    ),
    "zeros": lambda d, t: torch.zeros(2, 3, dtype=t, device=d),
    "ones": lambda d, t: torch.ones(2, 3, dtype=t, device=d),
    "eye": lambda d, t: torch.eye(3, dtype=t, device=d),
    "eye_rectangular": lambda d, t: torch.eye(3, 4, dtype=t, device=d),
    "eye_out": lambda d, t: torch.eye(4, out=_out(1)(d, t)),
    "empty_strided_filled": lambda d, t: torch.empty_strided(
        (2, 3), (1, 2), dtype=t, device=d
    ).fill_(1),
    "zeros_like_strided": lambda d, t: torch.zeros_like(_out((2, 3), (1, 2))(d, t)),
    "ones_like_sliced": lambda d, t: torch.ones_like(_out((4, 6))(d, t)[::2, 1::2]),
    "full_like_transposed": lambda d, t: torch.full_like(_out((4, 6))(d, t).t(), 2),
    "zeros_like_channels_last": lambda d, t: torch.zeros_like(
        torch.empty(2, 3, 4, 5, dtype=t, device=d, memory_format=torch.channels_last)
    ),
    "tensor": lambda d, t: torch.tensor([1, 2, 3], dtype=t, device=d),
    "scalar_tensor": lambda d, t: torch.scalar_tensor(3, dtype=t, device=d),
}


# The factories that compute their values; the others store a given value.
COMPUTED = ("arange", "linspace", "logspace")


def _run(fn, device, dtype):
    try:
        return fn(device, dtype), None
    except Exception as e:  # noqa: BLE001 - compared with the device's outcome below
        return None, e


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factory_matches_cpu(name, dtype):
    fn = FACTORIES[name]
    cpu, cpu_error = _run(fn, "cpu", dtype)
    if cpu_error is not None:
        with pytest.raises(type(cpu_error)) as info:
            fn(DEVICE, dtype)
        assert str(info.value).splitlines()[0] == str(cpu_error).splitlines()[0]
        return
    dev = fn(DEVICE, dtype)
    torch.neuron.synchronize()  # nothing the factory queued may fail
    assert dev.device.type == DEVICE
    assert (dev.dtype, dev.shape, dev.stride()) == (cpu.dtype, cpu.shape, cpu.stride())
    if dtype == torch.float64 and name.startswith(COMPUTED):
        # Computed as float32, stored as float64: the CPU's float32 values, exactly, which are
        # the CPU's float64 values where float32 holds those.
        expected = fn("cpu", torch.float32).double()
        torch.testing.assert_close(dev.cpu(), expected, rtol=0, atol=0)
        if torch.equal(cpu.float().double(), cpu):
            torch.testing.assert_close(dev.cpu(), cpu, rtol=0, atol=0)
    else:
        torch.testing.assert_close(dev.cpu(), cpu, rtol=0, atol=0, equal_nan=True)


def test_float64_integer_arange_is_exact_and_not_empty():
    dev = torch.arange(0, 10, dtype=torch.float64, device=DEVICE)
    assert dev.shape == (10,) and dev.dtype == torch.float64
    assert torch.equal(dev.cpu(), torch.arange(0, 10, dtype=torch.float64))
    torch.neuron.synchronize()


# Bad factory arguments: each raises the CPU's error at the call.
BAD_CALLS = {
    "arange_zero_step": lambda d: torch.arange(0, 9, 0, device=d),
    "arange_wrong_sign": lambda d: torch.arange(9, 0, 1, device=d),
    "arange_float64_wrong_sign": lambda d: torch.arange(9, 0, 1, dtype=torch.float64, device=d),
    "linspace_negative_steps": lambda d: torch.linspace(0, 1, -1, device=d),
    "eye_negative": lambda d: torch.eye(-1, device=d),
    "full_uint8_overflow": lambda d: torch.full((2,), 300, dtype=torch.uint8, device=d),
    "full_empty_overflow": lambda d: torch.full((0,), 300, dtype=torch.uint8, device=d),
    "full_nan_int64": lambda d: torch.full((2,), float("nan"), dtype=torch.int64, device=d),
    "full_float32_overflow": lambda d: torch.full((2,), 1e300, device=d),
    "full_complex_into_float": lambda d: torch.full((2,), 2 + 1j, dtype=torch.float32, device=d),
    "fill_int8_overflow": lambda d: torch.zeros(2, dtype=torch.int8, device=d).fill_(1000),
    "fill_half_overflow": lambda d: torch.zeros(2, dtype=torch.float16, device=d).fill_(1e6),
    "copy_shape_mismatch": lambda d: torch.empty(3, device=d).copy_(torch.ones(2, device=d)),
    "copy_not_broadcastable": lambda d: torch.empty(3, device=d).copy_(torch.ones(2, 3, device=d)),
    "copy_from_cpu_mismatch": lambda d: torch.empty(0, device=d).copy_(torch.ones(10)),
    "copy_to_cpu_mismatch": lambda d: torch.empty(4).copy_(torch.ones(10, device=d)),
    "copy_into_expanded": lambda d: torch.zeros(1, device=d).expand(3).copy_(torch.ones(3)),
    "copy_partial_overlap": lambda d: (lambda x: x[1:].copy_(x[:-1]))(torch.arange(4.0, device=d)),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_argument_raises_at_the_call_as_on_cpu(name):
    fn = BAD_CALLS[name]
    with pytest.raises(RuntimeError) as cpu_info:
        fn("cpu")
    torch.neuron.synchronize()
    with pytest.raises(RuntimeError) as dev_info:
        fn(DEVICE)
    assert str(dev_info.value).splitlines()[0] == str(cpu_info.value).splitlines()[0]
    torch.neuron.synchronize()  # the error was not also left for a later synchronize


def test_copy_broadcasts_as_on_cpu():
    dev = torch.empty(2, 3, device=DEVICE).copy_(torch.arange(3.0, device=DEVICE))
    assert torch.equal(dev.cpu(), torch.empty(2, 3).copy_(torch.arange(3.0)))


def _factory_outcome(fn, device):
    """fn(out) on |device|: the result's shape and values (or the exception's type), and the
    warnings it gave, as on the CPU."""
    import warnings

    out = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(device)
            out = (tuple(result.shape), result.cpu())
        except RuntimeError as e:
            out = (type(e), str(e))
    # Where C++ raised the warning differs: "(Triggered internally at <file>:<line>.)".
    texts = [
        str(w.message).split(" (Triggered internally")[0]
        for w in caught
        if "fell back to CPU" not in str(w.message)
    ]
    return out, [t for t in texts if "computes float64" not in t]


OUT_SHAPES = [(1, 49), (0,), (3,), (3, 3)]
OUT_FACTORIES = {
    "arange with a rounding error": lambda o: torch.arange(-1, 1, 2 / 49, out=o),
    "arange": lambda o: torch.arange(0, 10, out=o),
    "linspace": lambda o: torch.linspace(0, 1, 49, out=o),
    "eye": lambda o: torch.eye(3, out=o),
}


@pytest.mark.parametrize("shape", OUT_SHAPES, ids=str)
@pytest.mark.parametrize("name", list(OUT_FACTORIES))
def test_factory_out_is_resized_as_on_the_cpu(name, shape):
    # arange warns that the element count differs and resizes; linspace keeps any shape with
    # the right count; eye always resizes. None gives resize_output's deprecation warning.
    fn = OUT_FACTORIES[name]
    (cpu_shape, cpu_values), cpu_warnings = _factory_outcome(
        lambda d: fn(torch.zeros(shape, device=d)), "cpu"
    )
    (shape_n, values_n), warnings_n = _factory_outcome(
        lambda d: fn(torch.zeros(shape, device=d)), DEVICE
    )
    assert shape_n == cpu_shape
    assert warnings_n == cpu_warnings
    torch.testing.assert_close(values_n, cpu_values)


@pytest.mark.parametrize(
    "dtype, n", [(torch.uint8, 2**8 + 1), (torch.half, 2**11 + 2), (torch.float, 2**24 + 2)]
)
def test_randperm_refuses_n_beyond_the_dtypes_exact_integers(dtype, n):
    with pytest.raises(RuntimeError) as cpu:
        torch.randperm(n, out=torch.empty(0, dtype=dtype))
    with pytest.raises(RuntimeError) as dev:
        torch.randperm(n, out=torch.empty(0, dtype=dtype, device=DEVICE))
    assert str(dev.value) == str(cpu.value)
    # One less is the largest n the dtype holds: accepted, as on the CPU.
    res = torch.empty(0, dtype=dtype, device=DEVICE)
    torch.randperm(n - 1, out=res)
    assert torch.equal(res.cpu().sort().values.long(), torch.arange(n - 1))
