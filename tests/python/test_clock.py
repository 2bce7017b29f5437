"""The modeled device clock: stream timelines, modeled event times, copies, vtrn.clock()."""

import re

import pytest
import torch
from test_distributed import SCRIPTS, vtrn_run

import vtrn

# Metrics sum picoseconds (truncated per kernel): comparisons with them allow 1e-6.
# Guideline to Avoid Under-Utilizing DMA Bandwidth (NKI): a DMA's fixed start cost, "~1,300 ns";
# vtrn charges it once per executable launch and once per host copy.
LAUNCH_US = 1.3
DMA_START_US = 1.3
# Trainium2 Architecture Guide for NKI, memory-hierarchy figure: host DRAM "~16 GB/s".
HOST_BYTES_PER_US = 16e9 / 1e6


def _fresh_span():
    torch.neuron.synchronize()
    vtrn.reset_clock()


def _modeled_us():
    return vtrn.metrics()["modeled_device_time_us"]


def test_a_kernel_takes_its_modeled_time_after_the_launch_overhead():
    a = torch.randn(1024, 1024, device="neuron")
    b = torch.randn(1024, 1024, device="neuron")
    _fresh_span()
    start, end = torch.neuron.Event(enable_timing=True), torch.neuron.Event(enable_timing=True)
    before = _modeled_us()
    start.record()
    (a @ b).sum()
    end.record()
    end.synchronize()
    kernels_us = _modeled_us() - before  # the cost model's time of mm and sum
    assert kernels_us > 0
    # Two launches, each one overhead before its kernel.
    assert start.elapsed_time(end) == pytest.approx((kernels_us + 2 * LAUNCH_US) / 1e3, rel=1e-6)
    stream = vtrn.clock()["streams"][0]
    assert stream["busy_total_us"] == pytest.approx(kernels_us, rel=1e-6)
    assert sum(stream["busy_us"].values()) == pytest.approx(kernels_us, rel=1e-6)
    # A 1024^3 float32 matmul is bound by the Tensor engine.
    assert stream["busy_us"]["tensor"] > 0
    assert set(stream["busy_us"]) == {"tensor", "vector", "scalar", "gpsimd", "dma", "collective"}


def test_a_host_read_is_a_dma_at_the_host_transfer_bandwidth():
    x = torch.empty(1 << 20, device="neuron")  # 4 MiB, no kernel
    _fresh_span()
    x.cpu()
    clock = vtrn.clock()
    expected = DMA_START_US + (4 << 20) / HOST_BYTES_PER_US  # 1.3 + 262.144 us
    assert clock["streams"][0]["busy_us"]["dma"] == pytest.approx(expected, rel=1e-6)
    assert clock["span_us"] == pytest.approx(expected, rel=1e-6)


def test_elapsed_time_is_modeled_and_wall_time_has_its_own_name():
    start, end = torch.neuron.Event(enable_timing=True), torch.neuron.Event(enable_timing=True)
    start.record()
    torch.neuron._sleep(0.05)  # 50 ms of device time, and of host time
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) == pytest.approx(50.0 + LAUNCH_US / 1e3, rel=1e-6)
    assert torch.neuron.wall_elapsed_time(start, end) >= 45.0
    with pytest.raises(TypeError, match="wall_elapsed_time: end must be a neuron torch.Event"):
        torch.neuron.wall_elapsed_time(start, 3)


def test_an_idle_stream_reports_the_span_as_idle_and_host_syncs_order_streams():
    a = torch.randn(512, 512, device="neuron")
    _fresh_span()
    side = torch.neuron.Stream()
    before = _modeled_us()
    a.mul(2)  # default stream
    torch.neuron.synchronize()  # the host waits: later work on any stream starts after it
    with torch.neuron.stream(side):
        a.add(1)
    mul_us, add_us = None, None
    total = _modeled_us() - before
    clock = vtrn.clock()
    main, other = clock["streams"][0], clock["streams"][side.stream_id]
    mul_us, add_us = main["busy_total_us"], other["busy_total_us"]
    assert mul_us + add_us == pytest.approx(total, rel=1e-6)
    # Serialized by the synchronize: the span is both kernels and both launches.
    assert clock["span_us"] == pytest.approx(total + 2 * LAUNCH_US, rel=1e-6)
    assert main["idle_us"] == pytest.approx(clock["span_us"] - mul_us, rel=1e-6)
    assert other["idle_us"] == pytest.approx(clock["span_us"] - add_us, rel=1e-6)


def test_a_compute_stream_and_a_collective_stream_overlap():
    result = vtrn_run("--nproc-per-node", "2", str(SCRIPTS / "overlap_clock.py"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert sorted(re.findall(r"rank (\d) OK", result.stdout)) == ["0", "1"], result.stdout


def test_a_collective_starts_when_its_last_member_arrives():
    # Rank 1 runs one more matmul before an all-reduce: rank 0's stream ends at rank 1's arrival
    # plus the collective's time, and its idle time grows by rank 1's lead (the script checks
    # both against the cost model's time of that matmul and one launch).
    result = vtrn_run("--nproc-per-node", "2", str(SCRIPTS / "straggler_clock.py"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    waits = dict(re.findall(r"rank (\d) OK .* idle \+([0-9.]+) us", result.stdout))
    assert sorted(waits) == ["0", "1"], result.stdout
    assert float(waits["0"]) > 0 and float(waits["1"]) == 0
