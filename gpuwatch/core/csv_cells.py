"""Cells for CSV files that people open in spreadsheets.

Text cells are neutralised against spreadsheet formula injection (OWASP "CSV
injection"): a text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return (or their full-width forms) gets a leading ``'``, so a spreadsheet shows it as
text instead of running it; the csv module quotes cells that hold separators, quotes
or line breaks. Numbers (int and float values) are written as numbers, negative ones
included, and unknown values (None) as empty cells.
"""

from __future__ import annotations

# a text cell starting with one of these is read as a formula by spreadsheets
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def neutralise(value: object) -> object:
    """A cell safe for spreadsheets: formula-like text gets a leading ``'``; numbers
    and None pass unchanged (None is written as an empty cell)."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def cells(row: tuple[object, ...] | list[object]) -> list[object]:
    """A row ready for ``csv.writer``: None as an empty cell, text neutralised."""
    return ["" if v is None else neutralise(v) for v in row]
