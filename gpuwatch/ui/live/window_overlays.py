"""Which budget overlays the window shows: a linked budget's prediction for each process
whose command line is linked, and per GPU the one its card draws."""

from __future__ import annotations

from PySide6.QtWidgets import QStatusBar

from gpuwatch.core.snapshot import ProcessSample, Snapshot
from gpuwatch.ui.live import budget_adapter
from gpuwatch.ui.live.budget_links import BudgetLinks
from gpuwatch.ui.live.overlay import Overlay
from gpuwatch.ui.live.process_model import Key


def linked_overlays(snap: Snapshot, links: BudgetLinks) -> dict[Key, Overlay]:
    """An overlay for each process of ``snap`` whose command line has a linked budget
    that predicts."""
    if not len(links):
        return {}
    out: dict[Key, Overlay] = {}
    for p in snap.processes:
        request = links.get(p.cmdline)
        if request is None:
            continue
        prediction = budget_adapter.predict(request)
        if prediction is not None:
            out[(p.gpu_index, p.pid)] = Overlay(p.pid, p.gpu_index, prediction, p.used_bytes)
    return out


def card_overlays(overlays: dict[Key, Overlay], probe_overlays: dict[Key, Overlay],
                  selected: Key | None) -> dict[int, Overlay]:
    """Per GPU: the selected process's overlay if it has one, else the largest (a linked
    budget before a probe's)."""
    out: dict[int, Overlay] = {}
    shown = overlays if not probe_overlays else {**probe_overlays, **overlays}
    for key, o in shown.items():
        best = out.get(o.gpu_index)
        if key == selected or best is None or (
                best.pid != (selected or (0, 0))[1]
                and (o.measured_bytes or 0) > (best.measured_bytes or 0)):
            out[o.gpu_index] = o
    return out


def link_budget(p: ProcessSample | None, request: budget_adapter.BudgetRequest,
                links: BudgetLinks, status: QStatusBar) -> bool:
    """Link ``p``'s command line to ``request``; False (and why, in the status bar)
    where it has none or the request does not predict."""
    if p is None or not p.cmdline:
        status.showMessage("This process has no command line to remember", 4000)
        return False
    if budget_adapter.predict(request) is None:
        status.showMessage("The budget form has an error; fix it first", 4000)
        return False
    links.link(p.cmdline, request)
    status.showMessage(f"Linked pid {p.pid} to {request.label}", 4000)
    return True
