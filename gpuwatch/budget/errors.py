"""The one error the budget engine raises for input it cannot use."""

from __future__ import annotations


class BudgetError(ValueError):
    """Bad input to the estimator. ``field`` names the input (``--heads``, ``config.json``…).

    The message is one sentence a person can act on; the command line prints it as is.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
