# Adapted for the `neuron` device from torch_openreg's tests/test_device_type.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""Host/device transfers and dtype handling, the device-generic tests openreg instantiates
for itself. (Its examples of PyTorch's test decorators test the harness, not a backend.)"""

import pytest
import torch

DEVICE = "neuron"


class TestDeviceTransfer:
    def test_to_device(self):
        x_cpu = torch.randn(3, 4)
        x = x_cpu.to(device=DEVICE)
        assert x.device.type == DEVICE
        assert torch.equal(x.cpu(), x_cpu)

    def test_to_device_with_copy(self):
        x = torch.randn(3, 4, device=DEVICE)
        y = x.to(device=DEVICE)
        assert x.data_ptr() == y.data_ptr()
        z = x.to(device=DEVICE, copy=True)
        assert x.data_ptr() != z.data_ptr()
        assert torch.equal(x.cpu(), z.cpu())

    def test_clone(self):
        x = torch.randn(3, 4, device=DEVICE)
        y = x.clone()
        assert y.device.type == DEVICE
        assert torch.equal(y.cpu(), x.cpu())
        assert y.data_ptr() != x.data_ptr()

    def test_copy_(self):
        src = torch.randn(3, 4, device=DEVICE)
        dst = torch.empty(3, 4, device=DEVICE)
        dst.copy_(src)
        assert torch.equal(dst.cpu(), src.cpu())
        assert dst.data_ptr() != src.data_ptr()

    def test_copy_from_cpu(self):
        x_cpu = torch.randn(3, 4)
        x_device = torch.empty(3, 4, device=DEVICE)
        x_device.copy_(x_cpu)
        assert torch.equal(x_device.cpu(), x_cpu)

    def test_copy_to_cpu(self):
        x_device = torch.randn(3, 4, device=DEVICE)
        x_cpu = torch.empty(3, 4)
        x_cpu.copy_(x_device)
        assert torch.equal(x_cpu, x_device.cpu())

    def test_round_trip(self):
        x_original = torch.randn(3, 4)
        assert torch.equal(x_original.to(device=DEVICE).to(device="cpu"), x_original)


class TestExceptForPattern:
    def test_tensor_operations(self):
        a_cpu = torch.randn(3, 4)
        b_cpu = torch.randn(3, 4)
        a = a_cpu.to(device=DEVICE)
        b = b_cpu.to(device=DEVICE)
        assert torch.equal((a + b).cpu(), a_cpu + b_cpu)
        assert torch.equal((a * b).cpu(), a_cpu * b_cpu)
        assert torch.equal((a - b).cpu(), a_cpu - b_cpu)
        torch.testing.assert_close((a / b).cpu(), a_cpu / b_cpu)


class TestGlobalsPattern:
    def test_basic_tensor_creation(self):
        x = torch.empty((3, 4), device=DEVICE, dtype=torch.float32)
        assert x.device.type == DEVICE
        assert x.shape == torch.Size((3, 4)) and x.dtype == torch.float32
        assert torch.all(torch.zeros((3, 4), device=DEVICE) == 0)
        assert torch.all(torch.ones((3, 4), device=DEVICE) == 1)


class TestDtypeSupport:
    @pytest.mark.filterwarnings("ignore:neuron computes float64 as float32")
    def test_dtype_propagation(self):
        x = torch.randn(3, 4, device=DEVICE, dtype=torch.float32)
        assert x.dtype == torch.float32
        assert (x + x).dtype == torch.float32

        y = torch.randn(3, 4, device=DEVICE, dtype=torch.float64)
        assert y.dtype == torch.float64
        assert (y * 2).dtype == torch.float64

        z = x.to(dtype=torch.float64)
        assert z.dtype == torch.float64 and z.device.type == DEVICE

        i = torch.randint(0, 100, (3, 4), device=DEVICE, dtype=torch.int64)
        assert i.dtype == torch.int64
        assert i.cpu().min().item() >= 0 and i.cpu().max().item() < 100

        b = torch.zeros(3, 4, device=DEVICE, dtype=torch.bool)
        assert b.dtype == torch.bool
        assert torch.all(~b)
