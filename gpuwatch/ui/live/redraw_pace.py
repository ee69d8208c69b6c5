"""When a window in sight draws a new sample: at once when what a user watches for
changes, else at a calm pace.

Redrawing every card, plot and row each second is most of what a shown window costs,
and on a steady training run most of it redraws figures that moved by a few tenths of
a percent. A calm window (the default) draws a sample when :data:`CALM_S` seconds of
sampling have passed since the sample it drew last (as a desktop activity monitor
redraws every few seconds), and at once when, since then:

- a GPU's used memory moved by :data:`MOVE_FRACTION` of its capacity or more, or
  crossed the memory warning or critical threshold (or the temperature warning);
- a GPU went busy or idle: its utilization moved by :data:`BUSY_SWING` points or more
  (a stalled job, a job starting to compute);
- a process started or ended on a GPU, or a GPU changed state (lost, read failed, back);
- the sample's warnings changed.

So what is held back is a few seconds of figures that wobble: utilization, power,
clocks, rates, memory within a percent. Sampling, the advisor, the hints' badges on the
cards, notifications and recording still take every sample. A sample held back is drawn
:data:`CALM_S` seconds later at the latest, also when no sample follows it (sampling
paused). Time is the samples' own, so a replay or a sped-up demo, whose samples are
seconds apart, draws each one.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from gpuwatch.core.snapshot import GpuSample, Snapshot
from gpuwatch.ui.settings import Thresholds

CALM_S = 5.0            # seconds of sampling between two redraws while nothing moves
MOVE_FRACTION = 0.01    # of a GPU's capacity: a move of used memory drawn at once
BUSY_SWING = 50.0       # utilization points: a GPU going busy or idle, drawn at once
JITTER_S = 0.25         # samples due every second arrive a little early or late


def worth_drawing(new: Snapshot, drawn: Snapshot, thresholds: Thresholds,
                  calm_s: float = CALM_S) -> bool:
    """Whether ``new`` should be drawn now, ``drawn`` being the sample shown."""
    if new.timestamp_s - drawn.timestamp_s >= calm_s - JITTER_S:
        return True
    if new.warnings != drawn.warnings or len(new.gpus) != len(drawn.gpus):
        return True
    return any(_gpu_moved(g, was, thresholds)
               for g, was in zip(new.gpus, drawn.gpus, strict=True))


def _gpu_moved(g: GpuSample, was: GpuSample, thresholds: Thresholds) -> bool:
    if g.index != was.index or g.state is not was.state:
        return True
    used, before = g.memory.used_bytes, was.memory.used_bytes
    total = g.memory.total_bytes
    if (used is None) != (before is None) or total != was.memory.total_bytes:
        return True
    if used is not None and before is not None and total:
        if abs(used - before) >= MOVE_FRACTION * total:
            return True
        for percent in (thresholds.memory_warning_percent,
                        thresholds.memory_critical_percent):
            line = percent / 100 * total
            if (used >= line) != (before >= line):
                return True
    busy, busy_before = g.gpu_util_percent, was.gpu_util_percent
    if (busy is None) != (busy_before is None) or (
            busy is not None and busy_before is not None
            and abs(busy - busy_before) >= BUSY_SWING):
        return True
    hot, heat, heat_before = thresholds.temperature_warning_c, g.temperature_c, was.temperature_c
    if (heat is None) != (heat_before is None) or (
            heat is not None and heat_before is not None and (heat >= hot) != (heat_before >= hot)):
        return True
    if len(g.processes) != len(was.processes):
        return True
    return {p.pid for p in g.processes} != {p.pid for p in was.processes}


class RedrawPace(QObject):
    """The window asks :meth:`hold` for each new sample in sight, and says what it drew
    (:meth:`drawn`); :attr:`due` asks it to draw a sample it held back."""

    due = Signal()
    changed = Signal()        # calm turned on or off, or another pace

    def __init__(self, parent: QObject | None = None, calm_s: float = CALM_S):
        super().__init__(parent)
        self.calm = False         # off: every sample is drawn (the window turns it on)
        self.calm_s = calm_s
        self.held = 0             # samples held back so far (tests and benchmarks read it)
        self._drawn: Snapshot | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(round(calm_s * 1000))
        self._timer.timeout.connect(self.due)

    def set_calm(self, calm: bool, calm_s: float | None = None) -> None:
        """Calm or every sample drawn; ``calm_s``: another pace than :data:`CALM_S`."""
        self.calm = calm
        if calm_s is not None:
            self.calm_s = calm_s
            self._timer.setInterval(round(calm_s * 1000))
        if not calm and self._timer.isActive():
            self._timer.stop()
            self.due.emit()
        self.changed.emit()

    def hold(self, snap: Snapshot, thresholds: Thresholds) -> bool:
        """True: leave ``snap`` undrawn for now (it is drawn by :attr:`due` or with a
        later sample)."""
        drawn = self._drawn
        if not self.calm or drawn is None or worth_drawing(snap, drawn, thresholds,
                                                           self.calm_s):
            return False
        self.held += 1
        if not self._timer.isActive():
            self._timer.start()
        return True

    def drawn(self, snap: Snapshot) -> None:
        self._drawn = snap
        self._timer.stop()
