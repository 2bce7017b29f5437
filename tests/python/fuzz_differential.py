"""The differential fuzzer: random op programs on `neuron` against the CPU.

Runs programs from fuzz_programs.py on both devices and compares every variable: device,
dtype, shape and values (torch.testing.assert_close at ATen's default tolerances), and
exceptions (when the CPU raises, the device must raise the same type, at that statement or
at the synchronization after it, where a queued op reports). A mismatch is cut down to a
minimal program (the shortest failing prefix, then every statement it does not need removed)
and printed as a runnable reproducer with its seed.

float64/complex128 on `neuron` are computed as float32/complex64 (the device's documented
policy), so values that depend on them are compared at float32 tolerance, and integer or
bool values computed from them are compared for dtype and shape only. Under Adaptive Eager
Execution a fused bfloat16/float16 chain keeps float32 intermediates (documented): such a
value (and any float value computed from one) also passes when it matches the program run
with float32 in place of the half types, rounded once.

    python tests/python/fuzz_differential.py --seeds 0:200 --threads 4 --seconds 60
    TORCH_NEURONX_ENABLE_CONCATENATION=1 python tests/python/fuzz_differential.py ...

Prints one JSON object: the programs run, and each finding with its reproducer.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import threading
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from fuzz_known import KNOWN_FAILURES, POLICIES  # noqa: E402
from fuzz_programs import VAR, ProgramGenerator, Stmt, new_env  # noqa: E402

DEVICE = "neuron"
WIDE = (torch.float64, torch.complex128)
HALF = (torch.float16, torch.bfloat16)
F32_TOL = {"rtol": 1.3e-6, "atol": 1e-5}
AEE = os.environ.get("TORCH_NEURONX_ENABLE_CONCATENATION", "0") == "1"
# Under AEE with several threads, where a group ends depends on the other threads: a chain
# may fuse in part (rounded after some ops, not others). Its value then lies between the
# op-by-op and the fully fused results, give or take one bfloat16 rounding (set by fuzz()).
PARTIAL_FUSION = False


@dataclasses.dataclass
class Run:
    env: dict
    error: tuple[int, str, str] | None  # statement index (len = at the sync), type, message


@dataclasses.dataclass
class Mismatch:
    kind: str  # error-type, missing-error, unexpected-error, device, dtype, shape, value
    var: str
    detail: str


def run_program(stmts: list[Stmt], device: str) -> Run:
    env = new_env(device)
    for i, stmt in enumerate(stmts):
        try:
            exec(stmt.code, env)
        except Exception as e:  # the exception is the result
            return Run(env, (i, type(e).__name__, str(e)[:300]))
    if device != "cpu":
        try:
            torch.neuron.synchronize()
        except Exception as e:
            return Run(env, (len(stmts), type(e).__name__, str(e)[:300]))
    return Run(env, None)


def tainted_vars(stmts: list[Stmt], env: dict) -> set[str]:
    """Variables whose value depends on float64/complex128 arithmetic."""
    tainted: set[str] = set()
    for stmt in stmts:
        names = VAR.findall(stmt.code)
        if not names:
            continue
        target, operands = names[0], names[1:]
        value = env.get(target)
        wide = isinstance(value, torch.Tensor) and value.dtype in WIDE
        if wide or "float64" in stmt.code or "complex128" in stmt.code or tainted & set(operands):
            tainted.add(target)
            if stmt.kind == "inplace" and isinstance(value, torch.Tensor):
                ptr = value.untyped_storage().data_ptr()
                for key, other in env.items():
                    if VAR.fullmatch(key) and isinstance(other, torch.Tensor):
                        if other.untyped_storage().data_ptr() == ptr:
                            tainted.add(key)
    return tainted


def compare(
    stmts: list[Stmt], cpu: Run, dev: Run, f32_ref: Run | None = None, exact: Run | None = None
) -> Mismatch | None:
    n = len(stmts)
    if cpu.error is not None:
        i, ctype, cmsg = cpu.error
        if dev.error is None:
            return Mismatch("missing-error", "", f"cpu raised {ctype}: {cmsg}; {DEVICE} did not")
        j, dtype, dmsg = dev.error
        if j < i:
            return Mismatch(
                "unexpected-error", "", f"{DEVICE} raised {dtype} at statement {j}: {dmsg}"
            )
        if dtype != ctype:
            return Mismatch(
                "error-type", "", f"cpu raised {ctype}: {cmsg}; {DEVICE} raised {dtype}: {dmsg}"
            )
    elif dev.error is not None:
        j, dtype, dmsg = dev.error
        where = "at the synchronization" if j == n else f"at statement {j}"
        return Mismatch("unexpected-error", "", f"{DEVICE} raised {dtype} {where}: {dmsg}")
    tainted = tainted_vars(stmts, cpu.env)
    for key in sorted((k for k in cpu.env if VAR.fullmatch(k)), key=lambda k: int(k[1:])):
        expected, actual = cpu.env[key], dev.env.get(key)
        ref = f32_ref.env.get(key) if f32_ref is not None else None
        exact_value = exact.env.get(key) if exact is not None else None
        try:
            problem = compare_value(expected, actual, key in tainted, ref, exact_value)
        except Exception as e:  # reading the device value raised: a deferred error
            return Mismatch(
                "unexpected-error", key, f"reading {key} raised {type(e).__name__}: {str(e)[:300]}"
            )
        if problem is not None:
            return Mismatch(problem[0], key, problem[1])
    return None


def compare_value(expected, actual, tainted: bool, ref=None, exact=None) -> tuple[str, str] | None:
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return "type", f"expected a tensor, got {type(actual).__name__}"
        if actual.device.type != DEVICE:
            return "device", f"result on {actual.device}, expected {DEVICE}"
        if actual.dtype != expected.dtype:
            return "dtype", f"cpu {expected.dtype}, {DEVICE} {actual.dtype}"
        if actual.shape != expected.shape:
            # A data-dependent shape (nonzero, a mask) of float64 work, or of a half-precision
            # chain AEE computed in float32 (an overflow to inf avoided): the float32 program's.
            if (tainted or AEE) and isinstance(ref, torch.Tensor) and ref.shape == actual.shape:
                return None
            return "shape", f"cpu {tuple(expected.shape)}, {DEVICE} {tuple(actual.shape)}"
        got = actual.cpu()
        if tainted and not (expected.is_floating_point() or expected.is_complex()):
            return None
        tol = F32_TOL if tainted or expected.dtype in WIDE else {}
        try:
            torch.testing.assert_close(got, expected, equal_nan=True, **tol)
        except AssertionError as e:
            if ref is not None and _close_to_f32(got, expected, ref):
                return None
            if tainted and _close_to_policy(got, ref):
                return None
            if not tainted and _as_accurate(got, expected, exact):
                return None
            return "value", _first_line(e, got, expected)
        return None
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return "type", f"cpu {expected!r}, {DEVICE} {actual!r}"
        refs = (
            ref
            if isinstance(ref, (list, tuple)) and len(ref) == len(expected)
            else [None] * len(expected)
        )
        for a, b, r in zip(expected, actual, refs):
            problem = compare_value(a, b, tainted, r)
            if problem:
                return problem
        return None
    if type(expected) is not type(actual):
        return "type", f"cpu {expected!r} ({type(expected).__name__}), {DEVICE} {actual!r}"
    if isinstance(expected, (float, complex)) and not tainted:
        try:
            torch.testing.assert_close(actual, expected, equal_nan=True)
        except AssertionError:
            # A host read of a half-precision chain AEE computed in float32: the float32
            # program's value, at half precision's tolerance.
            if AEE and isinstance(ref, (float, complex)):
                try:
                    torch.testing.assert_close(actual, ref, equal_nan=True, rtol=1e-3, atol=1e-5)
                    return None
                except AssertionError:
                    pass
            return "value", f"cpu {expected!r}, {DEVICE} {actual!r}"
        return None
    if isinstance(expected, (float, complex)):
        ok = actual == expected  # infinities: their difference is nan
        ok = ok or abs(actual - expected) <= F32_TOL["atol"] + F32_TOL["rtol"] * abs(expected)
        if isinstance(ref, (float, complex)):  # the float64 policy: the float32 program's value
            ok = ok or abs(actual - ref) <= F32_TOL["atol"] + F32_TOL["rtol"] * abs(ref)
        return (
            None
            if ok or expected != expected
            else ("value", f"cpu {expected!r}, {DEVICE} {actual!r}")
        )
    if expected != actual:
        return "value", f"cpu {expected!r}, {DEVICE} {actual!r}"
    return None


def _as_accurate(got: torch.Tensor, expected: torch.Tensor, exact) -> bool:
    """|got| is no further from the float64 result than the CPU's own float result is (plus
    the default tolerance): a different, not a worse, rounding."""
    if not isinstance(exact, torch.Tensor) or exact.shape != got.shape:
        return False
    if not expected.is_floating_point() or expected.dtype == torch.float64:
        return False
    g, e, w = got.double(), expected.double(), exact.double()
    rtol, atol = torch.testing._comparison.default_tolerances(got.dtype)
    ok = (
        (g.isnan() & e.isnan())
        | (g == e)
        | ((g - w).abs() <= (e - w).abs() + atol + rtol * w.abs())
    )
    return bool(ok.all())


def _close_to_policy(got: torch.Tensor, ref) -> bool:
    """float64 work computed as float32: |got| matches the program run in float32."""
    if not isinstance(ref, torch.Tensor) or ref.shape != got.shape:
        return False
    try:
        torch.testing.assert_close(
            got, ref.to(got.dtype), equal_nan=True, check_dtype=False, **F32_TOL
        )
        return True
    except AssertionError:
        return False


def _close_to_f32(got: torch.Tensor, expected: torch.Tensor, ref) -> bool:
    """Under AEE: |got - cpu| stays within twice what computing the half-precision parts in
    float32 moves the result (|ref - cpu|), plus the default tolerance."""
    if not isinstance(ref, torch.Tensor) or ref.shape != got.shape:
        return False
    if got.is_complex() and expected.is_complex() and ref.is_complex():
        # Each of the real and imaginary parts (a half-precision chain divided by a complex).
        got, expected, ref = (torch.view_as_real(t.resolve_conj()) for t in (got, expected, ref))
    if not got.is_floating_point():
        return False
    g, e, f = got.double(), expected.double(), ref.double()
    rtol, atol = torch.testing._comparison.default_tolerances(got.dtype)
    both_nan = g.isnan() & e.isnan()
    unstable = ~torch.isfinite(f)  # the float32 program overflowed or lost the value
    bound = 2 * (f - e).abs() + atol + rtol * e.abs()
    as_fused = (g - f).abs() <= 2 * (atol + rtol * f.abs())  # the float32 chain rounded once
    ok = both_nan | unstable | ((g - e).abs() <= bound) | (g == e) | as_fused
    if PARTIAL_FUSION:
        slack = 2.0**-8 * e.abs() + atol
        ok = ok | ((g >= torch.minimum(e, f) - slack) & (g <= torch.maximum(e, f) + slack))
    return bool(ok.all())


def _first_line(e: AssertionError, got, expected) -> str:
    text = " ".join(str(e).split())[:240]
    if got.numel() <= 8:
        text += f" | cpu {expected.tolist()} {DEVICE} {got.tolist()}"
    return text


def f32_program(stmts: list[Stmt], half: bool, wide: bool) -> list[Stmt]:
    """The program with bfloat16/float16 arithmetic in float32 (AEE's fused numerics) and/or
    float64/complex128 in float32/complex64 (the device's float64 policy)."""
    out = []
    for s in stmts:
        code = s.code
        if wide:
            code = code.replace("torch.float64", "torch.float32")
            code = code.replace("torch.complex128", "torch.complex64")
        if half and s.kind == "input":
            if "torch.bfloat16" in code or "torch.float16" in code:
                code = code.removesuffix(".to(DEV)") + ".float().to(DEV)"
        elif half:
            code = re.sub(r"torch\.(bfloat16|float16)\b", "torch.float32", code)
        out.append(Stmt(code, s.kind, s.feature))
    return out


def check(stmts: list[Stmt]) -> Mismatch | None:
    cpu = run_program(stmts, "cpu")
    if cpu.error is not None and cpu.error[1:] == ("RuntimeError", "ZeroDivisionError"):
        # A policy (docs/eager.md): integer division by zero does not raise on the device, as
        # on CUDA, since seeing it would need the divisor on the host. Compare what comes before.
        stmts = stmts[: cpu.error[0]]
        cpu = run_program(stmts, "cpu")
    if cpu.error is not None and cpu.error[1] in ("NameError", "UnboundLocalError"):
        return Mismatch("invalid", "", "a statement the program needs was removed")
    dev = run_program(stmts, DEVICE)
    ref = None
    wide = any(isinstance(v, torch.Tensor) and v.dtype in WIDE for v in cpu.env.values())
    if AEE or wide:
        ref = run_program(f32_program(stmts, half=AEE, wide=wide), "cpu")
    if ref is not None and ref.error is not None:
        # The reference is good up to where the CPU program itself stops.
        if cpu.error is None or ref.error[0] != cpu.error[0]:
            ref = None
    found = compare(stmts, cpu, dev, ref)
    if found is not None and found.kind == "value" and cpu.error is None:
        # A float result that differs from the CPU's may still be the more accurate one (a long
        # sum added in another order): judge both against the program run in float64.
        exact = run_program(f64_program(stmts), "cpu")
        if exact.error is None and compare(stmts, cpu, dev, ref, exact) is None:
            return None
    return found


def f64_program(stmts: list[Stmt]) -> list[Stmt]:
    """The float32 program computed in float64 from the same input values: the accuracy
    reference for float32 results."""
    out = []
    for s in stmts:
        if s.kind == "input":
            code = s.code
            if "torch.float32" in code and code.endswith(".to(DEV)"):
                code = code.removesuffix(".to(DEV)") + ".double().to(DEV)"
        else:
            code = s.code.replace("torch.float32", "torch.float64")
        out.append(Stmt(code, s.kind, s.feature))
    return out


def minimize(stmts: list[Stmt], found: Mismatch) -> tuple[list[Stmt], Mismatch]:
    """The shortest failing prefix, then without each statement it does not need."""
    best, mismatch = stmts, found
    for length in range(1, len(stmts) + 1):
        m = check(stmts[:length])
        if m is not None and m.kind == found.kind:
            best, mismatch = stmts[:length], m
            break
    i = len(best) - 2
    while i >= 0:
        candidate = best[:i] + best[i + 1 :]
        m = check(candidate)
        if m is not None and m.kind == mismatch.kind:
            best, mismatch = candidate, m
        i -= 1
    return best, mismatch


def amplified(stmts: list[Stmt], mismatch: Mismatch) -> bool:
    """A value mismatch that only magnifies an earlier difference within tolerance: the last
    statement's operands already differ (bit for bit) before it runs."""
    if mismatch.kind != "value" or len(stmts) < 2:
        return False
    prefix = stmts[:-1]
    cpu, dev = run_program(prefix, "cpu"), run_program(prefix, DEVICE)
    for name in set(VAR.findall(stmts[-1].code)):
        a, b = cpu.env.get(name), dev.env.get(name)
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
            b = b.cpu()
            if a.dtype == b.dtype and not torch.equal(a.nan_to_num(), b.nan_to_num()):
                if (a.isnan() == b.isnan()).all():
                    return True
    return False


def reproducer(stmts: list[Stmt], mismatch: Mismatch) -> str:
    body = "\n".join(f"    {s.code}" for s in stmts)
    last = VAR.findall(stmts[-1].code)
    shown = mismatch.var or (last[0] if last else "None")
    return (
        "import torch\nfrom math import inf, nan\n\n"
        f"def run(DEV):\n{body}\n    return {shown}\n\n"
        'print(run("cpu"))\nprint(run("neuron"))\n'
        f"# {mismatch.kind}: {mismatch.detail}"
    )


def run_reproducer(body: str, device: str):
    """Runs a known failure's `run(DEV)` body; returns its value or the exception."""
    env = new_env(device)
    source = "def run(DEV):\n" + "\n".join("    " + line for line in body.strip().splitlines())
    try:
        exec(source, env)
        value = env["run"](device)
        if device != "cpu":
            torch.neuron.synchronize()
        return value
    except Exception as e:  # the exception is the result
        return e


def reproducer_mismatch(body: str) -> str | None:
    """How `neuron` still differs from the CPU on |body|, or None when they agree."""
    expected, actual = run_reproducer(body, "cpu"), run_reproducer(body, DEVICE)
    if isinstance(expected, Exception) or isinstance(actual, Exception):
        if type(expected) is type(actual):
            return None
        return f"cpu {type(expected).__name__}: {str(expected)[:200]}; {DEVICE} {type(actual).__name__}: {str(actual)[:200]}"
    try:
        problem = compare_value(expected, actual, False)
    except Exception as e:
        return f"reading the {DEVICE} value raised {type(e).__name__}: {str(e)[:200]}"
    return None if problem is None else f"{problem[0]}: {problem[1]}"


def fuzz(seeds, threads=1, seconds=None, large=False, include_known=False, max_stmts=8):
    """Runs the programs of |seeds| in |threads| Python threads; returns a summary dict."""
    global PARTIAL_FUSION
    PARTIAL_FUSION = AEE and threads > 1
    excluded = [p for k in POLICIES for p in k.features]
    if not include_known:
        excluded += [p for k in KNOWN_FAILURES for p in k.features]
    deadline = time.monotonic() + seconds if seconds else None
    seeds = list(seeds)
    lock = threading.Lock()
    state = {"programs": 0, "statements": 0, "skipped_known": 0, "seeds_run": [], "raw": []}

    def worker(my_seeds):
        for seed in my_seeds:
            if deadline is not None and time.monotonic() > deadline:
                return
            gen = ProgramGenerator(seed, excluded, max_stmts=max_stmts, large=large)
            try:
                stmts = gen.generate()
            except Exception as e:  # the generator itself failed: report, do not hide
                with lock:
                    state["raw"].append((seed, [], Mismatch("generator", "", repr(e))))
                continue
            m = check(stmts)
            with lock:
                state["programs"] += 1
                state["statements"] += len(stmts)
                state["skipped_known"] += gen.skipped_known
                state["seeds_run"].append(seed)
                if m is not None:
                    state["raw"].append((seed, stmts, m))

    pool = [threading.Thread(target=worker, args=(seeds[k::threads],)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    findings, noise, known_in_threads = [], 0, {}
    for seed, stmts, m in sorted(state["raw"], key=lambda r: r[0]):
        if not stmts:
            findings.append({"seed": seed, "kind": m.kind, "detail": m.detail})
            continue
        again = check(stmts)  # single-threaded now
        if again is None:
            known = [
                k.id
                for k in KNOWN_FAILURES
                if k.threads_only
                and re.search(k.threads_only, m.detail)
                and (AEE or not k.aee_only)
            ]
            if known and not include_known:
                known_in_threads[known[0]] = known_in_threads.get(known[0], 0) + 1
                continue
            findings.append(
                {"seed": seed, "kind": m.kind, "detail": m.detail, "only_in_threads": threads > 1,
                 "feature": stmts[-1].feature, "reproducer": reproducer(stmts, m)}
            )  # fmt: skip
            continue
        small, sm = minimize(stmts, again)
        if amplified(small, sm):
            noise += 1
            continue
        findings.append(
            {"seed": seed, "kind": sm.kind, "detail": sm.detail, "feature": small[-1].feature,
             "statements": len(small), "reproducer": reproducer(small, sm)}
        )  # fmt: skip
    seeds_run = sorted(state["seeds_run"])
    import vtrn

    metrics = vtrn.metrics()
    return {
        "fused_groups": metrics.get("fused_groups", 0),
        "fused_ops": metrics.get("fused_ops", 0),
        "fallbacks": metrics.get("fallbacks", 0),
        "aee": AEE,
        "threads": threads,
        "large": large,
        "programs": state["programs"],
        "statements": state["statements"],
        "seeds": f"{seeds_run[0]}..{seeds_run[-1]}" if seeds_run else "",
        "skipped_known_statements": state["skipped_known"],
        "amplified_rounding": noise,
        "known_in_threads": known_in_threads,
        "findings": findings,
    }


def parse_seeds(text: str) -> range:
    start, _, stop = text.partition(":")
    return range(int(start), int(stop)) if stop else range(int(start))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0:50", help="START:STOP (or a count)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=None, help="stop starting programs after")
    parser.add_argument("--large", action="store_true", help="reductions up to 10^7 elements")
    parser.add_argument(
        "--include-known", action="store_true", help="do not exclude KNOWN_FAILURES"
    )
    parser.add_argument("--max-stmts", type=int, default=8)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    summary = fuzz(
        parse_seeds(args.seeds),
        args.threads,
        args.seconds,
        args.large,
        args.include_known,
        args.max_stmts,
    )
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
