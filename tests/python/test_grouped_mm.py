"""torch._grouped_mm on neuron against the CPU's composite: the four layouts (2-d x 3-d and 3-d x
2-d with offsets over rows or columns, 2-d x 2-d with offsets over K, 3-d x 3-d), empty groups
and offsets that end before the last row, forward and backward, with no CPU fallback. Rows past
offs[-1] are uninitialized on the CPU (so are the matching rows of the input gradient, which
is another grouped mm), so only rows below it are compared. The CPU wants every row's stride a
multiple of 16 bytes, so the sizes are multiples of 8."""

import pytest
import torch

import vtrn

DTYPES = pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["float32", "bfloat16", "float16"]
)


def _grads(device, a, b, offs, grad, valid):
    aa = a.to(device).requires_grad_()
    bb = b.to(device).requires_grad_()
    o = offs.to(device) if offs is not None else None
    out = torch._grouped_mm(aa, bb, o)
    # Only the initialized part of the output takes part in the loss.
    ga, gb = torch.autograd.grad(out, (aa, bb), (grad * valid).to(device))
    return out.detach().cpu(), ga.cpu(), gb.cpu()


def check(a_shape, b_shape, offs, dtype, valid_dim=None, exact=False):
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(a_shape, generator=gen).to(dtype)
    b = torch.randn(b_shape, generator=gen).to(dtype)
    offs = torch.tensor(offs, dtype=torch.int32) if offs is not None else None
    out_cpu = torch._grouped_mm(a, b, offs)
    grad = torch.randn(out_cpu.shape, generator=gen).to(dtype)
    valid = torch.ones(out_cpu.shape, dtype=dtype)
    if valid_dim is not None:
        end = int(offs[-1])
        valid.narrow(valid_dim, end, out_cpu.shape[valid_dim] - end).zero_()
    vtrn.clear_op_tracking()
    got = _grads("neuron", a, b, offs, grad, valid)
    assert vtrn.get_fallback_ops() == []
    assert "aten::_grouped_mm" in vtrn.get_executed_ops()
    want = _grads("cpu", a, b, offs, grad, valid)
    end = int(offs[-1]) if offs is not None else None
    for g, w, name in zip(got, want, ["out", "grad_a", "grad_b"]):
        assert g.shape == w.shape and g.dtype == w.dtype, name
        if name == "out" and valid_dim is not None:
            g, w = g.narrow(valid_dim, 0, end), w.narrow(valid_dim, 0, end)
        if name == "grad_a" and valid_dim == 0:
            g, w = g[:end], w[:end]
        if name == "grad_b" and valid_dim == 1:
            g, w = g[:, :end], w[:, :end]
        if exact:
            assert torch.equal(g, w), name
        else:
            torch.testing.assert_close(g, w, msg=lambda m, name=name: f"{name}: {m}")


@DTYPES
@pytest.mark.parametrize("offs", [[3, 3, 7, 10], [2, 5, 6, 8]], ids=["empty_group", "short"])
def test_2d_3d(offs, dtype, clean_tracking):
    check((10, 16), (4, 16, 8), offs, dtype, valid_dim=0)


@DTYPES
def test_3d_2d(dtype, clean_tracking):
    check((3, 8, 16), (16, 16), [5, 5, 12], dtype, valid_dim=1)


@DTYPES
def test_2d_2d(dtype, clean_tracking):
    check((8, 16), (16, 8), [5, 5, 12, 16], dtype)


@pytest.mark.parametrize("k", [256, 1024])
def test_float32_with_offsets_is_the_cpus_bits(k, threads, clean_tracking):
    """One product per group, as the CPU's loop: one product over every group (then selected)
    matched 15% of a Mixtral backward's elements once the contraction reached 252."""
    check((128, k), (4, k, 64), [30, 64, 100, 120], torch.float32, valid_dim=0, exact=True)
    check((4, 32, k), (k, 128), [30, 64, 64, 120], torch.float32, valid_dim=1, exact=True)
    check((64, 128), (128, k), [30, 64, 100, 128], torch.float32, exact=True)


def test_a_negative_offset_counts_from_the_end_as_the_cpus_slices_do(clean_tracking):
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(8, 16, generator=g), torch.randn(2, 16, 8, generator=g)
    offs = torch.tensor([-2, 8], dtype=torch.int32)  # rows [0, 6) and [6, 8)
    got = torch._grouped_mm(a.to("neuron"), b.to("neuron"), offs.to("neuron")).cpu()
    assert torch.equal(got, torch._grouped_mm(a, b, offs))


@DTYPES
def test_3d_3d(dtype, clean_tracking):
    check((3, 8, 16), (3, 16, 8), None, dtype)


def test_bad_offsets_raise_the_cpus_error():
    a, b = torch.randn(6, 8), torch.randn(2, 8, 4)
    offs = torch.tensor([3, 6], dtype=torch.int64)
    with pytest.raises(RuntimeError) as cpu:
        torch._grouped_mm(a, b, offs)
    with pytest.raises(RuntimeError) as dev:
        torch._grouped_mm(a.to("neuron"), b.to("neuron"), offs.to("neuron"))
    assert str(dev.value) == str(cpu.value)


@pytest.mark.parametrize(
    "a_shape,a_view,b_shape,b_view",
    [
        ((6, 5), lambda t: t, (2, 5, 4), lambda t: t),  # A's row stride is 20 bytes
        ((6, 12), lambda t: t[:, :8], (2, 8, 4), lambda t: t),  # 48 bytes: allowed
        ((1, 8), lambda t: t.expand(6, 8), (2, 8, 4), lambda t: t),  # stride 0
        ((6, 16), lambda t: t[:, ::2], (2, 8, 4), lambda t: t),  # neither row- nor column-major
        ((6, 8), lambda t: t, (2, 4, 5), lambda t: t.transpose(1, 2)[:, :4]),  # B's 20 bytes
        ((6, 8), lambda t: t, (2, 4, 8), lambda t: t.transpose(1, 2)),  # column-major: allowed
    ],
)
def test_strides_the_cpu_refuses_raise_its_error(a_shape, a_view, b_shape, b_view):
    gen = torch.Generator().manual_seed(5)
    a, b = torch.randn(a_shape, generator=gen), torch.randn(b_shape, generator=gen)
    offs = torch.tensor([3, 6], dtype=torch.int32)
    args_dev = (a_view(a.to("neuron")), b_view(b.to("neuron")), offs.to("neuron"))
    try:
        want = torch._grouped_mm(a_view(a), b_view(b), offs)
    except RuntimeError as cpu:
        with pytest.raises(RuntimeError) as dev:
            torch._grouped_mm(*args_dev)
        assert str(dev.value) == str(cpu)
    else:
        torch.testing.assert_close(torch._grouped_mm(*args_dev).cpu(), want)


@pytest.mark.parametrize(
    "a_shape,b_shape,offs,message",
    [
        ((100, 8), (2, 8, 8), [64, 100], "t must be divisible by 64"),
        ((128, 8), (2, 8, 8), [64, 96], "offs must be divisible by 64"),
        ((128, 8), (2, 8, 8), [128, 64], "offs must be sorted"),
        ((128, 8), (2, 8, 8), [64, 192], "offs must be between 0 and 128"),
        ((8, 96), (96, 8), [32, 96], "t must be divisible by 64"),
    ],
)
def test_gmm_align_applies_torchneurons_rule(monkeypatch, a_shape, b_shape, offs, message):
    monkeypatch.setenv("TORCH_NEURONX_ATEN_GMM_ALIGN", "64")
    a, b = torch.randn(a_shape).to("neuron"), torch.randn(b_shape).to("neuron")
    with pytest.raises(ValueError, match=f"^{message}$"):
        torch._grouped_mm(a, b, torch.tensor(offs, dtype=torch.int32).to("neuron"))


def test_gmm_align_passes_aligned_groups_and_is_off_when_unset(monkeypatch):
    a, b = torch.randn(128, 8), torch.randn(2, 8, 8)
    offs = torch.tensor([64, 128], dtype=torch.int32)
    want = torch._grouped_mm(a, b, offs)
    monkeypatch.setenv("TORCH_NEURONX_ATEN_GMM_ALIGN", "64")
    got = torch._grouped_mm(a.to("neuron"), b.to("neuron"), offs.to("neuron"))
    torch.testing.assert_close(got.cpu(), want)
    monkeypatch.setenv("TORCH_NEURONX_ATEN_GMM_ALIGN", "128")
    with pytest.raises(ValueError, match="^offs must be divisible by 128$"):
        torch._grouped_mm(a.to("neuron"), b.to("neuron"), offs.to("neuron"))
    monkeypatch.delenv("TORCH_NEURONX_ATEN_GMM_ALIGN")
    odd = torch.tensor([3, 128], dtype=torch.int32)
    got = torch._grouped_mm(a.to("neuron"), b.to("neuron"), odd.to("neuron"))
    torch.testing.assert_close(got.cpu(), torch._grouped_mm(a, b, odd))
    monkeypatch.setenv("TORCH_NEURONX_ATEN_GMM_ALIGN", "zero")
    with pytest.raises(ValueError, match="TORCH_NEURONX_ATEN_GMM_ALIGN must be a positive"):
        torch._grouped_mm(a.to("neuron"), b.to("neuron"), offs.to("neuron"))
