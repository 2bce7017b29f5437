# Adapted for the `neuron` device from torch_openreg's tests/test_event.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""torch.Event on neuron: creation, record, query, synchronize, wait, elapsed time."""

import pytest
import torch

from vtrn import _C


@pytest.fixture(autouse=True)
def _restore_device():
    yield
    torch.accelerator.set_device_index(0)


class TestEvent:
    def test_event_create(self):
        event = torch.Event(device="neuron")
        assert event.device.type == "neuron"
        assert event.device.index is None  # known once recorded
        assert event.event_id == 0

        event = torch.Event(device="neuron:1")
        assert event.device.type == "neuron"
        assert event.device.index is None
        assert event.event_id == 0

        event = torch.Event()  # the current accelerator
        assert event.device.type == "neuron"
        assert event.device.index is None
        assert event.event_id == 0

        event = torch.Stream(device="neuron:1").record_event()
        assert event.device.type == "neuron"
        assert event.device.index == 1
        assert event.event_id != 0

    def test_event_query(self):
        assert torch.Event().query()  # never recorded: nothing to wait for
        stream = torch.Stream(device="neuron:1")
        gate = _C._Gate()
        with stream:
            _C._enqueue_gate(1, gate)
        event = stream.record_event()
        assert not event.query()
        gate.open()
        event.synchronize()
        assert event.query()

    def test_event_record(self):
        stream = torch.Stream(device="neuron:1")
        event1 = stream.record_event()
        assert event1.event_id != 0
        event2 = stream.record_event()
        assert event2.event_id != 0
        assert event1.event_id != event2.event_id

    def test_event_elapsed_time(self):
        stream = torch.Stream(device="neuron:1")
        event1 = torch.Event(device="neuron:1", enable_timing=True)
        event1.record(stream)
        with stream:
            torch.neuron._sleep(0.02, 1)  # 20 ms of queued work between the events
        event2 = torch.Event(device="neuron:1", enable_timing=True)
        event2.record(stream)
        stream.synchronize()
        assert event1.query() and event2.query()
        assert event1.elapsed_time(event2) >= 20.0

    def test_event_wait_stream(self):
        stream1 = torch.Stream(device="neuron")
        stream2 = torch.Stream(device="neuron")
        event = stream1.record_event()
        stream2.wait_event(event)
        stream2.synchronize()
        assert event.query()

    def test_event_synchronize(self):
        event = torch.Event(device="neuron")
        assert event.query()
        stream = torch.Stream(device="neuron")
        with stream:
            torch.neuron._sleep(0.01)
        event.record(stream)
        event.synchronize()
        assert event.query()
        assert stream.query()

    def test_event_different_devices(self):
        event0 = torch.Event(device="neuron:0")
        event1 = torch.Event(device="neuron:1")
        event0.record(torch.Stream(device="neuron:0"))
        event1.record(torch.Stream(device="neuron:1"))
        assert event0.device.index == 0
        assert event1.device.index == 1

    def test_event_timing_disabled(self):
        event1 = torch.Event(device="neuron:1", enable_timing=False)
        event2 = torch.Event(device="neuron:1", enable_timing=False)
        stream = torch.Stream(device="neuron:1")
        event1.record(stream)
        event2.record(stream)
        stream.synchronize()
        with pytest.raises(
            ValueError, match="Both events must be created with argument 'enable_timing=True'."
        ):
            event1.elapsed_time(event2)

    def test_event_wait_event(self):
        stream1 = torch.Stream(device="neuron")
        stream2 = torch.Stream(device="neuron")
        event = stream1.record_event()
        stream2.wait_event(event)
        stream2.synchronize()
        assert event.query()

    def test_device_synchronization(self):
        torch.accelerator.set_device_index(1)
        x = torch.randn(100, 100, device="neuron")
        y = torch.randn(100, 100, device="neuron")
        z = torch.matmul(x, y)
        torch.accelerator.synchronize()
        assert torch.accelerator.current_device_index() == 1
        result = torch.sum(z)
        assert result.device == torch.device("neuron:1")
        torch.testing.assert_close(result.cpu(), (x.cpu() @ y.cpu()).sum(), rtol=1e-4, atol=1e-3)

    def test_blocking_vs_non_blocking_synchronization(self):
        stream = torch.Stream(device="neuron:0")
        event = torch.Event(device="neuron:0")
        assert event.query()
        assert event.event_id == 0
        assert event.device.index is None  # until recorded

        gate = _C._Gate()
        with stream:
            _C._enqueue_gate(0, gate)
        event.record(stream)
        assert event.event_id != 0
        assert not event.query()  # non-blocking: the held work has not run
        gate.open()
        event.synchronize()  # blocking
        assert event.query()
        assert event.device.index == 0

        event2 = stream.record_event()
        assert event2.event_id != 0
        for _ in range(4):
            event2.query()
        event2.synchronize()
        assert event2.query()

    def test_interleaved_stream_operations(self):
        stream = torch.Stream(device="neuron:0")
        x = torch.randn(50, 50, device="neuron:0")
        y = torch.randn(50, 50, device="neuron:0")
        event1 = stream.record_event()
        z1 = torch.matmul(x, y)
        event2 = stream.record_event()
        assert event1.event_id != event2.event_id
        torch.matmul(z1, x)
        stream.synchronize()
        assert event1.query() and event2.query()

    def test_multiple_streams_wait_same_event(self):
        stream1 = torch.Stream(device="neuron:0")
        stream2 = torch.Stream(device="neuron:0")
        stream3 = torch.Stream(device="neuron:0")
        assert stream1.stream_id != stream2.stream_id != stream3.stream_id
        # openreg makes x and y on the default stream and its event orders nothing; neuron's
        # streams run concurrently, as CUDA's do, so that would race: x and y are made on
        # stream1 and its event orders them before both readers.
        with stream1:
            x = torch.randn(30, 30, device="neuron:0")
            y = torch.randn(30, 30, device="neuron:0")
        event = stream1.record_event()
        stream2.wait_event(event)
        stream3.wait_event(event)
        with stream2:
            z2 = torch.matmul(x, y)
        with stream3:
            z3 = torch.matmul(x, y)
        torch.accelerator.synchronize()
        assert event.query()
        assert torch.equal(z2.sum().cpu(), z3.sum().cpu())
        torch.testing.assert_close(z2.cpu(), x.cpu() @ y.cpu())

    def test_event_lifecycle(self):
        stream = torch.Stream(device="neuron:0")
        event1 = torch.Event(device="neuron:0")
        event1.record(stream)
        stream.synchronize()
        assert event1.query()
        event1.record(stream)  # reuse
        stream.synchronize()
        assert event1.query()
        events = []
        for _ in range(2):
            event = torch.Event(device="neuron:0")
            event.record(stream)
            events.append(event)
        stream.synchronize()
        assert all(event.query() for event in events)

    def test_generic_stream_event(self):
        stream = torch.Stream("neuron")
        assert stream.device_index == torch.accelerator.current_device_index()
        event1 = torch.Event("neuron", enable_timing=True)
        event2 = torch.Event("neuron", enable_timing=True)
        a = torch.randn(1000, device="neuron")
        b = torch.randn(1000, device="neuron")
        with torch.accelerator.device_index(stream.device_index):
            _ = a + b
            event1.record(stream)
            event1.synchronize()
            torch.neuron._sleep(0.005)  # on the current stream, recorded by event2
            event2.record()  # without a stream: the current one
            event2.synchronize()
            assert event1.elapsed_time(event2) > 0

    def test_stream_compatibility(self):
        s1 = torch.Stream(device="neuron:0")
        s2 = torch.Stream(device="neuron:0")
        original_stream = torch.accelerator.current_stream()
        torch.accelerator.set_stream(s1)
        assert torch.accelerator.current_stream().stream_id == s1.stream_id
        torch.accelerator.set_stream(s2)
        assert torch.accelerator.current_stream().stream_id == s2.stream_id
        torch.accelerator.set_stream(original_stream)
        assert torch.accelerator.current_stream() == original_stream
