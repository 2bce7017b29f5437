"""Shape-only execution (VTRN_EXECUTION=shapes): the same memory and modeled time as a real run,
without the data. Each case runs in a fresh interpreter, since the mode is read once."""

import json
import os
import pathlib

import pytest
from conftest import run_python

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
GIB = 1 << 30

# Three steps of the Llama example (llama_step.py at its tiny size, AdamW over every parameter,
# gradient clipping): per step the modeled span and busy time, the peak memory, the losses and
# the host reads the script made.
LLAMA_STEPS = """
import json, sys
import torch, vtrn
from vtrn import _C
sys.path.insert(0, EXAMPLES_DIR)
from llama_step import Stepper

stepper = Stepper("neuron", torch.float32, "OPTIMIZER", 1.0, "SIZE")
torch.neuron.synchronize()
vtrn.reset_clock()
torch.neuron.reset_peak_memory_stats()
reads = _C._host_reads()
spans, busy, losses = [], [], []
for i in range(3):
    loss = stepper.step(i)
    losses.append(loss.item())
    torch.neuron.synchronize()
    clock = vtrn.clock(reset=True)
    spans.append(clock["span_us"])
    busy.append(sum(s["busy_total_us"] for s in clock["streams"].values()))
print(json.dumps({
    "peak": torch.neuron.max_memory_allocated(),
    "spans": spans, "busy": busy, "losses": losses,
    "reads": _C._host_reads() - reads, "shapes": _C._shapes_only(),
    "kernels": vtrn.metrics()["executed_kernels"],
}))
"""


def llama_steps(optimizer: str, size: str = "tiny") -> str:
    return (
        LLAMA_STEPS.replace("EXAMPLES_DIR", repr(str(EXAMPLES)))
        .replace("OPTIMIZER", optimizer)
        .replace("SIZE", size)
    )


def run_mode(code: str, mode: str, **env_extra) -> dict:
    env = dict(os.environ, VTRN_EXECUTION=mode, **env_extra)
    result = run_python(code, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("optimizer", ["foreach", "single"])
def test_llama_steps_have_the_real_runs_memory_and_modeled_time(optimizer):
    code = llama_steps(optimizer)
    # The real run with every op waiting for its work: queued work keeps its tensors alive
    # until the host CPU has run it, which raises an asynchronous run's peak by however far the
    # emulation lags. On the device, as in shape-only execution, a tensor's memory is free for
    # reuse when it dies.
    real = run_mode(code, "run", NEURON_LAUNCH_BLOCKING="1")
    shapes = run_mode(code, "shapes")
    assert not real["shapes"] and shapes["shapes"]
    # The same kernels in the same order: the same allocations and the same clock.
    assert shapes["kernels"] == real["kernels"]
    assert shapes["peak"] == real["peak"]
    assert shapes["spans"] == pytest.approx(real["spans"], rel=1e-6)
    assert shapes["busy"] == pytest.approx(real["busy"], rel=1e-6)
    # The real losses are those of a model learning; shape-only reads placeholder zeros.
    assert all(loss > 1.0 for loss in real["losses"])
    assert shapes["losses"] == [0.0, 0.0, 0.0]
    assert shapes["reads"] == real["reads"] >= 3


def test_a_tensor_larger_than_host_memory_costs_no_resident_memory():
    # 20 GiB on one logical core (its bank holds 23.81 GiB): allocated, filled and added to,
    # while the process stays small. Its own peak is VmHWM: ru_maxrss keeps the peak of the
    # process that forked it across exec (pytest's, 2.1 GB late in a full run).
    code = """
    import json, torch, vtrn
    x = torch.full((5 * (1 << 30),), 2.0, device="neuron")
    x.add_(1)
    torch.neuron.synchronize()
    print(json.dumps({
        "allocated": torch.neuron.memory_allocated(),
        "rss_kib": int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:"))),
        "value": x[0].item(),
        "busy_us": vtrn.clock()["streams"][0]["busy_total_us"],
    }))
    """
    out = run_mode(code, "shapes")
    assert out["allocated"] == 20 * GIB
    assert out["rss_kib"] < 2 * (1 << 20)  # under 2 GiB; the tensor alone is 20 GiB
    assert out["value"] == 0.0  # a placeholder
    # Writing 20 GiB twice and reading it once at trn2's HBM bandwidth takes milliseconds.
    assert out["busy_us"] > 1000


def test_out_of_memory_happens_at_the_same_allocation_with_cudas_message():
    code = """
    import json, torch
    kept = []
    try:
        for i in range(10):
            kept.append(torch.empty(BLOCK, dtype=torch.uint8, device="neuron"))
    except torch.OutOfMemoryError as e:
        print(json.dumps({"failed_at": i, "message": str(e)}))
    """
    # 4 MiB blocks in a 10 MiB bank: the third fails, in both modes, with the same message.
    small = code.replace("BLOCK", str(4 << 20))
    real = run_mode(small, "run", VTRN_HBM_BYTES=str(10 << 20))
    shapes = run_mode(small, "shapes", VTRN_HBM_BYTES=str(10 << 20))
    assert real["failed_at"] == shapes["failed_at"] == 2
    assert shapes["message"] == real["message"]
    # 4 GiB blocks in trn2's 23.81 GiB bank: the sixth fails.
    full = run_mode(code.replace("BLOCK", str(4 << 30)), "shapes")
    assert full["failed_at"] == 5
    assert full["message"].startswith("neuron out of memory. Tried to allocate 4.00 GiB.")
    assert "has a total capacity of 23.81 GiB of which 3.81 GiB is free" in full["message"]


def test_an_unknown_execution_mode_names_the_accepted_ones():
    result = run_python(
        "import torch, vtrn; torch.empty(1, device='neuron')",
        env=dict(os.environ, VTRN_EXECUTION="meta"),
    )
    assert result.returncode != 0
    assert "VTRN_EXECUTION='meta' is not an execution mode" in result.stderr


def test_an_op_that_falls_back_gets_its_shapes_from_its_shape_function():
    # torch.mode and torch.digamma have no neuron kernel: they run on the CPU, or in shape-only
    # execution through their shape functions. Results, an out= pair resized from empty; then a
    # 4 GiB result, which the CPU kernel would write.
    code = """
    import json, torch
    x = torch.zeros(6, 5, device="neuron")
    values, indices = torch.mode(x, 1)
    v, i = torch.empty(0, device="neuron"), torch.empty(0, dtype=torch.long, device="neuron")
    torch.mode(x, 0, out=(v, i))
    big = torch.zeros(1 << 30, device="neuron")
    torch.neuron.synchronize()
    before = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")))
    big_values = torch.digamma(big)
    torch.neuron.synchronize()
    print(json.dumps({
        "shapes": [list(t.shape) for t in (values, indices, v, i, big_values)],
        "dtypes": [str(t.dtype) for t in (values, indices, v, i)],
        "devices": [str(t.device) for t in (values, indices, v, i)],
        "allocated": torch.neuron.memory_allocated(),
        "grew_kib": int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:"))) - before,
    }))
    """
    real = run_mode(code.replace("1 << 30", "1 << 20"), "run")
    shapes = run_mode(code.replace("1 << 30", "1 << 20"), "shapes")
    for key in ("shapes", "dtypes", "devices", "allocated"):
        assert shapes[key] == real[key], key
    assert real["shapes"][:4] == [[6], [6], [5], [5]]
    big = run_mode(code, "shapes")
    assert big["shapes"][4] == [1 << 30]
    # The input and the result, and the five small tensors of 512 bytes (the allocator's unit).
    assert big["allocated"] == (8 << 30) + 5 * 512
    assert big["grew_kib"] < 256 << 10
