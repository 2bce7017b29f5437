"""The HBM budget, the caching allocator's stats, OOM, LNC1 neighbours and pinned memory."""

import os

import torch
from conftest import run_python

MiB = 1 << 20


def test_budget_is_24_gib_bank_less_runtime_reservation():
    # trn2.48xlarge LNC2: a logical core owns one 24 GiB HBM bank (96 GiB / 4); the runtime
    # keeps 96 MiB for each of its two physical cores (device-memory.rst).
    props = torch.neuron.get_device_properties(0)
    assert props.total_memory == 24 * 1024 * MiB - 2 * 96 * MiB
    free, total = torch.neuron.mem_get_info(0)
    assert total == props.total_memory and free <= total


def test_stats_use_cuda_key_names_and_are_exact():
    torch.neuron.synchronize()
    torch.neuron.empty_cache()
    torch.neuron.reset_peak_memory_stats()
    base = torch.neuron.memory_allocated()
    a = torch.empty(MiB // 4, device="neuron")  # 1 MiB
    b = torch.empty(3 * MiB // 4, device="neuron")  # 3 MiB
    stats = torch.neuron.memory_stats()
    for key in [
        "allocated_bytes.all.current",
        "allocated_bytes.all.peak",
        "reserved_bytes.all.current",
        "active_bytes.all.current",
        "requested_bytes.all.current",
        "allocation.all.current",
        "segment.all.current",
        "num_ooms",
        "num_alloc_retries",
    ]:
        assert key in stats, key
    assert torch.neuron.memory_allocated() == base + 4 * MiB
    del b
    assert torch.neuron.memory_allocated() == base + MiB
    assert torch.neuron.max_memory_allocated() == base + 4 * MiB
    # The freed block stays reserved in the cache until empty_cache.
    assert torch.neuron.memory_reserved() >= base + 4 * MiB
    torch.neuron.empty_cache()
    assert torch.neuron.memory_reserved() == torch.neuron.memory_allocated() == base + MiB
    torch.neuron.reset_peak_memory_stats()
    assert torch.neuron.max_memory_allocated() == base + MiB
    assert torch.accelerator.memory_allocated() == torch.neuron.memory_allocated()
    assert "Allocated memory" in torch.neuron.memory_summary()
    del a


def test_cached_block_is_reused():
    torch.neuron.empty_cache()
    a = torch.empty(1000, device="neuron")
    ptr = a.data_ptr()
    del a
    b = torch.empty(1000, device="neuron")
    assert b.data_ptr() == ptr


def test_oom_is_cuda_style_and_leaves_the_process_usable():
    env = dict(os.environ, VTRN_HBM_BYTES=str(64 * MiB))
    result = run_python(
        """
        import torch
        keep = torch.ones(40 * 2**20 // 4, device="neuron:3")
        before = torch.neuron.memory_stats(3)
        try:
            torch.empty(32 * 2**20 // 4, device="neuron:3")
        except torch.OutOfMemoryError as e:
            print("OOM:", e)
        after = torch.neuron.memory_stats(3)
        for key in ("allocated_bytes.all.current", "reserved_bytes.all.current", "allocation.all.current"):
            assert before[key] == after[key], (key, before[key], after[key])
        assert after["num_ooms"] == 1
        small = torch.full((4,), 2.0, device="neuron:3")
        print("after:", (small + keep[:4]).cpu().tolist())
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    oom = next(line for line in result.stdout.splitlines() if line.startswith("OOM:"))
    assert (
        "neuron out of memory. Tried to allocate 32.00 MiB. neuron:3 (logical core 3 of trn2.48xlarge, "
        "LNC2) has a total capacity of 64.00 MiB of which 24.00 MiB is free. Of the allocated memory "
        "40.00 MiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated."
    ) in oom
    assert "after: [3.0, 3.0, 3.0, 3.0]" in result.stdout


def test_lnc1_neighbour_runs_a_core_out_of_memory():
    # At LNC1 the two physical cores of a pair share one HBM bank: neuron:4 and neuron:5.
    env = dict(os.environ, NEURON_LOGICAL_NC_CONFIG="1", VTRN_HBM_BYTES=str(64 * MiB))
    result = run_python(
        """
        import torch
        assert torch.neuron.device_count() == 128
        assert torch.ones(1, device="neuron:127").cpu().item() == 1.0
        hog = torch.empty(48 * 2**20, dtype=torch.uint8, device="neuron:4")
        other_bank = torch.empty(32 * 2**20, dtype=torch.uint8, device="neuron:6")
        try:
            torch.empty(32 * 2**20, dtype=torch.uint8, device="neuron:5")
            print("no OOM")
        except torch.OutOfMemoryError as e:
            print("OOM:", e)
        del hog
        torch.neuron.empty_cache()
        ok = torch.empty(32 * 2**20, dtype=torch.uint8, device="neuron:5")
        print("after freeing neuron:4:", ok.numel())
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "no OOM" not in result.stdout
    assert "neuron:4 shares this HBM bank and holds 48.00 MiB" in result.stdout
    assert "of which 16.00 MiB is free" in result.stdout
    assert "after freeing neuron:4: 33554432" in result.stdout


def test_storage_resize_under_budget_raises_oom():
    env = dict(os.environ, VTRN_HBM_BYTES=str(4 * MiB))
    result = run_python(
        """
        import torch
        t = torch.empty(1024, device="neuron")
        try:
            t.untyped_storage().resize_(8 * 2**20)
        except torch.OutOfMemoryError:
            print("OOM", t.untyped_storage().nbytes())
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "OOM 4096"


def test_pinned_memory_and_non_blocking_copies():
    host = torch.arange(1 << 16, dtype=torch.float32).pin_memory()
    assert host.is_pinned()
    assert not torch.ones(3).is_pinned()
    dev = torch.empty_like(host, device="neuron")
    dev.copy_(host, non_blocking=True)
    torch.neuron.synchronize()
    assert torch.equal(dev.cpu(), host)
    back = torch.empty_like(host).pin_memory()
    back.copy_(dev, non_blocking=True)
    torch.neuron.synchronize()
    assert torch.equal(back, host)
