"""vtrn._hlo and `vtrn hlo` (python -m vtrn.hlo_cli): parse, compile through the cache, run.

References are numpy computations in float64; no torch is involved.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from vtrn import _hlo

CHAIN = """
func.func @main(%x: tensor<64x32xf32>, %y: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<64x32xf32>
  %1 = stablehlo.add %0, %x : tensor<64x32xf32>
  %c = stablehlo.constant dense<5.000000e-01> : tensor<64x32xf32>
  %2 = stablehlo.subtract %1, %c : tensor<64x32xf32>
  %3 = stablehlo.tanh %2 : tensor<64x32xf32>
  %4 = stablehlo.negate %3 : tensor<64x32xf32>
  return %4 : tensor<64x32xf32>
}
"""

MATMUL = """
module @jit_f {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16x4xf32>) -> (tensor<8x4xf32> {jax.result_info = ""}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
"""


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "vtrn.hlo_cli", *args], capture_output=True, text=True, env=env, timeout=120)


def test_parse_round_trip_and_errors():
    text = _hlo.parse(CHAIN)
    assert _hlo.parse(text) == text
    with pytest.raises(ValueError, match="op 'stablehlo.while' is not supported"):
        _hlo.parse(CHAIN.replace("stablehlo.tanh", "stablehlo.while"))
    with pytest.raises(ValueError, match="line 4, column 26: use of undefined value %zz"):
        _hlo.parse(CHAIN.replace("%0, %x", "%0, %zz"))


def test_five_op_chain_is_one_fused_kernel_and_matches_numpy():
    info = _hlo.compile(CHAIN)
    kernels = [k for k in info["kernels"]]
    assert len(kernels) == 1 and kernels[0]["kind"] == "fused"
    assert kernels[0]["ops"] == ["multiply", "add", "subtract", "tanh", "negate"]
    assert kernels[0]["time_s"] > 0
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    y = rng.standard_normal((64, 32)).astype(np.float32)
    (out,), _ = _hlo.run(CHAIN, [x, y])
    ref = -np.tanh(x.astype(np.float64) * y + x - 0.5)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    (unfused,), info2 = _hlo.run(CHAIN, [x, y], fusion=False)
    assert len(info2["kernels"]) == 5
    np.testing.assert_array_equal(out, unfused)


def test_matmul_and_second_compile_hits_memory():
    a = np.arange(128, dtype=np.float32).reshape(8, 16) / 100
    b = np.arange(64, dtype=np.float32).reshape(16, 4) / 10
    (out,), info = _hlo.run(MATMUL, [a, b])
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-6)
    assert _hlo.compile(MATMUL)["source"] == "memory"
    assert info["kernels"][0]["engine"] in ("tensor", "dma")


def test_bad_input_shape_is_a_value_error():
    with pytest.raises(ValueError, match="input 1 has shape"):
        _hlo.run(MATMUL, [np.zeros((8, 16), np.float32), np.zeros((4, 16), np.float32)])


def test_cli_compiles_runs_and_hits_the_disk_cache(tmp_path):
    mlir = tmp_path / "chain.mlir"
    mlir.write_text(CHAIN)
    x = np.linspace(-1, 1, 64 * 32, dtype=np.float32).reshape(64, 32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", x * 2)
    env = dict(os.environ, TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path / "neff"))
    first = cli(str(mlir), "--run", "--inputs", f"{tmp_path / 'x.npy'},{tmp_path / 'y.npy'}", "--outputs", str(tmp_path / "out"), env=env)
    assert first.returncode == 0, first.stderr
    assert "miss (compiled)" in first.stdout and "fusion.0" in first.stdout
    out = np.load(tmp_path / "out" / "out0.npy")
    np.testing.assert_allclose(out, -np.tanh(x.astype(np.float64) * (2 * x) + x - 0.5), rtol=1e-5, atol=1e-6)
    second = cli(str(mlir), env=env)
    assert second.returncode == 0 and "hit (disk)" in second.stdout, second.stdout


def test_cli_exit_status_2_for_bad_files(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(CHAIN[: len(CHAIN) // 2])
    r = cli(str(bad))
    assert r.returncode == 2
    assert "line" in r.stderr and "Traceback" not in r.stderr
    r = cli(str(tmp_path / "missing.mlir"))
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_cli_does_not_import_torch():
    code = "import sys, vtrn.hlo_cli, vtrn._hlo; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
