"""A drawing recorded as primitives (rectangles, lines, text) and written as SVG or PNG.

SVG is written by hand; PNG goes through Pillow, imported only when a PNG is asked for.
Coordinates are pixels from the top left; colours are ``#rrggbb``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LINE = "#9a9a9a"  # the default stroke of a line
PICTURE_SUFFIXES = (".svg", ".png")


def check_picture_path(path: str | None) -> None:
    """Rejects a file name that is neither .svg nor .png before any work is done."""
    if path and not path.lower().endswith(PICTURE_SUFFIXES):
        raise ValueError(
            f"--out {path!r}: the picture is written as SVG or PNG; name the file FILE.svg or FILE.png"
        )


@dataclass
class Canvas:
    width: int
    height: int
    items: list = field(default_factory=list)

    def rect(self, x, y, w, h, fill="#ffffff", stroke="#333333", width=1, dash=False, radius=6):
        self.items.append(("rect", x, y, w, h, fill, stroke, width, dash, radius))

    def line(self, x1, y1, x2, y2, stroke=LINE, width=2, dash=False):
        self.items.append(("line", x1, y1, x2, y2, stroke, width, dash))

    def text(self, x, y, s, size=12, fill="#222222", anchor="start", bold=False):
        self.items.append(("text", x, y, s, size, fill, anchor, bold))

    def to_svg(self) -> str:
        from xml.sax.saxutils import escape  # imports urllib: only when a picture is drawn

        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" font-family="DejaVu Sans, Arial, sans-serif">',
            f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="#ffffff"/>',
        ]
        for item in self.items:
            kind = item[0]
            if kind == "rect":
                _, x, y, w, h, fill, stroke, width, dash, radius = item
                d = ' stroke-dasharray="6,4"' if dash else ""
                line = f'stroke="{stroke}" stroke-width="{width}"' if stroke else 'stroke="none"'
                out.append(
                    f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="{radius}" fill="{fill}" '
                    f"{line}{d}/>"
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
                _, x, y, w, h, fill, stroke, width, dash, radius = item
                if radius:
                    draw.rounded_rectangle(
                        [x, y, x + w, y + h],
                        radius=radius,
                        fill=fill,
                        outline=None if dash else stroke,
                        width=width,
                    )
                else:
                    draw.rectangle([x, y, x + w - 1, y + h - 1], fill=fill, outline=None)
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
    """Writes ``canvas`` to ``path`` as SVG or PNG, by the file's suffix."""
    check_picture_path(path)
    if path.lower().endswith(".svg"):
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(canvas.to_svg())
        except OSError as err:
            raise ValueError(f"cannot write {path!r}: {err.strerror}") from None
    else:
        try:
            canvas.to_png(path)
        except OSError as err:
            raise ValueError(f"cannot write {path!r}: {err}") from None
