"""A picture of a modeled device timeline: the device events of a Chrome trace (from
``torch.profiler`` with ``ProfilerActivity.PrivateUse1`` or ``vtrn estimate --trace``), one row
per device stream, coloured by the engine class that bounds each piece of work."""

from __future__ import annotations

from vtrn.render.canvas import Canvas
from vtrn.render.units import format_seconds

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma", "collective")
COLOURS = {
    "tensor": "#4e79a7",
    "vector": "#59a14f",
    "scalar": "#9c755f",
    "gpsimd": "#edc948",
    "dma": "#f28e2b",
    "collective": "#e15759",
}
WIDTH = 1200
LABEL_W = 190
ROW_H = 24
TOP = 48


def device_events(trace: dict) -> list[dict]:
    """The device events of ``trace`` (kernels, copies and collectives), in any order."""
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        raise ValueError("not a Chrome trace: no traceEvents list")
    out = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        if e.get("cat") not in ("kernel", "gpu_memcpy") or "device" not in e.get("args", {}):
            continue
        try:
            ts, dur = float(e["ts"]), float(e.get("dur", 0))
        except (KeyError, TypeError, ValueError):
            continue
        out.append({"ts": ts, "dur": dur, "row": (e.get("pid"), e.get("tid")), "args": e["args"]})
    return out


def engine_of(args: dict) -> str:
    """The engine class a piece of work spent most of its time on."""
    if args.get("kind") == "collective":
        return "collective"
    best, best_us = "dma", -1.0
    for engine in ENGINES:
        us = args.get(f"{engine}_us", 0.0)
        if isinstance(us, (int, float)) and us > best_us:
            best, best_us = engine, us
    return best


def _row_order(row):
    """Devices in order; per device its streams, then their collective tracks."""
    pid, tid = row
    number = tid if isinstance(tid, int) else 0
    return (str(pid), number >= 1000, number % 1000)


def _row_label(row) -> str:
    pid, tid = row
    if isinstance(tid, int) and tid >= 1000:
        return f"neuron:{pid} collectives {tid - 1000}"
    return f"neuron:{pid} stream {tid}"


def draw(trace: dict, title: str) -> Canvas:
    """The timeline of ``trace``'s device events. ValueError when it has none."""
    events = device_events(trace)
    if not events:
        raise ValueError(
            "the trace has no neuron device events; profile with "
            "ProfilerActivity.PrivateUse1 (or use vtrn estimate --trace)"
        )
    t0 = min(e["ts"] for e in events)
    t1 = max(e["ts"] + e["dur"] for e in events)
    span_us = max(t1 - t0, 1e-9)
    rows = sorted({e["row"] for e in events}, key=_row_order)
    plot_w = WIDTH - LABEL_W - 20
    height = TOP + ROW_H * len(rows) + 70
    canvas = Canvas(WIDTH, height)
    canvas.text(
        10, 22, f"{title}: modeled device time, {format_seconds(span_us * 1e-6)}", 15, bold=True
    )
    scale = plot_w / span_us
    for index, row in enumerate(rows):
        y = TOP + index * ROW_H
        canvas.text(10, y + 16, _row_label(row), 12)
        canvas.rect(LABEL_W, y + 2, plot_w, ROW_H - 4, fill="#f4f4f4", stroke=None, radius=0)
        # Per pixel column, the time each engine class was busy; a column shows its largest.
        columns: dict[int, dict[str, float]] = {}
        for e in (e for e in events if e["row"] == row):
            x0, x1 = (e["ts"] - t0) * scale, (e["ts"] + e["dur"] - t0) * scale
            engine = engine_of(e["args"])
            for c in range(int(x0), min(int(x1) + 1, plot_w)):
                share = min(x1, c + 1) - max(x0, c)
                if share > 0 or x0 == x1 == c:
                    cell = columns.setdefault(c, {})
                    cell[engine] = cell.get(engine, 0.0) + max(share, 1e-6)
        run_start, run_engine = None, None
        for c in range(plot_w + 1):
            cell = columns.get(c)
            engine = max(cell, key=cell.get) if cell else None
            if engine != run_engine:
                if run_engine is not None:
                    canvas.rect(
                        LABEL_W + run_start,
                        y + 4,
                        c - run_start,
                        ROW_H - 8,
                        fill=COLOURS[run_engine],
                        stroke=None,
                        radius=0,
                    )
                run_start, run_engine = c, engine
    axis_y = TOP + ROW_H * len(rows) + 6
    canvas.line(LABEL_W, axis_y, LABEL_W + plot_w, axis_y, width=1)
    for i in range(6):
        x = LABEL_W + plot_w * i / 5
        canvas.line(x, axis_y, x, axis_y + 5, width=1)
        canvas.text(x, axis_y + 18, format_seconds(span_us * 1e-6 * i / 5), 11, anchor="middle")
    x = LABEL_W
    for engine in ENGINES:
        canvas.rect(x, height - 24, 14, 14, fill=COLOURS[engine], stroke=None, radius=0)
        canvas.text(x + 20, height - 12, engine, 12)
        x += 110
    return canvas
