"""The table, report, JSON and picture of ``vtrn plan``, from the typed planner API."""

from __future__ import annotations

import dataclasses

from vtrn.plan import Layout, MemoryBreakdown, PlanResult, StepTime
from vtrn.render.canvas import Canvas, save

GIB = float(1 << 30)
COLOURS = ["#1f77b4", "#aec7e8", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#7f7f7f"]
# Keys of each ``vtrn plan --json`` layout, in output order (then placement, reason, code, time_s).
_JSON_FIELDS = (
    "mesh_shape",
    "mesh_axes",
    "pp",
    "replicate",
    "shard",
    "tp",
    "micro_batch",
    "checkpointing",
    "fits",
    "routable",
    "memory_bytes",
    "memory_peak_at",
    "step_time_s",
    "tokens_per_second",
    "mfu",
    "limiting_resource",
    "zero1",
    "error_band",
    "step_time_low_s",
    "step_time_high_s",
    "tokens_per_second_low",
    "tokens_per_second_high",
    "tie_with_best",
)


def mesh_text(layout: Layout) -> str:
    """``(16, 4) ("shard", "tp")``: the mesh shape and axis names as Python tuples."""
    shape = ", ".join(str(s) for s in layout.mesh_shape) + (
        "," if len(layout.mesh_shape) == 1 else ""
    )
    axes = ", ".join(f'"{a}"' for a in layout.mesh_axes) + (
        "," if len(layout.mesh_axes) == 1 else ""
    )
    return f"({shape}) ({axes})"


def table_lines(layouts: list[Layout]) -> list[str]:
    """One row per layout: mesh, micro-batch, checkpointing, GiB per rank by part, step time
    with its error band, tokens per second, MFU and the limiting resource. ``=`` marks a layout
    tied with the best (its throughput within the band of the best one's)."""
    head = (
        f"{'#':>3}  {'layout':<18} {'mesh':<42} {'mb':>2} {'ckpt':<9} {'state':>6} {'gathr':>6} {'act':>6} "
        f"{'logit':>6} {'other':>6} {'total':>6}  {'step s':>8} {'+-':>4} {'tokens/s':>10} {'MFU':>6}  limiting resource"
    )
    lines = [head, "-" * len(head)]
    for i, d in enumerate(layouts, 1):
        m = d.memory
        fits = "" if d.fits else "!"
        tie = "=" if d.tie_with_best and i > 1 else " "
        lines.append(
            f"{i:>2}{tie}  {d.name:<18} {mesh_text(d):<42} {d.micro_batch:>2} {d.checkpointing:<9} "
            f"{m.state / GIB:>6.1f} {m.gathered / GIB:>6.1f} {m.activations / GIB:>6.1f} {m.logits / GIB:>6.1f} "
            f"{m.other / GIB:>6.1f} {m.total / GIB:>5.1f}{fits:1}  {d.step_time_s:>8.3f} "
            f"{100 * d.error_band:>3.0f}% "
            f"{d.tokens_per_second:>10.0f} {100 * d.mfu:>5.1f}%  {d.limiting_resource}"
        )
    return lines


def report_lines(result: PlanResult, given_layout: bool) -> list[str]:
    """The whole text report: the question, the table, the search, then the recommendation
    (or, with ``given_layout``, the verdict on that layout) with its reason and mesh code."""
    model = result.model
    lines = [
        f"vtrn plan: {model.name} ({model.params / 1e9:.2f}B parameters"
        + (f", {model.active_params / 1e9:.2f}B active" if model.experts else "")
        + f") on {result.cluster}; sequence {result.seq}, global batch {result.global_batch}, "
        f"{result.precision}, AdamW, {result.schedule}"
    ]
    if result.layouts:
        budget = result.layouts[0].memory.budget / GIB
        lines.append(
            f"memory per rank in GiB (budget {budget:.1f}; state = parameters + gradients + optimizer; "
            f"other = runtime + collective buffers; ! = over budget); step times +- the calibration's "
            f"error band; = : tied with #1 (within the band)"
        )
        lines += table_lines(result.layouts)
    what = "layout evaluated" if given_layout else "layouts evaluated"
    lines.append(
        f"\n{result.evaluated} {what} ({result.factorizations} mesh factorizations) in "
        f"{result.search_seconds:.2f} s"
    )
    if result.why_nothing:
        lines.append(f"\nNothing fits: {result.why_nothing}")
        return lines
    best = result.layouts[0]
    lo, hi = best.tokens_per_second_low, best.tokens_per_second_high
    lines.append(
        f"\nPredicted: {best.tokens_per_second / result.seq:.2f} seq/s "
        f"({lo / result.seq:.2f}-{hi / result.seq:.2f} within the +-{100 * best.error_band:.0f}% band), "
        f"step {best.step_time_s:.3f} s ({best.step_time_low_s:.3f}-{best.step_time_high_s:.3f})"
    )
    ties = [d.name for d in result.layouts[1:] if d.tie_with_best]
    if ties and not given_layout:
        lines.append(f"Tied with it (within the band): {', '.join(dict.fromkeys(ties))}")
    lines.append("\nRecommended:" if not given_layout else "\nThis layout:")
    lines.append(best.reason)
    if result.alternatives:
        lines.append("\nThe alternatives:")
        lines += [f"  - {line}" for line in result.alternatives]
    lines.append("\n" + best.code)
    return lines


def layouts_json(layouts: list[Layout]) -> list[dict]:
    """The ``vtrn plan --json`` list, best first."""
    out = []
    for d in layouts:
        fields = {k: getattr(d, k) for k in _JSON_FIELDS if k != "memory_bytes"}
        fields["memory_bytes"] = dataclasses.asdict(d.memory)
        entry = {k: fields[k] for k in _JSON_FIELDS}
        entry |= {
            "placement": d.placement,
            "reason": d.reason,
            "code": d.code,
            "time_s": dataclasses.asdict(d.time),
        }
        out.append(entry)
    return out


def save_picture(result: PlanResult, layouts: list[Layout], path: str) -> None:
    """Two stacked-bar panels for up to eight layouts: memory per rank by part, step time by
    part; the memory budget is a dashed line."""
    layouts = layouts[:8]
    if not layouts:
        raise ValueError("--out: nothing to draw, no layout was evaluated")
    bar_w, gap, left, top, panel_h = 70, 30, 70, 70, 300
    width = left + len(layouts) * (bar_w + gap) + 200
    height = top + 2 * panel_h + 140
    c = Canvas(width, height)
    c.text(20, 30, f"vtrn plan: {result.model.name} on {result.cluster}", size=16, bold=True)

    def panel(y0, title, parts, values, limit, unit):
        c.text(left, y0 - 12, title, size=13, bold=True)
        c.line(
            left - 5,
            y0 + panel_h,
            left + len(layouts) * (bar_w + gap),
            y0 + panel_h,
            stroke="#333333",
            width=1,
        )
        for i, vals in enumerate(values):
            x = left + i * (bar_w + gap)
            y = y0 + panel_h
            for colour, v in zip(COLOURS, vals):
                h = panel_h * v / limit if limit else 0
                if h >= 1:
                    c.rect(x, y - h, bar_w, h, fill=colour, stroke=colour, width=1)
                y -= h
            c.text(x + bar_w / 2, y0 + panel_h + 16, layouts[i].name, size=10, anchor="middle")
            c.text(x + bar_w / 2, y - 4, f"{sum(vals):.3g}", size=10, anchor="middle")
        for j, name in enumerate(parts):
            lx = left + len(layouts) * (bar_w + gap) + 10
            c.rect(lx, y0 + 10 + 18 * j, 12, 12, fill=COLOURS[j], stroke=COLOURS[j])
            c.text(lx + 18, y0 + 21 + 18 * j, name, size=11)
        c.text(left - 10, y0 + 10, f"{limit:.3g} {unit}", size=10, anchor="end")

    mem = [[getattr(d.memory, p) / GIB for p in MemoryBreakdown.PARTS] for d in layouts]
    budget = layouts[0].memory.budget / GIB
    mem_limit = max([budget] + [sum(v) for v in mem])
    panel(top, "memory per rank (GiB)", MemoryBreakdown.PARTS, mem, mem_limit, "GiB")
    by = top + panel_h * (1 - budget / mem_limit)
    c.line(
        left - 5, by, left + len(layouts) * (bar_w + gap), by, stroke="#d62728", width=2, dash=True
    )
    times = [[getattr(d.time, p) for p in StepTime.PARTS] for d in layouts]
    panel(
        top + panel_h + 70,
        "step time (s)",
        StepTime.PARTS,
        times,
        max(sum(v) for v in times) or 1,
        "s",
    )
    save(c, path)
