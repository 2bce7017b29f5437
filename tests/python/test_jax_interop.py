"""Programs exported from JAX (``jax.jit(f).lower(...).as_text()``) run through
``vtrn hlo --run`` and match JAX's own CPU outputs at JAX's test tolerances (float32 1e-6,
bfloat16 1e-2, integers exact)."""

import os
import subprocess
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

# jax's test tolerances (jax._src.public_test_util.default_tolerance).
TOLERANCE = {np.dtype(np.float32): 1e-6, np.dtype(ml_dtypes.bfloat16): 1e-2}


def _softmax(x):
    return jax.nn.softmax(x, axis=-1)


def _layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b


def _gelu_mlp(x, w1, w2):
    return jax.nn.gelu(x @ w1, approximate=False) @ w2


def _gelu_tanh_mlp(x, w1, w2):
    return jax.nn.gelu(x @ w1) @ w2


def _attention(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    mask = jnp.tril(jnp.ones((q.shape[2], k.shape[2]), bool))
    s = jnp.where(mask, s, -jnp.inf)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)


def _gather_concat(x, idx):
    return jnp.concatenate([x[idx], jnp.take(x, idx[::-1], axis=0) * 2], axis=1)


def _bf16_matmul(a, b):
    return a.astype(jnp.bfloat16) @ b.astype(jnp.bfloat16)


def _argmax_where(x):
    return jnp.argmax(x, -1), jnp.argmin(x, 0), jnp.where(x > 0, x, 0.1 * x)


def _chlo_ops(x, u):
    # u is in (-0.99, 0.99): erf_inv and atanh take it directly, since near +-1 one ulp of a
    # computed input (a tanh) would move them by far more than the tolerance.
    a = jnp.abs(x)
    return (
        jnp.square(x),
        jax.scipy.special.erf(x),
        jax.scipy.special.erfc(x),
        jax.scipy.special.erfinv(u),
        jnp.tan(u),
        jax.lax.top_k(x, 3),
        jnp.sinh(x),
        jnp.cosh(x),
        jnp.arcsinh(x),
        jnp.arccosh(a + 1),
        jnp.arctanh(u),
    )


_rng = np.random.default_rng(0)


def _f32(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


PROGRAMS = {
    "softmax": (_softmax, lambda: [_f32(4, 33) * 4]),
    "layer_norm": (_layer_norm, lambda: [_f32(4, 32), _f32(32), _f32(32)]),
    "gelu_mlp": (_gelu_mlp, lambda: [_f32(8, 16), _f32(16, 64) / 4, _f32(64, 16) / 8]),
    "gelu_tanh_mlp": (_gelu_tanh_mlp, lambda: [_f32(8, 16), _f32(16, 64) / 4, _f32(64, 16) / 8]),
    "attention": (_attention, lambda: [_f32(2, 3, 8, 16), _f32(2, 3, 8, 16), _f32(2, 3, 8, 16)]),
    "gather_concat": (_gather_concat, lambda: [_f32(10, 4), np.array([3, 0, 9, 3], np.int32)]),
    "bf16_matmul": (_bf16_matmul, lambda: [_f32(16, 32), _f32(32, 8)]),
    "argmax_where": (_argmax_where, lambda: [np.round(_f32(6, 7), 1)]),  # rounding makes ties
    "chlo_ops": (
        _chlo_ops,
        lambda: [_f32(5, 6) * 2, _rng.uniform(-0.99, 0.99, (5, 6)).astype(np.float32)],
    ),
}


def _to_npy(a: np.ndarray) -> np.ndarray:
    """bfloat16 travels as its uint16 bits (the CLI's convention)."""
    return a.view(np.uint16) if a.dtype == ml_dtypes.bfloat16 else a


def _run_vtrn(tmp_path, name, text, args):
    src = tmp_path / f"{name}.mlir"
    src.write_text(text)
    paths = []
    for i, a in enumerate(args):
        p = tmp_path / f"{name}_in{i}.npy"
        np.save(p, _to_npy(np.asarray(a)))
        paths.append(str(p))
    out_dir = tmp_path / f"{name}_out"
    env = dict(os.environ, TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, "-m", "vtrn.cli", "hlo", str(src), "--run", "--inputs", ",".join(paths),
         "--outputs", str(out_dir)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return out_dir


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jax_program_matches_jax(tmp_path, name):
    fn, make_args = PROGRAMS[name]
    args = make_args()
    text = jax.jit(fn).lower(*args).as_text()
    want = [np.asarray(w) for w in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]
    out_dir = _run_vtrn(tmp_path, name, text, args)
    for i, w in enumerate(want):
        got = np.load(out_dir / f"out{i}.npy")
        if w.dtype == ml_dtypes.bfloat16:
            got = got.view(ml_dtypes.bfloat16)
        assert got.dtype == w.dtype and got.shape == w.shape, (i, got.dtype, got.shape, w.shape)
        if w.dtype in TOLERANCE:
            tol = TOLERANCE[w.dtype]
            np.testing.assert_allclose(
                got.astype(np.float32), w.astype(np.float32), rtol=tol, atol=tol,
                err_msg=f"{name} output {i}",
            )  # fmt: skip
        else:
            np.testing.assert_array_equal(got, w, err_msg=f"{name} output {i}")


def test_jax_text_uses_the_ops_this_test_claims():
    """The exported programs really hold the interop features: chlo ops, calls to private
    functions, and a two-input reduce (argmax)."""
    text = jax.jit(_chlo_ops).lower(*PROGRAMS["chlo_ops"][1]()).as_text()
    for op in ("chlo.erf ", "chlo.erfc", "chlo.erf_inv", "chlo.top_k", "chlo.square", "chlo.sinh"):
        assert op in text, op
    am = jax.jit(_argmax_where).lower(*PROGRAMS["argmax_where"][1]()).as_text()
    assert "call @argmax" in am and "stablehlo.reduce(%arg0 init: %cst), (%0 init: %c)" in am
