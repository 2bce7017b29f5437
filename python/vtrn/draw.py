"""Pictures of the chip grid (``vtrn topo --out``) and of mesh groups on it (``vtrn mesh --out``).

Drawing records primitives on a ``Canvas``; ``save`` writes them as SVG (by hand) or PNG
(Pillow, imported only then).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.sax.saxutils import escape

CELL_W, CELL_H, GAP, MARGIN, TITLE_H = 150, 64, 44, 40, 54
AXIS_COLOURS = ["#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b"]
BAD = "#d62728"
LINK = "#9a9a9a"
MAX_NODES_DRAWN = 8


@dataclass
class Canvas:
    width: int
    height: int
    items: list = field(default_factory=list)

    def rect(self, x, y, w, h, fill="#ffffff", stroke="#333333", width=1, dash=False):
        self.items.append(("rect", x, y, w, h, fill, stroke, width, dash))

    def line(self, x1, y1, x2, y2, stroke=LINK, width=2, dash=False):
        self.items.append(("line", x1, y1, x2, y2, stroke, width, dash))

    def text(self, x, y, s, size=12, fill="#222222", anchor="start", bold=False):
        self.items.append(("text", x, y, s, size, fill, anchor, bold))

    def to_svg(self) -> str:
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" font-family="DejaVu Sans, Arial, sans-serif">',
            f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="#ffffff"/>',
        ]
        for item in self.items:
            kind = item[0]
            if kind == "rect":
                _, x, y, w, h, fill, stroke, width, dash = item
                d = ' stroke-dasharray="6,4"' if dash else ""
                out.append(
                    f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="{fill}" '
                    f'stroke="{stroke}" stroke-width="{width}"{d}/>'
                )
            elif kind == "line":
                _, x1, y1, x2, y2, stroke, width, dash = item
                d = ' stroke-dasharray="5,4"' if dash else ""
                out.append(
                    f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{stroke}" '
                    f'stroke-width="{width}"{d}/>'
                )
            else:
                _, x, y, s, size, fill, anchor, bold = item
                weight = ' font-weight="bold"' if bold else ""
                out.append(
                    f'<text x="{x}" y="{y}" font-size="{size}" fill="{fill}" '
                    f'text-anchor="{anchor}"{weight}>{escape(s)}</text>'
                )
        out.append("</svg>\n")
        return "\n".join(out)

    def to_png(self, path: str) -> None:
        try:
            from PIL import Image, ImageDraw, ImageFont
        except ImportError as err:  # pragma: no cover - Pillow is in the install step
            raise ValueError(
                "PNG output needs Pillow (pip install pillow); or write FILE.svg instead"
            ) from err
        image = Image.new("RGB", (self.width, self.height), "white")
        draw = ImageDraw.Draw(image)
        fonts = {}

        def font(size, bold):
            key = (size, bold)
            if key not in fonts:
                try:
                    fonts[key] = ImageFont.truetype(
                        "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf", size
                    )
                except OSError:
                    try:
                        fonts[key] = ImageFont.load_default(size=size)
                    except TypeError:  # Pillow < 10.1
                        fonts[key] = ImageFont.load_default()
            return fonts[key]

        def dashed(points, fill, width, on=6, off=4):
            (x1, y1), (x2, y2) = points
            length = ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5 or 1
            t = 0.0
            while t < length:
                t2 = min(t + on, length)
                draw.line(
                    [
                        (x1 + (x2 - x1) * t / length, y1 + (y2 - y1) * t / length),
                        (x1 + (x2 - x1) * t2 / length, y1 + (y2 - y1) * t2 / length),
                    ],
                    fill=fill,
                    width=width,
                )
                t += on + off

        for item in self.items:
            kind = item[0]
            if kind == "rect":
                _, x, y, w, h, fill, stroke, width, dash = item
                draw.rounded_rectangle(
                    [x, y, x + w, y + h],
                    radius=6,
                    fill=fill,
                    outline=None if dash else stroke,
                    width=width,
                )
                if dash:
                    for a, b in (
                        ((x, y), (x + w, y)),
                        ((x + w, y), (x + w, y + h)),
                        ((x + w, y + h), (x, y + h)),
                        ((x, y + h), (x, y)),
                    ):
                        dashed((a, b), stroke, width)
            elif kind == "line":
                _, x1, y1, x2, y2, stroke, width, dash = item
                if dash:
                    dashed(((x1, y1), (x2, y2)), stroke, width, 5, 4)
                else:
                    draw.line([(x1, y1), (x2, y2)], fill=stroke, width=width)
            else:
                _, x, y, s, size, fill, anchor, bold = item
                f = font(size, bold)
                w = draw.textlength(s, font=f)
                dx = {"start": 0, "middle": -w / 2, "end": -w}[anchor]
                draw.text((x + dx, y - size), s, fill=fill, font=f)
        image.save(path, "PNG")


def save(canvas: Canvas, path: str) -> None:
    lower = path.lower()
    if lower.endswith(".svg"):
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(canvas.to_svg())
        except OSError as err:
            raise ValueError(f"cannot write {path!r}: {err.strerror}") from None
    elif lower.endswith(".png"):
        try:
            canvas.to_png(path)
        except OSError as err:
            raise ValueError(f"cannot write {path!r}: {err}") from None
    else:
        raise ValueError(
            f"--out {path!r}: the picture is written as SVG or PNG; name the file FILE.svg or FILE.png"
        )


# --------------------------------------------------------------------------------------------
# Layout


def _panel_size(spec) -> tuple[int, int]:
    cols, rows = spec["grid_cols"], spec["grid_rows"]
    return cols * CELL_W + (cols - 1) * GAP + 2 * MARGIN, rows * CELL_H + (
        rows - 1
    ) * GAP + 2 * MARGIN + 20


def _chip_xy(spec, chip, x0, y0):
    cols = spec["grid_cols"]
    r, c = divmod(chip, cols)
    return x0 + MARGIN + c * (CELL_W + GAP), y0 + MARGIN + 20 + r * (CELL_H + GAP)


def _links(canvas, cluster, x0, y0, highlight=None, colour=LINK):
    """The node's NeuronLink links; links between two chips of |highlight| thick in |colour|."""
    spec = cluster.spec
    rows, cols = spec["grid_rows"], spec["grid_cols"]
    if spec["topology"] == "switch":
        canvas.text(x0 + MARGIN, y0 + MARGIN + 8, "all chips joined by the switch", 11, "#666666")
        return
    if spec["topology"] != "torus-2d":
        return
    hl = set(highlight or ())
    for chip in range(spec["chips"]):
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


def _range_text(first, last):
    return f"{first}-{last}" if last > first else str(first)


def topo_picture(cluster) -> Canvas:
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
        f"{spec['name']}, {lnc}: {cluster.ranks_per_chip} ranks per chip, world {cluster.world}",
        18,
        bold=True,
    )
    note = "dashed stubs: wraparound links" if spec["topology"] == "torus-2d" else spec["summary"]
    if cluster.nodes > nodes:
        note += f"; first {nodes} of {cluster.nodes} nodes drawn"
    canvas.text(MARGIN, 46, note, 12, "#555555")
    rpc = cluster.ranks_per_chip
    for node in range(nodes):
        x0 = (node % per_row) * pw
        y0 = TITLE_H + (node // per_row) * ph
        canvas.text(x0 + MARGIN, y0 + MARGIN, f"node {node}", 14, bold=True)
        _links(canvas, cluster, x0, y0)
        for chip in range(spec["chips"]):
            x, y = _chip_xy(spec, chip, x0, y0)
            first = cluster.rank_of(node, chip, 0)
            canvas.rect(x, y, CELL_W, CELL_H, "#eef3fb", "#4a6fa5", 2)
            canvas.text(x + CELL_W / 2, y + 26, f"chip {chip}", 14, anchor="middle", bold=True)
            canvas.text(
                x + CELL_W / 2,
                y + 48,
                f"ranks {_range_text(first, first + rpc - 1)}",
                13,
                anchor="middle",
            )
    return canvas


def _pick_group(axis):
    """The group to draw: the first unroutable one, else the first."""
    for i, ok in enumerate(axis["group_routable"]):
        if not ok:
            return i
    return 0


def mesh_picture(cluster, report) -> Canvas:
    spec = cluster.spec
    pw, ph = _panel_size(spec)
    rpc, rpn = cluster.ranks_per_chip, cluster.ranks_per_node
    axes = report["axes"]
    panels = []  # (axis index, group index, nodes to draw)
    for a, axis in enumerate(axes):
        g = _pick_group(axis)
        nodes = sorted({r // rpn for r in axis["groups"][g]})
        panels.append((a, g, nodes[:4]))
    width = max(len(p[2]) for p in panels) * pw
    row_h = ph + 36
    canvas = Canvas(max(width, 640), TITLE_H + row_h * len(panels) + 10)
    canvas.text(
        MARGIN,
        28,
        f"mesh {tuple(report['shape'])} {tuple(report['names'])} on {report['_description']}",
        17,
        bold=True,
    )
    canvas.text(
        MARGIN,
        46,
        f"placement: {report['placement_source']}; one group per axis, "
        "red dashed chips: disconnected sets",
        12,
        "#555555",
    )
    for row, (a, g, nodes) in enumerate(panels):
        axis = axes[a]
        colour = AXIS_COLOURS[a % len(AXIS_COLOURS)]
        group = axis["groups"][g]
        ok = axis["group_routable"][g]
        y_row = TITLE_H + row * row_h
        status = "routable" if ok else "NOT ROUTABLE (no_hier no_mesh)"
        from vtrn.topology import abbreviate  # local import keeps draw usable on its own

        canvas.text(
            MARGIN,
            y_row + 24,
            f"axis {axis['name']}: group {g} {abbreviate(group, 12)}: {status}",
            14,
            BAD if not ok else colour,
            bold=True,
        )
        sets = {}
        if not ok and axis.get("disconnected"):
            for s, chips in enumerate(axis["disconnected"]):
                for chip in chips:
                    sets[(axis["bad_node"], chip)] = s
        for n, node in enumerate(nodes):
            x0, y0 = n * pw, y_row + 30
            on_node = [r for r in group if r // rpn == node]
            chips = {}
            for r in on_node:
                chips.setdefault((r % rpn) // rpc, []).append(r)
            canvas.text(x0 + MARGIN, y0 + MARGIN, f"node {node}", 13, bold=True)
            _links(canvas, cluster, x0, y0, highlight=chips.keys(), colour=colour)
            for chip in range(spec["chips"]):
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
