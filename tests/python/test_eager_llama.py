"""The Llama-style training step of examples/llama_step.py in eager mode on `neuron`.

Every op of the step (forward, backward, clip_grad_norm_, AdamW in its foreach, fused and
per-tensor forms) runs natively: no CPU fallback, and the losses are the CPU's within
PyTorch's tolerance for the dtype. Native kernels compile once per shape into the cache in
TORCH_NEURONX_NEFF_CACHE_DIR: a second process finds them all on disk, a new shape compiles
again, and a shape met before in the same process does not.
"""

import json
import os
import pathlib
import sys

import pytest
import torch
from conftest import run_python

import vtrn

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
import llama_step  # noqa: E402

STEPS = 10
# torch.testing.assert_close's defaults for each dtype. The losses themselves are float32
# (cross-entropy upcasts the logits), so the model's dtype picks the tolerance explicitly.
TOLERANCE = {
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-5),
}
AEE = "TORCH_NEURONX_ENABLE_CONCATENATION"
CACHE = "TORCH_NEURONX_NEFF_CACHE_DIR"
HLO_CACHE = "TORCH_NEURONX_HLO_CACHE_DIR"


def assert_no_fallbacks(fallbacks, what):
    if fallbacks:
        pytest.fail(
            f"{what}: {len(fallbacks)} ops fell back to the CPU: {', '.join(fallbacks)}",
            pytrace=False,
        )


def assert_losses_match(neuron, cpu, dtype, what):
    assert len(neuron) == len(cpu) == STEPS, what
    torch.testing.assert_close(
        torch.tensor(neuron),
        torch.tensor(cpu),
        **TOLERANCE[dtype],
        msg=lambda m: f"{what}: neuron losses {neuron} against cpu {cpu}\n{m}",
    )


@pytest.mark.parametrize("optimizer", llama_step.OPTIMIZERS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_step_runs_natively_and_matches_cpu(dtype, optimizer, clean_tracking):
    what = f"{str(dtype).removeprefix('torch.')} AdamW({optimizer})"
    cpu = llama_step.train("cpu", dtype, STEPS, optimizer)
    vtrn.clear_op_tracking()
    neuron = llama_step.train("neuron", dtype, STEPS, optimizer)
    assert_no_fallbacks(vtrn.get_fallback_ops(), what)
    assert_losses_match(neuron, cpu, dtype, what)


#
# In fresh processes: the compile cache, and Adaptive Eager Execution (read at start-up).
#

RUNNER = """
    import json, os, sys, warnings
    sys.path.insert(0, {examples!r})
    warnings.filterwarnings("ignore", message=".*fell back to CPU")
    import torch, vtrn, llama_step

    def snapshot():
        return vtrn.metrics() if hasattr(vtrn, "metrics") else None

    def hlo_files():
        return sorted(os.listdir({hlo!r}))

    result = {{"passes": [], "metrics": [snapshot()], "hlo": [hlo_files()]}}
    vtrn.clear_op_tracking()
    for _ in range({passes}):
        result["passes"].append(llama_step.train(**{kwargs!r}, dtype=getattr(torch, {dtype!r})))
        result["metrics"].append(snapshot())
        result["hlo"].append(hlo_files())
    result["fallbacks"] = vtrn.get_fallback_ops()
    print("RESULT " + json.dumps(result), flush=True)
"""


def run_step(cache_dir, passes=1, aee=False, dtype="float32", **kwargs):
    """Runs llama_step.train(**kwargs) |passes| times in a fresh process with the compile cache
    in |cache_dir|; returns its losses per pass, fallbacks, and vtrn.metrics() snapshots and
    listings of the HLO of compiled kernels (in |cache_dir|/hlo), before the first pass and
    after each."""
    env = dict(os.environ)
    env[CACHE] = str(cache_dir)
    hlo = pathlib.Path(cache_dir) / "hlo"
    hlo.mkdir(parents=True, exist_ok=True)
    env[HLO_CACHE] = str(hlo)
    env.pop(AEE, None)
    if aee:
        env[AEE] = "1"
    kwargs = {"device": "neuron", "steps": 3, **kwargs}
    code = RUNNER.format(
        examples=str(EXAMPLES), passes=passes, kwargs=kwargs, dtype=dtype, hlo=str(hlo)
    )
    proc = run_python(code, env=env, timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-4000:]
    result = json.loads(lines[-1].removeprefix("RESULT "))
    assert result["metrics"][0] is not None, "this build has no vtrn.metrics()"
    return result


def compiled_in(result, cache_dir, i):
    """The kernels compiled during pass |i| (from 0), as their HLO module and signature lines."""
    hlo = pathlib.Path(cache_dir) / "hlo"
    new = sorted(set(result["hlo"][i + 1]) - set(result["hlo"][i]))
    lines = []
    for name in new:
        text = (hlo / name).read_text().splitlines()
        lines.append(" ".join(line.strip() for line in text[:2]))
    return "\n  ".join(lines) if lines else "(no HLO written)"


def delta(after, before):
    return {key: after[key] - before[key] for key in after if isinstance(after[key], (int, float))}


METRIC_KEYS = {
    "compiles",
    "memory_cache_hits",
    "disk_cache_hits",
    "executed_kernels",
    "fused_groups",
    "fallbacks",
    "modeled_device_time_us",
}


def test_metrics_api():
    assert hasattr(vtrn, "metrics") and hasattr(vtrn, "reset_metrics"), (
        "vtrn.metrics() / reset_metrics() missing"
    )
    assert METRIC_KEYS <= set(vtrn.metrics())
    x = torch.ones(16, device="neuron")
    vtrn.reset_metrics()
    (x + 1).cpu()
    m = vtrn.metrics()
    assert m["executed_kernels"] >= 1 and m["fallbacks"] == 0, m


def test_compile_cache_persists_across_processes_and_compiles_new_shapes_once(tmp_path):
    cache = tmp_path / "neff-cache"

    first = run_step(cache)
    assert_no_fallbacks(first["fallbacks"], "first process")
    m = delta(first["metrics"][1], first["metrics"][0])
    assert m["compiles"] > 0, m
    assert m["fallbacks"] == 0 and m["executed_kernels"] > 0, m
    # Steps 2 and 3 repeat the shapes of step 1: kernels come from the in-memory cache.
    assert m["memory_cache_hits"] > 0, m
    assert cache.is_dir() and any(cache.rglob("*")), f"nothing written under {cache}"

    second = run_step(cache)
    m = delta(second["metrics"][1], second["metrics"][0])
    assert m["compiles"] == 0, (
        f"a second process with the same cache compiled again: {m}; compiled:\n  {compiled_in(second, cache, 0)}"
    )
    assert m["disk_cache_hits"] > 0, m
    assert second["passes"] == first["passes"], "same kernels, same data: same losses"

    # A new sequence length: the activations' kernels are new, the optimizer's are on disk.
    third = run_step(cache, passes=2, seq=llama_step.SIZES["tiny"].seq + 8)
    assert_no_fallbacks(third["fallbacks"], "changed shape")
    before, pass1, pass2 = third["metrics"]
    m1, m2 = delta(pass1, before), delta(pass2, pass1)
    assert m1["compiles"] > 0, f"a new shape did not compile: {m1}"
    assert m1["disk_cache_hits"] > 0, f"shape-independent kernels were not found on disk: {m1}"
    assert m2["compiles"] == 0, (
        f"the second pass over the same shapes compiled again: pass 1 {m1}, pass 2 {m2}; "
        f"compiled in pass 2:\n  {compiled_in(third, cache, 1)}"
    )
    assert m2["memory_cache_hits"] > 0 and m2["executed_kernels"] > 0, m2
    assert third["passes"][0] == third["passes"][1], "the same run twice in one process differs"


def test_adaptive_eager_execution_fuses_and_matches_cpu(tmp_path):
    cpu = llama_step.train("cpu", torch.bfloat16, STEPS, "foreach")
    result = run_step(
        tmp_path / "neff-cache", aee=True, dtype="bfloat16", steps=STEPS, optimizer="foreach"
    )
    assert_no_fallbacks(result["fallbacks"], "AEE on, bfloat16 AdamW(foreach)")
    assert_losses_match(result["passes"][0], cpu, torch.bfloat16, "AEE on, bfloat16 AdamW(foreach)")
    m = delta(result["metrics"][1], result["metrics"][0])
    assert m["fused_groups"] > 0, f"{AEE}=1 fused nothing: {m}"
