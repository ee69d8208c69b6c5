"""What the window draws for a process linked to a memory budget (no budget imports here).

The budget adapter (:mod:`gpuwatch.ui.live.budget_adapter`) turns an estimate into a
:class:`Prediction`, and so does :func:`gpuwatch.ui.live.probe_view.probe_prediction` for a
process that runs the probe; an :class:`Overlay` sets it against what the process
really holds.
"""

from __future__ import annotations

from dataclasses import dataclass

CATEGORY_LABELS = {
    "parameters": "Parameters",
    "gradients": "Gradients",
    "optimizer": "Optimizer states",
    "activations": "Activations",
    "temporaries": "Activations and temporaries",
    "kv_cache": "KV cache",
    "overhead": "Framework overhead",
    "other": "Other",
}


@dataclass(frozen=True)
class Prediction:
    """A budget's predicted peak for one GPU, by category (bytes), and what it is for."""

    label: str                                  # "gpt2-medium · batch 8 · seq 1024 · amp-bf16"
    categories: tuple[tuple[str, int], ...]     # (category key, bytes), in stacking order

    @property
    def total_bytes(self) -> int:
        return sum(b for _, b in self.categories)


@dataclass(frozen=True)
class Overlay:
    """A linked (or probed) process: its prediction beside its measured memory."""

    pid: int
    gpu_index: int
    prediction: Prediction
    measured_bytes: int | None
    source: str = "budget"     # "budget": linked by the user; "probe": the probe's facts

    @property
    def from_probe(self) -> bool:
        return self.source == "probe"

    @property
    def unexplained_bytes(self) -> int:
        """Measured minus predicted, when positive: context, cache, fragmentation."""
        if self.measured_bytes is None:
            return 0
        return max(0, self.measured_bytes - self.prediction.total_bytes)

    @property
    def headroom_bytes(self) -> int:
        """Predicted minus measured, when positive (the run has not reached its peak)."""
        if self.measured_bytes is None:
            return 0
        return max(0, self.prediction.total_bytes - self.measured_bytes)
