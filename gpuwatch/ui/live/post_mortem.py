"""A death is never calmer than its forecast: the post-mortem keeps the forecast's
severity until someone has seen it. No widgets here.

The advisor forecasts an out-of-memory death (``oom-risk``, often critical) and, when
the process dies full, closes the forecast and opens ``likely-oom`` (a warning). Shown
as they are, the tray icon and the card would turn *calmer* at the moment of the crash.
:class:`PostMortems` remembers each GPU's worst forecast while it is open, and raises a
``likely-oom`` hint on that GPU that follows it within :data:`FORECAST_LINK_S` to the
forecast's severity, until :meth:`PostMortems.seen` is called for that GPU (the person
opened the hint, its notification, or clicked the card). The hint itself (title,
evidence, key) is unchanged; only its severity is raised.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from gpuwatch.core.hints import Hint, HintKey, Severity

FORECAST = "oom-risk"
DEATH = "likely-oom"
FORECAST_LINK_S = 120.0     # a death this long after the forecast was last seen is its end


@dataclasses.dataclass(frozen=True, slots=True)
class _Forecast:
    severity: Severity
    seen_at_s: float         # snapshot time it was last open


class PostMortems:
    def __init__(self) -> None:
        self._forecasts: dict[int, _Forecast] = {}   # GPU index -> its last forecast
        self._raised: dict[HintKey, Severity] = {}   # death -> the severity it keeps
        self._seen: set[HintKey] = set()

    def apply(self, hints: Iterable[Hint]) -> list[Hint]:
        """``hints`` (worst first) with each unseen death raised to its forecast's
        severity, worst first again."""
        hints = list(hints)
        for h in hints:
            if h.code == FORECAST:
                known = self._forecasts.get(h.gpu_index)
                same_climb = known is not None and h.updated_at_s - known.seen_at_s \
                    <= FORECAST_LINK_S
                worst = max(h.severity, known.severity) if same_climb and known else h.severity
                self._forecasts[h.gpu_index] = _Forecast(worst, _time(h.updated_at_s))
        open_keys = {h.key for h in hints}
        self._raised = {k: v for k, v in self._raised.items() if k in open_keys}
        self._seen &= open_keys
        out = []
        for h in hints:
            level = self._level(h)
            out.append(h if level is None or level <= h.severity or h.key in self._seen
                       else dataclasses.replace(h, severity=level))
        return sorted(out, key=lambda h: -h.severity.rank)   # stable: the order given

    def _level(self, h: Hint) -> Severity | None:
        if h.code != DEATH:
            return None
        if h.key not in self._raised:
            forecast = self._forecasts.get(h.gpu_index)
            died = h.value("exited_at_s")
            at = float(died) if isinstance(died, int | float) else _time(h.opened_at_s)
            if forecast is not None and at - forecast.seen_at_s <= FORECAST_LINK_S:
                self._raised[h.key] = forecast.severity
            else:
                return None
        return self._raised[h.key]

    def seen(self, gpu_index: int | None, pid: int | None = None) -> bool:
        """Someone has seen the deaths on ``gpu_index`` (``pid``'s alone where given):
        they take their own severity again. True when one was raised."""
        keys = {k for k in self._raised if k[1] == gpu_index and (pid is None or k[2] == pid)}
        new = keys - self._seen
        self._seen |= keys
        return bool(new)


def _time(t: float) -> float:
    return t if math.isfinite(t) else -math.inf
