# Adapted for the `neuron` device from torch_openreg's tests/test_storage.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""Storages and serialization: location tags, torch.save/torch.load with every form of
map_location, storage sharing across a round trip, the storage-less and legacy numpy paths.

openreg also checks its custom backend metadata (torch._utils.set_tensor_metadata); neuron
tensors carry none, so those checks are replaced by the device and sharing checks below."""

import importlib
import io
import unittest.mock

import numpy
import pytest
import torch
from torch.serialization import safe_globals

pytestmark = pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")


def _round_trip(obj, **load_kwargs):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kwargs)


class TestStorage:
    def test_rewrapped_storage(self):
        pinned_a = torch.randn(10).pin_memory()
        rewrapped_a = torch.tensor((), dtype=torch.float32).set_(
            pinned_a.untyped_storage()[2:], size=(5,), stride=(1,), storage_offset=0
        )
        assert rewrapped_a.is_pinned()
        assert pinned_a.data_ptr() != rewrapped_a.data_ptr()

    def test_storage_device_is_the_tensors(self):
        # Every allocation path charges the tensor's own device, whatever the current one is.
        x = torch.randn(4, 4, device="neuron:3")
        results = {
            "factory": torch.ones(3, device="neuron:3"),
            "op": x @ x,
            "copy": torch.ones(3).to("neuron:3"),
            "cross-device copy": torch.ones(3, device="neuron:1").to("neuron:3"),
            "randperm": torch.randperm(5, device="neuron:3"),
            "cpu fallback with out=": torch.arange(5, device="neuron:3"),
        }
        for what, t in results.items():
            assert t.untyped_storage().device == torch.device("neuron:3"), what
            assert torch.serialization.location_tag(t.untyped_storage()) == "neuron:3", what


class TestSerialization:
    def test_serialization(self):
        storage = torch.UntypedStorage(4, device=torch.device("neuron"))
        assert torch.serialization.location_tag(storage) == "neuron:0"
        storage = torch.UntypedStorage(4, device=torch.device("neuron:0"))
        assert torch.serialization.location_tag(storage) == "neuron:0"

        storage_cpu = torch.empty(4, 4).storage()
        storage_neuron = torch.serialization.default_restore_location(storage_cpu, "neuron:0")
        assert storage_neuron.is_neuron

        tensor = torch.randn(3, 3, device="neuron")
        assert torch._utils.get_tensor_metadata(tensor) == {}  # neuron has no backend metadata
        loaded = _round_trip(tensor)
        assert loaded.is_neuron and loaded.device == tensor.device
        assert torch.equal(loaded.cpu(), tensor.cpu())
        loaded_cpu = _round_trip(tensor, map_location="cpu")
        assert not loaded_cpu.is_neuron
        assert torch.equal(loaded_cpu, tensor.cpu())

    @pytest.mark.parametrize(
        "map_location, expected",
        [
            (None, "neuron:2"),
            ("cpu", "cpu"),
            ("neuron", "neuron:0"),
            ("neuron:1", "neuron:1"),
            (torch.device("neuron:5"), "neuron:5"),
            ({"neuron:2": "neuron:4"}, "neuron:4"),
            ({"neuron:2": "cpu"}, "cpu"),
            ({"neuron:7": "cpu"}, "neuron:2"),  # no entry for the saved location: kept
            (lambda storage, location: storage.neuron(6), "neuron:6"),
            (lambda storage, location: None, "neuron:2"),  # None: the default restore
            (lambda storage, location: storage, "cpu"),  # the CPU storage itself
        ],
    )
    @pytest.mark.parametrize("weights_only", [True, False])
    def test_map_location_keeps_values_and_sharing(self, map_location, expected, weights_only):
        a = torch.randn(4, 4, device="neuron:2")
        views = {"a": a, "rows": a[1:3], "t": a.t(), "flat": a.view(16)}
        loaded = _round_trip(views, map_location=map_location, weights_only=weights_only)
        for name, t in views.items():
            assert loaded[name].device == torch.device(expected), name
            assert torch.equal(loaded[name].cpu(), t.cpu()), name
            assert loaded[name].stride() == t.stride(), name
        # one storage for all four views, as before saving
        storages = {loaded[name].untyped_storage().data_ptr() for name in views}
        assert len(storages) == 1
        loaded["a"].add_(1)
        assert torch.equal(loaded["rows"].cpu(), loaded["a"][1:3].cpu())

    def test_tensors_on_several_devices_keep_theirs(self):
        state = {f"w{i}": torch.full((2,), float(i), device=f"neuron:{i}") for i in range(4)}
        loaded = _round_trip(state, weights_only=True)
        for i in range(4):
            assert loaded[f"w{i}"].device == torch.device(f"neuron:{i}")
            assert loaded[f"w{i}"].cpu().tolist() == [float(i)] * 2

    def test_module_state_dict_round_trip(self):
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)).to("neuron:1")
        sd = model.state_dict()
        loaded = _round_trip(sd, weights_only=True)
        for key, value in sd.items():
            assert loaded[key].device == torch.device("neuron:1")
            assert torch.equal(loaded[key].cpu(), value.cpu())
        restored = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)).to("neuron")
        restored.load_state_dict(loaded)
        x = torch.randn(5, 3)
        torch.testing.assert_close(restored(x.to("neuron")).cpu(), model(x.to("neuron:1")).cpu())

    def test_open_device_numpy_serialization(self):
        """The legacy _rebuild_device_tensor_from_numpy path (openreg keeps a file saved by an
        old PyTorch; this one is pickled the same way, naming neuron:0)."""

        class LegacyDeviceTensor:
            def __reduce__(self):
                array = numpy.array([[1, 2, 3], [4, 5, 6]], dtype=numpy.float32)
                rebuild = torch._utils._rebuild_device_tensor_from_numpy
                return rebuild, (array, torch.float32, "neuron:0", False)

        buf = io.BytesIO()
        torch.save({"x": LegacyDeviceTensor()}, buf)
        allowed = []
        buf.seek(0)
        for name in torch.serialization.get_unsafe_globals_in_checkpoint(buf):
            module, _, attr = name.rpartition(".")
            allowed.append((getattr(importlib.import_module(module), attr), name))
        allowed.append(numpy.dtypes.Float32DType)  # reached inside the array's own pickle
        with safe_globals(allowed):
            buf.seek(0)
            sd_loaded = torch.load(buf, weights_only=True)
            buf.seek(0)
            sd_loaded_cpu = torch.load(buf, weights_only=True, map_location="cpu")
        expected = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.float32)
        assert sd_loaded["x"].device == torch.device("neuron:0")
        assert torch.equal(sd_loaded["x"].cpu(), expected)
        assert sd_loaded_cpu["x"].is_cpu
        assert torch.equal(sd_loaded_cpu["x"], expected)

    def test_open_device_cpu_serialization(self):
        # A backend whose tensors have no storage is saved through a CPU copy.
        with unittest.mock.patch.object(torch._C, "_has_storage", return_value=False):
            x = torch.randn(2, 3)
            x_neuron = x.to("neuron:1")
            sd = {"x": x_neuron}
            rebuild_func = x_neuron._reduce_ex_internal(torch.serialization.DEFAULT_PROTOCOL)[0]
            assert rebuild_func is torch._utils._rebuild_device_tensor_from_cpu_tensor

            sd_loaded = _round_trip(sd, weights_only=True)
            sd_loaded_cpu = _round_trip(sd, weights_only=True, map_location="cpu")
            assert sd_loaded["x"].device == torch.device("neuron:1")
            assert torch.equal(sd_loaded["x"].cpu(), x)
            assert sd_loaded_cpu["x"].is_cpu

            with pytest.raises(
                RuntimeError,
                match="Cannot serialize tensors on backends with no storage under skip_data",
            ):
                with torch.serialization.skip_data():
                    torch.save(sd, io.BytesIO())

    def test_fake_tensor_keeps_the_device(self):
        from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

        tensor = torch.empty(3, 3, device="neuron:1")
        with FakeTensorMode() as mode:
            fake_tensor = mode.from_tensor(tensor)
            assert (fake_tensor + 1).device == torch.device("neuron:1")
        assert isinstance(fake_tensor, FakeTensor)
        assert fake_tensor.device == torch.device("neuron:1")

    def test_serialization_map_location_cpu(self):
        tensor = torch.randn(3, 3, device="neuron")
        loaded_cpu = _round_trip(tensor, map_location="cpu")
        assert loaded_cpu.is_cpu
        assert torch.equal(loaded_cpu, tensor.cpu())

    def test_serialization_map_location_device(self):
        tensor = torch.randn(3, 3, device="neuron:0")
        loaded_device = _round_trip(tensor, map_location="neuron:1")
        assert loaded_device.device.index == 1
        assert torch.equal(loaded_device.cpu(), tensor.cpu())

    def test_serialization_storage_location_tag(self):
        storage = torch.UntypedStorage(4, device=torch.device("neuron:1"))
        assert torch.serialization.location_tag(storage) == "neuron:1"
        storage = torch.UntypedStorage(4, device=torch.device("neuron"))
        assert torch.serialization.location_tag(storage) == "neuron:0"

    def test_serialization_default_restore_location(self):
        storage_cpu = torch.arange(16.0).storage()
        storage_neuron0 = torch.serialization.default_restore_location(storage_cpu, "neuron:0")
        assert storage_neuron0.is_neuron and storage_neuron0.device.index == 0
        storage_neuron1 = torch.serialization.default_restore_location(storage_cpu, "neuron:1")
        assert storage_neuron1.is_neuron and storage_neuron1.device.index == 1
        assert storage_neuron1.tolist() == storage_cpu.tolist()
        count = torch.neuron.device_count()
        with pytest.raises(RuntimeError, match=f"on NEURON device {count} but"):
            torch.serialization.default_restore_location(storage_cpu, f"neuron:{count}")
