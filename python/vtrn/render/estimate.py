"""The text report of ``vtrn estimate`` (its JSON is the report itself)."""

from __future__ import annotations

from vtrn.render.units import format_bytes, format_seconds

CATEGORIES = ("parameters", "gradients", "optimizer", "activations", "other")


def report_lines(report: dict) -> list[str]:
    lnc = f", LNC{report['lnc']}" if report["lnc"] else ""
    lines = [
        f"{report['instance']}{lnc}, world of {report['world_size']} ranks: step "
        f"{format_seconds(report['step_time_s'])} (median after the first, slowest rank), "
        f"MFU {100 * report['mfu']:.1f}%"
    ]
    for rank in report["ranks"]:
        memory = rank["memory_by_category"]
        parts = ", ".join(f"{name} {format_bytes(memory[name], 2)}" for name in CATEGORIES)
        role = f" ({rank['role']})" if rank.get("role") else ""
        lines.append(
            f"rank {rank['rank']}{role}: peak memory {format_bytes(rank['peak_memory_bytes'], 2)} "
            f"({parts}); model FLOPs per step {rank['model_flops']:.3g}"
        )
        for i, step in enumerate(rank["steps"]):
            lines.append(
                f"  step {i}: {format_seconds(step['time_s'])} = compute "
                f"{format_seconds(step['compute_s'])} + exposed collectives "
                f"{format_seconds(step['exposed_collective_s'])} (of "
                f"{format_seconds(step['collective_s'])}) + idle {format_seconds(step['idle_s'])}"
            )
        lines.append(f"  host: peak resident memory {format_bytes(rank['host_peak_rss_bytes'], 2)}")
        if rank.get("host_reads"):
            lines.append(
                f"  {rank['host_reads']} host reads (.item(), .cpu(), printing) saw placeholder "
                "zeros: control flow that depends on data may differ from a real run"
            )
    return lines
