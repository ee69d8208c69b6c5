"""One GPU at a glance: how close to out-of-memory, who uses it, and how it got there.

The largest figures are % used and free (never cut: they step their font down to fit).
Under them the memory bar by process, with ticks at the warning and critical
thresholds, then used / total beside a sparkline of the last minutes, the largest
processes, and busy, bandwidth, PCIe, NVLink (where the GPU has it), heat and power.

The outline and badge are the worst open advisor hint for this GPU (``set_level``), in
words and shape as well as colour, so the card and the Advisor tab never disagree; the
% used figure takes the same colour. A lost GPU is the loudest card: a critical
outline on a shaded card, "lost 55 s ago", its last known memory faded; it comes back
to life by itself when the GPU does. A click (or Enter/Space with the keyboard focus)
emits :attr:`activated`. The texts and figures are parts painted by the card itself
(:mod:`~gpuwatch.ui.live.card_parts`); every part repaints only when what it shows
changed.

The card lays out and feeds its parts; what they say and how they look is worked out
beside it: the figures' grid in their long or short forms (:mod:`.card_metrics`), the
probe legend and budget lines (:mod:`.card_band`), the badge, the colour of % used and
the threshold ticks (:mod:`.card_look`), and the words (:mod:`.card_texts`,
:mod:`.card_state`).
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QColor, QFont, QFontMetricsF
from PySide6.QtWidgets import QHBoxLayout, QVBoxLayout, QWidget

from gpuwatch.core.hints import Severity
from gpuwatch.core.history import Ring
from gpuwatch.core.probe_format import ProbeReport
from gpuwatch.core.snapshot import GpuSample, GpuState, ProcessSample
from gpuwatch.core.units import UnitSystem, format_bytes, format_percent
from gpuwatch.ui.live import card_metrics, card_texts
from gpuwatch.ui.live.card_badge import SeverityBadge
from gpuwatch.ui.live.card_band import CardBand
from gpuwatch.ui.live.card_figure import BigFigure
from gpuwatch.ui.live.card_frame import CardFrame
from gpuwatch.ui.live.card_look import badge_state, percent_color, threshold_ticks
from gpuwatch.ui.live.card_metrics import CardMetrics
from gpuwatch.ui.live.card_parts import TextPart
from gpuwatch.ui.live.card_segments import BarSegments
from gpuwatch.ui.live.card_sparkline import Sparkline
from gpuwatch.ui.live.card_state import LEVEL_WORDS, STATE_WORDS, describe, lost_phrase
from gpuwatch.ui.live.memory_bar import MemoryBar, Segment
from gpuwatch.ui.live.overlay import Overlay
from gpuwatch.ui.live.probe_view import largest
from gpuwatch.ui.live.text_lines import Run
from gpuwatch.ui.settings import Thresholds
from gpuwatch.ui.widgets import theme


def assistive_tool_listens() -> bool:
    """Whether a screen reader or another assistive tool is connected."""
    return QAccessible.isActive()


class GpuCard(CardFrame):
    COMPACT_BELOW = card_metrics.COMPACT_BELOW   # px wide: the metrics in their short forms

    def __init__(self, index: int, parent: QWidget | None = None):
        super().__init__(index, parent)
        self._name = f"GPU {index}"
        self.segments = BarSegments(index)
        self.state = GpuState.OK
        self._error = ""
        self.level: Severity | None = None    # the worst open warning/critical hint
        self._hint_lines: tuple[str, ...] = ()
        self._reason: str | None = None       # the badge's words: the worst hint's reason
        self._used_percent: float | None = None
        self._thresholds: Thresholds | None = None
        self.lost_since: float | None = None  # snapshot time the GPU was first seen lost
        self.height_changed = False   # the budget line came or went: the view may re-fit
        self._total_bytes: int | None = None
        self._last_known: tuple[list[Run], list[Segment], float] | None = None
        self.probes: dict[int, ProbeReport] = {}   # pid -> this sample's report, on this GPU
        self._splits: dict[int, list[Segment]] = {}   # pid -> its split's segments
        self._described: tuple | None = None
        self._ticks_key: tuple | None = None
        self._metrics_of: tuple[GpuSample, Thresholds] | None = None

        self.title = TextPart(self, fit_text=True)
        self.badge = SeverityBadge()
        self.badge.fitted.connect(self._fit_badge)
        self.vitals = TextPart(self, fit_text=True, align_right=True)
        self.percent = BigFigure(self)
        self.free = BigFigure(self, align_right=True)
        self.bar = MemoryBar()
        self.used = TextPart(self, fit_text=True)
        self.spark = Sparkline(index)
        self.legend = TextPart(self, fit_text=True)
        self.metrics = CardMetrics(self)
        self.busy, self.bandwidth, self.util, self.pcie, self.nvlink = self.metrics.parts
        self.band = CardBand(self)          # a probed or linked process's lines
        self.probe, self.budget = self.band.probe, self.band.budget
        self.parts = [self.title, self.vitals, self.percent, self.free, self.used, self.probe,
                      self.legend, *self.metrics.parts, self.budget]
        self._muted = (*self.metrics.parts, self.legend)
        self._plain = (self.title, self.vitals, self.used, self.budget)
        self._colors_key: tuple | None = None

        bold = QFont(self.font())
        bold.setBold(True)        # "GPU 3" stays whole beside a badge; the name and vitals give way
        self.title.setMinimumWidth(math.ceil(
            QFontMetricsF(bold).horizontalAdvance(f"GPU {index}")) + 2)
        top = QHBoxLayout()
        top.setSpacing(6)
        top.addItem(self.title)
        top.setStretch(0, 1)
        top.addWidget(self.badge)
        top.addItem(self.vitals)
        figures = QHBoxLayout()
        figures.setSpacing(8)
        figures.addItem(self.percent)
        figures.addStretch(1)
        figures.addItem(self.free)
        usage = QHBoxLayout()
        usage.setSpacing(8)
        usage.addItem(self.used)
        usage.addWidget(self.spark, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addLayout(figures)
        layout.addWidget(self.bar)
        layout.addLayout(usage)
        layout.addItem(self.probe)
        layout.addItem(self.legend)
        layout.addLayout(self.metrics.grid)
        layout.addItem(self.budget)
        layout.addStretch(1)
        self.setAccessibleName(self._name)

    # ------------------------------------------------------------------------------
    def update_sample(self, g: GpuSample, units: UnitSystem, thresholds: Thresholds,
                      overlay: Overlay | None = None, now_s: float | None = None,
                      ring: Ring | None = None) -> None:
        """Show ``g`` (sampled at ``now_s``); ``ring`` is its history, for the sparkline."""
        if g.name:
            self._name = g.name.removeprefix("NVIDIA ")
        self.title.set_runs(card_texts.title_runs(g.index, self._name),
                            card_texts.title_tip(g.index, self._name, g.uuid))
        self._thresholds = thresholds
        self._set_state(g, now_s)
        self._apply_colors()
        self._show_thresholds(thresholds)
        if g.state is not GpuState.OK and g.memory.total_bytes is None:
            self._show_lost(g, now_s)
        else:
            self._show_memory(g, units, overlay)
            self._show_metrics(g, thresholds)
        if now_s is not None:
            self.spark.update_from(ring, now_s)
        self._describe()

    def _show_thresholds(self, thresholds: Thresholds) -> None:
        """Ticks on the bar and guides on the sparkline at the memory thresholds."""
        c = theme.colors()
        key = (thresholds.memory_warning_percent, thresholds.memory_critical_percent, c)
        if key == self._ticks_key:
            return
        self._ticks_key = key
        ticks, guides = threshold_ticks(c, thresholds)
        self.bar.set_ticks(ticks)
        self.spark.set_guides(guides)

    def set_level(self, level: Severity | None, lines: tuple[str, ...] = (),
                  reason: str | None = None) -> None:
        """The worst open warning or critical hint for this GPU (None: none), the hints'
        sentences for the badge's tooltip, and the badge's words (``reason``: "OOM in
        ~2 min"; None: the severity's word). Nothing changed, nothing repaints."""
        if level is not None and level < Severity.WARNING:
            level = None
        if (level, lines, reason) == (self.level, self._hint_lines, self._reason):
            return
        self.level, self._hint_lines, self._reason = level, lines, reason
        self._update_badge()
        self._describe()
        self._set_outline()

    def _set_outline(self) -> None:
        outline = Severity.CRITICAL if self.state is not GpuState.OK else self.level
        if outline != self.outline:
            self.outline = outline
            self.update()

    def set_selected(self, selected: bool) -> None:
        """Mark this card as the GPU the window is focused on."""
        if selected != self.selected:
            self.selected = selected
            self._described = None
            self._describe()
            self.update()

    # state --------------------------------------------------------------------------
    def _set_state(self, g: GpuSample, now_s: float | None) -> None:
        greyed = g.state is not GpuState.OK
        if greyed and self.lost_since is None:
            self.lost_since = now_s
        elif not greyed:
            self.lost_since = None
        if greyed != (self.state is not GpuState.OK):
            self.setProperty("lost", greyed)
            self.style().unpolish(self)
            self.style().polish(self)
            self.spark.set_faded(greyed)
            self.free.setVisible(not greyed)
        if (g.state, g.error or "") != (self.state, self._error):
            self.state, self._error = g.state, g.error or ""
            self._update_badge()
            self._set_outline()

    def _update_badge(self) -> None:
        shown = badge_state(theme.colors(), self.state, self._error, self.level,
                            self._reason, self._hint_lines)
        if shown is None:
            self.badge.set_state(None)
        else:
            self.badge.set_state(*shown)

    def restyle(self) -> None:
        """Take the current theme's colours (at once, not at the next sample)."""
        self._apply_colors()
        self.update()

    def _apply_colors(self) -> None:
        """Text and background colours of the painted parts: the theme's, muted on the
        shaded card of a lost GPU (as the stylesheet does for the card itself)."""
        c = theme.colors()
        lost = self.state is not GpuState.OK
        key = (c, lost)
        if key == self._colors_key:
            return
        self._colors_key = key
        background = QColor(c.lost_card if lost else c.card)
        muted, text = QColor(c.muted), QColor(c.muted if lost else c.text)
        for label in self._muted:
            label.set_colors(muted, background)
        for label in self._plain:
            label.set_colors(text, background)
        for figure in (self.percent, self.free):
            figure.set_background(background)
        self.bar.set_background(background)
        self._update_badge()
        self._color_percent()

    def _color_percent(self) -> None:
        c = theme.colors()
        self.percent.set_colors(percent_color(c, self.state is not GpuState.OK,
                                              self._used_percent, self._thresholds), c.muted)

    def _fill_color(self, c: theme.Colors) -> str:
        return percent_color(c, False, self._used_percent, self._thresholds)

    # contents -----------------------------------------------------------------------
    def _show_lost(self, g: GpuSample, now_s: float | None) -> None:
        """The last known memory, faded, under "lost 55 s ago"."""
        since = None if now_s is None or self.lost_since is None else now_s - self.lost_since
        phrase = lost_phrase(g.state, since)
        c = theme.colors()
        self.percent.set_figure(phrase, "", c.critical, c.muted)
        # the badge says LOST and the big figure "lost 55 s ago": these lines say what was
        # last known and the driver's words, whole in the tooltip where they are cut
        if self._last_known is not None:
            runs, segments, total = self._last_known
            self.used.set_runs([Run("Last known "), *runs])
            self.bar.set_data(total, segments, greyed=True)
        else:
            self.used.set("No data before it was lost" if g.state is GpuState.LOST
                          else "No data before the reads failed")
            self.bar.set_data(1.0, [], greyed=True)
        self.bar.set_overlay(0, None, "iec")
        self.legend.set(*card_texts.lost_reason(g.error))
        self.metrics.clear()
        self.vitals.set("")
        if self.band.hide():
            self.height_changed = True

    def _show_memory(self, g: GpuSample, units: UnitSystem, overlay: Overlay | None) -> None:
        c = theme.colors()
        m = g.memory
        total = float(m.total_bytes or 0)
        self._total_bytes = m.total_bytes
        procs = self.segments.in_order(g.processes)
        overlay_pid = None if overlay is None else overlay.pid
        segments, listed, overlay_start = self.segments.build(procs, self.probes,
                                                              overlay_pid, units)
        self._splits = self.segments.splits
        other = max(0, (m.used_bytes or 0) - listed)
        if other:
            segments.append(Segment(other, QColor(c.other),
                                    "Other (driver, context and unlisted processes)",
                                    units=units))
        if m.reserved_bytes:
            segments.append(Segment(m.reserved_bytes, QColor(c.reserved),
                                    "Reserved by the driver", Qt.BrushStyle.Dense4Pattern,
                                    units=units))
        self.bar.set_data(total, segments)
        self.bar.set_overlay(overlay_start, overlay, units)

        frac = m.used_fraction
        self._used_percent = None if frac is None else 100 * frac
        self.percent.set_figure(format_percent(self._used_percent), "used",
                                self._fill_color(c), c.muted)
        free = format_bytes(m.free_bytes, units)
        self.free.set_figure(free, "free", c.text, c.muted)
        used = card_texts.used_runs(g, units)
        self.used.set_runs(used)
        self._last_known = ([*used, Run(f" · {free} free")], segments, total)
        self.legend.set_runs(card_texts.legend_runs(g, procs, units))
        shown = largest(procs, self.probes, overlay.pid if overlay else None) \
            if self._splits else None
        self._show_probe(shown, overlay, units)
        self._show_budget(overlay, units)

    def _show_probe(self, p: ProcessSample | None, overlay: Overlay | None,
                    units: UnitSystem) -> None:
        """The legend of one probed process's split, its tensors and allocator figures."""
        split = None if p is None else self._splits.get(p.pid)
        report = None if p is None else self.probes.get(p.pid)
        if self.band.show_probe(p, split, report, overlay, units, len(self._splits)):
            self.height_changed = True

    def _show_budget(self, overlay: Overlay | None, units: UnitSystem) -> None:
        split = None if overlay is None else self._splits.get(overlay.pid)
        if self.band.show_budget(overlay, self._total_bytes,
                                 None if split is None else split[0].bytes, units):
            self.height_changed = True

    def _fit_badge(self) -> None:
        """The badge's reason whole where the card has room beside "GPU 3" and a
        temperature; the power and the model name give way first."""
        margins = self.layout().contentsMargins()
        vitals = QFontMetricsF(self.font()).horizontalAdvance("88 °C")
        self.badge.fit(self.width() - margins.left() - margins.right()
                       - self.title.minimumWidth() - vitals - 12)

    def resizeEvent(self, event: object) -> None:
        super().resizeEvent(event)   # type: ignore[arg-type]
        self._fit_badge()
        if self._metrics_of is not None and self.state is GpuState.OK:
            self._show_metrics(*self._metrics_of)
        else:
            self.metrics.set_compact(self.width() < self.COMPACT_BELOW,
                                     self.state is GpuState.OK)

    def _show_metrics(self, g: GpuSample, thresholds: Thresholds) -> None:
        """The figures, in their long forms where those fit the card whole, else in the
        short ones (the tooltips keep the meaning)."""
        self._metrics_of = (g, thresholds)
        margins = self.layout().contentsMargins()
        if self.metrics.show(g, self.width(),
                             self.width() - margins.left() - margins.right(), self.font()):
            self.height_changed = True
        self.vitals.set_runs(card_texts.vitals_runs(g, thresholds, self.metrics.compact))

    # accessibility ------------------------------------------------------------------
    def _describe(self) -> None:
        """Name and description for screen readers (the figures are painted): rebuilt
        only when a shown text changed, and the description only while an assistive
        tool listens (the figures change every sample; one that starts listening gets
        them on the next)."""
        name = f"GPU {self.index} {self._name}" + (", focused" if self.selected else "")
        if name != self.accessibleName():
            self.setAccessibleName(name)
        if not assistive_tool_listens():
            self._described = None
            return
        state = None
        if self.state is not GpuState.OK:
            state = f"{STATE_WORDS[self.state]}, {self.percent.text()}"
        elif self.level is not None:
            state = LEVEL_WORDS[self.level].capitalize() + (
                f", {self._reason}" if self._reason else "")
        figures = () if self.state is not GpuState.OK else (
            f"{self.percent.text()}, {self.free.text()}",)
        budget = () if self.budget.isHidden() else (self.budget.toolTip(),)
        key = (self._name, state, self._hint_lines, figures, self.used.text(),
               self.legend.text(), self.vitals.text(), budget, self.selected)
        if key == self._described:
            return
        self._described = key
        self.setAccessibleDescription(describe(
            name, (*figures, self.used.text(), self.legend.text(), self.vitals.text(),
                   *budget), state, self._hint_lines))
