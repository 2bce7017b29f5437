"""torch.export programs as StableHLO text (vtrn.compile.export_stablehlo): lowered through
the same registry and graph capture as torch.compile, run by `vtrn hlo --run`, compared with
the model's eager CPU output."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from vtrn.compile import export_stablehlo, exported_inputs


class MLPBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        h = F.gelu(self.fc1(self.norm(x)))
        return torch.softmax(self.fc2(h), -1), h.sum(-1)


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, 2, 8).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(b, t, 16) * 2.0


def _run_cli(tmp_path, text, inputs):
    src = tmp_path / "exported.mlir"
    src.write_text(text)
    paths = []
    for i, (_, t) in enumerate(inputs):
        p = tmp_path / f"in{i}.npy"
        np.save(p, t.detach().cpu().numpy())
        paths.append(str(p))
    env = dict(os.environ, TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path / "cache"))
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "vtrn.cli", "hlo", str(src), "--run", "--inputs", ",".join(paths),
         "--outputs", str(out)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.parametrize(
    "model, shape", [(MLPBlock, (4, 16)), (Attention, (2, 5, 16))], ids=["mlp", "attention"]
)
def test_exported_program_runs_through_vtrn_hlo(tmp_path, model, shape):
    torch.manual_seed(0)
    m = model().eval()
    x = torch.randn(*shape)
    ep = torch.export.export(m, (x,))
    text = export_stablehlo(ep)
    assert text.count("func.func") == 1 and "stablehlo." in text
    inputs = exported_inputs(ep)
    assert inputs[-1][0] == "input0" and torch.equal(inputs[-1][1], x)
    with torch.no_grad():
        want = m(x)
    want = list(want) if isinstance(want, tuple) else [want]
    out = _run_cli(tmp_path, text, inputs)
    for i, w in enumerate(want):
        got = torch.from_numpy(np.load(out / f"out{i}.npy"))
        torch.testing.assert_close(got, w, msg=lambda s, i=i: f"output {i}: {s}")


def test_export_errors_name_the_problem(clean_tracking):
    with pytest.raises(TypeError, match="takes a torch.export.ExportedProgram, got Linear"):
        export_stablehlo(torch.nn.Linear(2, 2))

    class Bessel(torch.nn.Module):
        def forward(self, x):
            return torch.special.bessel_j0(x) + 1

    ep = torch.export.export(Bessel(), (torch.randn(3),))
    with pytest.raises(RuntimeError, match="ran aten::special_bessel_j0.* on the CPU fallback"):
        export_stablehlo(ep)
    # The failed export left nothing recording: the next one works.
    ok = torch.export.export(torch.nn.Linear(3, 2, bias=False), (torch.randn(4, 3),))
    assert "stablehlo.dot_general" in export_stablehlo(ok)
