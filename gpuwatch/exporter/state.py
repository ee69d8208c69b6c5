"""What the sampler thread last saw, for the scrapes to read.

The sampler thread appends each snapshot to the history, runs the advisor and links
budgets; a scrape (on the HTTP server's thread) only reads the last published view, so
a slow scrape never holds up sampling and never sees half an update.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gpuwatch.advisor import Advisor, LinkedBudget
from gpuwatch.core.hints import Hint
from gpuwatch.core.history import History
from gpuwatch.core.snapshot import Snapshot
from gpuwatch.exporter.budgets import BudgetRule


@dataclass(frozen=True)
class View:
    snapshot: Snapshot
    hints: tuple[Hint, ...] = ()
    links: Mapping[tuple[int, int], LinkedBudget] = field(default_factory=dict)


class ExporterState:
    def __init__(self, budgets: Sequence[BudgetRule] = (),
                 on_error: Callable[[Exception], None] | None = None):
        self.history = History()
        self.advisor = Advisor()
        self.budgets = tuple(budgets)
        self.samples = 0
        self.advisor_failures = 0
        self._on_error = on_error
        self._view: View | None = None
        self._lock = threading.Lock()

    def on_snapshot(self, snap: Snapshot) -> None:
        """Called on the sampler thread for every sample. The GPUs are published even
        when the advisor fails on a sample: the endpoint keeps its readings."""
        self.history.append(snap)
        try:
            self._link(snap)
            self.advisor.update(self.history)
            hints, links = tuple(self.advisor.active), self.advisor.links
        except Exception as exc:          # a bug in a rule must not end the exporter
            self.advisor_failures += 1
            if self._on_error is not None:
                self._on_error(exc)
            hints, links = (), {}
        view = View(snap, hints, links)
        with self._lock:
            self._view = view
            self.samples += 1

    def _link(self, snap: Snapshot) -> None:
        if not self.budgets:
            return
        wanted = {}
        for p in snap.processes:
            rule = next((r for r in self.budgets if r.matches(p.cmdline)), None)
            if rule is not None:
                wanted[(p.gpu_index, p.pid)] = rule.budget
        links = self.advisor.links
        for key in links.keys() - wanted.keys():
            self.advisor.unlink(*key)
        for key, budget in wanted.items():
            if links.get(key) != budget:
                self.advisor.link(key[0], key[1], budget)

    @property
    def view(self) -> View | None:
        with self._lock:
            return self._view
