"""The plan's bad-input error: which input, and what is wrong with it."""

from __future__ import annotations


class PlanError(ValueError):
    """Bad planner input (a price file, a preset name, an option); ``field`` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
