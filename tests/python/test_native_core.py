"""One native core per process: vtrn._core (topology, plan, hlo) and the torch adapter vtrn._C
link the same shared library, so an executable compiled through vtrn._core.hlo is the device's
too, and the compile cache counts the device's compiles.

Each case runs in a fresh interpreter with its own cache directories, so that no other test's
entries (in memory or on disk) can answer for it.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

# The device program both processes run: an elementwise chain and a reduction, read back.
PROGRAM = """
import torch
x = torch.arange(12, dtype=torch.float32).reshape(3, 4).to("neuron")
y = ((x * 3 + 1).sum(dim=1)).cpu()
assert y.tolist() == [22.0, 70.0, 118.0], y
"""


def script(*parts: str) -> str:
    """The Python source of |parts|, each dedented on its own."""
    return "\n".join(textwrap.dedent(part).strip("\n") for part in parts) + "\n"


def run(code: str, env: dict) -> dict:
    """Runs |code| (which prints one JSON object last) and returns that object."""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cache_env(tmp_path: Path, name: str, hlo_dir: Path | None = None) -> dict:
    env = dict(os.environ)
    env["TORCH_NEURONX_NEFF_CACHE_DIR"] = str(tmp_path / f"neff_{name}")
    env.pop("TORCH_NEURONX_HLO_CACHE_DIR", None)
    if hlo_dir is not None:
        env["TORCH_NEURONX_HLO_CACHE_DIR"] = str(hlo_dir)
    return env


def test_the_hlo_binding_sees_the_devices_compiles(tmp_path):
    code = script(
        """
        import json
        import vtrn
        from vtrn import _native
        before = _native.hlo.cache_counters()
        """,
        PROGRAM,
        """
        after = _native.hlo.cache_counters()
        print(json.dumps({"before": before, "after": after, "device": vtrn.metrics()}))
        """,
    )
    r = run(code, cache_env(tmp_path, "a"))
    compiled_by_device = r["device"]["compiles"]
    assert compiled_by_device >= 1, r
    # The same cache object: its counters moved by exactly the device's compiles.
    assert r["after"]["compiles"] - r["before"]["compiles"] == compiled_by_device, r


def test_an_executable_compiled_through_the_hlo_binding_is_a_memory_hit_for_the_device(tmp_path):
    # First process: the device compiles the program; its HLO text lands in hlo_dir.
    hlo_dir = tmp_path / "hlo"
    first = run(
        script("import json, vtrn", PROGRAM, "print(json.dumps(vtrn.metrics()))"),
        cache_env(tmp_path, "first", hlo_dir),
    )
    texts = sorted(hlo_dir.glob("*.mlir"))
    assert first["compiles"] >= 1 and len(texts) == first["compiles"], (first, texts)

    # Second process, with an empty disk cache: compile those texts through vtrn._core.hlo, then
    # run the program on the device. Every executable it needs is then in memory.
    code = script(
        f"""
        import json
        from pathlib import Path
        import vtrn
        from vtrn import _native
        sources = [_native.hlo.compile(p.read_text())["source"]
                   for p in sorted(Path({str(hlo_dir)!r}).glob("*.mlir"))]
        vtrn.reset_metrics()
        """,
        PROGRAM,
        """
        print(json.dumps({"sources": sources, "device": vtrn.metrics(),
                          "cache": _native.hlo.cache_counters()}))
        """,
    )
    second = run(code, cache_env(tmp_path, "second"))
    assert second["sources"] == ["compiled"] * len(texts), second
    device = second["device"]
    assert device["compiles"] == 0 and device["disk_cache_hits"] == 0, second
    # What the first process compiled, the second finds in memory (besides the hits both have).
    assert device["memory_cache_hits"] == first["compiles"] + first["memory_cache_hits"], second
    assert second["cache"]["memory_hits"] >= first["compiles"], second


def test_the_submodules_import_by_their_dotted_names():
    code = """
    import sys
    import vtrn._core.hlo, vtrn._core.nki, vtrn._core.plan, vtrn._core.topology
    from vtrn import _core, _native
    assert _native.hlo is _core.hlo is sys.modules["vtrn._core.hlo"]
    assert _native.plan is _core.plan and _native.model is _core.topology
    assert _native.nki is _core.nki
    assert "trn2.48xlarge" in _core.topology.instance_names()
    sys.exit("torch" in sys.modules)
    """
    proc = subprocess.run([sys.executable, "-c", script(code)], timeout=60)
    assert proc.returncode == 0
