"""Counts of parameters in words people read at every size."""

from __future__ import annotations


def format_count(n: float) -> str:
    """A count of parameters for people: ``7``, ``7.0 K``, ``124 M``, ``8.03 B``, ``1.0 T``."""
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size * 0.9995:  # 999,999 reads 1.0 M, not 1000 K
            text = f"{n / size:.3g}"
            if "." not in text and "e" not in text and len(text) < 3:
                text += ".0"
            return f"{text} {unit}"
    return str(round(n))
