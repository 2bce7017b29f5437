# Adapted for the `neuron` device from torch_openreg's tests/test_compile.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""torch.compile over neuron tensors: graph capture, fake tensors, guards, autograd.

openreg registers a compile backend of its own. Each test here runs with PyTorch's aot_eager
backend (Dynamo and AOT Autograd tracing neuron tensors, the graphs run eagerly on the device)
and with the `neuron` backend; the Dynamo device interface comes with that backend. openreg's
backend-metadata propagation check is left out: neuron tensors carry no backend metadata."""

import pytest
import torch
import torch._dynamo
from torch._dynamo.backends.registry import list_backends
from torch._dynamo.testing import CompileCounterWithBackend

_NEURON_BACKEND = pytest.mark.skipif(
    "neuron" not in list_backends(exclude_tags=()),
    reason="torch.compile(backend='neuron') is not registered yet",
)
BACKENDS = ["aot_eager", pytest.param("neuron", marks=_NEURON_BACKEND)]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class TestBackendRegistration:
    @_NEURON_BACKEND
    def test_backend_in_list(self):
        assert "neuron" in list_backends(exclude_tags=())


@pytest.mark.parametrize("backend", BACKENDS)
class TestGraphCapture:
    def test_simple_compile(self, backend):
        fn = torch.compile(lambda x: x + 1, backend=backend)
        x = torch.randn(4, device="neuron")
        result = fn(x)
        assert result.device.type == "neuron"
        assert torch.equal(result.cpu(), x.cpu() + 1)

    def test_compile_fullgraph_multiple_ops(self, backend):
        @torch.compile(backend=backend, fullgraph=True)
        def fn(x):
            return torch.relu((x + 1) * 2)

        x = torch.randn(4, device="neuron")
        assert torch.equal(fn(x).cpu(), torch.relu((x.cpu() + 1) * 2))


class TestFakeTensor:
    def test_device_metadata(self):
        captured = []

        def capture_backend(gm, example_inputs):
            captured.append(gm)
            return gm.forward

        fn = torch.compile(lambda x: x + 1, backend=capture_backend)
        fn(torch.randn(4, device="neuron:1"))
        (gm,) = captured
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        assert placeholders
        for node in placeholders:
            fake = node.meta["example_value"]
            assert fake.device == torch.device("neuron:1")

    def test_fake_tensor_mode(self):
        with torch._subclasses.fake_tensor.FakeTensorMode():
            x = torch.empty(3, 3, device="neuron")
            assert x.device.type == "neuron"
            y = x + 1
            assert y.device.type == "neuron"


@pytest.mark.parametrize("backend", BACKENDS)
class TestGuards:
    def test_backend_recompilation(self, backend):
        counter = CompileCounterWithBackend(backend)
        fn = torch.compile(lambda x: x + 1, backend=counter)
        x = torch.randn(4, device="neuron")
        fn(x)
        fn(x)
        assert counter.frame_count == 1

    def test_recompilation_on_shape_change(self, backend):
        counter = CompileCounterWithBackend(backend)
        fn = torch.compile(lambda x: x + 1, backend=counter, dynamic=False)
        fn(torch.randn(4, device="neuron"))
        assert counter.frame_count == 1
        fn(torch.randn(8, device="neuron"))
        assert counter.frame_count == 2

    def test_recompilation_on_device_change(self, backend):
        counter = CompileCounterWithBackend(backend)
        fn = torch.compile(lambda x: x + 1, backend=counter)
        fn(torch.randn(4, device="neuron"))
        x = torch.randn(4)
        result = fn(x)
        # The neuron backend copies CPU inputs to the device, as TorchNeuron's does.
        assert result.device.type == ("neuron" if backend == "neuron" else "cpu")
        assert torch.equal(result.cpu(), x + 1)
        assert counter.frame_count == 2


@pytest.mark.parametrize("backend", BACKENDS)
class TestExecution:
    def test_autograd(self, backend):
        fn = torch.compile(lambda x: (x * 2).sum(), backend=backend)
        x = torch.randn(4, device="neuron", requires_grad=True)
        fn(x).backward()
        assert x.grad.device.type == "neuron"
        assert torch.equal(x.grad.cpu(), torch.full((4,), 2.0))

    def test_nn_module(self, backend):
        m = torch.nn.Linear(4, 4).to("neuron")
        compiled_m = torch.compile(m, backend=backend)
        x = torch.randn(2, 4, device="neuron")
        result = compiled_m(x)
        assert result.device.type == "neuron" and result.shape == torch.Size([2, 4])
        torch.testing.assert_close(result.cpu(), m(x).cpu())

    def test_dynamic_shapes(self, backend):
        fn = torch.compile(lambda x: x + 1, backend=backend, dynamic=True)
        if backend == "neuron":  # TorchNeuron compiles per concrete shape and says so
            with pytest.raises(Exception, match="[Dd]ynamic shapes"):
                fn(torch.randn(4, device="neuron"))
            return
        for n in (4, 8):
            x = torch.randn(n, device="neuron")
            assert torch.equal(fn(x).cpu(), x.cpu() + 1)

    def test_device_transfer_traces_fully(self, backend):
        @torch.compile(backend=backend, fullgraph=True)
        def fn(x):
            return (x + 1).cpu() * 2

        x = torch.randn(4, device="neuron")
        result = fn(x)
        assert result.device.type == "cpu"
        assert torch.equal(result, (x.cpu() + 1) * 2)

    def test_graph_break_resilience(self, backend):
        counter = CompileCounterWithBackend(backend)

        @torch.compile(backend=counter)
        def fn(x):
            y = x + 1
            torch._dynamo.graph_break()
            return y * 2

        x = torch.randn(4, device="neuron")
        assert torch.equal(fn(x).cpu(), (x.cpu() + 1) * 2)
        assert counter.frame_count > 1

    def test_compile_with_autocast(self, backend):
        @torch.compile(backend=backend)
        def fn(x, y):
            with torch.autocast(device_type="neuron", dtype=torch.float16):
                return torch.mm(x, y)

        result = fn(torch.randn(2, 3, device="neuron"), torch.randn(3, 3, device="neuron"))
        assert result.dtype == torch.float16 and result.device.type == "neuron"

    def test_compile_with_default_device(self, backend):
        with torch.device("neuron"):

            @torch.compile(backend=backend)
            def fn(x):
                return x + torch.zeros(4)

            result = fn(torch.randn(4, device="neuron"))
            assert result.device.type == "neuron"


@_NEURON_BACKEND
class TestDeviceInterface:
    @pytest.fixture(autouse=True)
    def _backend_resolved(self):
        # The interface is registered with the backend (vtrn.compile), as Dynamo first needs it
        # when it compiles for the device.
        torch._dynamo.lookup_backend("neuron")

    def test_interface_registered(self):
        from torch._dynamo.device_interface import get_interface_for_device

        assert get_interface_for_device("neuron") is not None

    def test_current_device(self):
        from torch._dynamo.device_interface import get_interface_for_device

        assert isinstance(get_interface_for_device("neuron").current_device(), int)

    def test_device_count(self):
        from torch._dynamo.device_interface import get_interface_for_device

        iface = get_interface_for_device("neuron")
        assert iface.device_count() == torch.neuron.device_count()
