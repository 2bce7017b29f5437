"""The installed `vtrn` command dispatches to every subcommand module."""

import shutil
import subprocess
import sys

MODULE = """func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def vtrn(*args):
    exe = shutil.which("vtrn")
    cmd = [exe] if exe else [sys.executable, "-m", "vtrn.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120)


def test_help_lists_every_subcommand():
    result = vtrn("--help")
    assert result.returncode == 0
    for name in ("topo", "mesh", "hlo"):
        assert name in result.stdout


def test_hlo_subcommand_compiles_a_module(tmp_path, monkeypatch):
    path = tmp_path / "m.mlir"
    path.write_text(MODULE)
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path / "cache"))
    result = vtrn("hlo", str(path))
    assert result.returncode == 0, result.stderr
    assert "multiply" in result.stdout


def test_hlo_subcommand_rejects_a_bad_file(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { %0 = stablehlo.frobnicate %a"
    )
    result = vtrn("hlo", str(path))
    assert result.returncode == 2
    assert result.stderr.strip()
