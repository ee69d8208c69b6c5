"""What the window makes of a process that runs the in-process probe (no widgets of its own).

A probe report says what PyTorch holds inside the process; NVML says what the process
holds on the GPU. Set side by side they split the process's memory into:

- **allocated** — tensors PyTorch holds (``memory_allocated``);
- **cached but free** — reserved by PyTorch's caching allocator, holding no tensor
  (reserved − allocated);
- **outside PyTorch** — what NVML counts beyond PyTorch's reservation: the CUDA
  context, cuBLAS/cuDNN workspaces, other libraries (used − reserved).

The report's model and optimizer facts also give the overlay its categories without a
linked budget (:func:`probe_prediction`). Everything here runs only for processes that
publish, so a window of unprobed processes pays nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from gpuwatch.core.history import HOUR_AT_1HZ, Ring
from gpuwatch.core.probe_format import ProbeReport
from gpuwatch.core.snapshot import ProcessSample, Snapshot
from gpuwatch.core.units import UnitSystem, format_bytes
from gpuwatch.ui.live.memory_bar import Segment
from gpuwatch.ui.live.overlay import CATEGORY_LABELS, Overlay, Prediction, budget_color
from gpuwatch.ui.live.text_lines import Run
from gpuwatch.ui.widgets import theme

Key = tuple[int, int]   # (gpu index, pid)

SPLIT_LABELS = ("allocated", "cached free", "outside PyTorch")
SPLIT_HELP = (
    "tensors PyTorch holds",
    "PyTorch's caching allocator: reserved − allocated",
    "CUDA context, cuBLAS/cuDNN workspaces, other libraries: used − reserved",
)
SHORT_CATEGORY = {"parameters": "params", "gradients": "grads", "optimizer": "optimizer",
                  "temporaries": "activations"}
ALLOCATED_COLUMNS = {"timestamp_s": np.float64, "allocated_bytes": np.float64}
FORGET_AFTER_S = 30.0   # a probe silent this long loses its allocated history


@dataclass(frozen=True, slots=True)
class ProbeSplit:
    """A probed process's measured memory in three parts that add up to NVML's figure."""

    allocated_bytes: int
    cached_free_bytes: int
    outside_bytes: int

    @property
    def parts(self) -> tuple[int, int, int]:
        return (self.allocated_bytes, self.cached_free_bytes, self.outside_bytes)


def probe_split(used_bytes: int | None, report: ProbeReport) -> ProbeSplit | None:
    """The split of ``used_bytes`` (NVML), or None when either side is unknown.

    The two sides are read a moment apart, so each part is clamped into what NVML
    measured: the parts always sum to ``used_bytes``."""
    a = report.allocator
    if used_bytes is None or a is None or a.allocated_bytes is None \
            or a.reserved_bytes is None:
        return None
    allocated = min(a.allocated_bytes, used_bytes)
    reserved = min(max(a.reserved_bytes, allocated), used_bytes)
    return ProbeSplit(allocated, reserved - allocated, used_bytes - reserved)


def probe_prediction(report: ProbeReport) -> Prediction | None:
    """The overlay's categories from the probe's facts: parameters, gradients, optimizer
    states, then activations and temporaries (allocated − those three, when positive)."""
    m, o, a = report.model, report.optimizer, report.allocator
    cats: list[tuple[str, int]] = []
    for key, value in (("parameters", m and m.parameter_bytes),
                       ("gradients", m and m.gradient_bytes),
                       ("optimizer", o and o.state_bytes)):
        if value:
            cats.append((key, value))
    known = sum(b for _, b in cats)
    if a is not None and a.allocated_bytes is not None and a.allocated_bytes > known:
        cats.append(("temporaries", a.allocated_bytes - known))
    if not cats:
        return None
    return Prediction(probe_label(report), tuple(cats))


def probe_label(report: ProbeReport) -> str:
    """'Model · AdamW step 692', or 'probe' when the report names neither."""
    parts = []
    if report.model is not None and report.model.class_name:
        parts.append(report.model.class_name)
    if report.optimizer is not None and report.optimizer.class_name:
        step = report.optimizer.step
        parts.append(report.optimizer.class_name + ("" if step is None else f" step {step}"))
    if (batch := report.adaptive_batch) is not None and batch.micro_batch is not None:
        parts.append(f"micro-batch {batch.micro_batch} × {batch.grad_accum or '?'}")
    return " · ".join(parts) or "probe"


def allocator_notes(report: ProbeReport, units: UnitSystem) -> list[str]:
    """The allocator's trouble signs that are non-zero, and its configuration if set."""
    a = report.allocator
    out: list[str] = []
    if a is not None:
        if a.inactive_split_bytes:
            out.append(f"inactive split {format_bytes(a.inactive_split_bytes, units)}")
        if a.num_alloc_retries:
            out.append(f"{a.num_alloc_retries} alloc {_plural(a.num_alloc_retries, 'retry')}")
        if a.num_ooms:
            out.append(f"{a.num_ooms} {_plural(a.num_ooms, 'OOM')}")
    if report.alloc_conf:
        out.append(f"PYTORCH_CUDA_ALLOC_CONF={report.alloc_conf}")
    return out


def probe_tooltip(report: ProbeReport, used_bytes: int | None, units: UnitSystem) -> str:
    """The process table's tooltip for a probed process (made on hover, not per sample)."""
    a = report.allocator
    lines = [f"Probed: {probe_label(report)}"]
    if report.adaptive_batch is not None:      # e.g. "… (lowered 2 min ago: out of memory)"
        lines.append("Adaptive batch: " + report.adaptive_batch.describe(report.published_at_s))
    if a is not None:
        lines.append(f"allocated {format_bytes(a.allocated_bytes, units)} · reserved "
                     f"{format_bytes(a.reserved_bytes, units)}")
    split = probe_split(used_bytes, report)
    if split is not None:
        lines.append(f"cached free {format_bytes(split.cached_free_bytes, units)} · outside "
                     f"PyTorch {format_bytes(split.outside_bytes, units)}")
    notes = allocator_notes(report, units)
    if notes:
        lines.append(" · ".join(notes))
    return "\n".join(lines)


def probes_by_key(snap: Snapshot) -> dict[Key, ProbeReport]:
    """Each probe report on the (GPU, pid) rows it describes; {} without probes.

    A report that names its GPUs' UUIDs goes on those GPUs only; one that does not goes
    on every GPU its pid is listed on (a training process usually uses one)."""
    if not snap.probes:
        return {}
    reports = {r.pid: r for r in snap.probes}
    out: dict[Key, ProbeReport] = {}
    for g in snap.gpus:
        for p in g.processes:
            r = reports.get(p.pid)
            if r is not None and (not r.device_uuids or g.uuid in r.device_uuids):
                out[(g.index, p.pid)] = r
    return out


def probe_overlays(snap: Snapshot, probes: Mapping[Key, ProbeReport],
                   linked: Mapping[Key, Overlay]) -> dict[Key, Overlay]:
    """The probe's categories for each probed process the user has not linked to a budget
    (a linked budget wins: the user chose it; the card still shows the probe's split)."""
    out: dict[Key, Overlay] = {}
    for key, report in probes.items():
        if key in linked:
            continue
        prediction = probe_prediction(report)
        gpu = snap.gpu(key[0])
        if prediction is not None and gpu is not None:
            used = next((p.used_bytes for p in gpu.processes if p.pid == key[1]), None)
            out[key] = Overlay(key[1], key[0], prediction, used, "probe")
    return out


def by_gpu(probes: Mapping[Key, ProbeReport]) -> dict[int, dict[int, ProbeReport]]:
    out: dict[int, dict[int, ProbeReport]] = {}
    for (gpu, pid), r in probes.items():
        out.setdefault(gpu, {})[pid] = r
    return out


def largest(processes: Iterable[ProcessSample], probes: Mapping[int, ProbeReport],
            prefer: int | None = None) -> ProcessSample | None:
    """The probed process the card describes: ``prefer`` if probed, else the largest."""
    best: ProcessSample | None = None
    for p in processes:
        if p.pid not in probes:
            continue
        if p.pid == prefer:
            return p
        if best is None or (p.used_bytes or 0) > (best.used_bytes or 0):
            best = p
    return best


def split_colors(pid: int) -> tuple[QColor, QColor, QColor]:
    """Allocated (the process's colour), cached free (hatched over a light fill), outside
    PyTorch (dark)."""
    base = theme.process_color(pid)
    return base, base.lighter(165), base.darker(175)


def split_segments(name: str, pid: int, split: ProbeSplit, units: UnitSystem) -> list[Segment]:
    """The bar's three segments for a probed process, labelled, with tooltips."""
    colors = split_colors(pid)
    patterns = (Qt.BrushStyle.SolidPattern, Qt.BrushStyle.BDiagPattern,
                Qt.BrushStyle.SolidPattern)
    out = []
    for size, color, label, why, pattern in zip(split.parts, colors, SPLIT_LABELS, SPLIT_HELP,
                                                patterns, strict=True):
        figure = format_bytes(size, units)
        out.append(Segment(size, color, f"{name} (pid {pid}) · {label} ({why}): {figure}",
                           pattern, f"{label} {figure}", colors[0]))
    return out


def legend_lines(pid: int, split: list[Segment], report: ProbeReport, overlay: Overlay | None,
                 units: UnitSystem, probed: int) -> tuple[list[list[Run]], str]:
    """The card's probe legend: the split with swatches; the probe's tensors by category
    (when the overlay is the probe's) or what it runs; the allocator's trouble signs."""
    c = theme.colors()
    head = [Run("Probe", bold=True),
            Run(f" pid {pid}" + (f" (+{probed - 1})" if probed > 1 else "") + " · ", c.muted)]
    first: list[Run] = list(head)
    for seg in split:
        label, figure = seg.label.rsplit(" ", 2)[0], " ".join(seg.label.split()[-2:])
        first += [Run(f"{label} ", swatch=seg), Run(figure, bold=seg is split[0]), Run("   ")]
    second = [Run(probe_label(report), c.muted)]
    if overlay is not None and overlay.from_probe:
        pred = overlay.prediction
        second = [Run("Tensors "), Run(format_bytes(pred.total_bytes, units), bold=True),
                  Run(" = ", c.muted)]
        for key, size in pred.categories:
            color = QColor(budget_color(key))   # as the bar under it draws the category
            name = SHORT_CATEGORY.get(key) or CATEGORY_LABELS.get(key, key).lower()
            second += [Run(f"{name} ", swatch=Segment(size, color, "")),
                       Run(f"{format_bytes(size, units)}  ")]
    lines = [first, second]
    notes = allocator_notes(report, units)
    if notes:
        a = report.allocator
        trouble = a is not None and bool(a.num_alloc_retries or a.num_ooms)
        lines.append([Run("Allocator: ", c.warning if trouble else c.muted),
                      Run(" · ".join(notes), c.muted)])
    tooltip = "\n".join([*(s.tooltip for s in split), f"Probe: {probe_label(report)}",
                         "".join(r.text for r in second).strip(),
                         *(["Allocator: " + " · ".join(notes)] if notes else [])])
    return lines, tooltip


class ProbeHistory:
    """Allocated bytes over time, per probed pid, for the process plot.

    Costs nothing while no process publishes; a pid whose probe stays silent for
    ``FORGET_AFTER_S`` is dropped."""

    def __init__(self, capacity: int = HOUR_AT_1HZ):
        self.capacity = capacity
        self.rings: dict[int, Ring] = {}
        self._last_seen: dict[int, float] = {}

    def observe(self, snap: Snapshot) -> None:
        if not snap.probes and not self.rings:
            return
        t = snap.timestamp_s
        for r in snap.probes:
            a = r.allocator
            if a is None or a.allocated_bytes is None:
                continue
            ring = self.rings.get(r.pid)
            if ring is None:
                ring = self.rings[r.pid] = Ring(self.capacity, ALLOCATED_COLUMNS, initial=64)
            ring.append_values((t, a.allocated_bytes))
            self._last_seen[r.pid] = t
        if len(self._last_seen) > len(snap.probes):
            for pid, seen in list(self._last_seen.items()):
                if t - seen > FORGET_AFTER_S:
                    del self._last_seen[pid], self.rings[pid]

    def ring(self, pid: int) -> Ring | None:
        return self.rings.get(pid)


def _plural(n: int, word: str) -> str:
    if n == 1:
        return word
    return word[:-1] + "ies" if word.endswith("y") else word + "s"
