"""``vtrn topo`` and ``vtrn mesh``: where ranks land on Trainium hardware, which collective
groups the runtime can build, and what they cost. The model itself is C++ (``vtrn._model``,
layers hw / topo / coll); this module parses arguments, formats reports and draws pictures.

Exit status of ``vtrn mesh``: 0 when every group is routable, 3 when some group is not (the
runtime's error is printed), 2 for bad input.
"""

from __future__ import annotations

import json
import re
import sys

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_UNROUTABLE = 3

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
}


def load_model():
    """The native model module; a clear message when it is not built."""
    try:
        from vtrn import _model
    except ImportError as err:  # pragma: no cover - depends on the install
        raise SystemExit(
            f"vtrn: the native model vtrn._model is not available ({err}); build it with `make install`"
        ) from err
    return _model


# --------------------------------------------------------------------------------------------
# Parsing


def max_world() -> int:
    """The largest world vtrn models (topo::Cluster::kMaxWorld, 2^20 ranks). No mesh axis or rank
    can exceed it; checking that here makes a value too wide for a C++ int bad input (exit 2)
    rather than a TypeError from the bindings."""
    return load_model().MAX_WORLD


# Largest message size modeled: 1 TiB, above the whole HBM of a trn2 node (16 x 96 GiB).
MAX_MESSAGE_BYTES = 1 << 40


def parse_ints(text: str, what: str) -> list[int]:
    parts = [p.strip() for p in re.split(r"[,x]", text)]
    if not all(re.fullmatch(r"\d+", p) for p in parts):
        raise ValueError(f"{what} must be comma-separated integers such as 16,4; got {text!r}")
    values = [int(p) for p in parts]
    limit = max_world()
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


def make_cluster(model, args):
    """The model's Cluster for --instance/--lnc/--nodes. --lnc is 1 or 2 when given; without it
    the instance's default applies. Out-of-range --lnc and --nodes are ValueErrors (exit 2)."""
    if args.lnc is not None and args.lnc < 1:
        raise ValueError(
            f"--lnc {args.lnc} is not a Logical NeuronCore setting; use --lnc 1 or --lnc 2, or omit "
            "--lnc for the instance default (LNC2 on trn2 and trn3)"
        )
    return model.Cluster(args.instance, args.lnc or 0, args.nodes)


def load_placement_file(path: str, shape: list[int]) -> list[int]:
    """A rank matrix from JSON: a nested list of the mesh's shape, or an object with
    ``placement`` (such as the output of ``vtrn mesh --placement auto --json``)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as err:
        raise ValueError(f"cannot read placement file {path!r}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"placement file {path!r} is not valid JSON: {err}") from None
    if isinstance(data, dict):
        if "placement" not in data:
            raise ValueError(
                f"placement file {path!r} is an object without a 'placement' key; "
                "give a nested list of ranks or an object with 'placement'"
            )
        data = data["placement"]

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
                if not 0 <= item < max_world():
                    raise ValueError(
                        f"placement file {path!r}: {where or 'the top level'} holds rank {item}, "
                        f"outside 0..{max_world() - 1} (no world vtrn models has it)"
                    )
            return list(value)
        out = []
        for i, item in enumerate(value):
            out += flatten(item, dims[1:], f"{where}[{i}]")
        return out

    return flatten(data, shape, "")


# --------------------------------------------------------------------------------------------
# Formatting


def format_seconds(seconds: float) -> str:
    if seconds == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def abbreviate(group: list[int], limit: int = 8) -> str:
    """``[0, 4, 8, ..., 60]`` for long groups, like the seed writes them."""
    if len(group) <= limit:
        return "[" + ", ".join(map(str, group)) + "]"
    return "[" + ", ".join(map(str, group[:3])) + ", ..., " + str(group[-1]) + "]"


def _range_text(ranks: list[int]) -> str:
    return f"{ranks[0]}-{ranks[-1]}" if len(ranks) > 1 else str(ranks[0])


# --------------------------------------------------------------------------------------------
# vtrn topo


def topo_lines(cluster) -> list[str]:
    spec = cluster.spec
    chip = spec["chip"]
    rpc, cols = cluster.ranks_per_chip, spec["grid_cols"]
    lnc = cluster.lnc
    hbm_rank = chip["hbm_bytes"] // rpc
    lines = [f"{spec['name']}: {spec['summary']}"]
    lnc_text = f"LNC{lnc}" if lnc else "no LNC"
    lines.append(
        f"{lnc_text}: {rpc} ranks per chip ({format_bytes(hbm_rank)} HBM each), "
        f"{cluster.ranks_per_node} per node; {cluster.nodes} node{'s' if cluster.nodes > 1 else ''}, "
        f"world {cluster.world}"
    )
    formula = (
        f"{rpc} * chip + core"
        if cluster.nodes == 1
        else f"{cluster.ranks_per_node} * node + {rpc} * chip + core"
    )
    lines.append(f"rank = {formula}")
    topology = spec["topology"]
    if topology == "torus-2d":
        lines.append(
            f"links: {spec['grid_rows']}x{cols} torus, each chip to its row and column neighbours "
            f"with wraparound, {spec['link_Bps'] / 1e9:g} GB/s per link"
        )
    elif topology == "switch":
        lines.append(
            f"links: every chip to every chip through the switch, {spec['link_Bps'] / 1e9:g} GB/s per chip"
        )
    else:
        lines.append("links: one chip, no NeuronLink peers")
    if spec["ultraserver_nodes"] > 1:
        lines.append(
            f"UltraServer: {spec['ultraserver_nodes']} nodes joined by NeuronLink ({spec['ultraserver_fabric']}), "
            f"{spec['ultraserver_chip_Bps'] / 1e9:g} GB/s per chip; EFA between UltraServers"
        )
    if spec["efa_Bps"]:
        lines.append(f"EFA: {spec['efa_Bps'] * 8 / 1e9:g} Gbps per node")
    shown = min(cluster.nodes, 4)
    width = (
        max(
            len(f"c{spec['chips'] - 1} {_range_text([cluster.world - rpc, cluster.world - 1])}"), 10
        )
        + 2
    )
    for node in range(shown):
        lines.append("")
        lines.append(f"node {node}")
        lines.append((" " * 9 + "".join(f"col {c}".ljust(width) for c in range(cols))).rstrip())
        for row in range(spec["grid_rows"]):
            cells = []
            for col in range(cols):
                c = row * cols + col
                first = cluster.rank_of(node, c, 0)
                cells.append(f"c{c} {_range_text([first, first + rpc - 1])}".ljust(width))
            lines.append(f"  row {row}  " + "".join(cells).rstrip())
    for node in range(shown, cluster.nodes):
        first = node * cluster.ranks_per_node
        lines.append(f"node {node}: ranks {first}-{first + cluster.ranks_per_node - 1}")
    return lines


def check_out(path: str | None) -> None:
    """Rejects a picture name before any work, so bad input exits 2 without a report."""
    if path and not path.lower().endswith((".svg", ".png")):
        raise ValueError(
            f"--out {path!r}: the picture is written as SVG or PNG; name the file FILE.svg or FILE.png"
        )


def cmd_topo(args) -> int:
    check_out(args.out)
    model = load_model()
    cluster = make_cluster(model, args)
    print("\n".join(topo_lines(cluster)))
    if args.out:
        from vtrn import draw

        draw.save(draw.topo_picture(cluster), args.out)
        print(f"\nwrote {args.out}")
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# vtrn mesh


def mesh_report(model, args) -> dict:
    """Everything ``vtrn mesh`` prints, as the ``--json`` object."""
    cluster = make_cluster(model, args)
    shape = parse_ints(args.shape, "--shape")
    names = parse_names(args.names)
    sizes = parse_sizes(args.sizes)
    placement = None
    search = None
    source = args.placement
    if source == "auto":
        search = cluster.search_placement(shape, names)
        if search["found"]:
            placement = search["placement"]
    elif source != "default":
        placement = load_placement_file(source, shape)
    analysis = cluster.analyze_mesh(shape, names, placement, sizes)
    out = {
        "world": cluster.world,
        "instance": cluster.instance,
        "lnc": cluster.lnc,
        "nodes": cluster.nodes,
        "shape": shape,
        "names": names,
        "placement_source": "default"
        if source == "default"
        else ("auto" if source == "auto" else "file"),
        "routable": analysis["routable"],
        "axes": [
            {
                k: axis[k]
                for k in (
                    "name",
                    "size",
                    "collective",
                    "groups",
                    "group_routable",
                    "routable",
                    "error",
                    "disconnected",
                    "bad_node",
                    "algorithms",
                )
            }
            for axis in analysis["axes"]
        ],
    }
    if source != "default":
        from vtrn.mesh_code import nest

        out["placement"] = nest(analysis["placement"], shape) if (placement is not None) else None
    if search is not None:
        out["search"] = {
            k: search[k]
            for k in (
                "found",
                "default_routable",
                "is_default",
                "chip_order",
                "fill_order",
                "tp_groups_off_chip",
                "cost_seconds",
                "steps",
                "solutions",
                "message",
            )
        }
    out["_flat_placement"] = analysis["placement"]
    out["_description"] = cluster.describe()
    return out


def mesh_lines(report: dict, max_groups: int = 4) -> list[str]:
    shape, names = report["shape"], report["names"]
    lines = [
        f"mesh {tuple(shape)} {tuple(names)} on {report['_description']}; "
        f"placement {report['placement_source']}"
    ]
    search = report.get("search")
    if search:
        if search["found"]:
            what = (
                "the row-major placement (already routable)"
                if search["is_default"]
                else f"chip order {search['chip_order']}, axes filled in order "
                f"{[names[a] for a in search['fill_order']]}"
            )
            lines.append(
                f"auto placement: {what}; {search['solutions']} routable placements compared"
            )
        else:
            lines.append(f"auto placement: none found. {search['message']}")
    first_error = None
    for axis in report["axes"]:
        groups = axis["groups"]
        status = "routable" if axis["routable"] else "NOT ROUTABLE"
        lines.append("")
        lines.append(
            f"axis {axis['name']}: size {axis['size']}, {len(groups)} group{'s' if len(groups) != 1 else ''}, "
            f"{axis['collective']}: {status}"
        )
        if not axis["routable"] and first_error is None:
            first_error = (axis["name"], axis["error"])
        # Show the first groups, and the first failing one when it is further down.
        shown = list(range(min(len(groups), max_groups)))
        bad = [i for i, ok in enumerate(axis["group_routable"]) if not ok]
        if bad and bad[0] not in shown:
            shown[-1] = bad[0]
        for i in shown:
            mark = "ok" if axis["group_routable"][i] else "no"
            lines.append(f"  {abbreviate(groups[i]):<34} {mark}")
        if len(groups) > max_groups:
            lines.append(f"  ... {len(groups) - max_groups} more")
        if axis["routable"]:
            cells = []
            for size, est in sorted(axis["algorithms"].items(), key=lambda kv: int(kv[0])):
                cells.append(
                    f"{format_bytes(int(size))}: {est['algorithm']}"
                    + (
                        f"({est['node'] or '-'}/{est['net']})"
                        if est["algorithm"] == "Hierarchical"
                        else ""
                    )
                    + f" {format_seconds(est['seconds'])}"
                )
            lines.append(f"  {axis['collective']}  " + "   ".join(cells))
        else:
            sets = " | ".join("{" + ", ".join(map(str, s)) + "}" for s in axis["disconnected"])
            if sets:
                lines.append(f"  disconnected chips on node {axis['bad_node']}: {sets}")
    if first_error:
        lines.append("")
        lines.append(f"error (axis {first_error[0]}):")
        lines.append(first_error[1])
    return lines


def cmd_mesh(args) -> int:
    check_out(args.out)
    model = load_model()
    report = mesh_report(model, args)
    search = report.get("search")
    unroutable = not report["routable"] or (search is not None and not search["found"])
    if args.code:
        if unroutable:
            print("\n".join(mesh_lines(report)), file=sys.stderr)
        else:
            from vtrn.mesh_code import render

            groups = [axis["groups"] for axis in report["axes"]]
            print(
                render(
                    report["shape"],
                    report["names"],
                    report["_flat_placement"],
                    groups,
                    report["_description"],
                ),
                end="",
            )
    elif args.json:
        public = {k: v for k, v in report.items() if not k.startswith("_")}
        json.dump(public, sys.stdout)
        print()
    else:
        print("\n".join(mesh_lines(report)))
    if args.out:
        from vtrn import draw

        draw.save(draw.mesh_picture(make_cluster(model, args), report), args.out)
        if not args.json and not args.code:
            print(f"\nwrote {args.out}")
    return EXIT_UNROUTABLE if unroutable else EXIT_OK


# --------------------------------------------------------------------------------------------
# Registration


def _add_cluster_args(parser) -> None:
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


def register(subparsers) -> None:
    topo = subparsers.add_parser(
        "topo",
        help="print the chip grid with each chip's ranks, and draw it",
        description="Prints each node's chip grid with the ranks of every chip.",
    )
    _add_cluster_args(topo)
    topo.add_argument(
        "--out", metavar="FILE.svg|FILE.png", help="also draw the grid into an SVG or PNG file"
    )
    topo.set_defaults(func=cmd_topo)

    mesh = subparsers.add_parser(
        "mesh",
        help="groups of a DeviceMesh, whether the runtime can route them, and their cost",
        description="Prints each axis's groups, whether the collective library can route them, and the "
        "algorithm and modeled time at a few message sizes. Exit status 0: every group "
        "routable; 3: some group is not; 2: bad input.",
    )
    mesh.add_argument("--shape", required=True, help="mesh shape, e.g. 16,4")
    mesh.add_argument(
        "--names",
        required=True,
        help="axis names, e.g. shard,tp (pp, replicate, shard, tp, dp, fsdp)",
    )
    _add_cluster_args(mesh)
    mesh.add_argument(
        "--placement",
        default="default",
        metavar="default|auto|FILE.json",
        help="row-major (default), searched (auto), or a rank matrix from a JSON file",
    )
    mesh.add_argument(
        "--sizes",
        help="message sizes to model, 1 B to 1 TiB each, e.g. 64KiB,16MiB,256MiB (the default)",
    )
    out = mesh.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument(
        "--code",
        action="store_true",
        help="print Python that builds this mesh with dist.new_group and DeviceMesh.from_group",
    )
    mesh.add_argument(
        "--out", metavar="FILE.svg|FILE.png", help="draw one group per axis on the torus"
    )
    mesh.set_defaults(func=cmd_mesh)
