"""The estimator as a form: model, batch, sequence, precision, optimizer and levers.

Shows the stacked breakdown against the chosen GPU's capacity, the largest batch that
fits, and what each unused lever would save. "Link" ties the selected process to the
budget in the form. Talks to the engine only through :mod:`gpuwatch.ui.live.budget_adapter`.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QPushButton,
    QSpinBox,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gpuwatch.budget.workload import default_precision
from gpuwatch.core.snapshot import GpuState, Snapshot
from gpuwatch.core.units import UnitSystem, format_bytes
from gpuwatch.ui.live import budget_adapter as ba
from gpuwatch.ui.live.budget_links import BudgetLinks
from gpuwatch.ui.live.budget_rows import BudgetRows
from gpuwatch.ui.live.memory_bar import MemoryBar, Segment
from gpuwatch.ui.live.overlay import CATEGORY_LABELS, Overlay, budget_color
from gpuwatch.ui.widgets import theme


def _combo(items: tuple[str, ...], current: str) -> QComboBox:
    box = QComboBox()
    box.addItems(list(items))
    box.setCurrentText(current)
    return box


def _spin(low: int, high: int, value: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    box.setKeyboardTracking(False)
    return box


class BudgetPanel(QWidget):
    link_clicked = Signal()
    request_changed = Signal(object)     # BudgetRequest

    def __init__(self, links: BudgetLinks, parent: QWidget | None = None):
        super().__init__(parent)
        self.links = links
        self.units: UnitSystem = "iec"
        self.capacity_bytes: int | None = None
        self.capacity_label = ""
        self.result: ba.BudgetResult | None = None
        self.error: str | None = None
        d = ba.BudgetRequest()

        self.model = QComboBox()
        self.model.setEditable(True)
        self.model.addItems(list(ba.model_names()))
        self.model.setCurrentText(d.model)
        self.model.setToolTip("A catalog model, or a Hugging Face config.json (Browse…)")
        browse = QPushButton("config.json…")
        browse.clicked.connect(self._browse)
        self.mode = _combo(("train", "infer"), d.mode)
        self.batch = _spin(1, 65536, d.batch)
        self.seq = _spin(1, 1 << 20, d.seq)
        self.precision = _combo(ba.PRECISION_NAMES, d.precision)
        self.optimizer = _combo(ba.OPTIMIZER_NAMES, d.optimizer)
        self.checkpointing = _combo(ba.CHECKPOINTING_NAMES, d.checkpointing)
        self.flash = QCheckBox("Flash attention")
        self.flash.setChecked(d.flash_attention)
        self.flash.setToolTip("Fused attention (FlashAttention / PyTorch SDPA, the default in "
                              "PyTorch 2): no s² score matrix is stored")
        self.zero = _spin(0, 3, d.zero)
        self.dp = _spin(1, 4096, d.dp)
        self.lora = _spin(0, 4096, d.lora_rank)
        browse.setAccessibleName("Browse for a config.json")
        for widget, name, description in (
                (self.model, "Model", "A catalog model name or the path of a Hugging Face "
                 "config.json"),
                (self.mode, "Mode", "Training or inference"),
                (self.batch, "Batch per GPU", "Samples per GPU per step"),
                (self.seq, "Sequence length", "Tokens per sample"),
                (self.precision, "Precision", "Weights, compute and optimizer precision"),
                (self.optimizer, "Optimizer", "The optimizer, which sets the states kept "
                 "per parameter"),
                (self.checkpointing, "Recompute", "Activation checkpointing: what is "
                 "recomputed in the backward pass instead of stored"),
                (self.flash, "Flash attention", "Fused attention: no score matrix stored"),
                (self.zero, "ZeRO stage", "How much of the model state is sharded"),
                (self.dp, "Data-parallel GPUs", "GPUs the ZeRO shards are spread over"),
                (self.lora, "LoRA rank", "0 for full fine-tuning")):
            widget.setAccessibleName(name)
            widget.setAccessibleDescription(description)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        row = QHBoxLayout()
        row.addWidget(self.model, 1)
        row.addWidget(browse)
        form.addRow("Model", row)
        form.addRow("Mode", self.mode)
        pair = QHBoxLayout()
        pair.addWidget(self.batch)
        pair.addWidget(QLabel("Sequence"))
        pair.addWidget(self.seq)
        form.addRow("Batch / GPU", pair)
        pair = QHBoxLayout()
        pair.addWidget(self.precision)
        pair.addWidget(QLabel("Optimizer"))
        pair.addWidget(self.optimizer)
        form.addRow("Precision", pair)
        pair = QHBoxLayout()
        pair.addWidget(self.checkpointing)
        pair.addWidget(self.flash)
        form.addRow("Recompute", pair)
        pair = QHBoxLayout()
        pair.addWidget(self.zero)
        pair.addWidget(QLabel("sharded across"))
        pair.addWidget(self.dp)
        pair.addWidget(QLabel("GPUs"))
        pair.addStretch(1)
        form.addRow("ZeRO stage", pair)
        form.addRow("LoRA rank", self.lora)

        self.total = QLabel()
        self.total.setTextFormat(Qt.TextFormat.RichText)
        self.total.setWordWrap(True)
        self.bar = MemoryBar()
        self.linked = BudgetRows()        # the selected process, if linked: measured v predicted
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.levers = QTreeWidget()
        self.levers.setHeaderLabels(["What if", "Total", "Saves"])
        self.levers.setRootIsDecorated(False)
        self.levers.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.levers.header().setStretchLastSection(False)
        self.levers.setMinimumHeight(100)
        self.levers.setAccessibleName("What if")
        self.levers.setAccessibleDescription("What each unused lever would make the "
                                             "predicted peak, and what it would save")
        self.bar.setAccessibleName("Predicted peak by category")

        self.link_button = QPushButton("Link selected process")
        self.link_button.setToolTip("Draw this budget beside the selected process's memory "
                                    "(Ctrl+L); remembered for its command line")
        self.link_button.clicked.connect(self.link_clicked)
        self.link_button.setAccessibleDescription(self.link_button.toolTip())
        self.presets = QComboBox()
        self.presets.setPlaceholderText("Presets")
        self.presets.setAccessibleName("Budget presets")
        self.presets.textActivated.connect(self._load_preset)
        save = QPushButton("Save preset…")
        save.setAccessibleDescription("Save the form as a named preset")
        save.clicked.connect(self._save_preset)
        buttons = QHBoxLayout()
        buttons.addWidget(self.link_button)
        buttons.addStretch(1)
        buttons.addWidget(self.presets)
        buttons.addWidget(save)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(buttons)        # Link first: in view on a 1280×800 screen
        layout.addLayout(form)
        layout.addWidget(self.total)
        layout.addWidget(self.bar)
        layout.addWidget(self.legend)
        layout.addWidget(self.linked)
        layout.addWidget(self.levers, 1)
        self._refresh_presets()

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(150)
        self._timer.timeout.connect(self.recompute)
        for w in (self.model, self.mode, self.precision, self.optimizer, self.checkpointing):
            w.currentTextChanged.connect(self._timer.start)
        self._mode_shown = self.mode.currentText()
        self.mode.currentTextChanged.connect(self._mode_changed)
        for s in (self.batch, self.seq, self.zero, self.dp, self.lora):
            s.valueChanged.connect(self._timer.start)
        self.flash.toggled.connect(self._timer.start)
        self.recompute()

    def _mode_changed(self, mode: str) -> None:
        """Training and inference have different usual precisions (amp-bf16 keeps fp32
        weights; serving loads bf16 ones): a precision left at the old mode's default
        follows the new mode's, as `gpuwatch estimate` does; one the user chose stays."""
        old, self._mode_shown = self._mode_shown, mode
        if self.precision.currentText() == default_precision(old):
            self.precision.setCurrentText(default_precision(mode))

    # the request ----------------------------------------------------------------------
    def request(self) -> ba.BudgetRequest:
        return ba.BudgetRequest(
            model=self.model.currentText().strip(), mode=self.mode.currentText(),
            batch=self.batch.value(), seq=self.seq.value(),
            precision=self.precision.currentText(), optimizer=self.optimizer.currentText(),
            checkpointing=self.checkpointing.currentText(),
            flash_attention=self.flash.isChecked(), zero=self.zero.value(), dp=self.dp.value(),
            lora_rank=self.lora.value())

    def set_request(self, r: ba.BudgetRequest) -> None:
        self.model.setCurrentText(r.model)
        self.mode.setCurrentText(r.mode)
        self.batch.setValue(r.batch)
        self.seq.setValue(r.seq)
        self.precision.setCurrentText(r.precision)
        self.optimizer.setCurrentText(r.optimizer)
        self.checkpointing.setCurrentText(r.checkpointing)
        self.flash.setChecked(r.flash_attention)
        self.zero.setValue(r.zero)
        self.dp.setValue(r.dp)
        self.lora.setValue(r.lora_rank)
        self.recompute()

    def set_capacity(self, capacity_bytes: int | None, label: str) -> None:
        if (capacity_bytes, label) != (self.capacity_bytes, self.capacity_label):
            self.capacity_bytes, self.capacity_label = capacity_bytes, label
            self.recompute()

    def follow_gpu(self, snap: Snapshot | None, selected: tuple[int, int] | None) -> None:
        """Budget against the selected process's GPU, else the first GPU that answers."""
        if snap is None:
            return
        gpu = snap.gpu(selected[0]) if selected else next(
            (g for g in snap.gpus if g.state is GpuState.OK), None)
        if gpu is not None and gpu.memory.total_bytes:
            name = (gpu.name or "").removeprefix("NVIDIA ")
            self.set_capacity(gpu.memory.total_bytes, f"on GPU {gpu.index} {name}")

    def set_units(self, units: UnitSystem) -> None:
        self.units = units
        self.recompute()

    def show_linked(self, overlay: Overlay | None) -> None:
        """The selected process's budget against what it holds (None: not linked)."""
        color = None if overlay is None else theme.process_color(overlay.pid)
        self.linked.set_overlay(overlay, self.capacity_bytes, self.units, color)

    # computing and showing ------------------------------------------------------------
    def recompute(self) -> None:
        self._timer.stop()
        request = self.request()
        try:
            self.result = ba.evaluate(request, self.capacity_bytes)
            self.error = None
        except ba.BudgetInputError as exc:
            self.result, self.error = None, str(exc)
        self._show()
        self.request_changed.emit(request)

    def _show(self) -> None:
        c = theme.colors()
        u = self.units
        self.levers.clear()
        if self.result is None:
            self.total.setText(f"<span style='color:{c.critical}'>{self.error}</span>")
            self.bar.set_data(1, [])
            self.legend.setText("")
            return
        r = self.result
        text = (f"<b style='font-size:13pt'>{format_bytes(r.total_bytes, u)}</b> predicted "
                f"peak per GPU "
                f"<span style='color:{c.muted}'>at the {r.peak_phase} · "
                f"{r.params / 1e6:,.0f} M parameters</span>")
        if self.capacity_bytes:
            fits = r.total_bytes <= self.capacity_bytes
            verdict = (f"<span style='color:{c.ok}'>fits</span>" if fits
                       else f"<span style='color:{c.critical}'>does not fit</span>")
            best = "none" if not r.max_batch else str(r.max_batch)
            text += (f"<br>{verdict} {self.capacity_label} "
                     f"({format_bytes(self.capacity_bytes, u)}) · largest batch that fits: "
                     f"<b>{best}</b>")
        self.total.setText(text)
        scale = max(self.capacity_bytes or 0, r.total_bytes)
        segments = [Segment(size, QColor(budget_color(key)),
                            f"Predicted {CATEGORY_LABELS[key].lower()}: "
                            f"{format_bytes(size, u)}")
                    for key, size in r.prediction.categories]
        self.bar.set_data(float(scale), segments)
        parts = [f"<span style='color:{budget_color(k)}'>■</span> "
                 f"{CATEGORY_LABELS[k]} {format_bytes(v, u)}" for k, v in r.breakdown if v]
        note = ""
        if r.overlap_bytes:
            note = (f"<br><span style='color:{c.muted}'>Categories peak at different moments; "
                    f"the bar shows the {r.peak_phase}.</span>")
        self.legend.setText(" &nbsp; ".join(parts) + note)
        for change, total, saves in r.what_if:
            # the column says "Saves": a sign would make it a double negative
            item = QTreeWidgetItem([change, format_bytes(total, u), format_bytes(saves, u)])
            for col in (1, 2):
                item.setTextAlignment(col, Qt.AlignmentFlag.AlignRight)
            self.levers.addTopLevelItem(item)
        self.levers.resizeColumnToContents(1)
        self.levers.resizeColumnToContents(2)

    # presets ---------------------------------------------------------------------------
    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Model config", "", "config.json (*.json)")
        if path:
            self.model.setCurrentText(path)

    def _refresh_presets(self) -> None:
        self.presets.clear()
        self.presets.addItems(sorted(self.links.presets))

    def _save_preset(self) -> None:
        name, ok = QInputDialog.getText(self, "Save preset", "Name:",
                                        text=self.request().label)
        if ok and name.strip():
            self.links.save_preset(name.strip(), self.request())
            self._refresh_presets()

    def _load_preset(self, name: str) -> None:
        request = self.links.presets.get(name)
        if request is not None:
            self.set_request(replace(request))
