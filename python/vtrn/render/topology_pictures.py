"""Pictures of the chip grid (``vtrn topo --out``) and of one group per mesh axis on it
(``vtrn mesh --out``)."""

from __future__ import annotations

from vtrn.render.canvas import Canvas
from vtrn.render.topology import abbreviate, mesh_title, placement_source_name, rank_range
from vtrn.topology import Cluster, InstanceSpec, MeshReport

CELL_W, CELL_H, GAP, MARGIN, TITLE_H = 150, 64, 44, 40, 54
AXIS_COLOURS = ["#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b"]
BAD = "#d62728"
LINK = "#9a9a9a"
MAX_NODES_DRAWN = 8


def _panel_size(spec: InstanceSpec) -> tuple[int, int]:
    cols, rows = spec.grid_cols, spec.grid_rows
    return cols * CELL_W + (cols - 1) * GAP + 2 * MARGIN, rows * CELL_H + (
        rows - 1
    ) * GAP + 2 * MARGIN + 20


def _chip_xy(spec: InstanceSpec, chip, x0, y0):
    cols = spec.grid_cols
    r, c = divmod(chip, cols)
    return x0 + MARGIN + c * (CELL_W + GAP), y0 + MARGIN + 20 + r * (CELL_H + GAP)


def _links(canvas: Canvas, cluster: Cluster, x0, y0, highlight=None, colour=LINK):
    """The node's NeuronLink links; links between two chips of |highlight| thick in |colour|."""
    spec = cluster.spec
    rows, cols = spec.grid_rows, spec.grid_cols
    if spec.topology == "switch":
        canvas.text(x0 + MARGIN, y0 + MARGIN + 8, "all chips joined by the switch", 11, "#666666")
        return
    if spec.topology != "torus-2d":
        return
    hl = set(highlight or ())
    for chip in range(spec.chips):
        x, y = _chip_xy(spec, chip, x0, y0)
        r, c = divmod(chip, cols)
        for other in cluster.neighbors(chip):
            orow, ocol = divmod(other, cols)
            strong = chip in hl and other in hl
            stroke, width = (colour, 5) if strong else (LINK, 2)
            if orow == r and ocol == c + 1:  # right neighbour
                canvas.line(
                    x + CELL_W, y + CELL_H / 2, x + CELL_W + GAP, y + CELL_H / 2, stroke, width
                )
            elif ocol == c and orow == r + 1:  # neighbour below
                canvas.line(
                    x + CELL_W / 2, y + CELL_H, x + CELL_W / 2, y + CELL_H + GAP, stroke, width
                )
            elif orow == r and ocol == cols - 1 and c == 0 and cols > 2:  # row wraparound: stubs
                ox, _ = _chip_xy(spec, other, x0, y0)
                canvas.line(x, y + CELL_H / 2, x - 16, y + CELL_H / 2, stroke, width, dash=True)
                canvas.line(
                    ox + CELL_W,
                    y + CELL_H / 2,
                    ox + CELL_W + 16,
                    y + CELL_H / 2,
                    stroke,
                    width,
                    dash=True,
                )
            elif ocol == c and orow == rows - 1 and r == 0 and rows > 2:  # column wraparound: stubs
                _, oy = _chip_xy(spec, other, x0, y0)
                canvas.line(x + CELL_W / 2, y, x + CELL_W / 2, y - 14, stroke, width, dash=True)
                canvas.line(
                    x + CELL_W / 2,
                    oy + CELL_H,
                    x + CELL_W / 2,
                    oy + CELL_H + 14,
                    stroke,
                    width,
                    dash=True,
                )


def _tint(colour: str, amount: float = 0.2) -> str:
    """|colour| mixed with white (SVG and PNG alike, no alpha)."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    mix = lambda v: round(255 - (255 - v) * amount)  # noqa: E731
    return f"#{mix(r):02x}{mix(g):02x}{mix(b):02x}"


def topo_picture(cluster: Cluster) -> Canvas:
    """Each node's chips with their ranks, and the NeuronLink links between them."""
    spec = cluster.spec
    pw, ph = _panel_size(spec)
    nodes = min(cluster.nodes, MAX_NODES_DRAWN)
    per_row = min(nodes, 4)
    rows = (nodes + per_row - 1) // per_row
    canvas = Canvas(pw * per_row, ph * rows + TITLE_H + 20)
    lnc = f"LNC{cluster.lnc}" if cluster.lnc else "no LNC"
    canvas.text(
        MARGIN,
        28,
        f"{spec.name}, {lnc}: {cluster.ranks_per_chip} ranks per chip, world {cluster.world}",
        18,
        bold=True,
    )
    note = "dashed stubs: wraparound links" if spec.topology == "torus-2d" else spec.summary
    if cluster.nodes > nodes:
        note += f"; first {nodes} of {cluster.nodes} nodes drawn"
    canvas.text(MARGIN, 46, note, 12, "#555555")
    rpc = cluster.ranks_per_chip
    for node in range(nodes):
        x0 = (node % per_row) * pw
        y0 = TITLE_H + (node // per_row) * ph
        canvas.text(x0 + MARGIN, y0 + MARGIN, f"node {node}", 14, bold=True)
        _links(canvas, cluster, x0, y0)
        for chip in range(spec.chips):
            x, y = _chip_xy(spec, chip, x0, y0)
            first = cluster.rank_of(node, chip, 0)
            canvas.rect(x, y, CELL_W, CELL_H, "#eef3fb", "#4a6fa5", 2)
            canvas.text(x + CELL_W / 2, y + 26, f"chip {chip}", 14, anchor="middle", bold=True)
            canvas.text(
                x + CELL_W / 2,
                y + 48,
                f"ranks {rank_range(first, first + rpc - 1)}",
                13,
                anchor="middle",
            )
    return canvas


def mesh_picture(report: MeshReport) -> Canvas:
    """One group per axis (the first unroutable one, else the first) on its nodes' chips;
    the chips of a group the runtime cannot route are marked by disconnected set."""
    cluster = report.cluster
    spec = cluster.spec
    pw, ph = _panel_size(spec)
    rpc, rpn = cluster.ranks_per_chip, cluster.ranks_per_node
    axes = report.analysis.axes
    panels = []  # (axis index, group index, nodes to draw)
    for a, axis in enumerate(axes):
        g = axis.shown_group()
        nodes = sorted({r // rpn for r in axis.groups[g]})
        panels.append((a, g, nodes[:4]))
    width = max(len(p[2]) for p in panels) * pw
    row_h = ph + 36
    canvas = Canvas(max(width, 640), TITLE_H + row_h * len(panels) + 10)
    canvas.text(
        MARGIN,
        28,
        mesh_title(report),
        17,
        bold=True,
    )
    canvas.text(
        MARGIN,
        46,
        f"placement: {placement_source_name(report)}; one group per axis, "
        "red dashed chips: disconnected sets",
        12,
        "#555555",
    )
    for row, (a, g, nodes) in enumerate(panels):
        axis = axes[a]
        colour = AXIS_COLOURS[a % len(AXIS_COLOURS)]
        group = axis.groups[g]
        ok = axis.group_routable[g]
        y_row = TITLE_H + row * row_h
        status = "routable" if ok else "NOT ROUTABLE (no_hier no_mesh)"
        canvas.text(
            MARGIN,
            y_row + 24,
            f"axis {axis.name}: group {g} {abbreviate(group, 12)}: {status}",
            14,
            BAD if not ok else colour,
            bold=True,
        )
        sets = {}
        if not ok and axis.disconnected:
            for s, chips in enumerate(axis.disconnected):
                for chip in chips:
                    sets[(axis.bad_node, chip)] = s
        for n, node in enumerate(nodes):
            x0, y0 = n * pw, y_row + 30
            on_node = [r for r in group if r // rpn == node]
            chips = {}
            for r in on_node:
                chips.setdefault((r % rpn) // rpc, []).append(r)
            canvas.text(x0 + MARGIN, y0 + MARGIN, f"node {node}", 13, bold=True)
            _links(canvas, cluster, x0, y0, highlight=chips.keys(), colour=colour)
            for chip in range(spec.chips):
                x, y = _chip_xy(spec, chip, x0, y0)
                members = chips.get(chip)
                if members is None:
                    canvas.rect(x, y, CELL_W, CELL_H, "#f6f6f6", "#bbbbbb", 1)
                    canvas.text(x + CELL_W / 2, y + 38, f"chip {chip}", 12, "#999999", "middle")
                    continue
                bad_set = sets.get((node, chip))
                stroke, dash = (BAD, True) if bad_set is not None else (colour, False)
                canvas.rect(x, y, CELL_W, CELL_H, _tint(colour), stroke, 3, dash)
                label = f"chip {chip}" + (f"  (set {bad_set + 1})" if bad_set is not None else "")
                canvas.text(
                    x + CELL_W / 2,
                    y + 24,
                    label,
                    13,
                    BAD if bad_set is not None else "#222222",
                    "middle",
                    True,
                )
                ranks = (
                    ", ".join(map(str, members))
                    if len(members) <= 4
                    else f"{members[0]}, ..., {members[-1]} ({len(members)})"
                )
                canvas.text(x + CELL_W / 2, y + 46, ranks, 12, anchor="middle")
    return canvas
