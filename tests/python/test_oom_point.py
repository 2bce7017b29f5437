"""Out of memory at the allocation where trn2 would fail, worked out by hand from the device
allocator's rules and trn2's per-core HBM budget, in a real run and in shape-only execution."""

import json
import os

import pytest
from conftest import run_python

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# Logical NeuronCore configuration (Neuron SDK): on Trn2 "four 24 GB banks, each shared by 2
# physical cores", the pair that one LNC2 logical core fuses; Neuron runtime device memory:
# "96 MB" kept per physical core for the runtime (read as GiB and MiB, as the runtime does).
BANK = 24 * GIB
RUNTIME_PER_PHYSICAL_CORE = 96 * MIB
CAPACITY = BANK - 2 * RUNTIME_PER_PHYSICAL_CORE  # what one LNC2 core can allocate
ROUND = 512  # the allocator rounds every request up to a multiple of 512 bytes


def rounded(n):
    return (n + ROUND - 1) // ROUND * ROUND


def cuda_size(n):
    """PyTorch's CUDA caching allocator's format_size (c10/cuda/CUDACachingAllocator.cpp)."""
    if n <= KIB:
        return f"{n} bytes"
    if n <= MIB:
        return f"{n / KIB:.2f} KiB"
    if n <= GIB:
        return f"{n / MIB:.2f} MiB"
    return f"{n / GIB:.2f} GiB"


# The sequence: a 4 GiB block, freed into the cache; one block that fits only once the cache
# is released; then blocks of 256 MiB + 1 byte until one fails. The first block leaves 15 x
# 256 MiB + 512 bytes free: 15 unrounded requests would fit, but each takes 256 MiB + 512.
FIRST = CAPACITY - 15 * 256 * MIB - ROUND - (ROUND - 1)
STEP = 256 * MIB + 1
SEQUENCE = f"""
import json, torch
assert torch.neuron.memory_reserved() == 0
cached = torch.empty({4 * GIB}, dtype=torch.uint8, device="neuron")
del cached
first = torch.empty({FIRST}, dtype=torch.uint8, device="neuron")
kept = []
try:
    for i in range(100):
        kept.append(torch.empty({STEP}, dtype=torch.uint8, device="neuron"))
    i = None
except torch.OutOfMemoryError as e:
    message = str(e)
stats = torch.neuron.memory_stats()
print(json.dumps({{
    "failed_at": i, "message": message,
    "allocated": torch.neuron.memory_allocated(), "reserved": torch.neuron.memory_reserved(),
    "retries": stats["num_alloc_retries"], "ooms": stats["num_ooms"],
    "rss_kib": int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:"))),
}}))
"""


def expected():
    first = rounded(FIRST)
    assert first == CAPACITY - 15 * 256 * MIB - ROUND  # FIRST - 511 bytes, rounded up
    step = rounded(STEP)
    assert step == 256 * MIB + ROUND
    assert 4 * GIB + first > CAPACITY  # the first block needs the cached one released
    free = CAPACITY - first
    fitting = free // step  # 14, where unrounded requests would fit 15
    assert fitting == 14 and free // STEP == 15
    allocated = first + fitting * step
    message = (
        f"neuron out of memory. Tried to allocate {cuda_size(step)}. neuron:0 (logical core 0 of "
        f"trn2.48xlarge, LNC2) has a total capacity of {cuda_size(CAPACITY)} of which "
        f"{cuda_size(CAPACITY - allocated)} is free. Of the allocated memory "
        f"{cuda_size(allocated)} is allocated by PyTorch, and {cuda_size(0)} is reserved by "
        f"PyTorch but unallocated."
    )
    return fitting, allocated, message


@pytest.mark.parametrize("mode", ["run", "shapes"])
def test_the_allocation_that_fails_on_trn2_fails_with_the_same_numbers(mode):
    fitting, allocated, message = expected()
    env = dict(os.environ, VTRN_EXECUTION=mode)
    for key in ("VTRN_HBM_BYTES", "NEURON_LOGICAL_NC_CONFIG", "NEURON_RT_FAKE_INSTANCE_TYPE"):
        env.pop(key, None)
    result = run_python(SEQUENCE, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["failed_at"] == fitting  # the 15th block of 256 MiB + 1 byte
    assert out["message"].startswith(message), (out["message"], message)
    assert out["allocated"] == out["reserved"] == allocated  # the failure changed nothing
    # Two requests released the cache and retried: the first block (which then fit) and the
    # failing one (which found nothing cached to release).
    assert out["retries"] == 2 and out["ooms"] == 1
    # Neither mode wrote the 23.6 GiB: the host holds far less.
    assert out["rss_kib"] * KIB < 2 * GIB
