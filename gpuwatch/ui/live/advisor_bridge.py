"""The advisor inside the window: run on every sample, shown in the panel and the banner.

The window calls :meth:`WindowAdvisor.observe` after each ``History.append`` (the
advisor's hysteresis counts snapshot time, so a burst of queued samples is evaluated
one by one) and :meth:`WindowAdvisor.flush` once after redrawing for the burst; while
the window is out of sight (``rest_when_hidden``: in the tray, minimised) the panel and
banner are left as they are and brought up to date when it is seen again. The
budgets the user linked in the window (by command line) are handed to the advisor per
``(gpu, pid)``, so ``budget-exceeds-capacity``, ``fragmentation`` and ``contention``
can use them. The tray listens to :attr:`hints_changed` and :attr:`events`.

A likely out-of-memory death keeps the severity of the forecast before it until it
has been seen (:mod:`~gpuwatch.ui.live.post_mortem`): opening the hint (its row, the
banner's Show, its notification) or clicking its GPU's card counts as seeing it.
"""

from __future__ import annotations

import statistics
from collections import deque
from time import perf_counter
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from gpuwatch.advisor import Advisor
from gpuwatch.core.hints import Hint, HintEvent, Severity
from gpuwatch.ui.live import budget_adapter
from gpuwatch.ui.live.advisor_panel import HintView, hint_view
from gpuwatch.ui.live.post_mortem import PostMortems

if TYPE_CHECKING:
    from gpuwatch.ui.live.main_window import MainWindow

ProcessKey = tuple[int, int]          # (gpu index, pid)
PENDING_EVERY_S = 5.0
HintKey = tuple[str, int | None, int | None]


class WindowAdvisor(QObject):
    hints_changed = Signal(object)    # list[Hint], worst first: the set or a severity changed
    events = Signal(object)           # list[HintEvent] since the last flush (opened, …)

    def __init__(self, window: MainWindow, advisor: Advisor | None = None):
        super().__init__(window)
        self.window = window
        self.engine = advisor or Advisor()
        self.active: list[Hint] = []
        self.post_mortems = PostMortems()
        self._linked: dict[ProcessKey, budget_adapter.BudgetRequest] = {}
        self._pending: list[HintEvent] = []
        self._shape: list[tuple[HintKey, str]] = []
        # milliseconds per call, for the status tooltip and the benchmark
        self.update_ms: deque[float] = deque(maxlen=600)
        self.show_ms: deque[float] = deque(maxlen=600)
        self._unseen = False         # hints changed while the window was out of sight
        self._pending_at: float | None = None    # snapshot time pending checks were shown
        window.advisor.hint_activated.connect(self.show_target)
        window.sight_changed.connect(self._seen_again)

    # feeding ------------------------------------------------------------------------
    def observe(self) -> None:
        """Evaluate the rules on the newest snapshot in the window's history."""
        start = perf_counter()
        self._sync_links()
        self._pending += self.engine.update(self.window.history)
        self.update_ms.append((perf_counter() - start) * 1e3)

    def flush(self) -> None:
        """Show the open hints (panel, tab title, banner) and announce what changed."""
        start = perf_counter()
        events, self._pending = self._pending, []
        self.active = self.post_mortems.apply(self.engine.active)
        w = self.window
        if w.rest_when_hidden and w.sight.out_of_sight():
            self._unseen = True
        else:
            self._show_active()
        shape = [((h.code, h.gpu_index, h.pid), h.severity.value) for h in self.active]
        self.show_ms.append((perf_counter() - start) * 1e3)
        if events:
            self.events.emit(events)
        self._announce(shape)

    def _announce(self, shape: list[tuple[HintKey, str]]) -> None:
        if shape != self._shape:
            self._shape = shape
            self.hints_changed.emit(self.active)

    def _show_active(self) -> None:
        """The open hints in the Advisor tab, the banner and the cards' badges (or what
        cannot judge yet)."""
        self._unseen = False
        self.window.set_hints([hint_view(h) for h in self.active])
        self.window.hint_banner.set_hints(self.active)
        self.window.cards.show_hints(self.active)     # badges follow the figures ("~2 min")
        worst = self.window.cards.worst_gpu()
        self.window.plots.set_alert(worst, any(
            h.gpu_index == worst and h.severity is Severity.CRITICAL for h in self.active))
        if not self.active:
            self._show_pending()

    def _show_pending(self) -> None:
        """What cannot judge yet ("needs 12 min of history: 5 min so far"), counted in
        whole minutes of snapshot time: worked out again every PENDING_EVERY_S, not on
        every sample (it reads every process's history)."""
        latest = self.window.history.latest
        now = latest.timestamp_s if latest is not None else 0.0
        if self._pending_at is not None and 0 <= now - self._pending_at < PENDING_EVERY_S:
            return
        self._pending_at = now
        self.window.advisor.set_pending(self.engine.pending_judgements())

    def _seen_again(self, seen: bool) -> None:
        """The window seen again (shown, restored, exposed): bring the hints shown up to
        date."""
        if seen and self._unseen:
            self._show_active()

    def _sync_links(self) -> None:
        snap = self.window.history.latest
        links = self.window.links
        wanted: dict[ProcessKey, budget_adapter.BudgetRequest] = {}
        if snap is not None and len(links):
            for p in snap.processes:
                request = links.get(p.cmdline)
                if request is not None:
                    wanted[(p.gpu_index, p.pid)] = request
        if wanted == self._linked:
            return
        for key in self._linked.keys() - wanted.keys():
            self.engine.unlink(*key)
        for key, request in wanted.items():
            if self._linked.get(key) != request:
                budget = budget_adapter.linked_budget(request)
                if budget is None:
                    self.engine.unlink(*key)
                else:
                    self.engine.link(key[0], key[1], budget)
        self._linked = wanted

    # following a hint -----------------------------------------------------------------
    def seen(self, gpu_index: int | None, pid: int | None = None) -> None:
        """The person has seen the hints on ``gpu_index``: a death kept at its
        forecast's severity takes its own again (the tray and the card calm down)."""
        if gpu_index is None or not self.post_mortems.seen(gpu_index, pid):
            return
        self.active = self.post_mortems.apply(self.engine.active)
        w = self.window
        if w.rest_when_hidden and w.sight.out_of_sight():
            self._unseen = True
        else:
            self._show_active()
        self._announce([((h.code, h.gpu_index, h.pid), h.severity.value) for h in self.active])

    def open_hint(self, key: HintKey | None) -> bool:
        """Bring the Advisor tab forward with the hint ``key`` selected (and its process).

        False when that hint has closed since (the tab is shown all the same).
        """
        w = self.window
        w.tabs.setCurrentWidget(w.advisor)
        if key is None:
            return False
        self.seen(key[1], key[2])
        if w.advisor.select_key(key):
            return True
        code, gpu, pid = key
        self.show_target(HintView("info", code, gpu=gpu, pid=pid, code=code))
        return False

    def show_target(self, view: HintView) -> None:
        """Select the hint's process; for a hint about a whole GPU, its largest process."""
        w = self.window
        self.seen(view.gpu, view.pid)
        snap = w.history.latest
        if view.gpu is None or snap is None:
            return
        key: ProcessKey | None = None
        if view.pid is not None:
            key = (view.gpu, view.pid)
        else:
            on_gpu = [p for p in snap.processes if p.gpu_index == view.gpu]
            if on_gpu:
                top = max(on_gpu, key=lambda p: p.used_bytes or 0)
                key = (top.gpu_index, top.pid)
        if key is not None:
            w.processes.select(key)
        card = w.cards.cards.get(view.gpu)
        if card is not None:
            w.cards.ensureWidgetVisible(card)

    # figures ----------------------------------------------------------------------------
    def cost_summary(self) -> str:
        """"advisor 0.4 ms/sample, display 0.2 ms" (medians of the recent calls)."""
        if not self.update_ms:
            return "advisor: no samples yet"
        shown = statistics.median(self.show_ms) if self.show_ms else 0.0
        return (f"advisor {statistics.median(self.update_ms):.2f} ms per sample, "
                f"hint display {shown:.2f} ms")
