"""What went wrong with the exporter's clients: counted per kind, and said on stderr at
most once per kind per :data:`COMPLAIN_EVERY_S`, never with a traceback."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

COMPLAIN_EVERY_S = 60.0

KINDS = {
    "reset": "connections reset or dropped by their client",
    "bad-request": "bad requests refused",
    "slow": "connections closed for sending a request or taking an answer too slowly",
    "overload": "waiting connections closed to make room for new ones",
    "error": "answers that failed inside the exporter",
}


class Complaints:
    """Counts of what went wrong with clients, said at most once per kind per minute."""

    def __init__(self, log: Callable[[str], None], every_s: float = COMPLAIN_EVERY_S,
                 clock: Callable[[], float] = time.monotonic):
        self.log, self.every_s, self.clock = log, every_s, clock
        self.counts: Counter[str] = Counter()          # since the start
        self._unsaid: Counter[str] = Counter()         # since the kind's last line
        self._said_at: dict[str, float] = {}

    def note(self, kind: str, detail: str = "") -> None:
        self.counts[kind] += 1
        self._unsaid[kind] += 1
        self._say(kind, detail)

    def flush(self) -> None:
        """Say the kinds counted since their last line, where a minute has passed."""
        for kind in [k for k, n in self._unsaid.items() if n]:
            self._say(kind)

    def _say(self, kind: str, detail: str = "") -> None:
        now = self.clock()
        said = self._said_at.get(kind)
        if said is not None and now - said < self.every_s:
            return
        count = self._unsaid.pop(kind, 0)
        since = "" if said is None else f" in the last {now - said:.0f} s"
        example = f" (last: {detail})" if detail else ""
        self.log(f"gpuwatch serve: {count} {KINDS.get(kind, kind)}{since}{example}; "
                 f"{self.counts[kind]} since the start")
        self._said_at[kind] = now
