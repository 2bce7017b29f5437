"""Asynchronous execution, streams and events, as FSDP2's all-gather/reduce-scatter streams use them."""

import os

import pytest
import torch
from conftest import run_python

import vtrn

SLOW = 0.3  # seconds of queued work that holds a stream


def test_work_is_queued_and_host_reads_wait():
    t = torch.zeros(4, device="neuron")
    done = torch.neuron.Event()
    gate = vtrn._C._Gate()
    vtrn._C._enqueue_gate(0, gate)
    t.fill_(5.0)
    done.record()
    assert not done.query()  # enqueuing returned while the work waits at the gate
    gate.open()
    assert t.cpu().tolist() == [5.0] * 4  # .cpu() waited for it
    assert done.query()


@pytest.mark.parametrize("use_event", [True, False], ids=["with-event", "without-event"])
def test_two_streams_are_ordered_only_by_an_event(use_event):
    # The producer is held at a gate, then writes; the consumer copies what it wrote. With the
    # event wait the copy sees the write. Without it the streams are independent and the copy
    # runs while the producer is still held: the second case is what makes the first fail
    # when its wait is removed.
    src = torch.zeros(1024, device="neuron")
    dst = torch.full((1024,), -1.0, device="neuron")
    # Both fills ran on the default stream, which the side streams do not wait for (as on
    # CUDA): finish them before the side streams touch the tensors.
    torch.neuron.current_stream().synchronize()
    producer, consumer = torch.neuron.Stream(), torch.neuron.Stream()
    gate = vtrn._C._Gate()
    with torch.neuron.stream(producer):
        vtrn._C._enqueue_gate(torch.neuron.current_device(), gate)
        src.fill_(1.0)
        written = producer.record_event()
    if use_event:
        consumer.wait_event(written)
        gate.open()  # the consumer could only finish after the producer's write
    with torch.neuron.stream(consumer):
        dst.copy_(src)
    consumer.synchronize()
    gate.open()
    producer.synchronize()
    expected = torch.ones(1024) if use_event else torch.zeros(1024)
    assert torch.equal(dst.cpu(), expected)


def test_wait_stream_orders_all_prior_work():
    side = torch.neuron.Stream()
    x = torch.zeros(8, device="neuron")
    with torch.neuron.stream(side):
        torch.neuron._sleep(SLOW)
        x.fill_(3.0)
    main = torch.neuron.current_stream()
    main.wait_stream(side)
    y = torch.empty(8, device="neuron")
    y.copy_(x)  # on the main stream, after side's work
    assert y.cpu().tolist() == [3.0] * 8


def test_generic_torch_stream_and_event_work():
    s = torch.Stream(device="neuron")
    assert s.device.type == "neuron"
    e = torch.Event(device="neuron", enable_timing=True)
    e.record(s)
    e.synchronize()
    assert e.query() and s.query()
    with torch.neuron.stream(s):
        assert torch.neuron.current_stream() == s
        assert torch.accelerator.current_stream() == s
    assert torch.neuron.current_stream() == torch.neuron.default_stream()
    assert isinstance(torch.neuron.Event(), torch.neuron.Event)
    prioritized = torch.neuron.Stream(priority=-1)  # FSDP2 asks for this
    assert prioritized != torch.neuron.default_stream()


def test_event_elapsed_time_covers_the_queued_work():
    start, end = torch.neuron.Event(enable_timing=True), torch.neuron.Event(enable_timing=True)
    start.record()
    torch.neuron._sleep(0.1)
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 100.0 * 0.95


def test_record_stream_is_accepted():
    s = torch.neuron.Stream()
    t = torch.ones(16, device="neuron")
    s.wait_stream(torch.neuron.current_stream())  # t is written on the default stream
    t.record_stream(s)
    with torch.neuron.stream(s):
        u = t * 2
    del t
    s.synchronize()
    assert u.cpu().tolist() == [2.0] * 16


def test_queued_error_surfaces_at_the_next_sync_naming_the_op():
    vtrn._C._enqueue_failure(0, "device fault for testing")
    with pytest.raises(
        RuntimeError,
        match=r"queued op 'vtrn::_fail' on neuron:0 stream 0 failed: device fault "
        r"for testing",
    ):
        torch.neuron.synchronize()
    # The error is reported once, and the device keeps working.
    torch.neuron.synchronize()
    assert (torch.ones(2, device="neuron") + 1).cpu().tolist() == [2.0, 2.0]


def test_queued_error_surfaces_at_a_host_read():
    t = torch.ones(2, device="neuron")
    vtrn._C._enqueue_failure(0, "fault before read")
    with pytest.raises(RuntimeError, match="fault before read"):
        t.cpu()


def test_launch_blocking_raises_at_the_op():
    env = dict(os.environ, NEURON_LAUNCH_BLOCKING="1")
    result = run_python(
        """
        import torch, vtrn
        t = torch.zeros(4, device="neuron")
        torch.neuron._sleep(0.2)
        # The queued work had run before the call returned.
        print("synchronous:", torch.neuron.current_stream().query())
        try:
            vtrn._C._enqueue_failure(0, "fault")
            print("not raised")
        except RuntimeError as e:
            print("raised at the op:", e)
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "synchronous: True" in result.stdout
    assert "raised at the op: queued op 'vtrn::_fail'" in result.stdout


def test_forked_child_can_use_the_device():
    # DataLoader workers fork after the parent used the device; the child gets no threads.
    import multiprocessing

    torch.ones(4, device="neuron").fill_(1.0).cpu()

    def child(queue):
        t = torch.zeros(4, device="neuron")
        t.fill_(7.0)
        queue.put(t.cpu().tolist())

    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=child, args=(queue,))
    proc.start()
    proc.join(timeout=60)
    assert proc.exitcode == 0
    assert queue.get(timeout=5) == [7.0] * 4


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def test_thousands_of_streams_keep_the_thread_count_bounded():
    x = torch.arange(8.0, device="neuron")
    before = thread_count()
    for i in range(3000):
        s = torch.neuron.Stream()
        s.wait_stream(torch.neuron.current_stream())
        with torch.neuron.stream(s):
            y = x + i
        s.synchronize()  # y was written on s, which the default stream does not wait for
        assert y.cpu().tolist() == [float(v + i) for v in range(8)]
        del s, y
    # At most every stream of the device's pools got a worker: 4 priorities x 32.
    assert thread_count() - before <= 4 * 32


def test_new_streams_cycle_through_a_pool_of_32_per_priority():
    streams = [torch.neuron.Stream() for _ in range(32)]
    assert len({s.stream_id for s in streams}) == 32
    assert torch.neuron.default_stream() not in streams
    again = torch.neuron.Stream()  # the 33rd is the first again, as on CUDA
    assert again == streams[0] and hash(again) == hash(streams[0])
    assert all(s.priority == 0 for s in streams)
    high = [torch.neuron.Stream(priority=-1) for _ in range(32)]
    assert not set(s.stream_id for s in high) & set(s.stream_id for s in streams)


def test_stream_priorities_match_cuda():
    assert torch.neuron.Stream.priority_range() == (0, -3)
    assert torch.neuron.default_stream().priority == 0
    assert torch.neuron.Stream(priority=-2).priority == -2
    # Out-of-range priorities are clamped into the range, as CUDA clamps them.
    assert torch.neuron.Stream(priority=-10).priority == -3
    assert torch.neuron.Stream(priority=3).priority == 0
    assert torch.Stream(device="neuron", priority=-1).stream_id in {
        torch.neuron.Stream(priority=-1).stream_id for _ in range(32)
    }


def test_a_stream_id_outside_the_pool_is_an_error():
    bogus = torch.neuron.Stream(stream_id=10_000, device_index=0, device_type=20)
    with pytest.raises(RuntimeError, match="neuron:0 has no stream 10000: stream ids are 0"):
        bogus.synchronize()


def test_assert_async_checks_on_the_stream_and_raises_at_the_next_sync(clean_tracking):
    # A true value passes, without a host read and without the CPU fallback.
    ok = torch.ones(3, device="neuron").sum() > 0
    torch._assert_async(ok)
    torch._assert_async(ok, "never raised")
    torch.neuron.synchronize()
    # A false one raises the CPU kernel's message where the work is waited for, as CUDA's
    # device-side assert does.
    torch._assert_async(torch.zeros((), device="neuron"), "position_ids exceed 7")
    with pytest.raises(RuntimeError, match="position_ids exceed 7"):
        torch.neuron.synchronize()
    torch._assert_async(torch.tensor(0, device="neuron"))
    with pytest.raises(RuntimeError, match="Expected Tensor with single nonzero value"):
        torch.neuron.synchronize()
    assert vtrn.get_fallback_ops() == []
    assert "aten::_assert_async.msg" in vtrn.get_executed_ops()
    # The element count is checked at the call, with the CPU's messages.
    for bad in (torch.ones(2, device="neuron"), torch.ones(0, device="neuron")):
        with pytest.raises(RuntimeError) as got:
            torch._assert_async(bad)
        with pytest.raises(RuntimeError) as expected:
            torch._assert_async(bad.cpu())
        assert str(got.value) == str(expected.value)
