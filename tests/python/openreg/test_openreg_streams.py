# Adapted for the `neuron` device from torch_openreg's tests/test_streams.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""torch.Stream on neuron and the torch.accelerator stream API."""

import pytest
import torch

from vtrn import _C


@pytest.fixture(autouse=True)
def _restore_streams():
    yield
    for index in (0, 1):
        torch.accelerator.set_stream(torch.neuron.default_stream(index))
    torch.accelerator.set_device_index(0)


class TestStream:
    def test_stream_create(self):
        stream = torch.Stream(device="neuron")
        assert stream.device_index == torch.neuron.current_device()

        stream = torch.Stream(device="neuron:1")
        assert stream.device.type == "neuron"
        assert stream.device_index == 1

        stream = torch.Stream(1)
        assert stream.device.type == "neuron"
        assert stream.device_index == 1

        stream1 = torch.Stream(
            stream_id=stream.stream_id,
            device_type=stream.device_type,
            device_index=stream.device_index,
        )
        assert stream == stream1

    def test_stream_context(self):
        with torch.Stream(device="neuron:1") as stream:
            assert torch.accelerator.current_stream() == stream
            # entering a stream of another device makes that device current, as on CUDA
            assert torch.accelerator.current_device_index() == 1
        assert torch.accelerator.current_device_index() == 0
        assert torch.accelerator.current_stream(1) == torch.neuron.default_stream(1)

    def test_stream_switch(self):
        stream1 = torch.Stream(device="neuron:0")
        torch.accelerator.set_stream(stream1)
        assert torch.accelerator.current_stream() == stream1

        stream2 = torch.Stream(device="neuron:1")
        torch.accelerator.set_stream(stream2)
        assert torch.accelerator.current_stream() == stream2
        assert torch.accelerator.current_device_index() == 1

    def test_stream_synchronize(self):
        stream = torch.Stream(device="neuron:1")
        assert stream.query()
        gate = _C._Gate()
        with stream:
            _C._enqueue_gate(1, gate)
        assert not stream.query()  # held until the gate opens
        event = torch.Event()
        event.record(stream)
        assert not event.query()
        gate.open()
        stream.synchronize()
        assert stream.query()
        assert event.query()

    def test_stream_repr(self):
        stream = torch.Stream(device="neuron:1")
        assert "torch.Stream device_type=neuron, device_index=1" in repr(stream)

    def test_stream_wait_stream(self):
        stream_1 = torch.Stream(device="neuron:0")
        stream_2 = torch.Stream(device="neuron:1")
        gate = _C._Gate()
        with stream_1:
            _C._enqueue_gate(0, gate)
        stream_2.wait_stream(stream_1)
        with stream_2:
            x = torch.ones(4, device="neuron:1") * 2
        assert not stream_2.query()  # waits for stream_1's held work
        gate.open()
        stream_2.synchronize()
        assert stream_1.query()
        assert x.cpu().tolist() == [2.0] * 4

    def test_stream_wait_event(self):
        s1 = torch.Stream(device="neuron")
        s2 = torch.Stream(device="neuron")
        gate = _C._Gate()
        with s1:
            _C._enqueue_gate(0, gate)
        e = s1.record_event()
        s2.wait_event(e)
        with s2:
            torch.ones(2, device="neuron").add_(1)
        assert not s2.query()
        gate.open()
        s2.synchronize()
        assert e.query()
