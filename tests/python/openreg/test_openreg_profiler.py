# Adapted for the `neuron` device from torch_openreg's tests/test_profiler.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""torch.autograd.profiler.profile(use_device="neuron") and torch.profiler.profile with the
PrivateUse1 activity: ops are recorded, CPU times are real durations, nothing is logged.

Device activity (kernel rows on a neuron track) is not reported yet; these tests check the CPU
side, which is what a PrivateUse1 device without a Kineto plugin gets."""

import json
import os
import subprocess
import sys
import textwrap
import time

import torch
import torch.nn as nn
from torch.autograd.profiler import profile as autograd_profile
from torch.profiler import ProfilerActivity, record_function


class SimpleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 20)
        self.fc2 = nn.Linear(20, 10)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def _names(prof):
    return [e.name for e in prof.function_events]


class TestProfilerClock:
    """What openreg's suite does not check: the CPU times are durations on the wall clock."""

    def _check_step_time(self, prof, body_us, outer_us):
        (step,) = [e for e in prof.key_averages() if e.key == "step"]
        # The range encloses the measured body and lies within the measured outer span (5% and
        # 200us of slack for the profiler's approximate clock).
        assert body_us * 0.95 - 200 <= step.cpu_time_total <= outer_us * 1.05 + 200
        for avg in prof.key_averages():
            assert 0 <= avg.self_cpu_time_total <= avg.cpu_time_total <= outer_us * 1.05 + 200

    def _work(self):
        x = torch.randn(64, 64, device="neuron")
        for _ in range(5):
            x = torch.tanh(x @ x)
        return x.cpu()

    def test_cpu_time_is_the_wall_time_use_device(self):
        with autograd_profile(use_device="neuron") as prof:
            t0 = time.perf_counter_ns()
            with record_function("step"):
                t1 = time.perf_counter_ns()
                self._work()
                t2 = time.perf_counter_ns()
            t3 = time.perf_counter_ns()
        self._check_step_time(prof, (t2 - t1) / 1e3, (t3 - t0) / 1e3)

    def test_cpu_time_is_the_wall_time_activities(self):
        activities = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
        with torch.profiler.profile(activities=activities) as prof:
            t0 = time.perf_counter_ns()
            with record_function("step"):
                t1 = time.perf_counter_ns()
                self._work()
                t2 = time.perf_counter_ns()
            t3 = time.perf_counter_ns()
        self._check_step_time(prof, (t2 - t1) / 1e3, (t3 - t0) / 1e3)
        assert any(e.name == "aten::mm" for e in prof.events())

    def test_legacy_stub_mode(self):
        # use_kineto=False: the PrivateUse1 fallback state, timed through the device's stubs.
        with autograd_profile(use_device="neuron", use_kineto=False, use_cpu=True) as prof:
            with record_function("step"):
                self._work()
        (step,) = [e for e in prof.key_averages() if e.key == "step"]
        assert step.cpu_time_total > 0

    def test_nothing_is_logged(self):
        # PyTorch logs a failing profiler callback to stderr and carries on: only a fresh
        # process shows whether any was.
        code = textwrap.dedent(
            """
            import torch, vtrn
            from torch.profiler import ProfilerActivity
            vtrn.register()
            x = torch.randn(8, 8, device="neuron", requires_grad=True)
            with torch.autograd.profiler.profile(use_device="neuron"):
                (x @ x).sum().backward()
            with torch.profiler.profile(
                activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
            ):
                (x * 2).cpu()
            print("done")
            """
        )
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "done"
        for bad in ("used in profiler but not enabled", "INTERNAL ASSERT", "Exception in"):
            assert bad not in out.stderr, out.stderr


class TestProfiler:
    def test_profiler_basic(self):
        with autograd_profile(use_device="neuron") as prof:
            x = torch.randn(10, 10, device="neuron")
            y = torch.randn(10, 10, device="neuron")
            x + y
        assert len(prof.function_events) > 0
        assert any("aten::" in name for name in _names(prof))

    def test_profiler_with_record_function(self):
        with autograd_profile(use_device="neuron") as prof:
            with record_function("neuron_custom_operation"):
                x = torch.randn(10, 10, device="neuron")
                y = torch.randn(10, 10, device="neuron")
                x @ y
        assert any("neuron_custom_operation" in name for name in _names(prof))

    def test_profiler_multiple_streams(self):
        stream1 = torch.Stream(device="neuron")
        stream2 = torch.Stream(device="neuron")
        with autograd_profile(use_device="neuron") as prof:
            with stream1:
                x = torch.randn(10, 10, device="neuron")
                x + x
            with stream2:
                z = torch.randn(10, 10, device="neuron")
                z * z
        assert any(name == "aten::add" for name in _names(prof))
        assert any(name == "aten::mul" for name in _names(prof))

    def test_profiler_event_synchronization(self):
        with autograd_profile(use_device="neuron") as prof:
            stream = torch.Stream(device="neuron")
            event = torch.Event(device="neuron", enable_timing=True)
            with stream:
                x = torch.randn(10, 10, device="neuron")
                event.record(stream)
                x + x
            event.synchronize()
        assert len(prof.function_events) > 0
        assert event.query()

    def test_profiler_nested_record_function(self):
        with autograd_profile(use_device="neuron") as prof:
            with record_function("outer_operation"):
                x = torch.randn(10, 10, device="neuron")
                with record_function("inner_operation_1"):
                    x + x
                with record_function("inner_operation_2"):
                    y = x + x
                    y * y
        events = {e.name: e for e in prof.function_events}
        for name in ("outer_operation", "inner_operation_1", "inner_operation_2"):
            assert name in events
        outer = events["outer_operation"]
        for inner in ("inner_operation_1", "inner_operation_2"):
            assert outer.time_range.start <= events[inner].time_range.start
            assert events[inner].time_range.end <= outer.time_range.end

    def test_profiler_key_averages(self):
        with autograd_profile(use_device="neuron") as prof:
            for _ in range(10):
                x = torch.randn(10, 10, device="neuron")
                x + x
        key_averages = prof.key_averages()
        assert len(key_averages) > 0
        (add,) = [avg for avg in key_averages if avg.key == "aten::add"]
        assert add.count == 10
        for avg in key_averages:
            assert avg.count >= 0
            assert avg.cpu_time_total >= 0

    def test_profiler_table_output(self):
        with autograd_profile(use_device="neuron") as prof:
            x = torch.randn(10, 10, device="neuron")
            y = x + x
            x @ y
        table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
        assert "aten::add" in table
        assert "-" not in table.split("Self CPU time total:")[1].split("\n")[0]

    def test_profiler_export_chrome_trace(self, tmp_path):
        with autograd_profile(use_device="neuron") as prof:
            x = torch.randn(10, 10, device="neuron")
            y = x + x
            x @ y
        trace_file = tmp_path / "trace.json"
        prof.export_chrome_trace(str(trace_file))
        trace_data = json.loads(trace_file.read_text())
        events = trace_data["traceEvents"] if isinstance(trace_data, dict) else trace_data
        ops = [e for e in events if e.get("name") == "aten::add"]
        assert ops and all(e["dur"] >= 0 for e in ops)

    def test_profiler_with_shapes(self):
        with autograd_profile(use_device="neuron", record_shapes=True) as prof:
            x = torch.randn(10, 20, device="neuron")
            y = torch.randn(20, 30, device="neuron")
            x @ y
        key_averages = prof.key_averages(group_by_input_shape=True)
        (mm,) = [avg for avg in key_averages if avg.key == "aten::mm"]
        assert mm.input_shapes == [[10, 20], [20, 30]]

    def test_profiler_default_stream_initialization(self):
        with autograd_profile(use_device="neuron") as prof:
            x = torch.randn(10, 10, device="neuron")
            x + 1.0
        assert len(prof.function_events) > 0

    def test_profiler_stream_event_correlation(self):
        stream1 = torch.Stream(device="neuron")
        stream2 = torch.Stream(device="neuron")
        with autograd_profile(use_device="neuron") as prof:
            with record_function("stream1_ops"):
                with stream1:
                    x = torch.randn(10, 10, device="neuron")
                    x + x
            with record_function("stream2_ops"):
                with stream2:
                    z = torch.randn(10, 10, device="neuron")
                    z * z
        assert "stream1_ops" in _names(prof)
        assert "stream2_ops" in _names(prof)

    def test_profiler_elapsed_time(self):
        with autograd_profile(use_device="neuron") as prof:
            stream = torch.Stream(device="neuron")
            with stream:
                x = torch.randn(100, 100, device="neuron")
                y = torch.randn(100, 100, device="neuron")
                for _ in range(10):
                    x = x @ y
            stream.synchronize()
        compute_events = [e for e in prof.function_events if e.name in ("aten::mm", "aten::matmul")]
        assert compute_events
        assert sum(e.cpu_time_total for e in compute_events) > 0

    def test_profiler_context_manager_multiple_times(self):
        for _ in range(3):
            with autograd_profile(use_device="neuron") as prof:
                x = torch.randn(10, 10, device="neuron")
                x = x + 1
            assert "aten::add" in _names(prof)

    def test_profiler_with_backward_pass(self):
        with autograd_profile(use_device="neuron", record_shapes=True) as prof:
            x = torch.randn(10, 10, device="neuron", requires_grad=True)
            y = torch.randn(10, 10, device="neuron", requires_grad=True)
            (x @ y).sum().backward()
        names = _names(prof)
        assert any("aten::mm" in n or "aten::matmul" in n for n in names)
        assert any("backward" in n.lower() for n in names)


class TestProfilerEdgeCases:
    def test_profiler_empty_operations(self):
        with autograd_profile(use_device="neuron") as prof:
            pass
        assert isinstance(prof.function_events, list)

    def test_profiler_exception_handling(self):
        try:
            with autograd_profile(use_device="neuron") as prof:
                torch.randn(10, 10, device="neuron")
                raise RuntimeError("Test exception")
        except RuntimeError as e:
            assert str(e) == "Test exception"
        assert isinstance(prof.function_events, list)

    def test_profiler_large_number_of_events(self):
        with autograd_profile(use_device="neuron") as prof:
            x = torch.randn(10, 10, device="neuron")
            for i in range(100):
                with record_function(f"op_{i}"):
                    x = x + 1
        assert len(prof.function_events) > 100


class TestProfilerMultiDevice:
    def test_profiler_single_device(self):
        with autograd_profile(use_device="neuron") as prof:
            x = torch.randn(10, 10, device="neuron:0")
            x + x
        assert len(prof.function_events) > 0

    def test_profiler_multiple_devices(self):
        with autograd_profile(use_device="neuron") as prof:
            x0 = torch.randn(10, 10, device="neuron:0")
            x1 = torch.randn(10, 10, device="neuron:1")
            x0 + x0
            x1 + x1
        adds = [e for e in prof.function_events if e.name == "aten::add"]
        assert len(adds) == 2


class TestProfilerIntegration:
    def test_profiler_with_simple_model(self):
        model = SimpleModel().to("neuron")
        x = torch.randn(32, 10, device="neuron")
        with autograd_profile(use_device="neuron") as prof:
            model(x)
        assert any("linear" in n.lower() or "addmm" in n.lower() for n in _names(prof))

    def test_profiler_with_training_step(self):
        model = SimpleModel().to("neuron")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        criterion = nn.MSELoss()
        x = torch.randn(32, 10, device="neuron")
        target = torch.randn(32, 10, device="neuron")
        with autograd_profile(use_device="neuron", record_shapes=True) as prof:
            with record_function("forward"):
                output = model(x)
            with record_function("loss"):
                loss = criterion(output, target)
            with record_function("backward"):
                loss.backward()
            with record_function("optimizer_step"):
                optimizer.step()
                optimizer.zero_grad()
        names = _names(prof)
        for stage in ("forward", "loss", "backward", "optimizer_step"):
            assert stage in names

    def test_profiler_with_multiple_batches(self):
        model = SimpleModel().to("neuron")
        with autograd_profile(use_device="neuron") as prof:
            for i in range(5):
                with record_function(f"batch_{i}"):
                    model(torch.randn(16, 10, device="neuron"))
        names = _names(prof)
        for i in range(5):
            assert f"batch_{i}" in names

    def test_profiler_table_with_model(self):
        model = SimpleModel().to("neuron")
        x = torch.randn(32, 10, device="neuron")
        with autograd_profile(use_device="neuron", record_shapes=True) as prof:
            for _ in range(10):
                model(x)
        table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=20)
        assert any(keyword in table.lower() for keyword in ["linear", "addmm", "relu"])

    def test_profiler_with_inference(self):
        model = SimpleModel().to("neuron").eval()
        with autograd_profile(use_device="neuron") as prof:
            with torch.no_grad():
                for _ in range(5):
                    model(torch.randn(16, 10, device="neuron"))
        names = _names(prof)
        assert names
        assert not any("backward" in n.lower() for n in names)

    def test_profiler_with_data_transfer(self):
        with autograd_profile(use_device="neuron") as prof:
            x_cpu = torch.randn(50, 50)
            with record_function("to_neuron"):
                x_neuron = x_cpu.to("neuron")
            with record_function("compute_neuron"):
                y = x_neuron @ x_neuron
            with record_function("to_cpu"):
                y.cpu()
        names = _names(prof)
        for name in ("to_neuron", "compute_neuron", "to_cpu"):
            assert name in names

    def test_profiler_with_mixed_operations(self):
        with autograd_profile(use_device="neuron", record_shapes=True) as prof:
            x = torch.randn(20, 20, device="neuron")
            y = x + 1.0
            z = torch.matmul(x, y)
            w = torch.relu(z)
            w.transpose(0, 1).sum()
        names = set(_names(prof))
        assert {"aten::add", "aten::matmul", "aten::relu", "aten::sum"} <= names


class TestProfilerPerformance:
    def test_profiler_overhead(self):
        model = SimpleModel().to("neuron")
        x = torch.randn(32, 10, device="neuron")
        for _ in range(5):
            model(x)
        with autograd_profile(use_device="neuron") as prof:
            for _ in range(100):
                model(x)
        linears = [e for e in prof.function_events if e.name == "aten::linear"]
        assert len(linears) == 200


class TestTracerHooks:
    """openreg's tracer hooks are its own; the events they add are what any backend shows."""

    def test_cpu_fallback_hook_captures_ops(self):
        with autograd_profile(use_device="neuron") as prof:
            x = torch.randn(10, 10, device="neuron")
            y = torch.randn(10, 10, device="neuron")
            x + y
            x * y
        names = _names(prof)
        assert any("aten::add" in n for n in names)
        assert any("aten::mul" in n for n in names)

    def test_copy_from_hook_captures_transfer(self):
        with autograd_profile(use_device="neuron") as prof:
            torch.randn(10, 10).to("neuron")
        assert any("aten::_copy_from" in n or "aten::copy_" in n for n in _names(prof))

    def test_abs_kernel_hook_captures_event(self):
        with autograd_profile(use_device="neuron") as prof:
            x = torch.randn(10, 10, device="neuron")
            torch.abs(x)
        assert any("aten::abs" in n for n in _names(prof))

    def test_ops_work_without_profiler(self):
        x = torch.randn(10, 10, device="neuron")
        y = torch.randn(10, 10, device="neuron")
        z = x + y
        assert z.shape == (10, 10)
        torch.testing.assert_close(z.cpu(), x.cpu() + y.cpu())
