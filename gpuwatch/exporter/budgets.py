"""``--budget PATTERN=FILE``: link the processes whose command line contains PATTERN to
the estimate in FILE (``gpuwatch estimate … --json > FILE``), so the exporter reports
their predicted peak and the advisor weighs them against it, as the window's budget
links do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from gpuwatch.advisor import LinkedBudget

ESTIMATE_SCHEMA = "gpuwatch.estimate/1"
MAX_ESTIMATE_BYTES = 4 << 20


class BudgetFileError(ValueError):
    """A --budget value or estimate file that cannot be used; names the file and why."""


class BudgetRule(NamedTuple):
    pattern: str            # a substring of the process's command line
    budget: LinkedBudget

    def matches(self, cmdline: tuple[str, ...]) -> bool:
        return self.pattern in " ".join(cmdline)


def budget_from_estimate(doc: Any, source: str) -> LinkedBudget:
    """The linked budget an estimate document describes (its total is the peak)."""
    if not isinstance(doc, dict) or doc.get("schema") != ESTIMATE_SCHEMA:
        raise BudgetFileError(f"{source}: not a {ESTIMATE_SCHEMA} document "
                              "(write one with `gpuwatch estimate … --json`)")
    total = doc.get("total_bytes")
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        raise BudgetFileError(f"{source}: total_bytes must be a whole number above 0")
    inputs = doc.get("inputs") if isinstance(doc.get("inputs"), dict) else {}
    model = inputs.get("model") if isinstance(inputs.get("model"), str) else "estimate"
    batch = inputs.get("batch")
    batch = batch if isinstance(batch, int) and not isinstance(batch, bool) else None
    label = model[:80] + (f" · batch {batch}" if batch is not None else "")
    return LinkedBudget(label, total, batch=batch)


def parse_budget_rule(text: str) -> BudgetRule:
    pattern, sep, path = text.partition("=")
    if not sep or not pattern or not path:
        raise BudgetFileError(f"{text!r}: write PATTERN=FILE, e.g. train.py=budget.json")
    try:
        with Path(path).open("rb") as f:
            raw = f.read(MAX_ESTIMATE_BYTES + 1)
    except OSError as exc:
        raise BudgetFileError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    if len(raw) > MAX_ESTIMATE_BYTES:
        raise BudgetFileError(f"{path}: larger than {MAX_ESTIMATE_BYTES >> 20} MiB")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        raise BudgetFileError(f"{path}: not JSON") from None
    return BudgetRule(pattern, budget_from_estimate(doc, path))
