"""Arguments shared by ``vtrn topo`` and ``vtrn mesh``: the cluster, mesh shapes, message
sizes and placement files. Every parser raises ValueError naming the value and the limit."""

from __future__ import annotations

import argparse
import json
import re
import sys

from vtrn import topology
from vtrn.cli._files import read_regular_file

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kib": 1 << 10,
    "kb": 1000,
    "m": 1 << 20,
    "mib": 1 << 20,
    "mb": 1000**2,
    "g": 1 << 30,
    "gib": 1 << 30,
    "gb": 1000**3,
    "t": 1 << 40,
    "tib": 1 << 40,
    "tb": 1000**4,
}

# Largest message size modeled: 1 TiB, above the whole HBM of a trn2 node (16 x 96 GiB).
MAX_MESSAGE_BYTES = 1 << 40
# Largest placement file read: a rank matrix of the largest world (2^20 ranks) as JSON.
MAX_PLACEMENT_FILE_BYTES = 64 << 20


def check_int(flag: str, value: int, low: int, high: int, what: str = "") -> int:
    """``value`` when ``low <= value <= high``, else a ValueError naming the flag, the value and
    the range (a value too wide for a C++ int is bad input, not a TypeError from the bindings)."""
    if not low <= value <= high:
        raise ValueError(f"{flag} {value} is out of range {low}..{high}{what}")
    return value


def add_cluster_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--instance",
        default="trn2.48xlarge",
        help="instance type (trn1.32xlarge, trn2.48xlarge, trn2u.48xlarge, trn2.3xlarge, "
        "trn3.gen1-server); default trn2.48xlarge",
    )
    parser.add_argument(
        "--lnc",
        type=int,
        default=None,
        help="Logical NeuronCore setting, 1 or 2 (default: the instance's, LNC2 on trn2/trn3; "
        "trn1 has none)",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=1,
        help="number of instances, 1 to 4096 (default 1); the world is capped at 2^20 ranks",
    )


def make_cluster(args: argparse.Namespace) -> topology.Cluster:
    """The cluster of --instance/--lnc/--nodes. --lnc is 1 or 2 when given; without it the
    instance's default applies. Out-of-range --lnc and --nodes are ValueErrors (exit 2)."""
    if args.lnc is not None and args.lnc < 1:
        raise ValueError(
            f"--lnc {args.lnc} is not a Logical NeuronCore setting; use --lnc 1 or --lnc 2, or omit "
            "--lnc for the instance default (LNC2 on trn2 and trn3)"
        )
    return topology.Cluster(args.instance, args.lnc, args.nodes)


def parse_ints(text: str, what: str) -> list[int]:
    """``16,4`` or ``16x4``: mesh axis sizes, each from 1 to the largest world vtrn models (a
    value too wide for a C++ int is bad input, not a TypeError from the bindings)."""
    parts = [p.strip() for p in re.split(r"[,x]", text)]
    if not all(re.fullmatch(r"\d+", p) for p in parts):
        raise ValueError(f"{what} must be comma-separated integers such as 16,4; got {text!r}")
    values = [int(p) for p in parts]
    limit = topology.max_world()
    for v in values:
        if not 1 <= v <= limit:
            raise ValueError(
                f"{what} {text}: axis size {v} is outside 1..{limit}; vtrn models worlds of at "
                f"most {limit} ranks, so every axis must be between 1 and that"
            )
    return values


def parse_names(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise ValueError("--names is empty; give one name per axis, e.g. shard,tp")
    return names


def parse_size(text: str) -> int:
    """``64KiB``, ``16MiB``, ``1048576`` -> bytes (K/M/G are binary; KB/MB/GB decimal)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else None
    if not match or unit not in _SIZE_UNITS:
        raise ValueError(
            f"message size {text!r} is not understood; write e.g. 65536, 64KiB, 16MiB or 1GiB"
        )
    number = match.group(1)
    if len(number) > 20:  # float() of a longer one can be inf
        size = MAX_MESSAGE_BYTES + 1
    else:
        size = int(float(number) * _SIZE_UNITS[unit])
    if not 1 <= size <= MAX_MESSAGE_BYTES:
        raise ValueError(
            f"message size {text.strip()!r} is outside 1 B..1 TiB; give a size such as 64KiB or 16MiB"
        )
    return size


def parse_sizes(text: str | None) -> list[int] | None:
    """``--sizes``: None keeps the default sizes; an empty list is bad input."""
    if text is None:
        return None
    if not text.strip():
        raise ValueError(
            "--sizes is empty; give message sizes such as 64KiB,16MiB,256MiB, or omit --sizes "
            "for those defaults"
        )
    return [parse_size(s) for s in text.split(",")]


def load_placement_file(path: str, shape: list[int]) -> list[int]:
    """A rank matrix from JSON, flattened row-major: a nested list of the mesh's shape, or an
    object with ``placement`` (such as the output of ``vtrn mesh --placement auto --json``)."""
    text = read_regular_file(
        path, "placement", MAX_PLACEMENT_FILE_BYTES, name=f"placement file {path!r}"
    )
    try:
        data = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"placement file {path!r} is not UTF-8 text: {err.reason}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"placement file {path!r} is not valid JSON: {err}") from None
    except RecursionError:
        # json recurses once per level; a rank matrix nests one level per mesh axis.
        raise ValueError(
            f"placement file {path!r} nests deeper than Python's recursion limit "
            f"({sys.getrecursionlimit()}); a rank matrix for mesh shape {tuple(shape)} nests "
            f"{len(shape)} levels"
        ) from None
    if isinstance(data, dict):
        if "placement" not in data:
            raise ValueError(
                f"placement file {path!r} is an object without a 'placement' key; "
                "give a nested list of ranks or an object with 'placement'"
            )
        data = data["placement"]
    world_cap = topology.max_world()

    def flatten(value, dims, where):
        if not isinstance(value, list) or len(value) != dims[0]:
            got = f"{len(value)} entries" if isinstance(value, list) else type(value).__name__
            raise ValueError(
                f"placement file {path!r}: {where or 'the top level'} should be a list of "
                f"{dims[0]} entries for mesh shape {tuple(shape)}, got {got}"
            )
        if len(dims) == 1:
            for item in value:
                if isinstance(item, bool) or not isinstance(item, int):
                    raise ValueError(
                        f"placement file {path!r}: {where or 'the top level'} holds {item!r}, "
                        "not an integer rank"
                    )
                if not 0 <= item < world_cap:
                    raise ValueError(
                        f"placement file {path!r}: {where or 'the top level'} holds rank {item}, "
                        f"outside 0..{world_cap - 1} (no world vtrn models has it)"
                    )
            return list(value)
        out = []
        for i, item in enumerate(value):
            out += flatten(item, dims[1:], f"{where}[{i}]")
        return out

    return flatten(data, shape, "")
