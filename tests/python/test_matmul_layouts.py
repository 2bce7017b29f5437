"""Matmuls on operands stored transposed (a weight's .t(), the gradient's .t() in a weight
gradient, .mT of a batch) read them where they lie: the module's parameter has the stored
shape, the dot takes it transposed, and nothing is copied first. The results are the CPU's."""

import os
import pathlib
import subprocess
import sys

import pytest
import torch

torch.manual_seed(0)

# a [64, 48], b [64, 24], c [48, 64], d [24, 64].
CASES = {
    "mm lhs.t()": lambda a, b, c, d: torch.mm(a.t(), b),
    "mm rhs.t()": lambda a, b, c, d: torch.mm(c, d.t()),
    "mm both .t()": lambda a, b, c, d: torch.mm(a.t(), d.t()),
    "addmm mat1.t()": lambda a, b, c, d: torch.addmm(c[:, :24], a.t(), b, beta=0.5, alpha=2.0),
    "linear": lambda a, b, c, d: torch.nn.functional.linear(c, d),
    "bmm .mT": lambda a, b, c, d: torch.bmm(a.reshape(2, 32, 48).mT, b.reshape(2, 32, 24)),
    "matmul of a strided slice": lambda a, b, c, d: a[:, ::2].t() @ b,
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("case", list(CASES))
def test_transposed_operands_give_the_cpus_result(case, dtype):
    tensors = [
        torch.randn(*shape, dtype=dtype) for shape in ((64, 48), (64, 24), (48, 64), (24, 64))
    ]
    want = CASES[case](*tensors)
    got = CASES[case](*(t.to("neuron") for t in tensors)).cpu()
    torch.testing.assert_close(got, want)


SCRIPT = """
import torch
g, x = torch.randn(64, 48), torch.randn(64, 32)
(g.to("neuron").t() @ x.to("neuron")).cpu()
"""


def test_the_module_takes_the_stored_operand_and_runs_one_dot(tmp_path):
    hlo_dir = tmp_path / "hlo"
    env = dict(
        os.environ,
        TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path / "neff"),
        TORCH_NEURONX_HLO_CACHE_DIR=str(hlo_dir),
    )
    run = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    modules = [p for p in pathlib.Path(hlo_dir).glob("*.mlir") if "dot_general" in p.read_text()]
    assert len(modules) == 1, [p.read_text() for p in modules]
    text = modules[0].read_text()
    # g as stored, [64, 48], not the [48, 64] view a staged copy would have made.
    assert "%arg0: tensor<64x48xf32>" in text, text
    report = subprocess.run(
        [sys.executable, "-m", "vtrn.cli", "hlo", str(modules[0])],
        env=env,
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0, report.stderr
    kernels = [line.split()[-1] for line in report.stdout.splitlines()[4:]]
    assert kernels == ["dot_general"], report.stdout


AVX2_SCRIPT = """
import torch
torch.manual_seed(0)
shapes = ((64, 48), (64, 24), (48, 64), (24, 64))
for dtype in (torch.float32, torch.bfloat16):
    for name, case in CASES.items():
        tensors = [torch.randn(*shape, dtype=dtype) for shape in shapes]
        got = case(*(t.to("neuron") for t in tensors)).cpu()
        torch.testing.assert_close(got, case(*tensors), msg=lambda m: f"{name} {dtype}: {m}")
print("ok")
"""


def test_matmuls_on_a_cpu_without_avx512_give_the_cpus_result():
    # ONEDNN_MAX_CPU_ISA=AVX2 gives oneDNN what an AVX2-only CPU has: float32 matmuls on its jit
    # GEMM (whose one-time setup torch's own copy of oneDNN used to take over) and no bf16
    # kernel (bf16 operands are widened to float32).
    source = pathlib.Path(__file__).read_text()
    cases = source[source.index("CASES = {") : source.index("\n}\n") + 3]
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2", NEURON_LAUNCH_BLOCKING="1")
    proc = subprocess.run(
        [sys.executable, "-c", cases + AVX2_SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok"
