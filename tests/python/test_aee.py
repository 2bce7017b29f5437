"""Adaptive Eager Execution (TORCH_NEURONX_ENABLE_CONCATENATION=1): queued elementwise ops run
as one fused executable; intermediates stay in float32 inside a group, so a bfloat16 chain
equals the float32 chain rounded once, while AEE off equals PyTorch's per-op bfloat16 result.
The variable is read at startup, so each mode runs in its own process."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, sys, torch, vtrn
    deterministic = sys.argv[1] == "1"
    torch.use_deterministic_algorithms(deterministic)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(257, 33, generator=g).to(torch.bfloat16)
    w = torch.randn(33, generator=g).to(torch.bfloat16)

    def chain(x, w):
        # Exactly rounded ops only, so float32-then-round-once is a single well-defined value.
        y = x * 3 + w
        y = y * y - x
        return y * 0.5 + 1

    vtrn.reset_metrics()
    out = chain(x.to("neuron"), w.to("neuron")).cpu()   # the host read ends the group
    s = (chain(x.to("neuron"), w.to("neuron")).sum(dim=1)).cpu()  # a reduce ends it too
    m = vtrn.metrics()
    per_op = chain(x, w)                                        # PyTorch: bf16 after every op
    once = chain(x.float(), w.float()).to(torch.bfloat16)       # float32 inside, rounded once
    print(json.dumps({
        "metrics": m,
        "fallbacks": vtrn.get_fallback_ops(),
        "equals_per_op": torch.equal(out, per_op),
        "equals_rounded_once": torch.equal(out, once),
        "max_diff_vs_per_op": (out.float() - per_op.float()).abs().max().item(),
        "bound": (per_op.float().abs() * 2.0 ** -6).max().item(),
        "sum_close": torch.allclose(s.float(), once.float().sum(dim=1), rtol=2e-2, atol=1e-1),
    }))
    """
)


def run_mode(aee, deterministic=False, tmp_path=None):
    env = dict(os.environ)
    env["TORCH_NEURONX_ENABLE_CONCATENATION"] = "1" if aee else "0"
    if tmp_path is not None:
        env["TORCH_NEURONX_NEFF_CACHE_DIR"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, "1" if deterministic else "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    cache = tmp_path_factory.mktemp("neff")
    return {
        "off": run_mode(False, tmp_path=cache),
        "on": run_mode(True, tmp_path=cache),
        "deterministic": run_mode(True, deterministic=True, tmp_path=cache),
    }


def test_off_matches_pytorch_per_op_rounding(results):
    r = results["off"]
    assert r["fallbacks"] == []
    assert r["metrics"]["fused_groups"] == 0
    assert r["equals_per_op"]


def test_on_fuses_and_keeps_intermediates_in_float32(results):
    r = results["on"]
    assert r["fallbacks"] == []
    assert r["metrics"]["fused_groups"] >= 1, r["metrics"]
    assert r["metrics"]["fused_ops"] >= 5, r["metrics"]
    # Fewer executables than ops: the chain ran as one group.
    assert r["metrics"]["executed_kernels"] < results["off"]["metrics"]["executed_kernels"]
    assert r["equals_rounded_once"]
    assert r["sum_close"]


def test_on_differs_from_per_op_only_within_bf16_rounding(results):
    r = results["on"]
    # "What is TorchNeuron?": results may differ from unfused ones only by keeping intermediates in float32.
    assert r["max_diff_vs_per_op"] <= r["bound"], r


def test_deterministic_algorithms_turn_aee_off(results):
    r = results["deterministic"]
    assert r["metrics"]["fused_groups"] == 0
    assert r["equals_per_op"]


def test_a_second_process_compiles_no_fused_group(tmp_path):
    # Which group temporaries are skipped depends only on the program, so the fused modules
    # of a second identical run are all in the disk cache.
    env = dict(
        os.environ,
        TORCH_NEURONX_ENABLE_CONCATENATION="1",
        TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path),
    )
    step = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "llama_step.py")

    def run():
        proc = subprocess.run(
            [
                sys.executable,
                step,
                "--device",
                "neuron",
                "--dtype",
                "bfloat16",
                "--steps",
                "2",
                "--json",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])["metrics"]

    first, second = run(), run()
    assert first["compiles"] > 0 and first["fused_groups"] > 0
    assert second["compiles"] == 0, second
    assert second["disk_cache_hits"] == first["compiles"]
    assert second["fused_groups"] == first["fused_groups"]
