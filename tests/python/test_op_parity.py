"""The `neuron` device gives the CPU's results on PyTorch's OpInfo samples, forward and backward.

Which OpInfos run is derived from `vtrn._C._native_ops()`: every OpInfo that reaches an op the
build lowers natively (opinfo_parity.select: by name, plus EXTRA_OPINFOS), for each dtype the
build claims for those ops (float32/bfloat16/float16/int/bool) that the OpInfo supports on CPU.
Each (OpInfo, dtype) is one test. It runs up to VTRN_PARITY_SAMPLES (default 6) reference
samples, plus up to VTRN_PARITY_EXTRA_SAMPLES (default 2) later ones with new argument kinds,
on the CPU (the oracle) and on neuron: the functional op, its out= and in-place variants
(forward only), and the gradients of a fixed random cotangent for floating dtypes. Results are
compared with `torch.testing.assert_close` at PyTorch's default tolerances, equal_nan=True.

Samples that fall back to the CPU still count; the fallback ops are reported in the terminal
summary ("neuron op parity"), and everything in JSON at $VTRN_PARITY_REPORT when set. Skips
always carry a reason. test_native_ops_are_reached checks every lowered op family was run.

    python -m pytest tests/python/test_op_parity.py -q
    python -m pytest tests/python/test_op_parity.py -q -k "softmax and bfloat16"
"""

from __future__ import annotations

import collections
import json
import os

import opinfo_parity as P
import pytest
import torch

import vtrn

REGISTRY = P.native_registry()
if REGISTRY is None:  # a broken build fails the suite instead of skipping the parity checks
    raise RuntimeError(
        "vtrn._C._native_ops() does not exist in this build, so the parity suite has nothing to "
        "select; rebuild vtrn (`make install`)"
    )

SELECTION = P.select(P._load_op_db(), REGISTRY)
PAIRS = [(oid, dtype) for oid in SELECTION.ops for dtype in SELECTION.dtypes[oid]]


def _dt(dtype) -> str:
    return str(dtype).removeprefix("torch.")


class ParityReport:
    """Collects every sample's outcome; prints the summary at the end of the session."""

    def __init__(self):
        self.pairs = {}  # (oid, dtype name) -> "pass" | "fail" | "skip"
        self.samples = {}  # (oid, dtype name) -> [SampleResult]
        self.pair_skips = {}  # (oid, dtype name) -> reason
        self.extra = {}  # non-OpInfo checks: name -> status
        self.notes = {}  # (oid, dtype name) -> why sample generation stopped early
        self.extra_executed = set()  # ops the non-OpInfo checks ran
        self.unreached = {}  # native overload no sample ran -> OpInfos selected for it

    def record(self, oid, dtype, results, status, reason=""):
        self.pairs[(oid, _dt(dtype))] = status
        self.samples[(oid, _dt(dtype))] = results
        if status == "skip":
            self.pair_skips[(oid, _dt(dtype))] = reason

    def executed_by_op(self):
        reached = collections.defaultdict(set)
        for (oid, _), results in self.samples.items():
            for r in results:
                reached[oid].update(r.executed)
        return reached

    def lines(self):
        out = []
        ops = collections.defaultdict(set)
        for (oid, _), status in self.pairs.items():
            ops[oid].add(status)
        counts = collections.Counter(self.pairs.values())
        n_samples = collections.Counter(r.status for rs in self.samples.values() for r in rs)
        n_backward = sum(r.backward_checked for rs in self.samples.values() for r in rs)
        out.append(
            f"OpInfo ops: {sum(s == {'pass'} for s in ops.values())} passed, "
            f"{sum('fail' in s for s in ops.values())} failed, "
            f"{sum(s == {'skip'} for s in ops.values())} skipped, of {len(ops)} run "
            f"({len(SELECTION.ops)} selected)"
        )
        out.append(
            f"(op, dtype) pairs: {counts['pass']} passed, {counts['fail']} failed, "
            f"{counts['skip']} skipped, of {len(self.pairs)} run ({len(PAIRS)} selected)"
        )
        out.append(
            f"samples: {n_samples['pass']} passed ({n_backward} with backward), "
            f"{n_samples['fail']} failed, {n_samples['skip']} skipped"
        )
        for name, status in sorted(self.extra.items()):
            out.append(f"non-OpInfo check {name}: {status}")

        failed = [
            (k, r) for k, rs in sorted(self.samples.items()) for r in rs if r.status == "fail"
        ]
        if failed:
            out.append("failures:")
            for (oid, dt), r in failed:
                out.append(f"  {oid} {dt} sample {r.index} {r.desc}: {r.reason.splitlines()[0]}")

        out.append("fallback ops used (op [dtypes]: fallback op x samples using it):")
        grouped = collections.defaultdict(list)
        for (oid, dt), rs in sorted(self.samples.items()):
            used = collections.Counter()
            for r in rs:
                for f in set(r.forward_fallbacks) | set(r.backward_fallbacks):
                    used[f] += 1
            if used:
                grouped[(oid, tuple(sorted(used.items())))].append(dt)
        for (oid, used), dts in sorted(grouped.items()):
            out.append(f"  {oid} [{', '.join(dts)}]: " + ", ".join(f"{f} x{n}" for f, n in used))
        if not grouped:
            out.append("  none")

        # Ops the registry claims as native for a dtype that still fell back on some sample.
        claimed_fallbacks = collections.defaultdict(set)
        for (_oid, dt), rs in self.samples.items():
            for r in rs:
                for f in set(r.forward_fallbacks) | set(r.backward_fallbacks):
                    entry = REGISTRY.get(f)
                    if entry and dt in entry[0]:
                        claimed_fallbacks[f].add(r.desc)
        if claimed_fallbacks:
            out.append("native ops that fell back for a claimed dtype (op: example samples):")
            for f, descs in sorted(claimed_fallbacks.items()):
                examples = sorted(descs, key=len)[:2]
                out.append(f"  {f} ({len(descs)} samples): " + "; ".join(examples))

        skips = collections.Counter()
        for (_oid, _dt), rs in self.samples.items():
            for r in rs:
                if r.status == "skip":
                    skips[(oid, r.reason)] += 1
                elif r.note:
                    skips[(oid, r.note)] += 1
        for (oid, dt), reason in self.pair_skips.items():
            skips[(oid, f"{dt}: {reason}")] += 1
        if skips:
            out.append("skipped samples / pairs (op: reason xcount):")
            for (oid, reason), n in sorted(skips.items()):
                out.append(f"  {oid}: {reason} x{n}")
        if self.notes:
            out.append("sample generation notes:")
            for (oid, dt), note in sorted(self.notes.items()):
                out.append(f"  {oid} {dt}: {note}")
        if SELECTION.excluded:
            out.append("OpInfo variants not run:")
            for oid, reason in sorted(SELECTION.excluded.items()):
                out.append(f"  {oid}: {reason}")
        if SELECTION.dtype_skips:
            out.append("dtypes claimed for an op but not run with its OpInfo:")
            grouped = collections.defaultdict(list)
            for oid, dt, reason in SELECTION.dtype_skips:
                grouped[(oid, reason)].append(dt)
            for (oid, reason), dts in sorted(grouped.items()):
                out.append(f"  {oid}: {', '.join(dts)} ({reason})")
        kinds = collections.Counter(kind for _, kind in REGISTRY.values())
        out.append(
            "registry: "
            + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            + f" native ops; OpInfos selected for kinds: {', '.join(P.KINDS)}"
        )
        if self.unreached:
            out.append(
                f"native overloads no sample ran ({len(self.unreached)}; their op family was "
                "run through another overload): " + ", ".join(sorted(self.unreached))
            )
        if SELECTION.unmatched:
            out.append("native ops no OpInfo reaches:")
            for native, reason in sorted(SELECTION.unmatched.items()):
                out.append(f"  {native}: {reason}")
        return out

    def to_json(self):
        return {
            "pairs": {f"{o} {d}": s for (o, d), s in self.pairs.items()},
            "samples": {
                f"{o} {d}": [r.__dict__ for r in rs] for (o, d), rs in self.samples.items()
            },
            "excluded": SELECTION.excluded,
            "unmatched": SELECTION.unmatched,
            "extra": self.extra,
        }

    # pytest hook, called because the report registers itself as a plugin.
    def pytest_terminal_summary(self, terminalreporter):
        if not self.pairs and not self.extra:
            return
        terminalreporter.section("neuron op parity")
        for line in self.lines():
            terminalreporter.write_line(line)
        path = os.environ.get("VTRN_PARITY_REPORT")
        if path:
            with open(path, "w") as f:
                json.dump(self.to_json(), f, indent=1, default=str)
            terminalreporter.write_line(f"JSON report: {path}")


REPORT = ParityReport()


@pytest.fixture(scope="module", autouse=True)
def _parity_report(request):
    manager = request.config.pluginmanager
    if not manager.is_registered(REPORT):
        manager.register(REPORT, "vtrn-op-parity-report")
    yield REPORT


@pytest.mark.parametrize("oid,dtype", PAIRS, ids=[f"{oid}-{_dt(dtype)}" for oid, dtype in PAIRS])
def test_parity(oid, dtype):
    op = SELECTION.ops[oid]
    backward = P.wants_backward(op, dtype)
    samples, note = P.samples_for(op, dtype, requires_grad=backward)
    if note:
        REPORT.notes[(oid, _dt(dtype))] = note
    if not samples:
        reason = "the OpInfo yields no CPU samples for this dtype"
        REPORT.record(oid, dtype, [], "skip", reason)
        pytest.skip(reason)
    results = [P.run_sample(op, s, i, dtype, backward) for i, s in enumerate(samples)]
    failures = [r for r in results if r.status == "fail"]
    if failures:
        REPORT.record(oid, dtype, results, "fail")
        pytest.fail(
            "\n".join(f"sample {r.index} {r.desc}:\n{r.reason}" for r in failures),
            pytrace=False,
        )
    if all(r.status == "skip" for r in results):
        reason = "; ".join(sorted({r.reason for r in results}))
        REPORT.record(oid, dtype, results, "skip", reason)
        pytest.skip("every sample skipped: " + reason)
    REPORT.record(oid, dtype, results, "pass")


FUSED_OPTIMIZERS = {"_fused_adam_": torch.optim.Adam, "_fused_adamw_": torch.optim.AdamW}


def _fused_cases():
    cases = []
    for kernel, _optim in FUSED_OPTIMIZERS.items():
        claimed = set()
        for name, (dtypes, kind) in REGISTRY.items():
            if P.base_name(name) == kernel and kind in P.KINDS:
                claimed |= dtypes
        cases += [
            (kernel, d) for d in (torch.float32, torch.bfloat16, torch.float16) if _dt(d) in claimed
        ]
    return cases


@pytest.mark.parametrize("kernel,dtype", _fused_cases(), ids=lambda v: _dt(v))
def test_fused_optimizer_parity(kernel, dtype):
    """The fused Adam kernels have no OpInfo: three fused steps on both devices."""
    gen = torch.Generator().manual_seed(P.SEED)
    shapes = [(7, 5), (5,), (3, 4, 2)]
    params = [torch.randn(s, generator=gen).to(dtype) for s in shapes]
    grads = [[torch.randn(s, generator=gen).to(dtype) for s in shapes] for _ in range(3)]

    def run(device):
        ps = [p.clone().to(device).requires_grad_() for p in params]
        opt = FUSED_OPTIMIZERS[kernel](ps, lr=1e-2, weight_decay=0.1, fused=True)
        for step in grads:
            for p, g in zip(ps, step):
                p.grad = g.to(device)
            opt.step()
        state = [(opt.state[p]["exp_avg"], opt.state[p]["exp_avg_sq"]) for p in ps]
        return [p.detach() for p in ps], state

    cpu, cpu_state = run("cpu")
    vtrn.clear_op_tracking()
    dev, dev_state = run(P.DEVICE)
    fallbacks = sorted(f.removeprefix("aten::") for f in vtrn.get_fallback_ops())
    executed = {f.removeprefix("aten::") for f in vtrn.get_executed_ops()}
    name = f"{kernel} {_dt(dtype)}"
    REPORT.extra_executed |= executed
    try:
        P._compare(dev, cpu, "params")
        P._compare(dev_state, cpu_state, "exp_avg, exp_avg_sq")
    except AssertionError as e:
        REPORT.extra[name] = f"fail (fallbacks: {', '.join(fallbacks) or 'none'})"
        pytest.fail(str(e), pytrace=False)
    REPORT.extra[name] = f"pass (fallbacks: {', '.join(fallbacks) or 'none'})"


@pytest.mark.parametrize("ord", [2.0, 1.0, float("inf")], ids=["l2", "l1", "inf"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=_dt)
def test_foreach_norm_parity(dtype, ord):
    """_foreach_norm as clip_grad_norm_ calls it (its OpInfo samples all ask for float64)."""
    gen = torch.Generator().manual_seed(P.SEED)
    tensors = [torch.randn(s, generator=gen).to(dtype) for s in [(7, 5), (5,), (3, 4, 2), (1,)]]
    cpu = torch._foreach_norm(tensors, ord)
    vtrn.clear_op_tracking()
    dev = torch._foreach_norm([t.to(P.DEVICE) for t in tensors], ord)
    assert "aten::_foreach_norm.Scalar" in vtrn.get_executed_ops()
    assert vtrn.get_fallback_ops() == []
    REPORT.extra_executed |= {f.removeprefix("aten::") for f in vtrn.get_executed_ops()}
    P._compare(list(dev), list(cpu), "norms")


def test_native_ops_are_reached():
    """Every op family the build lowers natively is run by some OpInfo sample above (any
    overload: functional, out=, in-place), or has a stated reason in NO_OPINFO. Overloads no
    sample reached are listed in the summary."""
    reached_by = REPORT.executed_by_op()
    for oid in SELECTION.ops:  # OpInfos not run in this session (e.g. under -k): run them now
        if oid not in reached_by:
            op, dtype = SELECTION.ops[oid], SELECTION.dtypes[oid][0]
            backward = P.wants_backward(op, dtype)
            for i, s in enumerate(P.samples_for(op, dtype, requires_grad=backward)[0]):
                reached_by[oid].update(P.run_sample(op, s, i, dtype, backward).executed)
    reached = set().union(*reached_by.values()) if reached_by else set()
    reached_families = {P.family(name) for name in reached}
    missing = []
    REPORT.unreached = {}
    for native, (_, kind) in sorted(REGISTRY.items()):
        if kind not in P.KINDS or native in reached:
            continue
        base = P.base_name(native)
        if base in P.NO_OPINFO:
            continue
        via = [oid for oid, names in SELECTION.reaches.items() if native in names]
        REPORT.unreached[native] = via
        if P.family(native) not in reached_families:
            missing.append(f"{native} (OpInfos selected for it: {via or 'none'})")
    assert not missing, (
        "native ops no OpInfo sample reached in any overload; map them in "
        "opinfo_parity.EXTRA_OPINFOS or explain them in NO_OPINFO:\n  " + "\n  ".join(missing)
    )
