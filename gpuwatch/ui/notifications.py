"""Which hints become desktop notifications, and how often (no Qt widgets here).

A desktop notification interrupts someone who is doing something else, so:

* only warning and critical hints notify; info hints stay in the Advisor tab;
* one notification per hint key (code, GPU, pid) per ``per_key_s`` (10 min) — unless
  the hint got worse (a warning that turns critical notifies again at once);
* at most ``burst`` (3) notifications in any ``burst_window_s`` (60 s) overall;
* "Pause alerts for 1 h" suppresses all of them (the window still shows every hint).

Time here is the wall clock (``time.monotonic``): it is about the person's attention,
not the snapshot's (possibly simulated) time.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from gpuwatch.core.hints import Hint, HintEvent, HintEventKind, HintKey, Severity

PAUSE_S = 3600.0


@dataclass(frozen=True)
class RateLimits:
    per_key_s: float = 600.0
    burst: int = 3
    burst_window_s: float = 60.0


class RateLimiter:
    """Decides whether a hint may notify now; :meth:`allow` also counts it when it may."""

    def __init__(self, limits: RateLimits | None = None):
        self.limits = limits or RateLimits()
        self.paused_until = -math.inf
        self._by_key: dict[HintKey, tuple[float, Severity]] = {}
        self._recent: deque[float] = deque()

    def pause(self, now_s: float, seconds: float = PAUSE_S) -> None:
        self.paused_until = now_s + seconds

    def resume(self) -> None:
        self.paused_until = -math.inf

    def paused(self, now_s: float) -> bool:
        return now_s < self.paused_until

    def refusal(self, key: HintKey, severity: Severity, now_s: float) -> str | None:
        """None when a notification may go out now, else why not (a word, for the log)."""
        if severity < Severity.WARNING:
            return "info"
        if self.paused(now_s):
            return "paused"
        last = self._by_key.get(key)
        if last is not None and now_s - last[0] < self.limits.per_key_s and severity <= last[1]:
            return "repeat"
        while self._recent and now_s - self._recent[0] >= self.limits.burst_window_s:
            self._recent.popleft()
        if len(self._recent) >= self.limits.burst:
            return "burst"
        return None

    def allow(self, key: HintKey, severity: Severity, now_s: float) -> bool:
        if self.refusal(key, severity, now_s) is not None:
            return False
        self._by_key[key] = (now_s, severity)
        self._recent.append(now_s)
        return True


@dataclass(frozen=True)
class Notification:
    key: HintKey
    severity: Severity
    summary: str          # "Critical: GPU 0 memory full in ~1 min 57 s at this rate"
    body: str


def notification_for(hint: Hint) -> Notification:
    where = f"GPU {hint.gpu_index}"
    if hint.pid is not None:
        where += f" · pid {hint.pid}" + (f" · {hint.process_name}" if hint.process_name else "")
    lines = [where]
    if hint.evidence:
        lines.append(hint.evidence[0])
    if hint.actions:
        lines.append("→ " + hint.actions[0].summary)
    return Notification(hint.key, hint.severity,
                        f"{hint.severity.value.capitalize()}: {hint.title}", "\n".join(lines))


class Notifier:
    """Turns the advisor's events into notifications through ``show``, within the limits."""

    def __init__(self, show: Callable[[Notification], None],
                 limits: RateLimits | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.show = show
        self.limiter = RateLimiter(limits)
        self.clock = clock
        self.enabled = True
        self.last: Notification | None = None     # what a click on "the" bubble opens
        self.held: list[tuple[Notification, str]] = []   # recent refusals, for the log

    @property
    def paused(self) -> bool:
        return self.limiter.paused(self.clock())

    def pause(self, seconds: float = PAUSE_S) -> None:
        self.limiter.pause(self.clock(), seconds)

    def resume(self) -> None:
        self.limiter.resume()

    def handle(self, events: list[HintEvent]) -> list[Notification]:
        """Notify what opened or got worse; return what was shown."""
        shown = []
        for event in events:
            if event.kind is HintEventKind.CLOSED or not self.enabled:
                continue
            n = notification_for(event.hint)
            reason = self.limiter.refusal(n.key, n.severity, self.clock())
            if reason is not None:
                if reason != "info":
                    self.held = [*self.held[-9:], (n, reason)]
                continue
            self.limiter.allow(n.key, n.severity, self.clock())
            self.last = n
            self.show(n)
            shown.append(n)
        return shown
