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


def _inverse_trig(x, u):
    return jnp.arcsin(u), jnp.arccos(u), jnp.arccos(-jnp.ones(3)), jnp.arctan(x), jnp.arctan2(x, u)


def _special(x):
    # x avoids the poles (zero and the negative integers) by at least 0.05.
    return jax.lax.lgamma(x), jax.lax.digamma(x), jax.lax.lgamma(jnp.abs(x) * 30)


def _next_after(x, y):
    return jnp.nextafter(x, y), jnp.nextafter(x, x), jnp.nextafter(jnp.zeros_like(x), y)


def _pooling(img):
    # img: [batch, height, width, channels], as flax's pooling takes it.
    win = (1, 3, 3, 1)
    sums = jax.lax.reduce_window(img, 0.0, jax.lax.add, win, (1, 1, 1, 1), "SAME")
    ones = jnp.ones(img.shape[:3] + (1,), img.dtype)
    counts = jax.lax.reduce_window(ones, 0.0, jax.lax.add, win, (1, 1, 1, 1), "SAME")
    max2 = jax.lax.reduce_window(img, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    dilated = jax.lax.reduce_window(
        img, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 1, 2, 1), "VALID",
        base_dilation=(1, 2, 1, 1), window_dilation=(1, 1, 2, 1),
    )  # fmt: skip
    return max2, sums / counts, dilated, jnp.cumsum(img[0, :, 0, 0]), jnp.cumprod(img[0, 0, :, 1])


def _sharded_program():
    """A program whose text carries Shardy's mesh, argument shardings and a constraint."""
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
    row = NamedSharding(mesh, P("x"))

    def f(a, b):
        c = jax.lax.with_sharding_constraint(a * 2, row)
        return (c + b).sum(0)

    return jax.jit(f, in_shardings=(row, row), out_shardings=NamedSharding(mesh, P()))


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
    "inverse_trig": (
        _inverse_trig,
        lambda: [_f32(5, 6) * 3, _rng.uniform(-1, 1, (5, 6)).astype(np.float32)],
    ),
    "special": (_special, lambda: [_away_from_poles(_f32(6, 7) * 3)]),
    "next_after": (
        _next_after,
        lambda: [
            np.array([1.0, -1.0, 0.0, -0.0, 3.5, 1e-45, np.inf, np.nan], np.float32),
            np.array([2.0, 0.0, 1.0, -1.0, 3.5, 0.0, 0.0, 1.0], np.float32),
        ],
    ),
    "pooling": (_pooling, lambda: [_f32(2, 7, 6, 3)]),
}

# Outputs compared bit for bit (NaN equal to NaN): next_after moves by exactly one ulp.
EXACT = {"next_after"}


def _away_from_poles(x):
    frac = x - np.round(x)
    return np.where((x <= 0) & (np.abs(frac) < 0.05), x + 0.1, x).astype(np.float32)


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
        if name in EXACT:
            np.testing.assert_array_equal(got, w, err_msg=f"{name} output {i}")
        elif w.dtype in TOLERANCE:
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


def test_jax_program_with_shardy_annotations_runs_on_one_device(tmp_path):
    fn = _sharded_program()
    a, b = _f32(4, 3), _f32(4, 3)
    text = fn.lower(a, b).as_text()
    for part in ("sdy.mesh @mesh", "sdy.sharding = #sdy.sharding", "sdy.sharding_constraint"):
        assert part in text, part
    out_dir = _run_vtrn(tmp_path, "sharded", text, [a, b])
    np.testing.assert_allclose(np.load(out_dir / "out0.npy"), np.asarray(fn(a, b)), rtol=1e-6)


def test_jax_text_holds_the_newer_chlo_ops_and_reduce_window():
    texts = {
        name: jax.jit(PROGRAMS[name][0]).lower(*PROGRAMS[name][1]()).as_text()
        for name in ("inverse_trig", "special", "next_after", "pooling")
    }
    for name, op in (
        ("inverse_trig", "chlo.asin"), ("inverse_trig", "chlo.acos"), ("inverse_trig", "chlo.atan"),
        ("inverse_trig", "stablehlo.atan2"), ("special", "chlo.lgamma"),
        ("special", "chlo.digamma"), ("next_after", "chlo.next_after"),
        ("pooling", "stablehlo.reduce_window"), ("pooling", "base_dilations = array<i64: 1, 2"),
    ):  # fmt: skip
        assert op in texts[name], (name, op)
