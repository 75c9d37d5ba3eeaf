"""Byte counts as people read them, for every report that prints one (the maintenance
commands' results, the web page's charts and tables)."""

from __future__ import annotations

__all__ = ["human_bytes"]

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"`` (binary units, one decimal; whole bytes below 1 KiB)."""
    size = float(n)
    for unit in _UNITS:
        if abs(size) < 1024 or unit == _UNITS[-1]:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")  # pragma: no cover
