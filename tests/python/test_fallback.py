"""Ops without a native kernel (here atan, atan2 and asinh, which vtrn does not lower) run on the
CPU, warn once per op and are recorded."""

import warnings

import pytest
import torch
from cpu_reference import check

import vtrn


def fallback_warnings(caught):
    return [str(w.message) for w in caught if "fell back to CPU" in str(w.message)]


def test_fallback_warns_once_per_op_and_is_recorded(clean_tracking):
    a = torch.arange(6, dtype=torch.float32).to("neuron")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            b = torch.atan(a)
        c = torch.atan2(a, a + 2)
        c = torch.atan2(a, a + 3)
    messages = fallback_warnings(caught)
    atan = [m for m in messages if "'aten::atan.out'" in m]
    atan2 = [m for m in messages if "'aten::atan2.out'" in m]
    assert len(atan) == 1 and len(atan2) == 1, messages
    assert atan[0].startswith("[Neuron] [WARNING] Operator 'aten::atan.out' fell back to CPU")
    assert "aten::atan.out" in vtrn.get_fallback_ops()
    assert "aten::atan2.out" in vtrn.get_fallback_ops()
    assert "aten::atan.out" in vtrn.get_executed_ops()
    # A lowered op in between is native, not a fallback.
    assert "aten::add.Tensor" not in vtrn.get_fallback_ops()
    # The results are the CPU's.
    x = torch.arange(6, dtype=torch.float32)
    assert torch.equal(b.cpu(), torch.atan(x))
    assert torch.equal(c.cpu(), torch.atan2(x, x + 3))
    assert b.is_neuron and c.is_neuron


def test_clear_op_tracking_forgets_and_rearms_the_warning(clean_tracking):
    a = torch.ones(3, device="neuron")
    torch.asinh(a)
    assert "aten::asinh.out" in vtrn.get_fallback_ops()
    vtrn.clear_op_tracking()
    assert vtrn.get_fallback_ops() == [] and vtrn.get_executed_ops() == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.asinh(a)
    assert len([m for m in fallback_warnings(caught) if "aten::asinh.out" in m]) == 1


def test_fallback_keeps_autograd_working(clean_tracking):
    w = torch.tensor([1.0, -2.0, 3.0], device="neuron", requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    assert w.grad.is_neuron
    assert torch.equal(w.grad.cpu(), torch.tensor([2.0, -4.0, 6.0]))


def test_in_place_fallback_updates_the_device_tensor(clean_tracking):
    a = torch.ones(4, device="neuron")
    a.add_(torch.full((4,), 2.0, device="neuron"))
    assert a.cpu().tolist() == [3.0, 3.0, 3.0, 3.0]


def test_fallback_error_surfaces_as_the_cpu_error(clean_tracking):
    a = torch.ones(2, 3, device="neuron")
    b = torch.ones(4, 5, device="neuron")
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.mm(a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16])
def test_mode_runs_through_the_fallback_as_on_the_cpu(dtype):
    # mode's CompositeExplicitAutograd kernel refuses any device but the CPU, CUDA and XPU;
    # on neuron it must reach the CPU fallback instead and give the CPU's values and indices.
    x = torch.tensor([[1, 2, 2, 3, 3], [4, 4, 1, 1, 0]], dtype=dtype)
    expected = torch.mode(x, 1)
    got = torch.mode(x.to("neuron"), 1)
    assert got.values.is_neuron and got.indices.is_neuron
    assert torch.equal(got.values.cpu(), expected.values)
    assert torch.equal(got.indices.cpu(), expected.indices)
    # out= with a wrong values dtype raises the CPU's error.
    with pytest.raises(RuntimeError) as cpu:
        torch.mode(x.long(), 1, out=(torch.empty(0), torch.empty(0, dtype=torch.long)))
    with pytest.raises(RuntimeError) as dev:
        n = torch.empty(0, device="neuron")
        torch.mode(
            x.long().to("neuron"), 1, out=(n, torch.empty(0, dtype=torch.long, device=n.device))
        )
    assert str(dev.value) == str(cpu.value)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_float64_fallback_over_empty_views_past_the_storage_end(dtype):
    # v[1:] of an empty (4, 0, 0) tensor starts one element past its 0-byte storage; the
    # float32 stand-in copy must read nothing there (it once read one element and crashed).
    def fn(d):
        v = torch.zeros((4, 0, 5), dtype=dtype, device=d)
        v = torch.gather(v, 2, torch.zeros((4, 0, 0), dtype=torch.int64, device=d))
        v[1:].add_(v[:-1])
        return v

    check(fn)
