"""Bytes and seconds as people read them: the one formatter of each for every report."""

from __future__ import annotations

_BYTE_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def format_bytes(n: int, decimals: int | None = None, largest: str = "GiB") -> str:
    """``n`` bytes in binary units, none larger than ``largest``.

    ``decimals`` None: the largest unit that divides ``n`` exactly, as an integer, for sizes a
    user chose (``64 MiB``, ``1536 KiB``, ``1000 B``). Otherwise the largest unit not above
    ``n`` with that many decimals (``1.5 GiB``); a count below 1 KiB stays whole (``12 B``).
    """
    units = [(name, scale) for name, scale in _BYTE_UNITS if scale <= _scale_of(largest)]
    for name, scale in units:
        if decimals is None:
            if n >= scale and n % scale == 0:
                return f"{n // scale} {name}"
        elif abs(n) >= scale:
            return f"{n / scale:.{decimals}f} {name}"
    return f"{n} B" if decimals is None else f"{n:.0f} B"


def _scale_of(unit: str) -> int:
    for name, scale in _BYTE_UNITS:
        if name == unit:
            return scale
    raise ValueError(f"unknown byte unit {unit!r}; use one of KiB, MiB, GiB, TiB")


def format_seconds(seconds: float, decimals: int | None = None, units: str = "s,ms,us,ns") -> str:
    """``seconds`` in the largest of ``units`` not above it (the smallest when all are).

    ``decimals`` None: three significant digits (``1.06 ms``, and ``0 s`` for zero); otherwise
    that many decimals (``units="ms,us"``, ``decimals=3``: ``1.058 ms``, ``12.345 us``).
    """
    allowed = units.split(",")
    scales = [(name, scale) for name, scale in _TIME_UNITS if name in allowed]
    if decimals is None and seconds == 0:
        return "0 s"
    name, scale = scales[-1]
    for candidate, candidate_scale in scales:
        if seconds >= candidate_scale:
            name, scale = candidate, candidate_scale
            break
    value = seconds / scale
    return f"{value:.3g} {name}" if decimals is None else f"{value:.{decimals}f} {name}"
