#!/usr/bin/env python3
"""PyTorch's own device-generic test suites, run on `neuron` with the CPU as the control.

PyTorch's suites (test_view_ops.py, test_indexing.py, ...) are written once against
`torch.testing._internal.common_device_type`, which instantiates them for every device type
it finds, PrivateUse1 (`neuron`) included. The test files are not in the torch wheel: `fetch`
takes them from Debian's source package of PyTorch (the release closest to torch 2.13 that
the archive serves) into build/pytorch-tests/. `run` then runs each suite twice, in
subprocesses, once instantiated for `neuron` and once for the CPU, and compares test by test.
A test that fails on the CPU too fails because the test file is from another PyTorch release
than the installed torch (version skew), not because of vtrn; what counts is what fails on
`neuron` and passes on the CPU.

    python scripts/conformance.py fetch              # network: once
    python scripts/conformance.py run                # no network; all default suites
    python scripts/conformance.py run --suites test_view_ops --configs neuron,cpu
    python scripts/conformance.py run --suites test_reductions --resume --only-failed-from neuron
                                                     # the CPU control only where neuron failed
    python scripts/conformance.py report             # reprint the last run's table
    python scripts/conformance.py report --list neuron-only   # and the failing test names

Each (suite, config) writes one line per test to build/conformance/<suite>.<config>.jsonl
through the pytest plugin in this file (`-p conformance`), so a process that dies (a crash,
or pytest-timeout's per-test limit) loses nothing: the run resumes after the test that
killed it, which is recorded as `crashed`.

Deliberate policies of the device (POLICIES below) excuse matching failures; they are
counted apart, never hidden.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
TESTS_DIR = BUILD / "pytorch-tests"
RESULTS_DIR = BUILD / "conformance"

# Debian's source package of PyTorch. 2.12.1 is the release nearest 2.13 that the archive's
# pool serves (trixie has 2.6.0); the digest pins the exact file. It is taken from the Debian
# mirror apt is configured with (or --mirror).
SOURCE_VERSION = "2.12.1"
SOURCE_PATH = "pool/main/p/pytorch/pytorch_2.12.1%2Bdfsg.orig.tar.xz"
SOURCE_SHA256 = "95b6f85e1da2776f0cb0e5a635c4430b4e3f05b6ccb9e00237f3cecd15572875"


def apt_debian_mirror() -> str | None:
    """The first Debian archive URI in apt's sources (deb822 or one-line format)."""
    files = [Path("/etc/apt/sources.list")] + sorted(Path("/etc/apt/sources.list.d").glob("*"))
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        for uri in re.findall(r"(?:URIs:|^deb(?:-src)?(?:\s+\[[^\]]*\])?)\s+(\S+)", text, re.M):
            if uri.rstrip("/").endswith("/debian"):
                return uri.rstrip("/")
    return None


DEFAULT_SUITES = (
    "test_view_ops",
    "test_indexing",
    "test_tensor_creation_ops",
    "test_type_promotion",
    "test_binary_ufuncs",
    "test_reductions",
)

# A config is one way of running a suite: which device type common_device_type instantiates,
# and the environment. The CPU control runs without vtrn loaded, so it is plain torch.
CONFIGS = {
    "neuron": {"PYTORCH_TESTING_DEVICE_ONLY_FOR": "privateuse1"},
    "neuron-aee": {
        "PYTORCH_TESTING_DEVICE_ONLY_FOR": "privateuse1",
        "TORCH_NEURONX_ENABLE_CONCATENATION": "1",
    },
    "cpu": {"PYTORCH_TESTING_DEVICE_ONLY_FOR": "cpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
}
DEVICE_TOKEN = {"neuron": "neuron", "neuron-aee": "neuron", "cpu": "cpu"}
# A suite's second instantiate_device_type_tests call sees the backend's own name.
CLASS_TOKEN = {"neuron": "(PRIVATEUSE1|NEURON)", "neuron-aee": "(PRIVATEUSE1|NEURON)", "cpu": "CPU"}

FAILING = ("failed", "error", "crashed")


@dataclasses.dataclass(frozen=True)
class Policy:
    """A documented behaviour of the device that a PyTorch test reads as a failure."""

    name: str
    why: str
    test: str  # regex on the normalized test id
    message: str  # regex on the failure text


# Kept short: each entry is a decision or a limit of the device stated in its docs, one that
# fails loudly or costs precision the policy names, never a wrong result that looks right.
POLICIES = (
    Policy(
        name="float64-as-float32",
        why="neuron computes float64 (and complex128) as float32 (complex64) and stores the "
        "result in the wide type, as Trainium does (README, dtypes). A float64 result is "
        "then only float32-accurate, so a float64 test at float64 tolerance fails.",
        test=r"_(float64|complex128|double|cdouble)(_|$)",
        # A precision difference, not a nan or inf where the CPU has a number.
        message=r"(Tensor-likes|Scalars) are not (close|equal)(?!.*difference: (nan|inf))",
    ),
    Policy(
        name="float64-as-float32 (exact checks)",
        why="the same policy, in tests that check float64 values exactly rather than at a "
        "tolerance: random_(from, to) of int32/uint32 compares t.double().max() with bounds "
        "near 2**31 and 2**32, beyond float32's exact integers; uniform_ of float64 draws "
        "between bounds beyond float32's range; linspace of complex128 compares its endpoints "
        "with numpy's with ==.",
        test=r"::test_random_from_to_u?int32$|::test_uniform_from_to_float64$"
        r"|::test_linspace_vs_numpy_complex128$",
        message=r"is not true",
    ),
    Policy(
        name="float64-as-float32 (float64 inside the test)",
        why="the same policy, in tests whose name does not carry float64 but that compute in "
        "it: float_power always computes in float64 (complex128), and test_int_and_float_pow "
        "runs a float64 case. The failure is a comparison at float64's tolerance (rtol 1e-7).",
        test=r"::test_\w*float_power_",
        message=r"(Tensor-likes|Scalars) are not close(?!.*difference: (nan|inf))",
    ),
    Policy(
        name="float64-as-float32 (float64 inside the test)",
        why="the same policy, where the test's float64 case fails at float64's tolerance "
        "(rtol 1e-7), or where gradcheck, which runs in float64, compares finite differences "
        "computed in float32 with the analytical gradient.",
        test=r"::test_int_and_float_pow$|::test_pow_scalar_base$",
        message=r"(Tensor-likes|Scalars) are not close(?!.*difference: (nan|inf))"
        r".*relative difference: .*\(up to 1e-07 allowed\)|GradcheckError: Jacobian mismatch",
    ),
    Policy(
        name="float64-as-float32 (range)",
        why="the same policy, in a test whose float64 values lie beyond float32's range: "
        "complex128 division of finfo(float64).max / 2 and finfo(float64).tiny, and floor "
        "division of finfo(float64).max * 0.7, and pow/float_power (which computes in float64) "
        "of large values or of small integers to large powers ((-55) ** 55), overflow and "
        "underflow in float32 (nan, inf), where the same tests in complex64 and float32, with "
        "their own extremes, pass.",
        test=r"::test_complex_div_underflow_overflow_complex128$|::test_floor_div_extremal_float64$"
        r"|::test_reference_numerics_large_values_(_refs_)?(pow|float_power)_\w+$"
        r"|::test_reference_numerics_small_values_(_refs_)?float_power_u?int\d+$",
        message=r"(Tensor-likes|Scalars) are not close",
    ),
    Policy(
        name="index-out-of-range-unchecked",
        why="indexing with an index tensor clamps (gather) or drops (scatter) an out-of-range "
        "index, as XLA's gather and scatter do, instead of raising IndexError: seeing it would "
        "need the index values on the host at every call (docs/eager.md, Limits). CUDA does "
        "not raise IndexError either (a device-side assert), and the suites skip it there.",
        test=r"",
        message=r"^AssertionError: IndexError not raised",
    ),
    Policy(
        name="strided-tensors-only",
        why="vtrn implements strided (dense) neuron tensors only (README, status): sparse and "
        "quantized layouts have no neuron kernels, so the dispatcher raises its own "
        "NotImplementedError naming the op and the Sparseneuron/Quantizedneuron key. A "
        "missing feature that fails loudly, not a wrong result.",
        test=r"",
        message=r"^NotImplementedError: Could not run '[\w:.]+' with arguments from the "
        r"'(Sparse|SparseCsr|Quantized)neuron' backend",
    ),
    Policy(
        name="integer-division-by-zero",
        why="integer fmod/remainder by zero: fmod runs the CPU's kernel, which raises the "
        "CPU's ZeroDivisionError, and remainder gives the executor's value without raising "
        "(docs/eager.md, Limits); the test expects CUDA's undefined bit patterns on every "
        "device but the CPU. A loud error, not a wrong result.",
        test=r"::test_fmod_remainder_by_zero_integral_",
        message=r"^RuntimeError: ZeroDivisionError$",
    ),
    Policy(
        name="complex32-as-the-cpu",
        why="complex32 (ComplexHalf) tensors exist on neuron, and their arithmetic runs on the "
        "CPU's kernels (the fallback), which implement fewer ops for it than CUDA's: pow "
        "raises the CPU's NotImplementedError. A loud error, not a wrong result.",
        test=r"",
        message=r"""^NotImplementedError: "\w+" not implemented for 'ComplexHalf'$""",
    ),
    Policy(
        name="refs-copysign-device-check",
        why="torch._refs.copysign refuses operands on two devices, so a 0-d CPU tensor operand "
        "raises on every accelerator, CUDA included; PyTorch's skip of this test names the "
        "class TestBinaryUfuncsDevice, which does not exist, so it applies on no device. The "
        "CPU passes only because both operands are CPU tensors there.",
        test=r"::test_type_promotion__refs_copysign$",
        message=r"^RuntimeError: Expected divisor \(b\) to be on the same device",
    ),
    Policy(
        name="fp8-trn3-only",
        why="FP8 tensors exist only on Trainium3 (README, dtypes): on the default trn2 "
        "instance creating one raises, naming NEURON_RT_FAKE_INSTANCE_TYPE.",
        test=r"",  # also tests that loop over every dtype
        message=r"FP8 requires Trainium3",
    ),
)


# ---------------------------------------------------------------------------------------------
# fetch


def fetch(args: argparse.Namespace) -> int:
    """Downloads (or takes --tarball) the source package and extracts test/*.py."""
    if args.tarball:
        tarball = Path(args.tarball)
    else:
        tarball = BUILD / f"pytorch_{SOURCE_VERSION}+dfsg.orig.tar.xz"
        if not tarball.exists() or _sha256(tarball) != SOURCE_SHA256:
            mirror = args.mirror or apt_debian_mirror()
            if mirror is None:
                print("conformance: no Debian mirror in apt's sources; pass --mirror URL")
                return 2
            BUILD.mkdir(exist_ok=True)
            url = f"{mirror}/{SOURCE_PATH}"
            print(f"conformance: downloading {url}")
            tmp = tarball.with_suffix(".part")
            urllib.request.urlretrieve(url, tmp)
            tmp.rename(tarball)
    digest = _sha256(tarball)
    if digest != SOURCE_SHA256 and not args.tarball:
        print(f"conformance: {tarball} has sha256 {digest}, expected {SOURCE_SHA256}")
        return 2
    target = TESTS_DIR / "test"
    target.mkdir(parents=True, exist_ok=True)
    count = 0
    with tarfile.open(tarball) as tar:
        for member in tar:
            parts = member.name.split("/")
            # <top>/test/<file>.py only: the suites import nothing else from the tree.
            if len(parts) == 3 and parts[1] == "test" and parts[2].endswith(".py"):
                # PyTorch's conftest.py is written for its own CI's pytest and plugins.
                if not member.isfile() or parts[2] == "conftest.py":
                    continue
                data = tar.extractfile(member).read()
                (target / parts[2]).write_bytes(data)
                count += 1
            elif len(parts) == 2 and parts[1] == "version.txt":
                (TESTS_DIR / "version.txt").write_bytes(tar.extractfile(member).read())
    # An ini of its own makes this directory pytest's rootdir, so the repository's pytest
    # settings and conftest stay out of PyTorch's suites.
    (TESTS_DIR / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    print(f"conformance: {count} test files from {tarball.name} in {target}")
    return 0


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# the pytest plugin (loaded in the suite's process with `-p conformance`)


def _plugin_log():
    return os.environ.get("VTRN_CONFORMANCE_LOG")


def _plugin_write(record: dict) -> None:
    with open(_plugin_log(), "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()


def pytest_collection_modifyitems(session, config, items):
    """Deselects the tests an earlier process of this run already finished (or died in), and
    with --only-failed-from, the tests outside the list of those to rerun."""
    done: set[str] = set()
    done_file = os.environ.get("VTRN_CONFORMANCE_DONE")
    if done_file and os.path.exists(done_file):
        done = set(Path(done_file).read_text().split("\n"))
    only = None
    only_file = os.environ.get("VTRN_CONFORMANCE_ONLY")
    if only_file:
        only = set(Path(only_file).read_text().split("\n"))
        token, cls = os.environ["VTRN_CONFORMANCE_TOKEN"].split(" ")

    def wanted(item) -> bool:
        if item.nodeid in done:
            return False
        return only is None or _normalize(item.nodeid, token, cls) in only

    keep = [item for item in items if wanted(item)]
    deselected = [item for item in items if not wanted(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = keep


@pytest.hookimpl(trylast=True)  # after the test's own teardown
def pytest_runtest_teardown(item, nextitem):
    """On the device, waits for the test's queued work: an error a queued op reports then
    fails this test (at teardown) instead of whichever test synchronizes next."""
    if os.environ.get("PYTORCH_TESTING_DEVICE_ONLY_FOR") != "privateuse1":
        return
    import torch

    backend = torch._C._get_privateuse1_backend_name()
    module = getattr(torch, backend, None)
    if module is not None and module.is_initialized():
        try:
            module.synchronize()
        except Exception as e:  # a test's deferred error
            raise RuntimeError(f"deferred error surfaced after the test: {e}") from None


def pytest_runtest_logstart(nodeid, location):
    if _plugin_log():
        _plugin_write({"id": nodeid, "start": True})


def pytest_runtest_logreport(report):
    if not _plugin_log():
        return
    outcome = None
    if report.when == "setup":
        if report.failed:
            outcome = "error"
        elif report.skipped:
            outcome = "skipped"
    elif report.when == "call":
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "failed"  # unexpected success fails
        else:
            outcome = report.outcome
    elif report.when == "teardown" and report.failed:
        outcome = "error"
    if outcome is None:
        return
    text = ""
    if outcome in FAILING or outcome == "skipped":
        text = _short_failure(report)
    _plugin_write({"id": report.nodeid, "outcome": outcome, "when": report.when, "message": text})


def _short_failure(report) -> str:
    """The exception line(s) of a failure, or a skip's reason: enough to classify it."""
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])[:300]
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message[:1500]
    return str(report.longrepr)[-1500:]


# ---------------------------------------------------------------------------------------------
# run


def run(args: argparse.Namespace) -> int:
    if not (TESTS_DIR / "test").is_dir():
        print("conformance: no test files; run `python scripts/conformance.py fetch` first")
        return 2
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    suites = args.suites.split(",") if args.suites else list(DEFAULT_SUITES)
    configs = args.configs.split(",")
    for config in configs:
        if config not in CONFIGS:
            print(f"conformance: unknown config {config!r}; known: {', '.join(CONFIGS)}")
            return 2
    for suite in suites:
        path = TESTS_DIR / "test" / f"{suite}.py"
        if not path.exists():
            print(f"conformance: no {path}; known suites are the test_*.py files there")
            return 2
        for config in configs:
            _run_suite(suite, config, args)
    return report(args, suites=suites, configs=configs)


def _run_suite(suite: str, config: str, args: argparse.Namespace) -> None:
    log = RESULTS_DIR / f"{suite}.{config}.jsonl"
    done = RESULTS_DIR / f"{suite}.{config}.done"
    out = RESULTS_DIR / f"{suite}.{config}.out"
    if not args.resume:
        for f in (log, done, out):
            f.unlink(missing_ok=True)
    else:
        finished = {r["id"] for r in _read(log) if "outcome" in r}
        done.write_text("\n".join(sorted(finished)) + "\n")
    env = dict(os.environ)
    env.update(CONFIGS[config])
    if args.only_failed_from and config != args.only_failed_from:
        # Only the tests that failed on the other config: the control for what the device
        # fails, without rerunning the whole suite. A test the list does not name keeps its
        # earlier result (if any) in the log.
        failed = sorted(
            test_id
            for test_id, rec in _outcomes(suite, args.only_failed_from).items()
            if rec["outcome"] in FAILING and not test_id.endswith("::<suite>")
        )
        only = RESULTS_DIR / f"{suite}.{config}.only"
        only.write_text("\n".join(failed) + "\n")
        env["VTRN_CONFORMANCE_ONLY"] = str(only)
        env["VTRN_CONFORMANCE_TOKEN"] = f"{DEVICE_TOKEN[config]} {CLASS_TOKEN[config]}"
        if not failed:
            print(f"conformance: {suite} on {config}: nothing failed on {args.only_failed_from}")
            return
    env.update(
        {
            "VTRN_CONFORMANCE_LOG": str(log),
            "VTRN_CONFORMANCE_DONE": str(done),
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(REPO / "scripts"), env.get("PYTHONPATH")])
            ),
            "PYTORCH_PRINT_REPRO_ON_FAILURE": "0",
        }
    )
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "conformance",
        "-p",
        "no:cacheprovider",
        "-o",
        "console_output_style=classic",
        f"--timeout={args.test_timeout}",
        "--timeout-method=thread",
        "-W",
        "ignore::UserWarning",
        f"test/{suite}.py",
    ]
    if args.k:
        cmd += ["-k", args.k]
    deadline = time.monotonic() + args.suite_timeout
    started = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _append(log, {"id": f"test/{suite}.py::<suite>", "outcome": "timeout"})
            break
        with open(out, "a") as sink:
            try:
                rc = subprocess.run(
                    cmd,
                    cwd=TESTS_DIR,
                    env=env,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    timeout=remaining,
                ).returncode
            except subprocess.TimeoutExpired:
                rc = None
        records = _read(log)
        finished = {r["id"] for r in records if "outcome" in r}
        started_ids = [r["id"] for r in records if r.get("start")]
        dead = [i for i in started_ids if i not in finished]
        if rc is None:
            for test_id in dead:
                _append(log, {"id": test_id, "outcome": "crashed", "message": "suite timeout"})
            _append(log, {"id": f"test/{suite}.py::<suite>", "outcome": "timeout"})
            break
        if not dead and rc in (0, 1, 5):
            break  # pytest finished, whether tests failed or not
        if not dead:
            # pytest itself failed (a collection error, a bad option): no test ran
            tail = out.read_text(errors="replace")[-3000:]
            print(f"conformance: {suite} on {config}: pytest exited {rc}:\n{tail}")
            _append(log, {"id": f"test/{suite}.py::<suite>", "outcome": "timeout"})
            break
        # The process died inside a test (crash, or pytest-timeout's limit): record it and go
        # on with the rest.
        tail = out.read_text(errors="replace")[-1500:]
        for test_id in dead:
            _append(log, {"id": test_id, "outcome": "crashed", "message": f"rc={rc}: {tail}"})
        done.write_text("\n".join(sorted(finished | set(dead))) + "\n")
        if attempts > args.max_restarts:
            _append(log, {"id": f"test/{suite}.py::<suite>", "outcome": "timeout"})
            break
    print(
        f"conformance: {suite} on {config}: {time.monotonic() - started:.0f} s, "
        f"{attempts} process(es)",
        flush=True,
    )


def _append(path: Path, record: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            pass  # a line cut by a dying process
    return records


# ---------------------------------------------------------------------------------------------
# report


def _outcomes(suite: str, config: str) -> dict[str, dict]:
    """Normalized test id -> its final record (the last outcome wins: setup then call)."""
    token, cls = DEVICE_TOKEN[config], CLASS_TOKEN[config]
    result: dict[str, dict] = {}
    for r in _read(RESULTS_DIR / f"{suite}.{config}.jsonl"):
        if "outcome" not in r:
            continue
        prev = result.get(_normalize(r["id"], token, cls))
        # A teardown error after a pass turns it into an error; nothing turns a failure back.
        if prev is not None and prev["outcome"] in FAILING:
            continue
        result[_normalize(r["id"], token, cls)] = r
    return result


def _normalize(test_id: str, token: str, cls: str) -> str:
    """Removes the device from a test id: the class suffix and the name's device token."""
    if "::" not in test_id:
        return test_id
    head, _, name = test_id.rpartition("::")
    head = re.sub(rf"{cls}$", "", head)
    # The device suffix is the last `_<device>` in the name; only dtype suffixes follow it.
    matches = list(re.finditer(rf"_{token}(?=_|$)", name))
    if matches:
        name = name[: matches[-1].start()] + name[matches[-1].end() :]
    return f"{head}::{name}"


def _policy(test_id: str, message: str) -> Policy | None:
    for policy in POLICIES:
        if re.search(policy.test, test_id) and re.search(policy.message, message or "", re.S):
            return policy
    return None


def _classify(suite: str, device: str, control: str) -> dict[str, list[str]]:
    """Failing tests on `device` split by what the control says about them."""
    dev, ctl = _outcomes(suite, device), _outcomes(suite, control)
    groups: dict[str, list[str]] = {"neuron-only": [], "excused": [], "both": [], "no-control": []}
    for test_id, rec in dev.items():
        if rec["outcome"] not in FAILING or test_id.endswith("::<suite>"):
            continue
        other = ctl.get(test_id)
        if other is not None and other["outcome"] in FAILING:
            groups["both"].append(test_id)
        elif other is None or other["outcome"] == "skipped":
            groups["no-control"].append(test_id)
        elif _policy(test_id, rec.get("message", "")):
            groups["excused"].append(test_id)
        else:
            groups["neuron-only"].append(test_id)
    return groups


def report(args: argparse.Namespace, suites=None, configs=None) -> int:
    suites = suites or (args.suites.split(",") if args.suites else list(DEFAULT_SUITES))
    configs = configs or args.configs.split(",")
    devices = [c for c in configs if c != "cpu"]
    control = "cpu" if "cpu" in configs else None
    columns = ("passed", "failed", "error", "crashed", "skipped", "xfailed")
    header = f"{'suite':26} {'config':11} " + " ".join(f"{c:>8}" for c in columns)
    if control:
        header += f" {'dev-only':>8} {'excused':>8} {'no-ctl':>8}"
    print(header)
    totals: dict[str, int] = {}
    listing = []
    for suite in suites:
        for config in configs:
            outcomes = _outcomes(suite, config)
            counts = {c: 0 for c in columns}
            timed_out = False
            for test_id, rec in outcomes.items():
                if test_id.endswith("::<suite>"):
                    timed_out = True
                    continue
                key = "passed" if rec["outcome"] == "xpassed" else rec["outcome"]
                counts[key] = counts.get(key, 0) + 1
            line = f"{suite:26} {config:11} " + " ".join(f"{counts[c]:>8}" for c in columns)
            if control and config != control:
                groups = _classify(suite, config, control)
                line += (
                    f" {len(groups['neuron-only']):>8} {len(groups['excused']):>8}"
                    f" {len(groups['no-control']):>8}"
                )
                for key in ("neuron-only", "excused", "no-control"):
                    totals[f"{config} {key}"] = totals.get(f"{config} {key}", 0) + len(groups[key])
                    if args.list and key in args.list.split(","):
                        for test_id in sorted(groups[key]):
                            msg = _outcomes(suite, config)[test_id].get("message", "")
                            listing.append((key, config, test_id, msg))
            if timed_out:
                line += "  (suite timed out: counts are partial)"
            print(line)
    for key, value in totals.items():
        print(f"total {key}: {value}")
    if listing:
        print()
        for key, config, test_id, msg in listing:
            first = " ".join((msg or "").split())[:240]
            print(f"[{key}/{config}] {test_id}\n    {first}")
    if devices and control:
        print(
            "\ndev-only: fails on the device, passes on the CPU (excused: matches a POLICIES "
            "entry); no-ctl: fails on the device, skipped or absent on the CPU."
        )
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fetch", help="download PyTorch's test files into build/ (network)")
    p.add_argument("--tarball", help="a local copy of Debian's pytorch .orig.tar.xz")
    p.add_argument("--mirror", help="a Debian archive URL (default: the one apt uses)")
    for name in ("run", "report"):
        p = sub.add_parser(name)
        p.add_argument("--suites", help=f"comma-separated (default: {','.join(DEFAULT_SUITES)})")
        p.add_argument("--configs", default="neuron,cpu", help=f"of {','.join(CONFIGS)}")
        p.add_argument(
            "--list", help="also list tests of these kinds: neuron-only,excused,no-control"
        )
        if name == "run":
            p.add_argument("-k", help="pytest -k expression, passed through")
            p.add_argument("--suite-timeout", type=float, default=3600.0, help="seconds")
            p.add_argument("--test-timeout", type=int, default=300, help="seconds per test")
            p.add_argument("--max-restarts", type=int, default=50)
            p.add_argument(
                "--resume", action="store_true", help="keep earlier results, run what is left"
            )
            p.add_argument(
                "--only-failed-from",
                metavar="CONFIG",
                help="run the other configs (the control) only on the tests that failed on "
                "CONFIG; its results must exist (run it first, or list it first in --configs)",
            )
    p = sub.add_parser("policies", help="print the deliberate policies that excuse failures")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        return fetch(args)
    if args.command == "run":
        return run(args)
    if args.command == "policies":
        for policy in POLICIES:
            print(
                f"{policy.name}: {policy.why}\n  tests /{policy.test}/, failures /{policy.message}/"
            )
        return 0
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
