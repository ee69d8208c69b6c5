"""The advisor's only door into :mod:`gpuwatch.budget`: a linked budget, reduced to numbers.

A process is linked to a budget estimate (by the window's budget panel, or by whoever
knows what the process runs). Rules need only its peak, the levers that would shrink
it, and the largest batch that fits a capacity; this module computes those once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuwatch.budget import BudgetError, Estimate, ModelSpec, max_batch_size, what_if
from gpuwatch.core.hints import HintAction


@dataclass(frozen=True)
class LinkedBudget:
    label: str                               # "gpt2-medium · batch 8 · seq 1024 · amp-bf16"
    peak_bytes: int                          # the estimate's total (its peak on one GPU)
    levers: tuple[HintAction, ...] = ()      # unused levers, largest saving first
    batch: int | None = None                 # the micro-batch the estimate is for
    estimate: Estimate | None = field(default=None, compare=False, repr=False)

    def max_batch(self, capacity_bytes: float) -> int | None:
        """The largest micro-batch whose peak fits ``capacity_bytes`` (None: unknown)."""
        if self.estimate is None:
            return None
        try:
            return max_batch_size(self.estimate, int(capacity_bytes))
        except BudgetError:
            return None


def _label(est: Estimate) -> str:
    wl, s = est.workload, est.setup
    text = f"{est.model} · batch {wl.batch} · seq {wl.seq} · {s.precision}"
    if wl.mode != "train":
        text += " · inference"
    return text



def link_estimate(est: Estimate, spec: ModelSpec | None = None,
                  label: str | None = None) -> LinkedBudget:
    """A :class:`LinkedBudget` from an estimate; with ``spec`` its what-if levers too."""
    levers: tuple[HintAction, ...] = ()
    if spec is not None:
        try:
            levers = tuple(HintAction(w.change, int(w.saves_bytes)) for w in what_if(spec, est))
        except BudgetError:
            levers = ()
    return LinkedBudget(label or _label(est), int(est.total_bytes), levers,
                        est.workload.batch, est)
