"""The text and JSON of ``vtrn topo`` and ``vtrn mesh``, from the typed topology API."""

from __future__ import annotations

from vtrn.render.units import format_bytes, format_seconds
from vtrn.topology import Cluster, MeshReport, nest

# Keys of the ``vtrn mesh --json`` object, in output order.
_AXIS_JSON_KEYS = (
    "name",
    "size",
    "collective",
    "groups",
    "group_routable",
    "routable",
    "error",
    "disconnected",
    "bad_node",
)
_SEARCH_JSON_KEYS = (
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
# How a report's placement source is named in the output: a custom placement comes from a file.
_SOURCE_NAMES = {"default": "default", "auto": "auto", "custom": "file"}


def abbreviate(group: list[int], limit: int = 8) -> str:
    """``[0, 4, 8, ..., 60]`` for a group longer than ``limit``: first three, ..., last."""
    if len(group) <= limit:
        return "[" + ", ".join(map(str, group)) + "]"
    return "[" + ", ".join(map(str, group[:3])) + ", ..., " + str(group[-1]) + "]"


def rank_range(first: int, last: int) -> str:
    """``12-15``, or ``12`` for a single rank."""
    return f"{first}-{last}" if last > first else str(first)


# --------------------------------------------------------------------------------------------
# vtrn topo


def topo_lines(cluster: Cluster) -> list[str]:
    """The instance, the rank formula, the links, and each node's chip grid with its ranks."""
    spec = cluster.spec
    rpc, cols = cluster.ranks_per_chip, spec.grid_cols
    lnc = cluster.lnc
    hbm_rank = spec.chip.hbm_bytes // rpc
    lines = [f"{spec.name}: {spec.summary}"]
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
    if spec.topology == "torus-2d":
        lines.append(
            f"links: {spec.grid_rows}x{cols} torus, each chip to its row and column neighbours "
            f"with wraparound, {spec.link_Bps / 1e9:g} GB/s per link"
        )
    elif spec.topology == "switch":
        lines.append(
            f"links: every chip to every chip through the switch, {spec.link_Bps / 1e9:g} GB/s per chip"
        )
    else:
        lines.append("links: one chip, no NeuronLink peers")
    if spec.ultraserver_nodes > 1:
        lines.append(
            f"UltraServer: {spec.ultraserver_nodes} nodes joined by NeuronLink ({spec.ultraserver_fabric}), "
            f"{spec.ultraserver_chip_Bps / 1e9:g} GB/s per chip; EFA between UltraServers"
        )
    if spec.efa_Bps:
        lines.append(f"EFA: {spec.efa_Bps * 8 / 1e9:g} Gbps per node")
    shown = min(cluster.nodes, 4)
    last_chip = f"c{spec.chips - 1} {rank_range(cluster.world - rpc, cluster.world - 1)}"
    width = max(len(last_chip), 10) + 2
    for node in range(shown):
        lines.append("")
        lines.append(f"node {node}")
        lines.append((" " * 9 + "".join(f"col {c}".ljust(width) for c in range(cols))).rstrip())
        for row in range(spec.grid_rows):
            cells = []
            for col in range(cols):
                c = row * cols + col
                first = cluster.rank_of(node, c, 0)
                cells.append(f"c{c} {rank_range(first, first + rpc - 1)}".ljust(width))
            lines.append(f"  row {row}  " + "".join(cells).rstrip())
    for node in range(shown, cluster.nodes):
        first = node * cluster.ranks_per_node
        lines.append(f"node {node}: ranks {first}-{first + cluster.ranks_per_node - 1}")
    return lines


# --------------------------------------------------------------------------------------------
# vtrn mesh


def mesh_title(report: MeshReport) -> str:
    return f"mesh {tuple(report.shape)} {tuple(report.names)} on {report.cluster.describe()}"


def placement_source_name(report: MeshReport) -> str:
    return _SOURCE_NAMES[report.placement_source]


def mesh_lines(report: MeshReport, max_groups: int = 4) -> list[str]:
    """Each axis: its first groups (and the first unroutable one), whether each is routable,
    the algorithm and modeled time at each message size, else the runtime's error."""
    names = report.names
    lines = [f"{mesh_title(report)}; placement {placement_source_name(report)}"]
    search = report.search
    if search:
        if search.found:
            what = (
                "the row-major placement (already routable)"
                if search.is_default
                else f"chip order {search.chip_order}, axes filled in order "
                f"{[names[a] for a in search.fill_order]}"
            )
            lines.append(f"auto placement: {what}; {search.solutions} routable placements compared")
        else:
            lines.append(f"auto placement: none found. {search.message}")
    first_error = None
    for axis in report.analysis.axes:
        groups = axis.groups
        status = "routable" if axis.routable else "NOT ROUTABLE"
        lines.append("")
        lines.append(
            f"axis {axis.name}: size {axis.size}, {len(groups)} group{'s' if len(groups) != 1 else ''}, "
            f"{axis.collective}: {status}"
        )
        if not axis.routable and first_error is None:
            first_error = (axis.name, axis.error)
        # Show the first groups, and the first failing one when it is further down.
        shown = list(range(min(len(groups), max_groups)))
        bad = [i for i, ok in enumerate(axis.group_routable) if not ok]
        if bad and bad[0] not in shown:
            shown[-1] = bad[0]
        for i in shown:
            mark = "ok" if axis.group_routable[i] else "no"
            lines.append(f"  {abbreviate(groups[i]):<34} {mark}")
        if len(groups) > max_groups:
            lines.append(f"  ... {len(groups) - max_groups} more")
        if axis.routable:
            cells = [
                f"{format_bytes(size)}: {est.label()} {format_seconds(est.seconds)}"
                for size, est in sorted(axis.estimates.items())
            ]
            lines.append(f"  {axis.collective}  " + "   ".join(cells))
        else:
            sets = " | ".join("{" + ", ".join(map(str, s)) + "}" for s in axis.disconnected)
            if sets:
                lines.append(f"  disconnected chips on node {axis.bad_node}: {sets}")
    if first_error:
        lines.append("")
        lines.append(f"error (axis {first_error[0]}):")
        lines.append(first_error[1])
    return lines


def mesh_json(report: MeshReport) -> dict:
    """The ``vtrn mesh --json`` object: message sizes as byte-count strings, the placement as
    a nested list of the mesh's shape (itself a valid ``--placement`` file)."""
    cluster = report.cluster
    out = {
        "world": cluster.world,
        "instance": cluster.instance,
        "lnc": cluster.lnc,
        "nodes": cluster.nodes,
        "shape": report.shape,
        "names": report.names,
        "placement_source": placement_source_name(report),
        "routable": report.analysis.routable,
        "axes": [
            {k: getattr(axis, k) for k in _AXIS_JSON_KEYS}
            | {
                "algorithms": {
                    str(size): {
                        "algorithm": est.algorithm,
                        "node": est.node,
                        "net": est.net,
                        "seconds": est.seconds,
                        "collective": est.collective,
                        "seconds_by_collective": est.seconds_by_collective,
                    }
                    for size, est in axis.estimates.items()
                }
            }
            for axis in report.analysis.axes
        ],
    }
    if report.placement_source != "default":
        out["placement"] = (
            nest(report.analysis.placement, report.shape) if report.placement is not None else None
        )
    if report.search is not None:
        out["search"] = {k: getattr(report.search, k) for k in _SEARCH_JSON_KEYS}
    return out
