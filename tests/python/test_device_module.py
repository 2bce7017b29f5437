"""torch.neuron, torch.accelerator and the generated tensor/module methods."""

import threading

import pytest
import torch


def test_device_module_basics():
    assert torch.neuron.is_available()
    # trn2.48xlarge at LNC2: 16 chips x 4 logical cores ("Best practices for training on AWS Neuron").
    assert torch.neuron.device_count() == 64
    assert torch.neuron.current_device() == 0
    torch.neuron.synchronize()
    torch.neuron.synchronize("neuron:3")


def test_accelerator_is_neuron():
    assert torch.accelerator.current_accelerator() == torch.device("neuron")
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == 64


def test_set_device_places_new_tensors_and_is_per_thread():
    try:
        torch.neuron.set_device(1)
        assert torch.neuron.current_device() == 1
        assert torch.empty(2, device="neuron").device == torch.device("neuron:1")
        seen = []
        thread = threading.Thread(target=lambda: seen.append(torch.neuron.current_device()))
        thread.start()
        thread.join()
        assert seen == [0]
    finally:
        torch.neuron.set_device(0)


def test_device_context_manager_restores():
    with torch.neuron.device(5):
        assert torch.neuron.current_device() == 5
        assert torch.zeros(1, device="neuron").device.index == 5
    assert torch.neuron.current_device() == 0


def test_explicit_index_tensor_lands_on_that_device():
    t = torch.arange(4, device="neuron:7")
    assert t.device == torch.device("neuron:7")
    assert t.cpu().tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("bad", [64, 100])
def test_invalid_device_index_says_what_exists(bad):
    with pytest.raises(
        RuntimeError, match=r"Invalid device id: neuron:\d+ does not exist; this process sees 64"
    ):
        torch.neuron.set_device(bad)
    assert torch.neuron.current_device() == 0


@pytest.mark.parametrize("negative", [-1, -3])
def test_a_negative_index_is_ignored_as_by_cuda(negative):
    """torch.cuda.set_device skips an index below 0 (torch/cuda/__init__.py: `if device >= 0`),
    and torch.cuda.device(-1) is a no-op context: scripts pass -1 for "no device"."""
    try:
        torch.neuron.set_device(2)
        torch.neuron.set_device(negative)
        assert torch.neuron.current_device() == 2
        with torch.neuron.device(negative):
            assert torch.neuron.current_device() == 2
        assert torch.neuron.current_device() == 2
    finally:
        torch.neuron.set_device(0)


def test_wrong_device_type_is_rejected():
    with pytest.raises(ValueError, match="Expected neuron device, got cpu"):
        torch.neuron.set_device(torch.device("cpu"))


def test_tensor_and_module_methods():
    t = torch.ones(2)
    n = t.neuron()
    assert n.is_neuron and n.device == torch.device("neuron:0")
    assert not t.is_neuron
    m = torch.nn.Linear(3, 2).neuron()
    assert all(p.is_neuron for p in m.parameters())
    s = torch.ones(3).untyped_storage().neuron()
    assert s.is_neuron


def test_memory_stats_track_allocations_exactly():
    torch.neuron.synchronize()
    before = torch.accelerator.memory_allocated()
    t = torch.empty(1024, dtype=torch.float32, device="neuron")
    assert torch.accelerator.memory_allocated() - before == 4096
    del t
    assert torch.accelerator.memory_allocated() == before


def test_storage_resize_frees_and_reallocates_like_fsdp2():
    t = torch.arange(8, dtype=torch.float32, device="neuron")
    storage = t.untyped_storage()
    before = torch.accelerator.memory_allocated()
    storage.resize_(0)
    assert storage.nbytes() == 0
    # The allocator hands out 512-byte granules, as CUDA's does: 32 bytes hold one.
    assert torch.accelerator.memory_allocated() == before - 512
    storage.resize_(32)
    t.copy_(torch.arange(8, dtype=torch.float32) * 2)
    assert t.cpu().tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]
    # Growing keeps the old bytes.
    storage.resize_(48)
    assert t.cpu().tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]
