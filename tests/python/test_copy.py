"""cpu -> neuron -> cpu copies are bit-exact for every native dtype, views included."""

import pytest
import torch

DTYPES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.complex64,
]

# An integer dtype of the same width, to compare bit patterns (NaN payloads, -0.0).
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits(t: torch.Tensor) -> bytes:
    t = t.contiguous()
    if t.dtype == torch.complex64:
        t = torch.view_as_real(t)
    return t.view(_BITS[t.element_size()]).numpy().tobytes()


def sample(dtype: torch.dtype, shape=(6, 10)) -> torch.Tensor:
    g = torch.Generator().manual_seed(1234)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point and not dtype.is_complex:
        info = torch.iinfo(dtype)
        return torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(dtype)
    if dtype.is_complex:
        return torch.complex(torch.randn(shape, generator=g), torch.randn(shape, generator=g))
    t = (torch.randn(shape, generator=g) * 100).to(dtype)
    flat = t.view(-1)
    flat[:5] = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 0.0], dtype=dtype)
    flat[5] = torch.finfo(dtype).tiny  # smallest normal
    return t


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip_contiguous(dtype):
    x = sample(dtype)
    on_device = x.to("neuron")
    assert on_device.dtype == dtype and on_device.is_neuron
    back = on_device.cpu()
    assert bits(back) == bits(x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "make_view",
    [
        lambda t: t.t(),
        lambda t: t[1:5, 2:9:3],
        lambda t: t[:, ::2],
        lambda t: t.unsqueeze(0).expand(3, -1, -1),
        lambda t: t.as_strided((3, 4), (7, 2), 3),
    ],
    ids=["transpose", "slice-step", "stride2", "expand", "as_strided"],
)
def test_round_trip_views(dtype, make_view):
    x = sample(dtype)
    expected = make_view(x)
    # A view of a device tensor copied back...
    assert bits(make_view(x.to("neuron")).cpu()) == bits(expected)
    # ...and a non-contiguous cpu view copied to the device.
    assert bits(expected.to("neuron").cpu()) == bits(expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_copy_into_strided_device_destination(dtype):
    x = sample(dtype)
    dst = torch.zeros(10, 6, dtype=dtype, device="neuron").t()  # non-contiguous destination
    dst.copy_(x)
    assert not dst.is_contiguous()
    assert bits(dst.cpu()) == bits(x)


def test_device_to_device_copy_between_cores_and_dtypes():
    x = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    a = x.to("neuron:0")
    b = a.to("neuron:3")
    assert b.device == torch.device("neuron:3")
    assert torch.equal(b.cpu(), x)
    f = a.to(torch.float32)
    assert f.dtype == torch.float32 and f.is_neuron
    assert torch.equal(f.cpu(), x.to(torch.float32))


def test_empty_tensors_copy():
    x = torch.empty(0, 3)
    assert x.to("neuron").cpu().shape == (0, 3)


def test_conjugate_and_negative_views_copy_their_logical_values():
    # A view with the conjugate or negative bit copies what it shows, on every path (this
    # recursed without end once: the Conjugate fallback copied through _copy_from again).
    z = torch.complex(torch.arange(3.0), torch.arange(3.0) + 10)
    d = z.to("neuron")
    assert torch.equal(d.conj().cpu(), z.conj())
    out = torch.empty(3, dtype=torch.complex64)
    out.copy_(d.conj())
    assert torch.equal(out, z.conj())
    assert torch.equal(d.conj().clone().cpu(), z.conj())  # neuron -> neuron
    assert torch.equal(z.conj().to("neuron").cpu(), z.conj())  # cpu -> neuron
    x = torch.arange(4.0)
    assert torch.equal(torch._neg_view(x.to("neuron")).cpu(), -x)
