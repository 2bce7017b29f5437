"""``vtrn hlo FILE.mlir [--run --inputs a.npy,b.npy --outputs DIR]``.

Parses, verifies and compiles a StableHLO module through the compile cache
(``TORCH_NEURONX_NEFF_CACHE_DIR``, default ``/tmp/neff_cache``), then prints its kernels, each
kernel's modeled NeuronCore time and whether the cache was hit. With ``--run`` it runs the module
on the given ``.npy`` inputs and writes each output as ``DIR/out0.npy``, ``DIR/out1.npy``, ...
It also prints the planned peak scratch (intermediates share buffers when their lifetimes do not
overlap); an output the module lets overwrite a donated input (``jax.buffer_donor``,
``tf.aliasing_output``) is computed in place in that input's array.

bfloat16 tensors travel as uint16 arrays of bf16 bits (numpy has no bfloat16); a big-endian
``.npy`` is read in its own byte order, and a 0-d ``.npy`` is a scalar parameter's input. Exit
status 2 for a file that is not StableHLO text or does not parse or verify (or is not a regular
file of at most 1 GiB), for inputs of the wrong dtype or shape, for an ``--outputs`` that is not
a directory (checked before the module runs), and for outputs larger than the memory available.
Never imports torch.
"""

from __future__ import annotations

import argparse
import math
import os

from vtrn import _native
from vtrn.cli import CommandError
from vtrn.cli._files import open_regular_file, read_regular_file
from vtrn.render.units import format_bytes, format_seconds

# Largest module text read: 1 GiB (dense constants make jax's text large, but not this large).
MAX_MODULE_BYTES = 1 << 30

_CACHE_TEXT = {"compiled": "miss (compiled)", "memory": "hit (memory)", "disk": "hit (disk)"}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "hlo",
        help="parse, compile (cached) and optionally run a StableHLO module",
        description=__doc__.split("\n\n")[1],
    )
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
    parser.set_defaults(handler=run)


def _time(seconds: float) -> str:
    return format_seconds(seconds, decimals=3, units="ms,us")


def _size(n: int) -> str:
    return format_bytes(n, decimals=1, largest="TiB")


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


def _read_text(path: str) -> str:
    try:
        data = read_regular_file(path, "module", MAX_MODULE_BYTES)
    except ValueError as err:
        raise CommandError(str(err)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CommandError(
            f"{path} is not StableHLO text: byte 0x{data[err.start]:02x} at offset {err.start} "
            "is not UTF-8 (expected MLIR text such as the output of jax's lower().as_text())"
        ) from None


def _check_outputs_dir(path: str) -> None:
    """--outputs must be a directory, or a path one can be made at; checked before the module
    runs, so a mistake costs no run."""
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise CommandError(
                f"--outputs {path} is not a directory; give a directory for out0.npy, out1.npy, ..."
            )
        if not os.access(path, os.W_OK | os.X_OK):
            raise CommandError(f"--outputs {path} is a directory you cannot write to")
        return
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise CommandError(
            f"--outputs {path} cannot be created: {parent} is not a directory; give a directory"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CommandError(f"--outputs {path} cannot be created: {parent} is not writable")


def run(args: argparse.Namespace) -> int:
    hlo = _native.hlo
    if args.run:
        _check_outputs_dir(args.outputs)
    text = _read_text(args.file)
    fusion = not args.no_fusion
    try:
        info = hlo.compile(text, opt_level=args.opt_level, fusion=fusion)
    except ValueError as err:
        raise CommandError(f"{args.file}: {err}") from None
    print(
        f"module {args.file}: {len(info['kernels'])} kernels, modeled {_time(info['modeled_time_s'])} "
        f"on one {hlo.COST_MODEL_CORE}"
    )
    print(
        f"cache: {_CACHE_TEXT[info['source']]}, key {info['key'][:16]}..., dir {hlo.cache_dirs()[0]}"
    )
    print(
        f"scratch: planned peak {_size(info['peak_scratch_bytes'])}, "
        f"{_size(info['intermediate_bytes'])} of intermediates"
    )
    name_w = max([len(k["name"]) for k in info["kernels"]] + [6])
    print(f"  {'kernel':<{name_w}}  {'engine':<6}  {'time':>12}  ops")
    for k in info["kernels"]:
        print(
            f"  {k['name']:<{name_w}}  {k['engine']:<6}  {_time(k['time_s']):>12}  {', '.join(k['ops'])}"
        )
    if not args.run:
        return 0
    arrays = _load_inputs(args.inputs, info["inputs"])
    _run_and_save(args, text, fusion, arrays, info["outputs"])
    return 0


def _load_inputs(inputs: str, expected) -> list:
    """The --inputs arrays, each of exactly its parameter's dtype and shape (never converted)."""
    import numpy as np

    hlo = _native.hlo
    paths = [p for p in inputs.split(",") if p]
    if len(paths) != len(expected):
        raise CommandError(f"the module takes {len(expected)} inputs, --inputs gives {len(paths)}")
    arrays = []
    for i, (p, (dtype, dims)) in enumerate(zip(paths, expected)):
        try:
            with open_regular_file(p, f"input {i}") as f:
                a = np.load(f, allow_pickle=False)
        except (OSError, ValueError, EOFError) as err:
            raise CommandError(f"cannot load {p}: {err}") from None
        except MemoryError:
            raise CommandError(
                f"cannot load {p}: its header asks for more memory than is available"
            ) from None
        if not isinstance(a, np.ndarray):  # an .npz archive
            raise CommandError(f"input {i} ({p}) is not a .npy file holding one array")
        if a.dtype.byteorder not in ("=", "|"):
            # A big-endian .npy holds the same values; the executor reads native byte order.
            a = a.astype(a.dtype.newbyteorder("="))
        if a.dtype.name != hlo.NUMPY_DTYPES[dtype]:
            carried = " (numpy uint16 holding the bf16 bits)" if dtype == "bf16" else ""
            raise CommandError(
                f"input {i} ({p}) has dtype {a.dtype.name}, expected {dtype}{carried}"
            )
        if list(a.shape) != list(dims):
            raise CommandError(
                f"input {i} ({p}) has shape {list(a.shape)}, expected {dtype}{list(dims)}"
            )
        arrays.append(a)
    return arrays


def _run_and_save(args: argparse.Namespace, text: str, fusion: bool, arrays, outputs) -> None:
    """Runs the module when its outputs fit in memory, and writes them as DIR/outN.npy."""
    import numpy as np

    hlo = _native.hlo
    need = sum(
        math.prod(dims) * np.dtype(hlo.NUMPY_DTYPES[dtype]).itemsize for dtype, dims in outputs
    )
    available = _available_memory()
    if need > available:
        raise CommandError(
            f"the outputs need {need} bytes ({_size(need)}), which exceeds the "
            f"{_size(available)} of memory available; compile without --run, or run a smaller module"
        )
    try:
        results, info = hlo.run(text, arrays, opt_level=args.opt_level, fusion=fusion)
    except ValueError as err:
        raise CommandError(str(err)) from None
    except MemoryError:
        raise CommandError(
            f"out of memory running {args.file} (outputs {need} bytes, "
            f"{_size(available)} available)"
        ) from None
    for i, out in enumerate(results):
        path = os.path.join(args.outputs, f"out{i}.npy")
        try:
            os.makedirs(args.outputs, exist_ok=True)
            np.save(path, out)
        except OSError as err:
            raise CommandError(f"cannot write {path}: {err.strerror}") from None
        donor = info["donor_of_output"][i]
        in_place = f" (computed in place in donated input {donor})" if donor >= 0 else ""
        print(f"wrote {path} {out.dtype}{list(out.shape)}{in_place}")
