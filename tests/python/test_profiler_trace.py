"""torch.profiler with ProfilerActivity.PrivateUse1: the modeled device timeline in the trace,
each device event linked to the ATen op that issued it."""

import collections
import json
import os
import sys

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import vtrn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import llama_step  # noqa: E402

DEVICE_CATS = {"kernel", "gpu_memcpy"}


def test_privateuse1_is_a_supported_activity():
    assert ProfilerActivity.PrivateUse1 in torch.profiler.supported_activities()


# Ops that only make or reshape tensor metadata: they run on the host and queue no device work.
METADATA_OPS = {
    "aten::as_strided", "aten::empty.memory_format", "aten::empty_strided", "aten::view",
    "aten::_reshape_alias", "aten::resize_", "aten::set_.source_Storage", "aten::set_",
    "aten::set_.source_Tensor", "aten::set_.source_Storage_storage_offset", "aten::unfold",
    "aten::view_as_real", "aten::view_as_complex", "aten::record_stream",
}  # fmt: skip


@pytest.fixture(scope="module")
def llama_profile(tmp_path_factory):
    stepper = llama_step.Stepper("neuron", size="tiny")
    stepper.step(0)  # compiles every op outside the profile
    torch.neuron.synchronize()
    vtrn.reset_clock()
    vtrn.clear_op_tracking()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        for i in (1, 2, 3):
            stepper.step(i)
        stepper.synchronize()
    clock = vtrn.clock()
    executed = set(vtrn.get_executed_ops())
    path = tmp_path_factory.mktemp("trace") / "llama.json"
    prof.export_chrome_trace(str(path))
    with open(path) as f:
        trace = json.load(f)
    return prof, clock, trace, executed


def _device_events(trace):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS]


def test_every_native_op_has_a_device_event(llama_profile):
    prof, _, trace, executed = llama_profile
    device = _device_events(trace)
    # Every op that ran natively on neuron (vtrn's op tracking) and does device work has device
    # events under its own name, and nothing else does.
    assert executed
    assert {e["name"] for e in device} == executed - METADATA_OPS
    # Each device event is linked to the call of its op: the ATen op of the trace with the
    # event's correlation id (an ac2g arrow) is that op.
    ops = {
        e["args"]["External id"]: e["name"]
        for e in trace["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and "External id" in e.get("args", {})
    }
    for e in device:
        assert ops.get(e["args"]["correlation"]) == e["name"].split(".")[0], e
    # key_averages() shows device time per op.
    averages = {a.key: a for a in prof.key_averages()}
    mm = sum(e["dur"] for e in device if e["name"] == "aten::mm")
    assert averages["aten::mm"].device_time_total == pytest.approx(mm, rel=1e-3)
    assert mm > 0


def test_device_events_do_not_overlap_on_a_stream(llama_profile):
    _, _, trace, _ = llama_profile
    rows = collections.defaultdict(list)
    for e in _device_events(trace):
        rows[(e["pid"], e["tid"])].append((e["ts"], e["dur"]))
    assert rows
    for row in rows.values():
        row.sort()
        for (ts, dur), (next_ts, _) in zip(row, row[1:]):
            assert next_ts >= ts + dur - 2e-3  # the JSON rounds to ns


def test_device_durations_add_up_to_the_clock(llama_profile):
    _, clock, trace, _ = llama_profile
    durations = sum(e["dur"] for e in _device_events(trace))
    busy = sum(s["busy_total_us"] for s in clock["streams"].values())
    assert busy > 0
    assert durations == pytest.approx(busy, rel=0.01)


def test_the_trace_is_chrome_trace_format(llama_profile):
    _, _, trace, _ = llama_profile
    events = trace["traceEvents"]
    for e in _device_events(trace):
        assert {"ph", "cat", "name", "pid", "tid", "ts", "dur", "args"} <= set(e)
    flows = [e for e in events if e.get("cat") == "ac2g"]
    starts = {e["id"]: e for e in flows if e["ph"] == "s"}
    ends = [e for e in flows if e["ph"] == "f"]
    assert ends and all(e["id"] in starts for e in ends)


def test_neuron_profiler_writes_the_trace(tmp_path):
    import torch_neuronx

    x = torch.randn(64, 64, device="neuron")
    with torch_neuronx.NeuronProfiler(
        pytorch_activities=[ProfilerActivity.CPU], neuron_output_dir=str(tmp_path)
    ) as p:
        (x @ x).sum().item()
    with open(tmp_path / "pytorch_trace.json") as f:
        trace = json.load(f)
    assert any(e["name"] == "aten::mm" for e in _device_events(trace))
    assert p.profiler.key_averages() is not None
    with pytest.raises(ValueError, match=r"unknown event_filters keys \['cores'\]"):
        torch_neuronx.NeuronProfiler(event_filters={"cores": [0]})
