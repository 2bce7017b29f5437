"""``vtrn hlo FILE.mlir [--run --inputs a.npy,b.npy --outputs DIR]``.

Parses, verifies and compiles a StableHLO module through the compile cache
(``TORCH_NEURONX_NEFF_CACHE_DIR``, default ``/tmp/neff_cache``), then prints its kernels, each
kernel's modeled NeuronCore time and whether the cache was hit. With ``--run`` it runs the module
on the given ``.npy`` inputs and writes each output as ``DIR/out0.npy``, ``DIR/out1.npy``, ...

bfloat16 tensors travel as uint16 arrays of bf16 bits (numpy has no bfloat16). Exit status 2
for a file that is not StableHLO text or does not parse or verify, for inputs of the wrong dtype
or shape, and for outputs larger than the memory available. Never imports torch.
"""

from __future__ import annotations

import argparse
import math
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE.mlir", help="StableHLO text (pretty or generic form)")
    parser.add_argument("--run", action="store_true", help="run the module on --inputs")
    parser.add_argument("--inputs", default="", help="comma-separated .npy files, one per argument")
    parser.add_argument(
        "--outputs", default=".", help="directory for out0.npy, out1.npy, ... (default: .)"
    )
    parser.add_argument(
        "-O", "--opt-level", type=int, default=2, choices=(0, 1, 2), help="optimization level"
    )
    parser.add_argument("--no-fusion", action="store_true", help="compile without fusion")


def _format_time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.3f} us"


def _format_bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _available_memory() -> int:
    """Bytes this process can still allocate: MemAvailable, else the physical memory."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        print(f"vtrn hlo: cannot read {path}: {err.strerror}", file=sys.stderr)
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        print(
            f"vtrn hlo: {path} is not StableHLO text: byte 0x{data[err.start]:02x} at offset {err.start} "
            "is not UTF-8 (expected MLIR text such as the output of jax's lower().as_text())",
            file=sys.stderr,
        )
        return None


def run(args: argparse.Namespace) -> int:
    from vtrn import _hlo

    text = _read_text(args.file)
    if text is None:
        return 2
    fusion = not args.no_fusion
    try:
        info = _hlo.compile(text, opt_level=args.opt_level, fusion=fusion)
    except ValueError as err:
        print(f"vtrn hlo: {args.file}: {err}", file=sys.stderr)
        return 2
    hit = {"compiled": "miss (compiled)", "memory": "hit (memory)", "disk": "hit (disk)"}[
        info["source"]
    ]
    print(
        f"module {args.file}: {len(info['kernels'])} kernels, modeled {_format_time(info['modeled_time_s'])} "
        f"on one {_hlo.COST_MODEL_CORE}"
    )
    print(f"cache: {hit}, key {info['key'][:16]}..., dir {_hlo.cache_dirs()[0]}")
    name_w = max([len(k["name"]) for k in info["kernels"]] + [6])
    print(f"  {'kernel':<{name_w}}  {'engine':<6}  {'time':>12}  ops")
    for k in info["kernels"]:
        print(
            f"  {k['name']:<{name_w}}  {k['engine']:<6}  {_format_time(k['time_s']):>12}  {', '.join(k['ops'])}"
        )
    if not args.run:
        return 0

    import numpy as np

    paths = [p for p in args.inputs.split(",") if p]
    if len(paths) != len(info["inputs"]):
        print(
            f"vtrn hlo: the module takes {len(info['inputs'])} inputs, --inputs gives {len(paths)}",
            file=sys.stderr,
        )
        return 2
    arrays = []
    for i, (p, (dtype, dims)) in enumerate(zip(paths, info["inputs"])):
        try:
            a = np.load(p, allow_pickle=False)
        except (OSError, ValueError) as err:
            print(f"vtrn hlo: cannot load {p}: {err}", file=sys.stderr)
            return 2
        want = _hlo.NUMPY_DTYPES[dtype]
        if a.dtype.name != want:  # never converted silently
            carried = " (numpy uint16 holding the bf16 bits)" if dtype == "bf16" else ""
            print(
                f"vtrn hlo: input {i} ({p}) has dtype {a.dtype.name}, expected {dtype}{carried}",
                file=sys.stderr,
            )
            return 2
        if list(a.shape) != list(dims):
            print(
                f"vtrn hlo: input {i} ({p}) has shape {list(a.shape)}, expected {dtype}{list(dims)}",
                file=sys.stderr,
            )
            return 2
        arrays.append(a)
    need = sum(
        math.prod(dims) * np.dtype(_hlo.NUMPY_DTYPES[dtype]).itemsize
        for dtype, dims in info["outputs"]
    )
    available = _available_memory()
    if need > available:
        print(
            f"vtrn hlo: the outputs need {need} bytes ({_format_bytes(need)}), which exceeds the "
            f"{_format_bytes(available)} of memory available; compile without --run, or run a smaller module",
            file=sys.stderr,
        )
        return 2
    try:
        outputs, _ = _hlo.run(text, arrays, opt_level=args.opt_level, fusion=fusion)
    except ValueError as err:
        print(f"vtrn hlo: {err}", file=sys.stderr)
        return 2
    except MemoryError:
        print(
            f"vtrn hlo: out of memory running {args.file} (outputs {need} bytes, "
            f"{_format_bytes(available)} available)",
            file=sys.stderr,
        )
        return 2
    os.makedirs(args.outputs, exist_ok=True)
    for i, out in enumerate(outputs):
        path = os.path.join(args.outputs, f"out{i}.npy")
        np.save(path, out)
        print(f"wrote {path} {out.dtype}{list(out.shape)}")
    return 0


def register(subparsers) -> None:
    """Adds ``hlo`` to the ``vtrn`` command (see vtrn/cli.py)."""
    parser = subparsers.add_parser(
        "hlo",
        help="parse, compile (cached) and optionally run a StableHLO module",
        description=__doc__.split("\n\n")[1],
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vtrn hlo", description=__doc__.split("\n\n")[1])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
