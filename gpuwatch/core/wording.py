"""Small helpers for the words gpuwatch prints (the command line, the window, reports)."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, in the plural unless ``n`` is 1: ``1 hint``, ``0 hints``,
    ``2 GPUs``. ``many`` names an irregular plural (``plural(n, "process", "processes")``)."""
    return f"{n} {word if n == 1 else many or word + 's'}"
