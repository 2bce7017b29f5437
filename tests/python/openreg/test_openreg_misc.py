# Adapted for the `neuron` device from torch_openreg's tests/test_misc.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""The PrivateUse1 registration: backend name, device module, generated methods, legacy types."""

import types

import pytest
import torch


class TestBackendModule:
    def test_backend_module_name(self):
        assert torch._C._get_privateuse1_backend_name() == "neuron"
        # renaming to the same name again is allowed; to another name is not
        torch.utils.rename_privateuse1_backend("neuron")
        with pytest.raises(RuntimeError, match="has already been set"):
            torch.utils.rename_privateuse1_backend("dev")

    def test_profiler_activity_alias(self):
        from torch._C._profiler import ProfilerActivity

        assert hasattr(ProfilerActivity, "NEURON")
        assert ProfilerActivity.NEURON == ProfilerActivity.PrivateUse1
        assert repr(ProfilerActivity.NEURON) == "<ProfilerActivity.NEURON: 5>"
        assert str(ProfilerActivity.NEURON) == "ProfilerActivity.NEURON"
        assert ProfilerActivity.NEURON.name == "NEURON"

    def test_device_type_alias(self):
        from torch._C._autograd import DeviceType

        assert hasattr(DeviceType, "NEURON")
        assert DeviceType.NEURON == DeviceType.PrivateUse1
        assert repr(DeviceType.NEURON) == "<DeviceType.NEURON: 20>"
        assert str(DeviceType.NEURON) == "DeviceType.NEURON"
        assert DeviceType.NEURON.name == "NEURON"

    def test_backend_module_registration(self):
        def generate_faked_module():
            return types.ModuleType("fake_module")

        with pytest.raises(RuntimeError, match="Expected one of cpu"):
            torch._register_device_module("dev", generate_faked_module())
        with pytest.raises(RuntimeError, match="The runtime module of"):
            torch._register_device_module("neuron", generate_faked_module())

    def test_backend_module_function(self):
        with pytest.raises(RuntimeError, match="Try to call torch.neuron"):
            torch.utils.backend_registration._get_custom_mod_func("func_name_")
        device_count = torch.utils.backend_registration._get_custom_mod_func("device_count")
        assert device_count() == torch.neuron.device_count()

    def test_backend_module_function_error_handling(self):
        with pytest.raises(RuntimeError, match="Try to call torch.neuron"):
            torch.utils.backend_registration._get_custom_mod_func("non_existent_func")
        assert torch.utils.backend_registration._get_custom_mod_func("device_count") is not None


class TestBackendProperty:
    def test_backend_generate_methods(self):
        with pytest.raises(RuntimeError, match="The custom device module of"):
            torch.utils.generate_methods_for_privateuse1_backend()

        assert hasattr(torch.Tensor, "is_neuron")
        assert hasattr(torch.Tensor, "neuron")
        assert hasattr(torch.TypedStorage, "is_neuron")
        assert hasattr(torch.TypedStorage, "neuron")
        assert hasattr(torch.UntypedStorage, "is_neuron")
        assert hasattr(torch.UntypedStorage, "neuron")
        assert hasattr(torch.nn.Module, "neuron")
        assert hasattr(torch.nn.utils.rnn.PackedSequence, "is_neuron")
        assert hasattr(torch.nn.utils.rnn.PackedSequence, "neuron")

    def test_backend_tensor_methods(self):
        x = torch.empty(4, 4)
        assert not x.is_neuron
        assert x.neuron(torch.device("neuron")).is_neuron
        assert x.neuron(torch.device("neuron:0")).is_neuron
        assert x.neuron(0).is_neuron

    def test_backend_module_methods(self):
        # openreg skips this one ("Need to support Parameter"); neuron moves parameters.
        class FakeModule(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.x = torch.nn.Parameter(torch.randn(3, 3))

            def forward(self):
                pass

        module = FakeModule()
        expected = module.x.detach().clone()
        assert module.x.device.type == "cpu"
        module.neuron()
        assert module.x.device.type == "neuron"
        assert isinstance(module.x, torch.nn.Parameter)
        torch.testing.assert_close(module.x.detach().cpu(), expected)

    def test_backend_storage_methods(self):
        # openreg skips this one ("Need to support untyped_storage"); neuron moves storages.
        x = torch.arange(16.0).reshape(4, 4)
        x_cpu = x.storage()
        assert not x_cpu.is_neuron
        x_neuron = x_cpu.neuron()
        assert x_neuron.is_neuron
        assert x_neuron.tolist() == x_cpu.tolist()

        y_cpu = x.untyped_storage()
        assert not y_cpu.is_neuron
        y_neuron = y_cpu.neuron()
        assert y_neuron.is_neuron
        assert bytes(y_neuron.cpu()) == bytes(y_cpu)

    def test_backend_packed_sequence_methods(self):
        x = torch.rand(5, 3)
        y = torch.tensor([1, 1, 1, 1, 1])
        z_cpu = torch.nn.utils.rnn.PackedSequence(x, y)
        assert not z_cpu.is_neuron
        z_neuron = z_cpu.neuron()
        assert z_neuron.is_neuron
        assert z_neuron.data.is_neuron
        torch.testing.assert_close(z_neuron.data.cpu(), x)

    def test_backend_tensor_methods_different_devices(self):
        x = torch.empty(4, 4)
        y0 = x.neuron(0)
        assert y0.is_neuron and y0.device.index == 0
        y1 = x.neuron(1)
        assert y1.is_neuron and y1.device.index == 1
        assert x.neuron(torch.device("neuron")).is_neuron


class TestTensorType:
    def test_backend_tensor_type(self):
        dtypes_map = {
            torch.bool: "torch.neuron.BoolTensor",
            torch.double: "torch.neuron.DoubleTensor",
            torch.float32: "torch.neuron.FloatTensor",
            torch.half: "torch.neuron.HalfTensor",
            torch.int32: "torch.neuron.IntTensor",
            torch.int64: "torch.neuron.LongTensor",
            torch.int8: "torch.neuron.CharTensor",
            torch.short: "torch.neuron.ShortTensor",
            torch.uint8: "torch.neuron.ByteTensor",
        }
        for dtype, name in dtypes_map.items():
            assert torch.empty(4, 4, dtype=dtype, device="neuron").type() == name

    # The dtype-d Tensor and Storage types exist only for legacy reasons.
    def test_backend_type_methods(self):
        tensor_cpu = torch.randn([8]).float()
        assert tensor_cpu.type() == "torch.FloatTensor"
        assert tensor_cpu.neuron().type() == "torch.neuron.FloatTensor"

        storage_cpu = tensor_cpu.storage()
        assert storage_cpu.type() == "torch.FloatStorage"
        storage_neuron = tensor_cpu.neuron().storage()
        assert storage_neuron.type() == "torch.storage.TypedStorage"

        class CustomFloatStorage:
            @property
            def __module__(self):
                return "torch." + torch._C._get_privateuse1_backend_name()

            @property
            def __name__(self):
                return "FloatStorage"

        try:
            torch.neuron.FloatStorage = CustomFloatStorage()
            assert storage_neuron.type() == "torch.neuron.FloatStorage"
            # an int storage still has no legacy type of its own
            assert tensor_cpu.int().neuron().storage().type() == "torch.storage.TypedStorage"
        finally:
            del torch.neuron.FloatStorage

    def test_backend_storage_type_consistency(self):
        tensor = torch.randn(4, 4, device="neuron")
        storage = tensor.storage()
        assert storage.is_neuron
        assert storage.size() == tensor.numel()
