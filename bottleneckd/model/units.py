"""Human-readable figures. Decimal prefixes (1 GB/s = 1e9 B/s) as vendors' datasheets use."""

from __future__ import annotations

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "unknown"
    if unit == "ratio":
        return f"{value * 100:.0f}%"
    base, suffix = unit, ""
    if unit.endswith("/s"):
        base, suffix = unit[:-2], "/s"
    for scale, p in _PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.3g} {p}{base}{suffix}"
    return f"{value:.3g} {base}{suffix}"


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "unknown"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us"
