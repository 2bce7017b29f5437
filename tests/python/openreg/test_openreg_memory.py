# Adapted for the `neuron` device from torch_openreg's tests/test_memory.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""The device allocator: allocation, lifetimes, leaks (checked against the allocator's own
counters, where openreg only checks that nothing crashes), pinned memory, several devices."""

import gc

import pytest
import torch

pytestmark = [
    pytest.mark.filterwarnings("ignore:TypedStorage is deprecated"),
    # openreg calls the storage pin_memory(device) API, which torch 2.13 deprecates
    pytest.mark.filterwarnings("ignore:The argument 'device' of Tensor"),
]


def _allocated(device=0) -> int:
    """The bytes tensors asked for on ``device`` (allocated bytes are rounded up to blocks).
    A tensor is freed when its last reference goes; queued work may hold one until it ran."""
    torch.neuron.synchronize(device)
    return torch.neuron.memory_stats(device)["requested_bytes.all.current"]


@pytest.fixture
def no_leak():
    """Fails the test when it leaves more neuron:0 and neuron:1 memory allocated than it found."""
    gc.collect()
    before = [_allocated(0), _allocated(1)]
    yield
    gc.collect()
    assert [_allocated(0), _allocated(1)] == before


class TestDeviceAllocator:
    def test_basic_allocation(self):
        x = torch.empty(100, device="neuron")
        assert x.device.type == "neuron" and x.numel() == 100
        z = torch.empty(10000, device="neuron")
        assert z.numel() == 10000
        w = torch.empty(10, 20, 30, device="neuron")
        assert w.shape == torch.Size([10, 20, 30])

    def test_memory_lifecycle(self):
        before = _allocated()
        x = torch.empty(1000, device="neuron")
        assert _allocated() - before == 4000
        del x
        assert _allocated() == before
        y = torch.empty(1000, device="neuron")
        assert y.device.type == "neuron"
        del y
        assert _allocated() == before

    def test_tensor_copy_operations(self):
        cpu_tensor = torch.randn(100)
        neuron_tensor = cpu_tensor.to("neuron")
        assert neuron_tensor.device.type == "neuron"
        assert neuron_tensor.shape == cpu_tensor.shape
        back_to_cpu = neuron_tensor.to("cpu")
        assert back_to_cpu.device.type == "cpu"
        assert torch.equal(cpu_tensor, back_to_cpu)
        cloned = neuron_tensor.clone()
        assert cloned.device.type == "neuron"
        assert torch.equal(neuron_tensor.cpu(), cloned.cpu())

    def test_tensor_shallow_copy(self):
        # set_data from neuron to cpu
        self_t = torch.randn(4, 4)
        from_t = torch.randn(4, 4, device="neuron")
        assert torch._has_compatible_shallow_copy_type(self_t, from_t)
        self_t.data = from_t
        assert self_t.device == from_t.device
        assert torch.equal(self_t.cpu(), from_t.cpu())
        assert self_t.data_ptr() == from_t.data_ptr()

        # set_data from cpu to neuron
        self_t = torch.randn(4, 4, device="neuron")
        from_t = torch.randn(4, 4)
        assert torch._has_compatible_shallow_copy_type(self_t, from_t)
        self_t.data = from_t
        assert torch.equal(self_t, from_t)
        assert self_t.data_ptr() == from_t.data_ptr()

    def test_inplace_operations(self):
        x = torch.ones(100, device="neuron")
        original_data_ptr = x.data_ptr()
        x.add_(1)
        assert x.data_ptr() == original_data_ptr
        assert torch.all(x == 2)
        x.mul_(2)
        assert x.data_ptr() == original_data_ptr
        assert torch.all(x == 4)

    def test_view_operations(self):
        x = torch.randn(100, device="neuron")
        y = x.view(10, 10)
        assert y.data_ptr() == x.data_ptr()
        assert y.shape == torch.Size([10, 10])
        z = x[10:20]
        assert z.numel() == 10
        assert z.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        assert z.data_ptr() == x.data_ptr() + 10 * x.element_size()

    def test_different_dtypes(self):
        for dtype in [torch.float32, torch.float64, torch.int32, torch.int64]:
            x = torch.empty(100, dtype=dtype, device="neuron")
            assert x.dtype == dtype and x.numel() == 100
            assert x.untyped_storage().nbytes() == 100 * dtype.itemsize

    def test_tensor_resize(self):
        x = torch.arange(100.0).to("neuron")
        ptr = x.data_ptr()
        x.resize_(50)  # shrinking keeps the storage
        assert x.numel() == 50 and x.data_ptr() == ptr
        assert x.cpu().tolist() == list(map(float, range(50)))
        x.resize_(100)  # the storage is large enough again
        assert x.numel() == 100
        x.resize_(200)  # growing keeps the values
        assert x.cpu()[:100].tolist() == list(map(float, range(100)))

    def test_empty_cache_operation(self):
        x = torch.empty(1000, device="neuron")
        y = torch.empty(2000, device="neuron")
        del x, y
        gc.collect()
        torch.neuron.synchronize()
        torch.neuron.empty_cache()
        assert torch.neuron.memory_reserved() >= torch.neuron.memory_allocated()

    def test_memory_format_allocation(self):
        x = torch.empty(2, 3, 4, 4, device="neuron", memory_format=torch.channels_last)
        assert x.device.type == "neuron"
        assert x.is_contiguous(memory_format=torch.channels_last)
        y = torch.empty(2, 3, 4, 4, device="neuron", memory_format=torch.contiguous_format)
        assert y.is_contiguous()

    def test_large_allocation(self):
        size = 10 * 1024 * 1024 // 4  # 10 MiB of float32
        before = _allocated()
        x = torch.empty(size, device="neuron")
        assert x.numel() == size
        assert _allocated() - before == size * 4

    def test_sequential_allocations_and_deallocations(self, no_leak):
        for i in range(10):
            x = torch.empty(1000 + i * 100, device="neuron")
            assert x.device.type == "neuron"
            del x

    def test_allocation_with_requires_grad(self):
        x = torch.empty(100, device="neuron", requires_grad=True)
        assert x.device.type == "neuron" and x.requires_grad
        y = torch.randn(100, device="neuron", requires_grad=True)
        assert y.device.type == "neuron" and y.requires_grad

    def test_storage_operations(self):
        x = torch.randn(100, device="neuron")
        storage = x.storage()
        assert storage.device.type == "neuron"
        assert storage.size() >= x.numel()

    def test_tensor_from_blob(self):
        x = torch.randn(100, device="neuron")
        y = x.view_as(x)
        assert x.data_ptr() == y.data_ptr()
        x.fill_(5.0)
        assert torch.all(y == 5.0)


class TestMemoryLeaks:
    """openreg's leak tests pass when nothing crashes; these also compare the allocator's
    allocated bytes before and after."""

    def test_no_leak_simple_allocations(self, no_leak):
        for _ in range(1000):
            x = torch.empty(1000, device="neuron")
            del x

    def test_no_leak_varying_sizes(self, no_leak):
        sizes = [100, 500, 1000, 5000, 10000]
        for i in range(500):
            x = torch.empty(sizes[i % len(sizes)], device="neuron")
            del x

    def test_no_leak_with_copies(self, no_leak):
        for _ in range(100):
            x = torch.randn(500, device="neuron")
            cpu_copy = x.cpu()
            device_copy = cpu_copy.to("neuron")
            cloned = device_copy.clone()
            del x, cpu_copy, device_copy, cloned

    def test_no_leak_with_views(self, no_leak):
        for _ in range(200):
            x = torch.randn(1000, device="neuron")
            view1 = x.view(10, 100)
            view2 = x[100:200]
            view3 = x.reshape(20, 50)
            del view1, view2, view3, x

    def test_no_leak_inplace_operations(self, no_leak):
        for _ in range(100):
            x = torch.ones(1000, device="neuron")
            x.add_(1)
            x.mul_(2)
            x.div_(2)
            x.sub_(1)
            del x

    def test_no_leak_with_gradients(self, no_leak):
        for _ in range(100):
            x = torch.randn(100, device="neuron", requires_grad=True)
            y = torch.randn(100, device="neuron", requires_grad=True)
            z = x + y
            z.sum().backward()
            del x, y, z

    def test_no_leak_repeated_large_allocations(self, no_leak):
        size = 50 * 1024 * 1024 // 4  # 50 MiB of float32
        for _ in range(20):
            x = torch.empty(size, device="neuron")
            del x

    def test_leak_detection_with_statistics(self, no_leak):
        for _ in range(10):
            tensors = [torch.empty(1000, device="neuron") for _ in range(100)]
            assert len(tensors) == 100
            tensors.clear()
        final_tensor = torch.empty(10000, device="neuron")
        assert final_tensor.device.type == "neuron"
        del final_tensor


class TestPinMemory:
    def test_pin_memory(self):
        tensor = torch.randn(10)
        assert not tensor.is_pinned()
        pinned_tensor = tensor.pin_memory()
        assert pinned_tensor.is_pinned()
        assert torch.equal(pinned_tensor, tensor)
        assert pinned_tensor[2:5].is_pinned()

        storage = torch.randn(10).storage()
        assert not storage.is_pinned("neuron")
        pinned_storage = storage.pin_memory("neuron")
        assert pinned_storage.is_pinned("neuron")

        untyped_storage = torch.randn(10).untyped_storage()
        assert not untyped_storage.is_pinned("neuron")
        pinned_untyped_storage = untyped_storage.pin_memory("neuron")
        assert pinned_untyped_storage.is_pinned("neuron")

    def test_pinned_copy_is_exact(self):
        src = torch.randn(1000).pin_memory()
        dst = src.to("neuron", non_blocking=True)
        assert torch.equal(dst.cpu(), src)


class TestMultiDeviceAllocation:
    @pytest.fixture(autouse=True)
    def _restore_device(self):
        yield
        torch.neuron.set_device(0)

    def test_allocation_on_device_1(self):
        before = _allocated(1)
        torch.neuron.set_device(1)
        x = torch.empty(100, device="neuron:1")
        assert x.device == torch.device("neuron:1")
        assert x.untyped_storage().device == torch.device("neuron:1")
        assert _allocated(1) - before == 400

    def test_simultaneous_device_allocations(self):
        before = [_allocated(0), _allocated(1)]
        x = torch.empty(100, device="neuron:0")
        y = torch.empty(200, device="neuron:1")
        assert x.device.index == 0 and y.device.index == 1
        assert x.data_ptr() != y.data_ptr()
        # each device's bank is charged for its own tensor only
        assert [_allocated(0) - before[0], _allocated(1) - before[1]] == [400, 800]

    def test_memory_isolation_between_devices(self):
        tensors_dev0 = [torch.empty(1000, device="neuron:0") for _ in range(10)]
        tensors_dev1 = [torch.empty(1000, device="neuron:1") for _ in range(10)]
        assert all(t.device.index == 0 for t in tensors_dev0)
        assert all(t.device.index == 1 for t in tensors_dev1)
        ptrs_dev0 = {t.data_ptr() for t in tensors_dev0}
        ptrs_dev1 = {t.data_ptr() for t in tensors_dev1}
        assert not ptrs_dev0 & ptrs_dev1

    def test_alternating_device_allocations(self):
        tensors = [torch.empty(100 + i, device=f"neuron:{i % 2}") for i in range(20)]
        for i, t in enumerate(tensors):
            assert t.device.index == i % 2
            assert t.untyped_storage().device.index == i % 2


class TestCrossDeviceOperations:
    def test_tensor_to_different_device(self):
        x = torch.randn(100, device="neuron:0")
        y = x.to("neuron:1")
        assert y.device.index == 1
        assert x.data_ptr() != y.data_ptr()
        assert torch.equal(x.cpu(), y.cpu())

    def test_bidirectional_device_transfer(self):
        original = torch.randn(100, device="neuron:0")
        original_cpu = original.cpu()
        on_dev1 = original.to("neuron:1")
        assert torch.equal(original_cpu, on_dev1.cpu())
        back_to_dev0 = on_dev1.to("neuron:0")
        assert torch.equal(original_cpu, back_to_dev0.cpu())
