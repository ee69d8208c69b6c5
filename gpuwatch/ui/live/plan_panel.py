"""The Plan tab: which GPUs run a preset or model, how fast, and at what cloud cost.

The plan is computed by :mod:`gpuwatch.plan` (tens of milliseconds to a few hundred for
a large model), so it runs on a worker thread, first when the tab is shown and again
shortly after each change; results come back through a queued signal. A request that
was overtaken by a newer one is dropped.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHeaderView,
    QLabel,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gpuwatch.core.snapshot import Snapshot
from gpuwatch.core.units import format_bytes
from gpuwatch.ui.live.budget_adapter import BudgetRequest, catalog_gpu
from gpuwatch.ui.live.plan_costs import amount, cost_cells, cost_summary

CUSTOM = "(model below)"
COLUMNS = ("GPU", "GPUs", "Layout", "Fits", "Max micro-batch", "Micro × accum", "Peak / GPU",
           "Step", "Bound", "Throughput / GPU", "Cost / h", "Cost / epoch", "Cost / 1M tokens",
           "Instance")
SUMMARY_LINES = 3      # the advice under the table: the rest is in its tooltip
AUTO = 0               # the Efficiency field's "auto": the preset's or the model kind's figure


class _Results(QObject):
    done = Signal(int, object, str)  # request number, Plan or None, error text


def compute_plan(preset: str, model: str, precision: str, batch: int, sort: str,
                 efficiency_percent: int) -> Any:
    """The plan for the panel's inputs (runs on the worker thread)."""
    from dataclasses import replace

    from gpuwatch.budget.catalog import lookup_model
    from gpuwatch.budget.workload import Setup, Workload
    from gpuwatch.plan.efficiency import default_efficiency
    from gpuwatch.plan.planner import PlanInput, make_plan
    from gpuwatch.plan.presets import lookup_preset
    from gpuwatch.plan.prices import read_prices
    from gpuwatch.plan.roofline import Efficiency

    efficiency = Efficiency(compute=efficiency_percent / 100, source="the Efficiency field")
    if preset != CUSTOM:
        p = lookup_preset(preset)
        if efficiency_percent == AUTO or round(p.efficiency * 100) == efficiency_percent:
            efficiency = Efficiency(compute=p.efficiency, source=p.efficiency_source)
        wl = replace(p.workload, batch=batch)
        setup = p.setup if precision == "recommended" else replace(p.fp32(), lora_rank=
                                                                    p.setup.lora_rank)
        request = PlanInput(lookup_model(p.model, wl.image), wl, setup, efficiency,
                            p.dataset_samples, preset=p)
    else:
        spec = lookup_model(model)
        if efficiency_percent == AUTO:      # what `gpuwatch plan` assumes for this kind
            efficiency = default_efficiency(spec)
        prec = "amp-bf16" if precision == "recommended" else "fp32"
        request = PlanInput(spec, Workload("train", batch=batch), Setup(precision=prec),
                            efficiency)
    return make_plan(request, read_prices())


def plan_context(snap: Snapshot | None,
                 linked: Callable[[tuple[str, ...]], BudgetRequest | None]
                 ) -> tuple[tuple[str, ...], str | None]:
    """This machine's GPUs (catalog names) and the model of the workload running here:
    the largest process's linked budget's, else its ``--model`` argument."""
    if snap is None:
        return (), None
    gpus = tuple(name for g in snap.gpus if (name := catalog_gpu(
        g.name, g.memory.total_bytes)) is not None)
    model = None
    for p in sorted(snap.processes, key=lambda p: -(p.used_bytes or 0)):
        request = linked(p.cmdline)
        if request is not None:
            return gpus, request.model
        if model is None and "--model" in p.cmdline[:-1]:
            model = p.cmdline[p.cmdline.index("--model") + 1]
    return gpus, model


class PlanPanel(QWidget):
    """Inputs on top, the configurations in a sortable table, the advice below."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        from gpuwatch.budget.catalog import model_names
        from gpuwatch.plan.presets import PRESETS

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpuwatch-plan")
        self._results = _Results()
        self._results.done.connect(self._show, Qt.ConnectionType.QueuedConnection)
        self._asked = 0
        self._started = False
        self.plan: Any = None
        self.error = ""
        # asked once, on first show: (this machine's catalog GPUs, the workload's model)
        self.context: Callable[[], tuple[tuple[str, ...], str | None]] | None = None
        self.machine: tuple[str, ...] = ()

        self.preset = QComboBox()
        for name, p in PRESETS.items():
            self.preset.addItem(p.title, name)
        self.preset.addItem("Custom: the model below", CUSTOM)
        self.preset.setAccessibleName("Workload preset")
        self.model = QComboBox()
        self.model.addItems(list(model_names()))
        self.model.setCurrentText("llama-3.1-8b")
        self.model.setAccessibleName("Model")
        self.precision = QComboBox()
        self.precision.addItem("Recommended regime", "recommended")
        self.precision.addItem("fp32", "fp32")
        self.precision.setAccessibleName("Precision")
        self.batch = QSpinBox()
        self.batch.setRange(1, 65536)
        self.batch.setAccessibleName("Batch per step")
        self.batch.setSuffix(" samples")
        self.sort = QComboBox()
        self.sort.addItem("step time", "time")
        self.sort.addItem("cost per step", "cost")
        self.sort.addItem("peak memory", "memory")
        self.sort.setAccessibleName("Sort by")
        self.efficiency = QSpinBox()
        self.efficiency.setRange(AUTO, 100)
        self.efficiency.setSpecialValueText("auto (by model kind)")
        self.efficiency.setValue(AUTO)
        self.efficiency.setSuffix(" % of peak")
        self.efficiency.setAccessibleName("Compute efficiency")
        self.efficiency.setToolTip("The fraction of the data-sheet peak real kernels reach: "
                                   "40–60 % for large transformer training, nearer 20 % "
                                   "for CNNs (docs/plan.md); auto: the preset's measured "
                                   "figure, else the default for the model's kind, as "
                                   "`gpuwatch plan` assumes")

        for combo in (self.preset, self.model, self.precision, self.sort):
            # long names must not widen the window: the combo shrinks, its list does not
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.
                                      AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(8)
        form = QGridLayout()
        for row, pairs in ((0, (("&Workload", self.preset), ("&Sort by", self.sort))),
                           (1, (("&Model", self.model), ("&Precision", self.precision))),
                           (2, (("Global &batch", self.batch),
                                ("&Efficiency", self.efficiency)))):
            for i, (text, widget) in enumerate(pairs):
                label = QLabel(text)
                label.setBuddy(widget)
                form.addWidget(label, row, 2 * i)
                form.addWidget(widget, row, 2 * i + 1)
        form.setColumnStretch(1, 1)
        form.setColumnStretch(3, 1)

        self.status = QLabel("The plan is computed when this tab is first shown.")
        self.status.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.
                                                           ResizeToContents)
        self.table.setAccessibleName("Configurations")
        self.advice = QTextBrowser()
        self.advice.setOpenLinks(False)
        self.advice.setAccessibleName("Plan advice")
        lines = self.fontMetrics().lineSpacing()
        self.advice.setMinimumHeight(3 * lines)
        self.table.setMinimumHeight(5 * lines)
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(self.table)
        self.split.addWidget(self.advice)
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 1)
        self.split.setChildrenCollapsible(False)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.status)
        layout.addWidget(self.split, 1)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(150)
        self._timer.timeout.connect(self.refresh)
        for combo in (self.preset, self.model, self.precision, self.sort):
            combo.currentIndexChanged.connect(self._changed)
        for spin in (self.batch, self.efficiency):
            spin.valueChanged.connect(self._changed)
        self.preset.currentIndexChanged.connect(self._preset_changed)
        self._preset_changed()

    def _preset_changed(self) -> None:
        from gpuwatch.plan.presets import lookup_preset

        name = self.preset.currentData()
        self.model.setEnabled(name == CUSTOM)
        if name != CUSTOM:
            p = lookup_preset(name)
            for spin, value in ((self.batch, p.workload.batch * p.workload.grad_accum),
                                (self.efficiency, AUTO)):
                spin.blockSignals(True)
                spin.setValue(value)
                spin.blockSignals(False)
            self.efficiency.setToolTip(f"Efficiency: {p.efficiency_source}")
            self.model.setCurrentText(p.model)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._started:
            self._started = True
            if self.context is not None:
                self.set_machine(*self.context())
            self.refresh()

    def set_machine(self, gpus: tuple[str, ...], model: str | None) -> None:
        """Open on this machine: its GPUs' rows first and marked, and the workload
        running here (a linked budget's or the largest process's catalog model) in place
        of the first preset."""
        self.machine = tuple(dict.fromkeys(gpus))
        if model and self.model.findText(model) >= 0:
            for combo, value in ((self.preset, None), (self.model, model)):
                combo.blockSignals(True)
                if value is None:
                    combo.setCurrentIndex(combo.findData(CUSTOM))
                else:
                    combo.setCurrentText(value)
                combo.blockSignals(False)
            self.model.setEnabled(True)

    def _changed(self) -> None:
        if self._started:
            self._timer.start()

    def refresh(self) -> None:
        """Compute the plan for the current inputs on the worker thread."""
        self._asked += 1
        number = self._asked
        args = (self.preset.currentData(), self.model.currentText(),
                self.precision.currentData(), self.batch.value(), self.sort.currentData(),
                self.efficiency.value())
        self.status.setText("Computing the plan…")

        def work() -> None:
            try:
                plan = compute_plan(*args)
            except Exception as exc:  # bad input from the form: shown, not raised
                self._results.done.emit(number, None, str(exc))
                return
            self._results.done.emit(number, plan, "")

        self._pool.submit(work)

    def _show(self, number: int, plan: Any, error: str) -> None:
        if number != self._asked:
            return  # overtaken by a newer request
        self.plan, self.error = plan, error
        if plan is None:
            self.status.setText(f"No plan: {error}")
            self.table.setRowCount(0)
            self.advice.clear()
            return
        self._fill(plan)

    def _fill(self, plan: Any) -> None:
        from gpuwatch.plan.document import (
            IGNORES,
            counts_tokens,
            merit,
            preset_lines,
            rate,
            seconds,
        )

        sort = self.sort.currentData()
        cloud = {id(f.config): f for f in plan.cloud}
        book = plan.prices
        currency = book.currency if book else ""
        transformer = counts_tokens(plan.request.spec)
        here = set(self.machine)
        configs = sorted(plan.sorted_configs(sort), key=lambda c: c.hardware.name not in here)
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(configs))
        for r, c in enumerate(configs):
            fit = cloud.get(id(c))
            per = c.tokens_per_s_per_gpu if transformer else c.samples_per_s_per_gpu
            unit = "tokens/s" if transformer else "images/s"
            cells = (
                c.hardware.name, str(c.gpus),
                c.layout.describe() if c.layout else ("batch too small" if c.note else "—"),
                "yes" if c.fits else ("—" if c.note else "no"), str(c.max_micro_batch),
                f"{c.micro_batch} × {c.grad_accum}" if c.fits else "—",
                "—" if c.note else format_bytes(c.peak_bytes),
                seconds(c.step.total_s) if c.step else "—",
                c.step.bound if c.step else "—",
                f"{rate(per)} {unit}" if per is not None else "—",
                *(cost_cells(fit, currency, transformer) if fit else ("—", "—", "—")),
                fit.instance.name if fit else "—",
            )
            mine = c.hardware.name in here
            if mine:
                cells = (f"{cells[0]} · this machine", *cells[1:])
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if mine:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                if c.note:
                    item.setToolTip(c.note)
                elif col == 0:
                    item.setToolTip(f"{c.hardware.name}: "
                                    f"{merit(c.hardware, plan.request.setup.precision)}. "
                                    f"Source: {c.hardware.sheet.source}")
                if not c.fits:
                    item.setForeground(Qt.GlobalColor.gray)
                self.table.setItem(r, col, item)
        fitting = sum(1 for c in plan.configs if c.fits)
        self.status.setText(
            f"{plan.request.spec.name}: {fitting} of {len(plan.configs)} configurations fit; "
            f"sorted by {self.sort.currentText()}. Efficiency "
            f"{plan.request.efficiency.compute:.0%} of peak compute.")
        lines: list[str] = []
        if plan.cheapest is not None:
            f = plan.cheapest
            lines.append(f"<b>Cheapest:</b> {f.instance.name} ({f.instance.provider}), "
                         f"{f.config.gpus}× {f.config.hardware.name}: "
                         f"{cost_summary(f, currency, transformer)}"
                         + (f" (spot {amount(f.spot_cost_per_epoch, currency)} per epoch)"
                            if f.spot_cost_per_epoch is not None else "") + ".")
        if plan.spot is not None:
            lines.append(f"<b>Spot:</b> {plan.spot.caveat}; checkpoint every "
                         f"{seconds(plan.spot.interval_s)}.")
        preset = [html.escape(line.strip().removeprefix("Preset "))
                  for line in preset_lines(plan)]
        if preset:
            lines.append("<b>Preset</b> " + " · ".join(preset))
        if plan.levers:
            levers = ", ".join(f"{lv.change} (saves {format_bytes(lv.saves_bytes)}, "
                               f"time {lv.time_ratio - 1:+.0%})" for lv in plan.levers[:4])
            lines.append(f"<b>Levers, cheapest in time first:</b> {levers}.")
        needs = [f"{name} {n}" for name, n in plan.beyond_node.items() if n]
        if needs:
            lines.append("<b>Beyond one node</b> (the fewest GPUs that hold it): "
                         + ", ".join(needs) + ".")
        lines.append("<b>The roofline ignores</b> " + "; ".join(IGNORES) + ".")
        # a summary of three lines; the rest (and all of it) in the tooltip
        self.advice.setHtml("<br>".join(lines[:SUMMARY_LINES]))
        self.advice.setToolTip("<br>".join(lines))

    def closeEvent(self, event: Any) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        super().closeEvent(event)
