"""``--budget PATTERN=FILE``: link the processes whose command line contains PATTERN to
the estimate in FILE (``gpuwatch estimate … --json > FILE``), so the exporter reports
their predicted peak and the advisor weighs them against it, as the window's budget
links do."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from gpuwatch.advisor import LinkedBudget
from gpuwatch.core.safe_text import clip
from gpuwatch.core.small_files import SmallFileError, path_text, read_small_file
from gpuwatch.core.units import MAX_SIZE_BYTES, MAX_SIZE_TEXT, shown

ESTIMATE_SCHEMA = "gpuwatch.estimate/1"
MAX_ESTIMATE_BYTES = 4 << 20
MAX_BATCH = 1 << 31


class BudgetFileError(ValueError):
    """A --budget value or estimate file that cannot be used; names the file and why."""


class BudgetRule(NamedTuple):
    pattern: str            # a substring of the process's command line
    budget: LinkedBudget

    def matches(self, cmdline: tuple[str, ...]) -> bool:
        return self.pattern in " ".join(cmdline)


def budget_from_estimate(doc: Any, source: str) -> LinkedBudget:
    """The linked budget an estimate document describes (its total is the peak). The
    numbers are bounded here: a peak from 1 byte to 1 EiB, a batch from 1 to 2**31."""
    if not isinstance(doc, dict) or doc.get("schema") != ESTIMATE_SCHEMA:
        raise BudgetFileError(f"{source}: not a {ESTIMATE_SCHEMA} document "
                              "(write one with `gpuwatch estimate … --json`)")
    total = doc.get("total_bytes")
    if type(total) is not int or not 0 < total <= MAX_SIZE_BYTES:
        raise BudgetFileError(f"{source}: total_bytes must be a whole number from 1 to "
                              f"{MAX_SIZE_TEXT}, not {shown(total)}")
    inputs = doc.get("inputs") if isinstance(doc.get("inputs"), dict) else {}
    model = inputs.get("model") if isinstance(inputs.get("model"), str) else ""
    model = " ".join(model.split()) or "estimate"    # one line: any run of spaces is one
    batch = inputs.get("batch")
    batch = batch if type(batch) is int and 0 < batch <= MAX_BATCH else None
    label = clip(model, 80) + (f" · batch {batch}" if batch is not None else "")
    return LinkedBudget(label, total, batch=batch)


def parse_budget_rule(text: str) -> BudgetRule:
    """``PATTERN=FILE``, the file read as every user file is: a regular file only (a
    FIFO is refused, never waited on), at most MAX_ESTIMATE_BYTES."""
    pattern, sep, path = text.partition("=")
    if not sep or not pattern or not path:
        raise BudgetFileError(f"{shown(text)}: write PATTERN=FILE, e.g. train.py=budget.json")
    name = path_text(path)
    try:
        raw = read_small_file(path, MAX_ESTIMATE_BYTES)
    except SmallFileError as exc:
        raise BudgetFileError(f"{name}: {exc.reason}") from None
    try:
        doc = json.loads(raw)
    except RecursionError:
        raise BudgetFileError(f"{name}: nests arrays or objects too deeply") from None
    except ValueError as exc:             # bad JSON, bad UTF-8, an integer of 4,300 digits
        raise BudgetFileError(f"{name}: not JSON ({clip(str(exc), 80)})") from None
    return BudgetRule(pattern, budget_from_estimate(doc, name))
