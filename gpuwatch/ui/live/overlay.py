"""What the window draws for a process linked to a memory budget (no budget imports here).

The budget adapter (:mod:`gpuwatch.ui.live.budget_adapter`) turns an estimate into a
:class:`Prediction`, and so does :func:`gpuwatch.ui.live.probe_view.probe_prediction` for a
process that runs the probe; an :class:`Overlay` sets it against what the process
really holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.core.units import UnitSystem, format_bytes

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

# Budget categories have a muted palette of their own: a prediction is not a process, so
# no category shares a process colour (CIEDE2000 >= 13 from each), none looks like
# danger (>= 20 from the warning, critical and unexplained colours), and they stay
# apart from each other (>= 11, >= 8 for a deuteranope; the row also has labels and
# tooltips). Mid-tones, readable on the light and on the dark card.
BUDGET_COLORS = {
    "parameters": "#7886a8",     # slate
    "gradients": "#7d9676",      # sage
    "optimizer": "#cdc6b2",      # stone
    "activations": "#b79fbb",    # mauve
    "temporaries": "#b79fbb",    # the same memory, named for inference
    "kv_cache": "#587f85",       # grey teal
    "overhead": "#6e625c",       # taupe
    "other": "#c4c7cc",          # light grey
}
PREDICTED_LABEL = "predicted"      # what the predicted row is called where it is drawn
MEASURED_LABEL = "measured"


def budget_color(key: str) -> str:
    """The colour of budget category ``key`` (probe categories fall back to "other")."""
    return BUDGET_COLORS.get(key, BUDGET_COLORS["other"])


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

    def headroom_words(self, units: UnitSystem) -> str:
        """Measured against predicted in neutral words: a process below its predicted
        peak is neither safe nor in danger, it "may grow ~17.9 GiB more"."""
        if self.measured_bytes is None:
            return "measured memory unknown"
        if self.headroom_bytes:
            return f"may grow ~{format_bytes(self.headroom_bytes, units)} more"
        if self.unexplained_bytes:
            return (f"holds {format_bytes(self.unexplained_bytes, units)} more than "
                    "predicted")
        return "at its predicted peak"
