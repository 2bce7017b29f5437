"""`vtrn ops` and docs/ops.md: which ATen ops run natively on neuron, which fall back to the CPU.

The table's claims are checked against the dispatcher itself and by running a fallback op.
"""

import difflib
import pathlib
import shutil
import subprocess
import sys

import torch

import vtrn
from vtrn import ops
from vtrn.render.ops import REGENERATE

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "ops.md"

# Obscure ops unlikely ever to be lowered; the test runs the first one the table lists as fallback.
FALLBACK_CANDIDATES = (
    ("special_zeta.out", lambda x: torch.special.zeta(x + 1.5, x + 0.5)),
    ("special_i1e.out", torch.special.i1e),
    ("digamma.out", torch.digamma),
    ("erfinv.out", lambda x: torch.erfinv(x / 4)),
    ("lgamma.out", torch.lgamma),
)


def vtrn_cli(*args):
    exe = shutil.which("vtrn")
    cmd = [exe] if exe else [sys.executable, "-m", "vtrn.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120)


def rows_by_name():
    return {r.name: r for r in ops.ops_table()}


def test_docs_ops_md_is_up_to_date():
    result = vtrn_cli("ops", "--markdown")
    assert result.returncode == 0, result.stderr
    current = DOC.read_text() if DOC.exists() else ""
    if current != result.stdout:
        diff = list(
            difflib.unified_diff(
                current.splitlines(),
                result.stdout.splitlines(),
                "docs/ops.md",
                "vtrn ops --markdown",
                lineterm="",
                n=0,
            )
        )
        raise AssertionError(
            f"docs/ops.md is out of date; regenerate it from the repository root with "
            f"`{REGENERATE}`. Differences:\n" + "\n".join(diff[:40])
        )


def test_native_rows_are_real_aten_ops_with_known_dtypes():
    native = [r for r in ops.ops_table() if r.status == "native"]
    assert native
    unknown, bad = [], []
    for r in native:
        base, _, overload = r.name.partition(".")
        try:
            torch._C._dispatch_find_schema_or_throw("aten::" + base, overload)
        except RuntimeError:
            unknown.append(r.name)
        if (
            r.kind not in ("lowered", "runtime")
            or not r.dtypes
            or not all(isinstance(getattr(torch, d, None), torch.dtype) for d in r.dtypes)
        ):
            bad.append(r)
    assert not unknown, f"vtrn._C._native_ops() names ops that ATen does not have: {unknown}"
    assert not bad, f"native rows with a bad kind or dtype list: {bad}"


def test_every_neuron_kernel_is_listed_by_native_ops():
    unlisted = [r.name for r in ops.ops_table() if ops.NOT_LISTED in r.dtypes]
    assert not unlisted, (
        f"ops with a neuron (PrivateUse1) kernel missing from vtrn._C._native_ops(): {unlisted}"
    )


def test_fallback_and_composite_match_the_dispatcher():
    # Independent of ops_table's rule: the dispatch table PyTorch computed for the neuron key.
    wrong = []
    for r in ops.ops_table():
        if r.status == "native":
            continue
        entry = next(
            line
            for line in torch._C._dispatch_dump_table("aten::" + r.name).splitlines()
            if line.startswith("PrivateUse1:")
        )
        if ("[backend fallback]" in entry) != (r.status == "fallback"):
            wrong.append((r.name, r.status, entry))
    assert not wrong, wrong[:10]


def test_an_op_listed_as_fallback_falls_back_on_neuron(clean_tracking):
    rows = rows_by_name()
    name, fn = next(
        ((n, f) for n, f in FALLBACK_CANDIDATES if rows.get(n) and rows[n].status == "fallback"),
        (None, None),
    )
    assert name, (
        f"none of {[n for n, _ in FALLBACK_CANDIDATES]} is a fallback any more; add one that is"
    )
    x = torch.linspace(0.25, 3.0, 12)
    out = fn(x.to("neuron"))
    assert f"aten::{name}" in vtrn.get_fallback_ops(), (name, vtrn.get_fallback_ops())
    assert out.is_neuron
    torch.testing.assert_close(out.cpu(), fn(x))


def test_unknown_op_exits_2_and_says_what_to_do():
    result = vtrn_cli("ops", "--op", "no_such_op.out")
    assert result.returncode == 2
    assert "unknown op 'no_such_op.out'" in result.stderr
    assert "`vtrn ops`" in result.stderr
    assert result.stdout == ""


def test_op_shows_one_overload_or_every_overload_of_an_op():
    result = vtrn_cli("ops", "--op", "aten::special_zeta.out")
    assert result.returncode == 0, result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["op", "special_zeta.out"]
    overloads = {n for n in rows_by_name() if n.split(".")[0] == "special_zeta"}
    result = vtrn_cli("ops", "--op", "special_zeta")
    assert {line.split()[0] for line in result.stdout.splitlines()[1:]} == overloads
    assert len(overloads) > 1


def test_native_lists_only_native_rows():
    result = vtrn_cli("ops", "--native")
    assert result.returncode == 0, result.stderr
    header, *lines = result.stdout.splitlines()
    assert header.split() == ["op", "status", "dtypes"]
    expected = sorted(r.name for r in ops.ops_table() if r.status == "native")
    assert [line.split()[0] for line in lines] == expected
    assert all(line.split()[1] == "native" for line in lines)


def test_default_table_lists_every_op_aligned():
    result = vtrn_cli("ops")
    assert result.returncode == 0, result.stderr
    header, *lines = result.stdout.splitlines()
    rows = ops.ops_table()
    assert len(lines) == len(rows)
    column = header.index("status")
    assert all(line[column - 2 : column] == "  " and line[column] != " " for line in lines)
    assert {line.split()[1] for line in lines} == {"native", "fallback", "composite"}
