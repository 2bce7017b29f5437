"""Large reductions on `neuron` are as accurate as PyTorch's CPU kernels.

Every reduction (sum, mean, var, std, vector and _foreach norms, softmax and log_softmax with
their backwards, nll_loss) runs on `neuron` and on the CPU over up to 2e7 elements, in
float32, bfloat16 and float16, with Adaptive Eager Execution off and on (each in its own
process: the variable is read at startup), the CPU at 1 and 2 threads. Each result's error is
measured against the CPU computing in float64 from the same inputs: |out - ref| / |ref| (the
2-norm for tensors). The `neuron` error must be no worse than the CPU's float32 (or
bfloat16/float16) error plus SLACK_ULPS units of the output dtype: the CPU's result is one
accurate summation order among many, another accurate order (a different tree) lands a rounding
or two away, and the final rounding of each result to its dtype is half a unit each. A
left-to-right float32 sum is thousands of units off at these lengths (2e7 ones sum to 2^24).
"""

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

SLACK_ULPS = 2

WORKER = textwrap.dedent(
    r"""
    import hashlib, json, sys, torch, vtrn
    import torch.nn.functional as F

    N_BIG = 20_000_000
    N_MID = 4_000_000
    g = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.rand(*shape, generator=g)

    def randn(*shape):
        return torch.randn(*shape, generator=g)

    def neuron(t):
        return t.to("neuron") if isinstance(t, torch.Tensor) else [x.to("neuron") for x in t]

    def cast(t, dtype):
        return t.to(dtype) if isinstance(t, torch.Tensor) else [x.to(dtype) for x in t]

    def flat(out):
        outs = out if isinstance(out, (list, tuple)) else [out]
        return torch.cat([o.detach().cpu().double().reshape(-1) for o in outs])

    def error(out, ref):
        d, r = flat(out), flat(ref)
        return ((d - r).norm() / r.norm()).item()

    def softmax_backward(fn, dim):
        def run(x):
            x = x.detach().requires_grad_(True)
            y = fn(x, dim=dim)
            gy = torch.linspace(-1, 1, y.numel()).reshape(y.shape).to(y.dtype).to(y.device)
            y.backward(gy)
            return x.grad
        return run

    def nll(reduction):
        def run(x):
            n, c = x.shape
            target = (torch.arange(n) * 7 % c).to(x.device)
            return F.nll_loss(F.log_softmax(x, dim=1), target, reduction=reduction)
        return run

    def sdpa(qkv):
        # 4 queries attending to 2^18 keys: the softmax sums 2^18 scores per row.
        q, k, v = qkv[0, :, :4], qkv[1], qkv[2]
        return F.scaled_dot_product_attention(q[None], k[None], v[None])

    # (name, function, input); inputs are made once, in float32.
    x_big = rand(N_BIG)
    x_tenth = torch.full((1_000_000,), 0.1)
    x_mid = randn(N_MID)
    x_rows = randn(4, N_MID // 4) * 3
    x_cols = randn(N_MID // 4, 4) * 3
    x_3d = rand(400, 100, 100)
    x_wide = x_mid.reshape(2000, 2000)
    cases = [
        ("sum ones 2e7", lambda x: x.sum(), torch.ones(N_BIG)),
        ("sum ones 2e7 in float32", lambda x: x.sum(dtype=torch.float32), torch.ones(N_BIG)),
        ("sum 2e7 in float32", lambda x: x.sum(dtype=torch.float32), x_big),
        ("sum 2e7", lambda x: x.sum(), x_big),
        ("sum dim=1 [4,5e6]", lambda x: x.sum(dim=1), x_big.reshape(4, -1)),
        ("sum dim=0 [5e6,4]", lambda x: x.sum(dim=0), x_big.reshape(-1, 4)),
        ("sum dims (0,2) keepdim [400,100,100]", lambda x: x.sum(dim=(0, 2), keepdim=True), x_3d),
        ("sum of a transpose [2000,2000]", lambda x: x.t().sum(dim=1), x_wide.abs()),
        ("sum dim=1 of a slice", lambda x: x[:, ::2].sum(dim=1), x_wide.abs()),
        ("sum of squares 2e7 (AEE fuses)", lambda x: (x * x).sum(), x_big),
        ("mean of squares dim=-1 (AEE fuses)", lambda x: (x * x).mean(-1), x_big.reshape(4, -1)),
        ("mean 0.1 x 1e6", lambda x: x.mean(), x_tenth),
        ("mean 2e7", lambda x: x.mean(), x_big),
        ("mean dim=0 [1e6,4]", lambda x: x.mean(dim=0), x_cols.abs()),
        ("var 4e6", lambda x: x.var(), x_mid),
        ("std dim=1 [4,1e6]", lambda x: x.std(dim=1), x_rows),
        ("vector_norm 4e6", lambda x: torch.linalg.vector_norm(x), x_mid),
        ("vector_norm ord=1 dim=0 [1e6,4]", lambda x: torch.linalg.vector_norm(x, 1, 0), x_cols),
        ("vector_norm ord=3 4e6", lambda x: torch.linalg.vector_norm(x, 3), x_mid),
        ("_foreach_norm", lambda xs: torch._foreach_norm(xs), [x_mid, x_rows, x_cols[:1000]]),
        ("softmax dim=1 [4,1e6]", lambda x: torch.softmax(x, dim=1), x_rows),
        ("softmax dim=0 [1e6,4]", lambda x: torch.softmax(x, dim=0), x_cols),
        ("log_softmax dim=1 [4,1e6]", lambda x: torch.log_softmax(x, dim=1), x_rows),
        ("log_softmax dim=0 [1e6,4]", lambda x: torch.log_softmax(x, dim=0), x_cols),
        ("softmax backward dim=1", softmax_backward(F.softmax, 1), x_rows),
        ("log_softmax backward dim=0", softmax_backward(F.log_softmax, 0), x_cols),
        ("nll_loss mean [1e6,4]", nll("mean"), x_cols),
        ("sdpa over 2^18 keys", sdpa, x_big[: 3 * 2**18 * 8].reshape(3, 1, 2**18, 8)),
        ("nll_loss sum [1e6,4]", nll("sum"), x_cols),
    ]
    # Reduced precision: fewer cases, the same inputs rounded to the dtype. Sums that overflow
    # float16 (65504) are taken with dtype=float32 only.
    low = {
        torch.bfloat16: {"sum ones 2e7", "sum 2e7", "sum ones 2e7 in float32", "sum 2e7 in float32",
                         "sum dim=0 [5e6,4]", "mean 0.1 x 1e6", "vector_norm 4e6",
                         "softmax dim=1 [4,1e6]", "log_softmax dim=0 [1e6,4]",
                         "nll_loss mean [1e6,4]"},
        torch.float16: {"sum ones 2e7 in float32", "sum 2e7 in float32", "mean 0.1 x 1e6",
                        "vector_norm 4e6", "softmax dim=1 [4,1e6]", "log_softmax dim=0 [1e6,4]",
                        "nll_loss mean [1e6,4]"},
    }

    results = []
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for name, fn, x in cases:
            if dtype != torch.float32 and name not in low[dtype]:
                continue
            xd = cast(x, dtype)
            ref = fn(cast(xd, torch.float64))
            out = fn(neuron(xd))
            got = flat(out)
            r = {
                "case": f"{name} {str(dtype)[6:]}",
                "dtype": str(out.dtype if isinstance(out, torch.Tensor) else out[0].dtype)[6:],
                "neuron": error(out, ref),
                "digest": hashlib.sha256(got.numpy().tobytes()).hexdigest(),
            }
            for threads in (1, 2):
                torch.set_num_threads(threads)
                r[f"cpu{threads}"] = error(fn(xd), ref)
            torch.set_num_threads(2)
            results.append(r)
    print(json.dumps({"results": results, "fallbacks": vtrn.get_fallback_ops()}))
    """
)


def run_worker(aee, cache):
    env = dict(os.environ)
    env["TORCH_NEURONX_ENABLE_CONCATENATION"] = "1" if aee else "0"
    env["TORCH_NEURONX_NEFF_CACHE_DIR"] = str(cache)
    proc = subprocess.run(
        [sys.executable, "-c", WORKER], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    # One after the other: each process peaks near 2 GB.
    cache = tmp_path_factory.mktemp("neff")
    return {"off": run_worker(False, cache), "on": run_worker(True, cache)}


EPS = {"float32": 2.0**-23, "bfloat16": 2.0**-7, "float16": 2.0**-10}


@pytest.mark.parametrize("aee", ["off", "on"])
def test_neuron_reductions_are_as_accurate_as_the_cpu(runs, aee):
    bad = []
    for r in runs[aee]["results"]:
        # A CPU result that overflowed (float16 nll_loss sums 1e6 losses in float16) has an
        # infinite error: any finite accurate result is no worse.
        cpu = min(math.inf if math.isnan(r[k]) else r[k] for k in ("cpu1", "cpu2"))
        allowed = cpu + SLACK_ULPS * EPS[r["dtype"]]
        if not r["neuron"] <= allowed:
            bad.append(
                f"{r['case']}: neuron error {r['neuron']:.3g}, cpu {r['cpu1']:.3g} (1 thread) "
                f"{r['cpu2']:.3g} (2 threads), allowed {allowed:.3g}"
            )
    assert not bad, "\n".join(bad)


def test_reductions_run_on_the_device(runs):
    # var/std have no lowering: they run through the CPU fallback, CPU-exact by construction.
    for aee in ("off", "on"):
        assert set(runs[aee]["fallbacks"]) <= {"aten::var.correction", "aten::std.correction"}, (
            runs[aee]["fallbacks"]
        )


def test_float32_results_are_identical_with_aee_on_and_off(runs):
    off = {r["case"]: r["digest"] for r in runs["off"]["results"] if r["dtype"] == "float32"}
    on = {r["case"]: r["digest"] for r in runs["on"]["results"] if r["dtype"] == "float32"}
    assert off.keys() == on.keys()
    assert [c for c in off if off[c] != on[c]] == []
