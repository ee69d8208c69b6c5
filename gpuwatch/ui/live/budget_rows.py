"""The selected linked process, measured against its budget: two labelled rows on one scale.

"measured" is what the process holds now (in its process colour); "predicted" is the
budget's peak by category (the budget palette). Each row ends in a tick with its figure,
and a dashed line carries the predicted end up through the measured row, so how far the
process is from its predicted peak reads at a glance; under them the same in neutral
words ("may grow ~17.9 GiB more").
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from gpuwatch.core.units import UnitSystem, format_bytes
from gpuwatch.ui.live.overlay import (
    CATEGORY_LABELS,
    MEASURED_LABEL,
    PREDICTED_LABEL,
    Overlay,
    budget_color,
)
from gpuwatch.ui.widgets import theme

ROW_PX = 12
GAP_PX = 6


class BudgetRows(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.overlay: Overlay | None = None
        self.capacity_bytes = 0
        self.units: UnitSystem = "iec"
        self.process_color = QColor(theme.colors().other)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self._height())
        self.setAccessibleName("Selected process: measured against predicted")
        self.hide()

    def _height(self) -> int:
        line = QFontMetricsF(self.font()).height()
        return int(2 * max(ROW_PX, line) + GAP_PX + line + 6)

    def sizeHint(self) -> QSize:
        return QSize(300, self._height())

    def set_overlay(self, overlay: Overlay | None, capacity_bytes: int | None,
                    units: UnitSystem, process_color: QColor | None = None) -> None:
        """Show ``overlay`` (None: hide) on a scale of the GPU's capacity."""
        state = (overlay, capacity_bytes or 0, units,
                 None if process_color is None else process_color.rgba())
        if state == (self.overlay, self.capacity_bytes, self.units,
                     self.process_color.rgba()):
            return
        self.overlay, self.capacity_bytes, self.units = overlay, capacity_bytes or 0, units
        if process_color is not None:
            self.process_color = QColor(process_color)
        self.setVisible(overlay is not None and overlay.measured_bytes is not None)
        self.setAccessibleDescription(self.words())
        self.setToolTip(self.words())
        self.update()

    def words(self) -> str:
        o = self.overlay
        if o is None or o.measured_bytes is None:
            return ""
        u = self.units
        return (f"pid {o.pid}, linked to {o.prediction.label}: "
                f"{MEASURED_LABEL} {format_bytes(o.measured_bytes, u)}, "
                f"{PREDICTED_LABEL} peak {format_bytes(o.prediction.total_bytes, u)} — "
                f"{o.headroom_words(u)}")

    def rows(self) -> tuple[QRectF, QRectF, float]:
        """(measured row, predicted row, bar left), in the widget's coordinates."""
        metrics = QFontMetricsF(self.font())
        label_w = max(metrics.horizontalAdvance(MEASURED_LABEL),
                      metrics.horizontalAdvance(PREDICTED_LABEL)) + 8
        figure_w = metrics.horizontalAdvance("888.8 GiB") + 8
        line = max(ROW_PX, metrics.height())
        width = max(10.0, self.width() - label_w - figure_w)
        top = (line - ROW_PX) / 2
        return (QRectF(label_w, top, width, ROW_PX),
                QRectF(label_w, top + line + GAP_PX, width, ROW_PX), label_w)

    def paintEvent(self, event: QPaintEvent) -> None:
        o = self.overlay
        if o is None or o.measured_bytes is None:
            return
        c = theme.colors()
        measured_row, predicted_row, left = self.rows()
        total = o.prediction.total_bytes
        scale = max(self.capacity_bytes, o.measured_bytes, total, 1)
        per_byte = measured_row.width() / scale
        metrics = QFontMetricsF(self.font())
        line = max(ROW_PX, metrics.height())
        p = QPainter(self)
        text, muted = QColor(c.text), QColor(c.muted)
        for row, name in ((measured_row, MEASURED_LABEL), (predicted_row, PREDICTED_LABEL)):
            p.fillRect(row, QColor(c.free))
            p.setPen(muted)
            p.drawText(QRectF(0, row.center().y() - line / 2, left - 8, line),
                       int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter), name)
        measured_end = measured_row.left() + o.measured_bytes * per_byte
        p.fillRect(QRectF(measured_row.left(), measured_row.top(),
                          measured_end - measured_row.left(), ROW_PX), self.process_color)
        x = predicted_row.left()
        for key, size in o.prediction.categories:
            w = size * per_byte
            p.fillRect(QRectF(x, predicted_row.top(), w, ROW_PX), QColor(budget_color(key)))
            x += w
        predicted_end = x
        # the ends: a tick at each, and the predicted end carried up through both rows
        p.setPen(QPen(text, 2))
        for end, row in ((measured_end, measured_row), (predicted_end, predicted_row)):
            p.drawLine(QPointF(end, row.top() - 2), QPointF(end, row.bottom() + 2))
        p.setPen(QPen(text, 1, Qt.PenStyle.DashLine))
        p.drawLine(QPointF(predicted_end, measured_row.top() - 2),
                   QPointF(predicted_end, predicted_row.top()))
        p.setPen(text)
        for end, row, figure in ((measured_end, measured_row, o.measured_bytes),
                                 (predicted_end, predicted_row, total)):
            p.drawText(QRectF(end + 6, row.center().y() - line / 2, 200, line),
                       int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                       format_bytes(figure, self.units))
        p.setPen(muted)
        p.drawText(QRectF(left, predicted_row.bottom() + 4, self.width() - left, line),
                   int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                   metrics.elidedText(f"pid {o.pid}: {o.headroom_words(self.units)} · "
                                      f"linked to {o.prediction.label}",
                                      Qt.TextElideMode.ElideRight, self.width() - left))
        p.end()

    def category_tooltips(self) -> list[str]:
        """What each predicted segment is (for tests and the accessible description)."""
        o = self.overlay
        if o is None:
            return []
        return [f"{PREDICTED_LABEL.capitalize()} {CATEGORY_LABELS.get(k, k).lower()}: "
                f"{format_bytes(v, self.units)}" for k, v in o.prediction.categories]
