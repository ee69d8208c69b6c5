"""The shape of memory in use: the training step's period, the envelope of its peaks, and
whether that envelope is climbing now — a trend — or stepped up and holds.

Training memory is a sawtooth: it climbs through each step and drops at its end, with a
period of a second to a minute. Its *envelope* is the peak of each step: the maximum
per bucket of one step (at least ``bucket_s``). On that envelope:

* a **step** (a process arrives, an evaluation's buffers, a level change) makes one new
  high and then holds: the peaks stop topping the earlier ones;
* a **trend** makes new highs step after step: it is a *rising run* of buckets, each
  above every earlier one (a single bucket that does not is forgiven: sampling can miss
  a step's top). It must have lasted ``persist_s`` *and* three steps before anyone
  projects it;
* a trend that **decelerates** (the newer half of the run climbs at under 60 % of the
  older half's pace: the approach of a warm-up to its plateau) is projected towards the
  level it approaches, not along a line.

Pure functions over numpy arrays; the rule that uses them is ``rules/oom_risk.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuwatch.advisor.trend import bucket_extremes, theil_sen

DECELERATING = 0.6      # newer half's pace / older half's below this: levelling off


@dataclass(frozen=True, slots=True)
class Climb:
    """A current climb of the peak envelope."""

    rate: float                 # bytes per second now (Theil–Sen over the rising run)
    span_s: float               # how long the run of new highs has lasted
    tau: float                  # Kendall's tau of the run: how steadily it climbs
    since_s: float              # when the run began (a timestamp)
    bucket_s: float             # the envelope's bucket: one training step, ≥ 10 s
    level_bytes: float          # the newest bucket's peak
    towards_bytes: float | None = None   # where a decelerating climb levels off
    settle_s: float | None = None        # …and its time constant

    def time_to(self, limit: float) -> float | None:
        """Seconds until the envelope reaches ``limit`` (0 when there already; None when
        a decelerating climb levels off below it)."""
        room = limit - self.level_bytes
        if room <= 0:
            return 0.0
        if self.towards_bytes is None or self.settle_s is None:
            return room / self.rate
        if self.towards_bytes <= limit:
            return None
        return self.settle_s * math.log((self.towards_bytes - self.level_bytes)
                                        / (self.towards_bytes - limit))


def step_period(t: np.ndarray, y: np.ndarray, tie: float) -> float:
    """The training step's period as the samples show it: the median time between the
    sawtooth's drops (decreases of at least half the typical drop). 0 when there are
    fewer than three drops (no sawtooth, or a slow one)."""
    if t.size < 4:
        return 0.0
    d = np.diff(y)
    falls = -d[d < -tie]
    if falls.size < 3:
        return 0.0
    at = t[1:][d < -0.5 * float(np.median(falls))]
    return float(np.median(np.diff(at))) if at.size >= 3 else 0.0


def rising_run(by: np.ndarray, tie: float, gaps: int = 1) -> int | None:
    """The index of the first bucket of the newest run of new highs (each topping every
    earlier bucket by more than ``tie``; up to ``gaps`` buckets in a row that do not are
    forgiven), or None when the newest bucket ends no such run."""
    if by.size < 2:
        return None
    before = np.maximum.accumulate(by)[:-1]
    new = np.concatenate(([False], by[1:] > before + tie))
    if not new[-gaps - 1:].any():
        return None
    start, miss = None, 0
    for i in range(by.size - 1, 0, -1):
        if new[i]:
            start, miss = i, 0
        else:
            miss += 1
            if miss > gaps:
                break
    return start


def current_climb(t: np.ndarray, used: np.ndarray, tie: float, bucket_s: float,
                  recent_s: float, min_tau: float, gaps: int = 1) -> Climb | None:
    """The climb the envelope of ``used`` (samples at times ``t``, oldest first) is making
    now, or None (flat, falling, or a step that holds). ``recent_s``: the longest stretch
    of the run whose line is the rate."""
    keep = ~np.isnan(used)
    t, used = t[keep], used[keep]
    period = step_period(t, used, tie)
    width = max(bucket_s, 1.5 * period)     # a bucket holds a whole step and its top
    bt, by = bucket_extremes(t, used, width, "max")
    first = rising_run(by, tie, gaps)
    if first is None:
        return None
    base = max(0, first - 1)                   # the bucket the climb set out from
    # the rate is the run's own (a step that began it does not count: a step up and a
    # slow climb after it climb slowly)
    start = max(first, int(np.searchsorted(bt, bt[-1] - recent_s)))
    line = theil_sen(bt[start:], by[start:], tie=tie)
    if line is None or line.slope <= 0 or line.tau < min_tau:
        return None
    towards = settle = None
    n = by.size - start
    if n >= 3:               # decelerating: the newer half climbs slower than the older
        mid = start + n // 2
        old = (by[mid] - by[start]) / (bt[mid] - bt[start])
        new = (by[-1] - by[mid]) / (bt[-1] - bt[mid])
        if old > 0 and new < DECELERATING * old:
            if new <= 0:
                return None
            gap = 0.5 * (bt[-1] - bt[start])
            settle = gap / math.log(old / new)
            towards = float(by[-1]) + new * settle
    return Climb(rate=line.slope, span_s=float(bt[-1] - bt[base]), tau=line.tau,
                 since_s=float(bt[base]), bucket_s=width, level_bytes=float(by[-1]),
                 towards_bytes=towards, settle_s=settle)
