"""The minimum native kernel set, each checked against the CPU as oracle."""

import pytest
import torch

NATIVE = {
    "aten::empty.memory_format",
    "aten::empty_strided",
    "aten::as_strided",
    "aten::view",
    "aten::_reshape_alias",
    "aten::view_as_real",
    "aten::view_as_complex",
    "aten::unfold",
    "aten::_has_compatible_shallow_copy_type",
    "aten::resize_",
    "aten::_copy_from",
    "aten::_copy_from_and_resize",
    "aten::set_",
    "aten::set_.source_Tensor",
    "aten::set_.source_Storage",
    "aten::set_.source_Storage_storage_offset",
    "aten::fill_.Scalar",
    "aten::fill_.Tensor",
    "aten::zero_",
    "aten::_local_scalar_dense",
}


def test_empty_strided_keeps_strides():
    t = torch.empty_strided((2, 3), (1, 2), device="neuron")
    assert t.stride() == (1, 2) and t.is_neuron


def test_channels_last_memory_format():
    t = torch.empty(2, 3, 4, 5, device="neuron", memory_format=torch.channels_last)
    assert t.stride() == torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).stride()


def test_views_alias_device_storage():
    base = torch.zeros(4, 6, device="neuron")
    v = base.view(24)
    s = base.as_strided((2, 2), (6, 1), 7)
    t = base.t()
    v[3:5].fill_(1.0)  # elements (0,3), (0,4)
    s.fill_(2.0)  # elements (1,1), (1,2), (2,1), (2,2)
    t[5, 3] = 7.0  # element (3,5)
    expected = torch.zeros(4, 6)
    expected.view(24)[3:5] = 1.0
    expected.as_strided((2, 2), (6, 1), 7).fill_(2.0)
    expected[3, 5] = 7.0
    assert torch.equal(base.cpu(), expected)


def test_reshape_of_non_contiguous_copies_and_view_aliases():
    base = torch.arange(12.0).reshape(3, 4).to("neuron")
    r = base.reshape(4, 3)  # contiguous: an alias
    r.zero_()
    assert torch.equal(base.cpu(), torch.zeros(3, 4))


def test_resize_grows_and_keeps_data():
    t = torch.arange(4, dtype=torch.float32, device="neuron")
    t.resize_(2, 4)
    assert t.shape == (2, 4)
    assert t.cpu().view(-1)[:4].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_set_variants():
    src = torch.arange(6, dtype=torch.float32).to("neuron")
    a = torch.empty(0, device="neuron").set_(src)
    assert torch.equal(a.cpu(), src.cpu())
    b = torch.empty(0, device="neuron").set_(src.untyped_storage())
    assert b.numel() == 6
    c = torch.empty(0, device="neuron").set_(src.untyped_storage(), 2, (2, 2), (1, 2))
    assert c.cpu().tolist() == [[2.0, 4.0], [3.0, 5.0]]


@pytest.mark.parametrize(
    "dtype",
    [
        torch.bool,
        torch.int8,
        torch.int64,
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.complex64,
    ],
    ids=str,
)
def test_fill_zero_and_item_match_cpu(dtype):
    value = True if dtype == torch.bool else 3
    cpu = torch.empty(3, 5, dtype=dtype).fill_(value)
    dev = torch.empty(3, 5, dtype=dtype, device="neuron").fill_(value)
    assert torch.equal(dev.cpu(), cpu)
    dev_t = torch.empty(2, dtype=dtype, device="neuron").fill_(
        torch.tensor(value, dtype=dtype, device="neuron")
    )
    assert torch.equal(dev_t.cpu(), torch.full((2,), value, dtype=dtype))
    assert dev[1, 2].item() == cpu[1, 2].item()
    dev.zero_()
    assert torch.equal(dev.cpu(), torch.zeros(3, 5, dtype=dtype))


def test_fill_with_non_scalar_tensor_is_rejected():
    t = torch.empty(3, device="neuron")
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        t.fill_(torch.ones(2, device="neuron"))


def test_factory_rejects_pinned_device_memory():
    with pytest.raises(RuntimeError, match="pin_memory=True applies to cpu tensors only"):
        torch.empty(3, device="neuron", pin_memory=True)


def test_minimum_set_runs_natively(clean_tracking):
    import vtrn

    t = torch.empty(4, 4, device="neuron")
    t.fill_(1.5)
    t.zero_()
    t.view(16)
    t.as_strided((2, 2), (4, 1))
    t.t().reshape(16)
    t.cpu()
    t[0, 0].item()
    torch.empty_strided((2, 2), (1, 2), device="neuron")
    assert vtrn.get_fallback_ops() == []
    executed = set(vtrn.get_executed_ops())
    for op in [
        "aten::empty.memory_format",
        "aten::fill_.Scalar",
        "aten::zero_",
        "aten::view",
        "aten::as_strided",
        "aten::_copy_from",
        "aten::_local_scalar_dense",
        "aten::empty_strided",
    ]:
        assert op in executed, (op, executed)
    assert executed <= NATIVE, executed - NATIVE
