"""The native compiler (vtrn._native.hlo) and `vtrn hlo`: parse, compile through the cache, run.

References are numpy computations in float64; no torch is involved.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from vtrn._native import hlo


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Every test (and every `vtrn hlo` it starts) uses its own compile cache, not /tmp/neff_cache."""
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path_factory.mktemp("neff")))


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


def cli(*args, env=None, preexec_fn=None):
    return subprocess.run(
        [sys.executable, "-m", "vtrn.cli", "hlo", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=preexec_fn,
    )


def test_parse_round_trip_and_errors():
    text = hlo.parse(CHAIN)
    assert hlo.parse(text) == text
    with pytest.raises(ValueError, match="op 'stablehlo.while' is not supported"):
        hlo.parse(CHAIN.replace("stablehlo.tanh", "stablehlo.while"))
    with pytest.raises(ValueError, match="line 4, column 26: use of undefined value %zz"):
        hlo.parse(CHAIN.replace("%0, %x", "%0, %zz"))


def test_five_op_chain_is_one_fused_kernel_and_matches_numpy():
    info = hlo.compile(CHAIN)
    kernels = [k for k in info["kernels"]]
    assert len(kernels) == 1 and kernels[0]["kind"] == "fused"
    assert kernels[0]["ops"] == ["multiply", "add", "subtract", "tanh", "negate"]
    # Modeled by hand (trn2 NeuronCore-v3, hw/specs.cc): reads x, y and the 64x32 constant and
    # writes the result, 4 x 8192 bytes at min(2.9 TB/s / 8 cores, 16 x 23 B/ns) = 362.5 GB/s,
    # which is longer than the Vector engine's 4 x 2048 element-ops at 1 TFLOPS (8.2 ns) or
    # the Scalar engine's 2048 tanh at 1.2 TFLOPS; plus the 1,300 ns DMA start cost.
    assert kernels[0]["engine"] == "dma"
    assert kernels[0]["time_s"] == pytest.approx(1.3e-6 + 4 * 8192 / 362.5e9, rel=1e-12)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    y = rng.standard_normal((64, 32)).astype(np.float32)
    (out,), _ = hlo.run(CHAIN, [x, y])
    ref = -np.tanh(x.astype(np.float64) * y + x - 0.5)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    (unfused,), info2 = hlo.run(CHAIN, [x, y], fusion=False)
    assert len(info2["kernels"]) == 5
    np.testing.assert_array_equal(out, unfused)


def test_matmul_and_second_compile_hits_memory():
    a = np.arange(128, dtype=np.float32).reshape(8, 16) / 100
    b = np.arange(64, dtype=np.float32).reshape(16, 4) / 10
    (out,), info = hlo.run(MATMUL, [a, b])
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-6)
    assert hlo.compile(MATMUL)["source"] == "memory"
    # Modeled by hand: 2*8*4*16 = 1024 FLOPs at the FP32 peak of 20 TFLOPS, filling
    # (16/128) x (8/128) of the 128x128 array: 6.5536 ns, longer than DMA moving
    # (128 + 64 + 32) x 4 bytes at 362.5 GB/s (2.5 ns); plus the 1,300 ns DMA start cost.
    k = info["kernels"][0]
    assert k["engine"] == "tensor"
    assert k["flops"] == 1024
    assert k["tile_efficiency"] == pytest.approx(16 / 128 * 8 / 128, rel=1e-15)
    assert k["time_s"] == pytest.approx(1.3e-6 + 1024 / (20e12 * 16 / 128 * 8 / 128), rel=1e-12)


def test_bad_input_shape_is_a_value_error():
    with pytest.raises(ValueError, match="input 1 has shape"):
        hlo.run(MATMUL, [np.zeros((8, 16), np.float32), np.zeros((4, 16), np.float32)])


def test_cli_compiles_runs_and_hits_the_disk_cache(tmp_path):
    mlir = tmp_path / "chain.mlir"
    mlir.write_text(CHAIN)
    x = np.linspace(-1, 1, 64 * 32, dtype=np.float32).reshape(64, 32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", x * 2)
    env = dict(os.environ, TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path / "neff"))
    first = cli(
        str(mlir),
        "--run",
        "--inputs",
        f"{tmp_path / 'x.npy'},{tmp_path / 'y.npy'}",
        "--outputs",
        str(tmp_path / "out"),
        env=env,
    )
    assert first.returncode == 0, first.stderr
    assert "miss (compiled)" in first.stdout and "fusion.0" in first.stdout
    out = np.load(tmp_path / "out" / "out0.npy")
    np.testing.assert_allclose(
        out, -np.tanh(x.astype(np.float64) * (2 * x) + x - 0.5), rtol=1e-5, atol=1e-6
    )
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
    code = (
        "import sys, vtrn.cli.hlo, vtrn._native; vtrn._native.hlo; sys.exit('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def test_run_rejects_a_dtype_it_would_have_to_convert():
    with pytest.raises(ValueError, match="input 1 has dtype float64, expected f32"):
        hlo.run(MATMUL, [np.zeros((8, 16), np.float32), np.zeros((16, 4), np.float64)])


def test_cli_rejects_input_dtypes_instead_of_converting(tmp_path):
    mlir = tmp_path / "chain.mlir"
    mlir.write_text(CHAIN)
    np.save(tmp_path / "a.npy", np.ones((64, 32), np.int32))
    np.save(tmp_path / "b.npy", np.ones((64, 32), np.float64))
    np.save(tmp_path / "f.npy", np.ones((64, 32), np.float32))
    for bad, dtype, i, inputs in (
        ("a.npy", "int32", 0, "a.npy,f.npy"),
        ("b.npy", "float64", 1, "f.npy,b.npy"),
    ):
        r = cli(
            str(mlir),
            "--run",
            "--inputs",
            ",".join(str(tmp_path / p) for p in inputs.split(",")),
            "--outputs",
            str(tmp_path / "out"),
        )
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"input {i} ({tmp_path / bad}) has dtype {dtype}, expected f32" in r.stderr
        assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_cli_non_utf8_file_names_the_file(tmp_path):
    bad = tmp_path / "binary.mlir"
    bad.write_bytes(b"module {\n\xff\xfe garbage")
    r = cli(str(bad))
    assert r.returncode == 2
    assert f"{bad} is not StableHLO text: byte 0xff at offset 9 is not UTF-8" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_output_larger_than_memory_is_exit_2_before_allocating(tmp_path):
    mlir = tmp_path / "huge.mlir"
    mlir.write_text("""func.func @main() -> tensor<1000000x1000000xf32> {
  %0 = stablehlo.iota dim = 0 : tensor<1000000x1000000xf32>
  return %0 : tensor<1000000x1000000xf32>
}
""")
    r = cli(str(mlir), "--run", "--outputs", str(tmp_path / "out"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the outputs need 4000000000000 bytes (3.6 TiB), which exceeds the" in r.stderr
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr


def _limit_address_space():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def test_cli_compile_only_keeps_splat_constants_compact(tmp_path):
    # A 4 GB splat constant: compiling (and loading the executable) must not expand it. The
    # process runs with a 3 GiB address-space limit, so an expansion fails it.
    mlir = tmp_path / "splat.mlir"
    mlir.write_text("""func.func @main() -> tensor<1000x1000000xf32> {
  %0 = stablehlo.constant dense<1.000000e+00> : tensor<1000x1000000xf32>
  return %0 : tensor<1000x1000000xf32>
}
""")
    first = cli(str(mlir), preexec_fn=_limit_address_space)
    second = cli(str(mlir), preexec_fn=_limit_address_space)
    assert first.returncode == 0, first.stderr
    assert "miss (compiled)" in first.stdout
    assert second.returncode == 0 and "hit (disk)" in second.stdout, second.stderr


DONATED = """
func.func @main(%p: tensor<64x32xf32> {jax.buffer_donor = true}, %g: tensor<64x32xf32>,
                %m: tensor<64x32xf32> {tf.aliasing_output = 1 : i32})
    -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>) {
  %h = stablehlo.constant dense<5.000000e-01> : tensor<64x32xf32>
  %0 = stablehlo.multiply %h, %g : tensor<64x32xf32>
  %1 = stablehlo.subtract %p, %0 : tensor<64x32xf32>
  %2 = stablehlo.add %m, %g : tensor<64x32xf32>
  %3 = stablehlo.dot_general %m, %g, contracting_dims = [0] x [0] : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
  return %1, %2, %3 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>
}
"""


def test_a_donated_input_holds_its_result_and_one_read_later_does_not():
    # %p's update is computed in %p's array; %m is donated too, but the dot reads it after
    # result 1 is computed, so %m keeps its values and result 1 gets an array of its own.
    p = np.linspace(-1, 1, 64 * 32, dtype=np.float32).reshape(64, 32)
    g = np.cos(p)
    m = np.sin(p)
    p_in, m_in = p.copy(), m.copy()
    (out0, out1, out2), info = hlo.run(DONATED, [p_in, g, m_in])
    assert info["donor_of_output"] == [0, -1, -1]
    assert np.shares_memory(out0, p_in) and not np.shares_memory(out1, m_in)
    np.testing.assert_array_equal(out0, p - np.float32(0.5) * g)
    np.testing.assert_array_equal(out1, m + g)
    np.testing.assert_array_equal(m_in, m)
    np.testing.assert_allclose(out2, m.astype(np.float64).T @ g, rtol=1e-5, atol=1e-5)
    # Each kernel (two fused loops and the dot) writes a result: no intermediates, no scratch.
    assert info["peak_scratch_bytes"] == info["intermediate_bytes"] == 0


def test_cli_reports_the_planned_scratch_and_in_place_outputs(tmp_path):
    mlir = tmp_path / "step.mlir"
    mlir.write_text(DONATED)
    p = np.linspace(-1, 1, 64 * 32, dtype=np.float32).reshape(64, 32)
    for name, a in (("p", p), ("g", np.cos(p)), ("m", np.sin(p))):
        np.save(tmp_path / f"{name}.npy", a)
    inputs = ",".join(str(tmp_path / f"{n}.npy") for n in "pgm")
    result = cli(str(mlir), "--run", "--inputs", inputs, "--outputs", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "scratch: planned peak" in result.stdout, result.stdout
    assert "out0.npy float32[64, 32] (computed in place in donated input 0)" in result.stdout
    assert "out1.npy float32[64, 32]\n" in result.stdout
    np.testing.assert_array_equal(
        np.load(tmp_path / "out" / "out0.npy"), p - np.float32(0.5) * np.cos(p)
    )
    # The input file is not the array the module wrote over.
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), p)
