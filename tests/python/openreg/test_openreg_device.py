# Adapted for the `neuron` device from torch_openreg's tests/test_device.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""Device management: count, current device, context managers, capability, fork and spawn."""

import multiprocessing
import os
import subprocess
import sys
import textwrap
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch


def _multiprocessing_worker(device_idx, result_queue):
    """Runs in a spawned process: a matmul on device ``device_idx``."""
    try:
        import vtrn

        vtrn.register()
        torch.accelerator.set_device_index(device_idx)
        x = torch.ones(10, 10, device="neuron")
        y = torch.full((10, 10), 2.0, device="neuron")
        result_queue.put(("success", device_idx, torch.matmul(x, y).sum().item()))
    except Exception as e:  # noqa: BLE001 - reported to the parent
        result_queue.put(("error", device_idx, repr(e)))


@pytest.fixture(autouse=True)
def _restore_device():
    original = torch.accelerator.current_device_index()
    yield
    torch.accelerator.set_device_index(original)


def _dtypes_the_device_holds():
    """Every torch dtype a tensor can be created in on neuron and copied back unchanged."""
    held = set()
    for dtype in {v for v in vars(torch).values() if isinstance(v, torch.dtype)}:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # quantized and complex32 creation warn
                x = torch.zeros(4, dtype=dtype)
                back = x.to("neuron").cpu()
        except (RuntimeError, NotImplementedError):
            continue
        if back.dtype == dtype and back.view(torch.uint8).equal(x.view(torch.uint8)):
            held.add(dtype)
    return held


class TestDevice:
    def test_device_count(self):
        count = torch.accelerator.device_count()
        assert count == torch.neuron.device_count()
        assert count >= 2  # the tests below use neuron:1

    def test_device_switch(self):
        torch.accelerator.set_device_index(1)
        assert torch.accelerator.current_device_index() == 1
        assert torch.neuron.current_device() == 1
        torch.accelerator.set_device_index(0)
        assert torch.accelerator.current_device_index() == 0

    def test_device_context(self):
        device = torch.accelerator.current_device_index()
        with torch.accelerator.device_index(None):
            assert torch.accelerator.current_device_index() == device
        assert torch.accelerator.current_device_index() == device
        with torch.accelerator.device_index(1):
            assert torch.accelerator.current_device_index() == 1
        assert torch.accelerator.current_device_index() == device

    def test_invalid_device_index(self):
        # CUDA raises a RuntimeError (torch.AcceleratorError) for an ordinal it does not have.
        count = torch.neuron.device_count()
        for call in (
            lambda: torch.accelerator.set_device_index(count),
            lambda: torch.neuron.set_device(count),
            lambda: torch.zeros(1, device=f"neuron:{count}"),
            lambda: torch.neuron.get_device_properties(count),
        ):
            with pytest.raises(RuntimeError, match=f"Invalid device id: neuron:{count} does not"):
                call()
        assert torch.accelerator.current_device_index() == 0

    def test_device_capability(self):
        capability = torch.accelerator.get_device_capability("neuron:0")
        # Quantized dtypes are never held; FP8 only on Trainium3 (the default instance is a
        # trn2), so the set is exactly what can be created and copied.
        assert capability["supported_dtypes"] == _dtypes_the_device_holds()
        assert {torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.complex64} <= (
            capability["supported_dtypes"]
        )
        assert torch.qint8 not in capability["supported_dtypes"]
        assert torch.float8_e4m3fn not in capability["supported_dtypes"]

    def test_get_device_capability_is_the_neuroncore_version(self):
        # The default instance is a trn2: NeuronCore-v3 ("Trainium2 ... NeuronCore-v3").
        assert torch.neuron.get_device_capability() == (3, 0)
        assert torch.neuron.get_device_capability("neuron:1") == (3, 0)
        props = torch.neuron.get_device_properties(0)
        assert (props.major, props.minor) == (3, 0)

    @pytest.mark.parametrize(
        "instance, version, fp8",
        [("trn1.32xlarge", (2, 0), False), ("trn3.gen1-server", (4, 0), True)],
    )
    def test_capability_follows_the_instance(self, instance, version, fp8):
        code = textwrap.dedent(
            """
            import torch, vtrn
            vtrn.register()
            caps = torch.accelerator.get_device_capability()["supported_dtypes"]
            print(torch.neuron.get_device_capability(), torch.float8_e4m3fn in caps)
            """
        )
        env = {**os.environ, "NEURON_RT_FAKE_INSTANCE_TYPE": instance}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [f"({version[0]},", f"{version[1]})", str(fp8)]

    def test_tensor_device(self):
        x = torch.randn(2, 3, device="neuron")
        assert x.device.type == "neuron"
        x = torch.randn(2, 3, device="neuron:1")
        assert x.device.type == "neuron" and x.device.index == 1
        assert x.untyped_storage().device == torch.device("neuron:1")

    def test_device_guard(self):
        original_device = torch.accelerator.current_device_index()
        with torch.accelerator.device_index(1):
            assert torch.accelerator.current_device_index() == 1
        assert torch.accelerator.current_device_index() == original_device

    def test_device_switch_persistence(self):
        torch.accelerator.set_device_index(1)
        x = torch.randn(2, 3, device="neuron")
        assert x.device.index == 1
        y = torch.randn(3, 3, device="neuron")
        assert y.device.index == 1

    def test_device_count_consistency(self):
        count = torch.accelerator.device_count()
        for i in range(count):
            torch.accelerator.set_device_index(i)
            assert torch.accelerator.current_device_index() == i

    def test_forked_child_may_use_the_device(self):
        # openreg (like CUDA and TorchNeuron) refuses to re-initialize in a forked child. vtrn's
        # device memory is host memory and its stream workers restart in the child, so a fork
        # after initialization leaves a usable device: the child computes the right result.
        torch.neuron.init()
        assert (torch.ones(3, device="neuron") * 2).sum().item() == 6.0

        def child(q):
            try:
                torch.neuron.init()
                q.put((torch.ones(3, device="neuron") * 3).sum().item())
            except Exception as e:  # noqa: BLE001 - reported to the parent
                q.put(repr(e))

        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start()
        p.join(60)
        assert p.exitcode == 0
        assert q.get(timeout=5) == 9.0

    def test_device_properties(self):
        device = torch.device("neuron:0")
        assert device.type == "neuron" and device.index == 0
        assert str(device) == "neuron:0"

        capability = torch.accelerator.get_device_capability("neuron:0")
        assert isinstance(capability, dict)
        assert isinstance(capability["supported_dtypes"], set)
        assert len(capability["supported_dtypes"]) > 0
        capability1 = torch.accelerator.get_device_capability("neuron:1")
        assert capability["supported_dtypes"] == capability1["supported_dtypes"]

        free, total = torch.accelerator.get_memory_info()
        assert (free, total) == torch.neuron.mem_get_info()
        assert total == torch.neuron.get_device_properties(0).total_memory
        assert 0 <= free <= total

    def test_current_device_after_operations(self):
        original_device = torch.accelerator.current_device_index()
        x = torch.randn(2, 3, device="neuron")
        y = torch.randn(2, 3, device="neuron")
        z = x + y
        result = torch.sum(z)
        assert x.device.index == z.device.index == result.device.index == original_device
        assert torch.accelerator.current_device_index() == original_device

        torch.accelerator.set_device_index(1)
        a = torch.randn(5, 5, device="neuron")
        result2 = torch.matmul(a, a)
        assert a.device.index == result2.device.index == 1
        assert result2.untyped_storage().device.index == 1
        torch.testing.assert_close(result2.cpu(), a.cpu() @ a.cpu())
        assert torch.accelerator.current_device_index() == 1

    def test_device_context_restoration(self):
        original_device = torch.accelerator.current_device_index()
        with pytest.raises(ValueError, match="Test exception"):
            with torch.accelerator.device_index(1):
                assert torch.accelerator.current_device_index() == 1
                x = torch.randn(2, 2, device="neuron")
                assert x.device.index == 1
                raise ValueError("Test exception")
        assert torch.accelerator.current_device_index() == original_device

        with pytest.raises(RuntimeError, match="Nested exception"):
            with torch.accelerator.device_index(1):
                with torch.accelerator.device_index(0):
                    assert torch.accelerator.current_device_index() == 0
                    raise RuntimeError("Nested exception")
        assert torch.accelerator.current_device_index() == original_device

    def test_concurrent_device_operations(self):
        num_threads = 4
        num_operations = 20
        errors = []
        barrier = threading.Barrier(num_threads)

        def worker_thread(thread_id):
            try:
                barrier.wait()
                for _ in range(num_operations):
                    device_idx = thread_id % 2
                    torch.accelerator.set_device_index(device_idx)
                    if torch.accelerator.current_device_index() != device_idx:
                        errors.append(f"thread {thread_id}: current device moved")
                    x = torch.ones(10, 10, device="neuron")
                    result = torch.matmul(x, x).sum()
                    if x.device.index != device_idx or result.device.index != device_idx:
                        errors.append(f"thread {thread_id}: tensor on the wrong device")
                    if result.item() != 1000.0:
                        errors.append(f"thread {thread_id}: wrong result {result.item()}")
                    if torch.accelerator.current_device_index() != device_idx:
                        errors.append(f"thread {thread_id}: device changed during an op")
            except Exception as e:  # noqa: BLE001 - collected
                errors.append(f"thread {thread_id}: {e}")

        with ThreadPoolExecutor(max_workers=num_threads) as executor:
            for future in [executor.submit(worker_thread, i) for i in range(num_threads)]:
                future.result()
        assert errors == []

    def test_device_initialization_state(self):
        torch.neuron.init()
        assert torch.neuron.is_initialized()
        assert torch.accelerator.device_count() > 0

    def test_device_multiprocessing_spawn(self):
        ctx = multiprocessing.get_context("spawn")
        result_queue = ctx.Queue()
        p = ctx.Process(target=_multiprocessing_worker, args=(1, result_queue))
        p.start()
        p.join(120)
        assert p.exitcode == 0
        assert result_queue.get(timeout=5) == ("success", 1, 2000.0)

    def test_device_state_after_errors(self):
        original_device = torch.accelerator.current_device_index()
        x = torch.randn(5, 5, device="neuron")
        y = torch.randn(3, 3, device="neuron")
        with pytest.raises(RuntimeError, match="cannot be multiplied"):
            torch.matmul(x, y)
        assert torch.accelerator.current_device_index() == original_device
        z = torch.randn(5, 5, device="neuron")
        assert z.device.index == original_device
        torch.testing.assert_close(torch.matmul(z, x).cpu(), z.cpu() @ x.cpu())
