"""Faults injected into the persistent compile cache, through the real `neuron` device.

Each case plants something in TORCH_NEURONX_NEFF_CACHE_DIR and runs ops in a fresh interpreter
(a new process is what reads entries from disk), under a timeout, so a hang fails the test
instead of hanging CI. Every case asserts the result against the CPU's; a rejected entry or an
unsafe directory must reach Python as a UserWarning, and, where the directory allows, leave the
valid entry behind (entries are deterministic, so it equals the one a clean run writes).
"""

import ctypes
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest

TIMEOUT_S = 60

# Runs the ops named in argv[1] (a JSON list of [op, rows, cols]) on `neuron` and on the CPU.
# Prints one JSON line: per op, whether it matched the CPU, the cache files it added and the
# warnings it raised. With VTRN_TEST_BARRIER set, waits (after importing torch) until that
# directory holds a file named "go", so that several processes compile at the same moment.
CHILD = r"""
import json, os, sys, time, warnings
import torch
ops = json.loads(sys.argv[1])
cache = os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"]
barrier = os.environ.get("VTRN_TEST_BARRIER")
if os.environ.get("VTRN_TEST_SIGXFSZ_DEFAULT"):
    import signal
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it; restore "terminate"
if barrier:
    open(os.path.join(barrier, f"ready.{os.getpid()}"), "w").close()
    while not os.path.exists(os.path.join(barrier, "go")):
        time.sleep(0.005)

def listing():
    return set(os.listdir(cache)) if os.path.isdir(cache) else set()

out = []
for op, rows, cols in ops:
    a = torch.arange(1.0, rows * cols + 1).reshape(rows, cols)
    b = torch.full((rows, cols), 2.0)
    before = listing()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        an, bn = a.to("neuron"), b.to("neuron")
        got = (an * bn if op == "mul" else an / bn).cpu()
    want = a * b if op == "mul" else a / b
    out.append({
        "op": [op, rows, cols],
        "ok": bool(torch.equal(got, want)),
        "new_files": sorted(listing() - before),
        "warnings": [[w.category.__name__, str(w.message)] for w in caught],
    })
print("RESULT " + json.dumps(out))
"""

MUL = ["mul", 2, 3]
DIV = ["div", 2, 3]
ROWS = [["mul", 1, k] for k in range(1, 7)]  # six more keys, for truncation samples


def env_for(cache_dir, **extra):
    env = dict(os.environ, TORCH_NEURONX_NEFF_CACHE_DIR=str(cache_dir), PYTHONDONTWRITEBYTECODE="1")
    env.pop("TORCH_NEURONX_HLO_CACHE_DIR", None)
    env.pop("TORCH_NEURONX_ENABLE_CONCATENATION", None)
    env.update(extra)
    return env


def run_ops(cache_dir, ops, **kwargs):
    """Runs |ops| in a fresh interpreter; returns its per-op results (asserts it succeeded)."""
    env = env_for(cache_dir, **kwargs.pop("env", {}))
    p = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(ops)],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
        **kwargs,
    )
    lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    assert p.returncode == 0 and lines, f"exit {p.returncode}\n{p.stdout}\n{p.stderr[-3000:]}"
    return json.loads(lines[0][len("RESULT ") :])


def user_warnings(result):
    return [msg for cat, msg in result["warnings"] if cat == "UserWarning"]


def cache_warnings(result):
    return [m for m in user_warnings(result) if "compile cache" in m]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A cache written by a clean run: {op: entry file name}, and the directory holding them."""
    d = tmp_path_factory.mktemp("pristine") / "neff"
    results = run_ops(d, [MUL, DIV, *ROWS])
    names = {}
    for r in results:
        assert r["ok"], r
        assert len(r["new_files"]) == 1 and r["new_files"][0].endswith(".neff"), r
        names[tuple(r["op"])] = r["new_files"][0]
    return d, names


def copy_cache(pristine, dest):
    shutil.copytree(pristine[0], dest)
    return dest


def entry(pristine, op):
    return pristine[0] / pristine[1][tuple(op)]


def test_substituted_entry_is_recompiled(pristine, tmp_path):
    # Copy the entry of a/b over the entry of a*b: a*b must still give a*b.
    d = copy_cache(pristine, tmp_path / "neff")
    mul_entry = d / pristine[1][tuple(MUL)]
    shutil.copyfile(d / pristine[1][tuple(DIV)], mul_entry)
    (r,) = run_ops(d, [MUL])
    assert r["ok"], "a*b returned another op's result"
    (w,) = cache_warnings(r)
    assert str(mul_entry) in w and "copied, moved or linked from another key" in w, w
    assert mul_entry.read_bytes() == entry(pristine, MUL).read_bytes()


def test_non_files_at_entry_paths(pristine, tmp_path):
    # A FIFO (opening it for reading used to wait forever for a writer), a directory, a symlink
    # to another key's entry and a symlink to a file outside the cache (this key's own entry).
    d = copy_cache(pristine, tmp_path / "neff")
    outside = tmp_path / "outside.neff"
    shutil.copyfile(entry(pristine, ROWS[0]), outside)
    paths = {tuple(op): d / pristine[1][tuple(op)] for op in (MUL, DIV, *ROWS[:2])}
    for p in paths.values():
        p.unlink()
    os.mkfifo(paths[tuple(MUL)])
    paths[tuple(DIV)].mkdir()
    (paths[tuple(DIV)] / "x").write_bytes(b"x")
    os.symlink(d / pristine[1][tuple(ROWS[5])], paths[tuple(ROWS[0])])
    os.symlink(outside, paths[tuple(ROWS[1])])
    fifo, directory, link_other, link_outside = run_ops(d, [MUL, DIV, ROWS[0], ROWS[1]])
    for r in (fifo, directory, link_other, link_outside):
        assert r["ok"], r
    assert "is a FIFO, not a regular file" in cache_warnings(fifo)[0]
    assert "is a directory, not a regular file" in cache_warnings(directory)[0]
    assert any("a directory is in the way" in w for w in user_warnings(directory))
    for r in (link_other, link_outside):
        (w,) = cache_warnings(r)
        assert "symbolic link, which the cache never follows" in w, w
    # The FIFO and the links were replaced by the valid entries; the links' targets are intact.
    for op in (MUL, ROWS[0], ROWS[1]):
        p = paths[tuple(op)]
        assert (
            stat.S_ISREG(os.lstat(p).st_mode) and p.read_bytes() == entry(pristine, op).read_bytes()
        )
    assert outside.read_bytes() == entry(pristine, ROWS[0]).read_bytes()
    assert (d / pristine[1][tuple(ROWS[5])]).read_bytes() == entry(pristine, ROWS[5]).read_bytes()


def test_truncated_entries(pristine, tmp_path):
    # A sample of lengths: empty, one byte, around the 152-byte header, half, all but one.
    d = copy_cache(pristine, tmp_path / "neff")
    cuts = [
        lambda n: 0,
        lambda n: 1,
        lambda n: 151,
        lambda n: 152,
        lambda n: n // 2,
        lambda n: n - 1,
    ]
    lengths = []
    for op, cut in zip(ROWS, cuts):
        p = d / pristine[1][tuple(op)]
        good = p.read_bytes()
        lengths.append(cut(len(good)))
        p.write_bytes(good[: lengths[-1]])
    results = run_ops(d, ROWS)
    for r, n in zip(results, lengths):
        assert r["ok"], (n, r)
        assert len(cache_warnings(r)) == 1, (n, r["warnings"])
        good = entry(pristine, r["op"]).read_bytes()
        assert (d / pristine[1][tuple(r["op"])]).read_bytes() == good, f"not replaced ({n})"


def drop_root_file_access():
    """In a child of root: drop the capabilities that let root ignore file modes.

    Removed from the bounding set, they are not regained at exec, so the child is root that
    obeys permissions (an unprivileged user may not be able to run this interpreter at all).
    """
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2
    for cap in (cap_dac_override, cap_dac_read_search):
        if libc.prctl(pr_capbset_drop, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_unreadable_entry_and_read_only_directory(pristine, tmp_path):
    d = copy_cache(pristine, tmp_path / "neff")
    mul_entry = d / pristine[1][tuple(MUL)]
    os.chmod(mul_entry, 0)
    (r,) = run_ops(d, [MUL], preexec_fn=drop_root_file_access)
    assert r["ok"]
    (w,) = cache_warnings(r)
    assert "cannot be opened: Permission denied" in w, w
    assert mul_entry.read_bytes() == entry(pristine, MUL).read_bytes()
    # A read-only directory: a hit loads silently, a miss compiles and warns once.
    os.chmod(d, 0o500)
    try:
        hit, miss1, miss2 = run_ops(
            d, [DIV, ["mul", 3, 3], ["div", 3, 3]], preexec_fn=drop_root_file_access
        )
    finally:
        os.chmod(d, 0o700)
    assert hit["ok"] and miss1["ok"] and miss2["ok"]
    assert user_warnings(hit) == []
    (w,) = user_warnings(miss1)
    assert "cannot store a compiled executable" in w and "Permission denied" in w, w
    assert user_warnings(miss2) == []


def test_writer_killed_mid_store(pristine, tmp_path):
    # RLIMIT_FSIZE at half the entry: the write(2) that crosses it raises SIGXFSZ, whose default
    # action kills the process (as kill -9 would) with half the entry written.
    d = tmp_path / "neff"
    limit = entry(pristine, MUL).stat().st_size // 2

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    p = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps([MUL])],
        capture_output=True,
        text=True,
        env=env_for(d, VTRN_TEST_SIGXFSZ_DEFAULT="1"),
        timeout=TIMEOUT_S,
        preexec_fn=limit_file_size,
    )
    assert p.returncode == -signal.SIGXFSZ, (p.returncode, p.stderr[-2000:])
    (left,) = os.listdir(d)
    assert left.endswith(".tmp") and (d / left).stat().st_size == limit, left
    (r,) = run_ops(d, [MUL])
    assert r["ok"] and user_warnings(r) == [], r
    assert (d / pristine[1][tuple(MUL)]).read_bytes() == entry(pristine, MUL).read_bytes()


def test_concurrent_writers_on_a_cold_cache(pristine, tmp_path):
    d, barrier = tmp_path / "neff", tmp_path / "barrier"
    barrier.mkdir()
    env = env_for(d, VTRN_TEST_BARRIER=str(barrier))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, json.dumps([MUL, DIV])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while len(list(barrier.glob("ready.*"))) < 4:
            assert time.monotonic() < deadline, "the writers did not start"
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            time.sleep(0.05)
        (barrier / "go").touch()
        outs = [p.communicate(timeout=TIMEOUT_S) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
        results = json.loads(out.split("RESULT ", 1)[1])
        assert all(r["ok"] for r in results) and not any(r["warnings"] for r in results), results
    want = {pristine[1][tuple(MUL)], pristine[1][tuple(DIV)]}
    assert set(os.listdir(d)) == want, "temp files left behind or extra entries"
    for name in want:
        assert (d / name).read_bytes() == (pristine[0] / name).read_bytes()


def test_directory_writable_by_others_is_not_used(tmp_path):
    d = tmp_path / "neff"
    d.mkdir()
    os.chmod(d, 0o777)
    (r,) = run_ops(d, [MUL])
    assert r["ok"]
    (w,) = cache_warnings(r)
    fallback = f"/tmp/neff_cache-{os.geteuid()}"
    for part in (
        str(d),
        "has mode 0777",
        "group or others can write it",
        fallback,
        f"chmod go-w {d}",
    ):
        assert part in w, (part, w)
    assert os.listdir(d) == []
