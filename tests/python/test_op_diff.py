"""scripts/op_diff.py, the op-by-op comparison of `neuron` against the CPU: it finds no
difference in CPU-exact ops, names an op that differs (float64, which the device computes in
float32 as Trainium does), and its command line trains a tiny HF model with every op the CPU's
bits."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import warnings

import torch
import torch.nn.functional as F

import vtrn  # noqa: F401 - registers the device

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "op_diff.py"
sys.path.insert(0, str(SCRIPT.parent))
import op_diff  # noqa: E402


def test_exact_ops_compare_equal():
    x = torch.randn(64, 33).to("neuron")
    stats = op_diff.compare_ops(lambda: (torch.relu(x) * 2 + 1).sum(1))
    assert {
        "relu.default[0] (64, 33) torch.float32",
        "sum.dim_IntList[0] (64,) torch.float32",
    } <= set(stats)
    assert all(s.calls >= 1 and s.differing_calls == 0 for s in stats.values()), stats


def test_an_op_that_differs_is_named():
    warnings.filterwarnings("ignore", message=".*float64")
    x = torch.linspace(-3, 3, 1000, dtype=torch.float64).to("neuron")
    stats = op_diff.compare_ops(lambda: torch.exp(x))
    s = stats["exp.default[0] (1000,) torch.float64"]
    assert s.differing_calls == 1 and 0 < s.max_abs_diff < 1e-5 and s.min_equal_fraction < 1


def test_attention_is_compared_with_the_cpus_flash_kernels():
    """PyTorch sends neuron's attention to the device's own (PrivateUse1) kernel, which the CPU
    has no replay for: the comparison replays it through the CPU's flash attention."""
    q, k, v = (torch.randn(2, 4, 9, 8).to("neuron").requires_grad_() for _ in range(3))
    stats = op_diff.compare_ops(
        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    )
    attention = {key: s for key, s in stats.items() if "fused_attention_overrideable" in key}
    assert len(attention) == 4, stats  # the output, and the three gradients
    assert all(s.calls == 1 and s.differing_calls == 0 for s in attention.values()), attention


def test_in_place_ops_integers_and_written_arguments_are_compared():
    x = torch.arange(12.0).reshape(3, 4).to("neuron")
    params = [torch.ones(5).to("neuron"), torch.ones(2, 3).to("neuron")]
    stats = op_diff.compare_ops(
        lambda: (
            x.add_(1),  # replayed on the input as it was before the op
            torch.argmax(x, 1),
            torch._foreach_mul_(params, 0.5),  # returns nothing: its writes are compared
        )
    )
    assert stats["add_.Tensor[0] (3, 4) torch.float32"].differing_calls == 0
    assert stats["argmax.default[0] (3,) torch.int64"].calls == 1
    written = stats["_foreach_mul_.Scalar<writes self.1> (2, 3) torch.float32"]
    assert written.calls == 1 and written.differing_calls == 0


def test_an_optimizer_step_is_compared():
    """AdamW's step records a profiler range (an opaque object, not compared) around its
    foreach ops, whose writes are."""
    p = torch.nn.Parameter(torch.randn(4, 3).to("neuron"))
    p.grad = torch.randn(4, 3).to("neuron")
    opt = torch.optim.AdamW([p], lr=1e-2)
    stats = op_diff.compare_ops(opt.step)
    writes = [k for k in stats if "<writes" in k]
    assert writes and all(stats[k].differing_calls == 0 for k in writes), stats


def test_the_cpu_replay_keeps_the_strides():
    """The CPU's kernels take other paths for a strided view than for its dense copy, so the
    replay runs on a CPU tensor laid out as the device's (an expanded view is cloned dense)."""
    base = torch.randn(2, 6, 9).to("neuron")
    for view in (base[..., :-1], base.transpose(1, 2), base[:, 1]):
        replay = op_diff._cpu(view)
        assert replay.stride() == view.stride() and torch.equal(replay, view.cpu())
    expanded = torch.randn(3, 1).to("neuron").expand(3, 4)
    assert torch.equal(op_diff._cpu(expanded), expanded.cpu())


def test_the_command_line_trains_a_tiny_model_with_the_cpus_bits():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "gpt2"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert ", 0 differ" in done.stdout
    unknown = subprocess.run(
        [sys.executable, str(SCRIPT), "gpt5"], capture_output=True, text=True, timeout=120
    )
    assert unknown.returncode == 2 and "unknown model 'gpt5'" in unknown.stderr
