"""The shape of memory in use: the training step's period, the envelope of its peaks, and
whether that envelope is climbing now — a trend — or stepped up and holds.

Training memory is a sawtooth: it climbs through each step and drops at its end, with a
period of a second to a minute. Its *envelope* is the peak of each step: the maximum
per bucket of one step (at least ``bucket_s``). On that envelope:

* a **step** (a process arrives, an evaluation's buffers, a level change) makes one new
  high and then holds: the peaks stop topping the earlier ones;
* a **trend** makes new highs step after step: it is a *rising run* of buckets, each
  above every earlier one (a single bucket that does not is forgiven: sampling can miss
  a step's top). It must have lasted ``climb_persist_s`` *and* 2½ buckets (each a
  step and a half) before anyone projects it;
* a **staircase** makes new highs in steps that hold in between, minutes apart: no
  rising run, but a trend once three steps are regular in interval and height; it is
  projected step by step (``staircase``, ``Climb.time_to``);
* a trend that **decelerates** (the newer half of the run climbs at under 60 % of the
  older half's pace: the approach of a warm-up to its plateau) is projected towards the
  level it approaches, not along a line; a process whose envelope has climbed ever
  slower since it arrived (``settling``) is such an approach, its warm-up.

Pure functions over numpy arrays; the rules that use them are ``rules/oom_climb.py``
and ``rules/oom_risk.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuwatch.advisor.trend import bucket_extremes, theil_sen

DECELERATING = 0.6      # newer half's pace / older half's below this: levelling off
STILL_CLIMBING = 0.45   # …while a hint is open, below this (it does not flap at the bar)
SETTLING = 0.75         # a process's newest third / its middle third's pace: warming up


@dataclass(frozen=True, slots=True)
class Stairs:
    """A staircase of the peak envelope: steps up that hold, of about the same height,
    at about the same interval (a curriculum lengthening its sequences, a cache growing
    by one block at a time)."""

    every_s: float              # the median interval between steps
    step_bytes: float           # the median height of a step
    first_step_s: float         # when the first step of the run came (a timestamp)
    last_step_s: float          # when the newest came
    steps: int
    bucket_s: float

    def over(self, now_s: float) -> bool:
        """The next step is late by more than sampling explains: the staircase stopped."""
        late = max(0.25 * self.every_s, 2 * self.bucket_s)
        return now_s - self.last_step_s > self.every_s + late


@dataclass(frozen=True, slots=True)
class Climb:
    """A current climb of the peak envelope."""

    rate: float                 # bytes per second now (Theil–Sen over the rising run)
    span_s: float               # how long the run of new highs has lasted
    tau: float                  # Kendall's tau of the run: how steadily it climbs
    since_s: float              # when the run began (a timestamp)
    bucket_s: float             # the envelope's bucket: a step and a half, ≥ the scale's
    level_bytes: float          # the newest bucket's peak
    towards_bytes: float | None = None   # where a decelerating climb levels off
    settle_s: float | None = None        # …and its time constant
    stairs: Stairs | None = None         # a staircase: memory comes in whole steps
    next_step_in_s: float = 0.0          # …the next of which is due this soon

    def time_to(self, limit: float) -> float | None:
        """Seconds until the envelope reaches ``limit`` (0 when there already; None when
        a decelerating climb levels off below it). A staircase reaches it with the step
        that crosses it, not along the line through its corners."""
        room = limit - self.level_bytes
        if room <= 0:
            return 0.0
        if self.stairs is not None:
            steps = math.ceil(room / self.stairs.step_bytes)
            return self.next_step_in_s + (steps - 1) * self.stairs.every_s
        if self.towards_bytes is None or self.settle_s is None:
            return room / self.rate
        if self.towards_bytes <= limit:
            return None
        return self.settle_s * math.log((self.towards_bytes - self.level_bytes)
                                        / (self.towards_bytes - limit))


@dataclass(frozen=True, slots=True)
class Sawtooth:
    """The training steps' sawtooth as the samples show it."""

    period_s: float     # the median time between its drops (0: fewer than three drops)
    size: float         # from its bottom to its top (0: none seen)
    spacing_s: float    # the samples' median interval

    def top_noise(self, bucket_s: float) -> float:
        """How far a bucket's peak may fall short of the steps' top. A sampler catches a
        sawtooth at a random point of its step, so over a bucket of n samples the
        highest sits about the sawtooth's size / n below the top."""
        return self.size * self.spacing_s / bucket_s if bucket_s > 0 else 0.0

    def quiet_bucket_s(self, tie: float, least_s: float, most_s: float) -> float:
        """A bucket wide enough that its peak sees the top within half ``tie``, between
        ``least_s`` and ``most_s``. A sawtooth that frees and takes back a large share
        of the card every step (a drift of its tops grows it) makes the peaks of short
        buckets scatter by more than a slow climb adds between them, and no run of new
        highs shows; wider buckets see the top closely enough."""
        if tie <= 0 or self.size <= 0:
            return least_s
        return float(min(most_s, max(least_s, 2 * self.size * self.spacing_s / tie)))


def _drops(t: np.ndarray, used: np.ndarray, tie: float) -> tuple[int, float]:
    """(how many falls by more than ``tie`` the samples make, the median time between
    the sawtooth's drops — decreases of at least half the typical fall — or 0 with
    fewer than three of either)."""
    if t.size < 4:
        return 0, 0.0
    d = np.diff(used)
    falls = -d[d < -tie]
    if falls.size < 3:
        return int(falls.size), 0.0
    at = t[1:][d < -0.5 * float(np.median(falls))]
    return int(falls.size), float(np.median(np.diff(at))) if at.size >= 3 else 0.0


def step_period(t: np.ndarray, used: np.ndarray, tie: float) -> float:
    """The training step's period as the samples show it (0: no sawtooth, or a slow one)."""
    return _drops(t, used, tie)[1]


def sawtooth(t: np.ndarray, used: np.ndarray, tie: float) -> Sawtooth:
    """The sawtooth of ``used`` (known samples at times ``t``): its period
    (``step_period``), and its size, the median range of buckets of a step and a half
    (ten samples at least). Not the drops themselves: under a step of one or two
    samples, a drop starts from wherever the sampler last caught the climb, well short
    of the top."""
    if t.size < 4:
        return Sawtooth(0.0, 0.0, 1.0)
    spacing = float(np.median(np.diff(t)))
    falls, period = _drops(t, used, tie)
    if falls < 3:
        return Sawtooth(0.0, 0.0, spacing)
    width = max(10 * spacing, 1.5 * period)
    _, highs = bucket_extremes(t, used, width, "max")
    _, lows = bucket_extremes(t, used, width, "min")
    return Sawtooth(period, float(np.median(highs - lows)), spacing)


def _slope(t: np.ndarray, y: np.ndarray, tie: float) -> float:
    """The Theil–Sen slope of three points or more; of two, the line through them."""
    line = theil_sen(t, y, tie=tie) if t.size >= 3 else None
    if line is not None:
        return line.slope
    return float((y[-1] - y[0]) / (t[-1] - t[0])) if t.size >= 2 and t[-1] > t[0] else 0.0


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
                  recent_s: float, min_tau: float, gaps: int = 1,
                  slowing: float = DECELERATING) -> Climb | None:
    """The climb the envelope of ``used`` (samples at times ``t``, oldest first) is making
    now, or None (flat, falling, or a step that holds). ``recent_s``: the longest stretch
    of the run whose line is the rate; ``slowing``: the newer half's pace / the older
    half's below which the climb is levelling off (lower to keep a hint open)."""
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
    # decelerating: the newer half climbs slower than the older (each half's own line,
    # over six buckets of the run at least: single peaks are too noisy to compare)
    begin = max(first, min(start, by.size - 6))
    n = by.size - begin
    if n >= 3:
        mid = begin + n // 2
        old = _slope(bt[begin:mid + 1], by[begin:mid + 1], tie)
        new = _slope(bt[mid:], by[mid:], tie)
        if old > 0 and new < slowing * old:
            if new <= 0:
                return None
            gap = 0.5 * (bt[-1] - bt[begin])
            settle = gap / math.log(old / new)
            towards = float(by[-1]) + new * settle
    return Climb(rate=line.slope, span_s=float(bt[-1] - bt[base]), tau=line.tau,
                 since_s=float(bt[base]), bucket_s=width, level_bytes=float(by[-1]),
                 towards_bytes=towards, settle_s=settle)


def settling(t: np.ndarray, used: np.ndarray, tie: float, bucket_s: float,
             slowing: float = SETTLING, sure: float = 3.0) -> bool:
    """The envelope of ``used`` (samples at times ``t``, oldest first) climbs ever
    slower, as a warm-up approaching its plateau does. Its buckets (the oldest, partial
    one left out) are cut in thirds of three buckets at least, and the newest third
    climbs at under ``slowing`` times the middle one's pace, falling short of that pace
    by more than ``sure`` times the noise of sampling a bucket's peak
    (``Sawtooth.top_noise``): under a large sawtooth the pace of a few buckets
    scatters, and a steady climb would seem to slow.

    Memory that came at once and then climbs at a steady pace is not settling (its two
    newer thirds climb alike), nor is a leak that continues a warm-up once its approach
    has died out. A step up in the middle third followed by a slow climb is: a step
    and a slow climb in a process's first minutes are told apart once it is older."""
    keep = ~np.isnan(used)
    t, used = t[keep], used[keep]
    bt, by = bucket_extremes(t, used, bucket_s, "max")
    bt, by = bt[1:], by[1:]
    n = by.size // 3
    if n < 3:
        return False
    first = by.size - 2 * n                    # the buckets left over join the first
    middle = _slope(bt[first:first + n], by[first:first + n], tie)
    newest = _slope(bt[first + n:], by[first + n:], tie)
    if middle <= 0 or newest >= slowing * middle:
        return False
    # what the newest third has grown short of the middle one's pace, against the noise
    # (the sawtooth is read only here: most climbs stop at the test above)
    short = (middle - newest) * (bt[-1] - bt[first + n - 1])
    return short >= sure * max(tie, sawtooth(t, used, tie).top_noise(bucket_s))


STAIR_MIN_STEPS = 3          # two intervals to compare: one step up is only a step
STAIR_INTERVAL_RATIO = 1.6   # longest / shortest interval of a regular staircase
STAIR_HEIGHT_RATIO = 3.0     # highest / lowest step


def staircase(t: np.ndarray, used: np.ndarray, tie: float, bucket_s: float) -> Stairs | None:
    """The staircase the envelope of ``used`` is climbing now, or None. A step is a new
    high (a bucket topping every earlier one; new highs in neighbouring buckets are one
    step) that then holds for at least as long as it took; the staircase is the newest
    run of at least three such steps whose intervals and heights are regular, the
    newest of which is not overdue. Steps lower than twice the noise of sampling a
    step's top are not steps."""
    keep = ~np.isnan(used)
    t, used = t[keep], used[keep]
    if t.size < 8:
        return None
    period = step_period(t, used, tie)
    width = max(bucket_s, 1.5 * period)
    bt, by = bucket_extremes(t, used, width, "max")
    if by.size < 2 * STAIR_MIN_STEPS:
        return None
    high = np.maximum.accumulate(by)
    rise = np.diff(high)
    at = np.flatnonzero(rise > tie) + 1          # buckets that set a new high
    if at.size < STAIR_MIN_STEPS:
        return None
    # the noise of sampling a step's top: how much neighbouring buckets' peaks differ
    noise = float(np.median(np.abs(np.diff(by))))
    # new highs in neighbouring buckets are one step; a new high by
    # little more than that noise is a better sample of a top, not a step
    split = np.flatnonzero(np.diff(at) > 1) + 1
    groups = np.split(at, split)
    starts = np.array([bt[g[0]] for g in groups])
    lasts = np.array([bt[g[-1]] for g in groups])
    heights = np.array([high[g[-1]] - high[g[0] - 1] for g in groups])
    big = heights >= max(3 * tie, 2 * noise)
    starts, lasts, heights = starts[big], lasts[big], heights[big]
    # the newest run of regular steps
    n = heights.size
    while n >= STAIR_MIN_STEPS and not _regular(starts[-n:], lasts[-n:], heights[-n:]):
        n -= 1
    if n < STAIR_MIN_STEPS:
        return None
    starts, heights = starts[-n:], heights[-n:]
    gaps = np.diff(starts)
    stairs = Stairs(every_s=float(np.median(gaps)), step_bytes=float(np.median(heights)),
                    first_step_s=float(starts[0]), last_step_s=float(starts[-1]),
                    steps=int(n), bucket_s=width)
    return None if stairs.over(float(t[-1])) else stairs


def _regular(starts: np.ndarray, lasts: np.ndarray, heights: np.ndarray) -> bool:
    """Steps at about the same interval, of about the same height, each over well
    within its interval (steps, not a ramp)."""
    gaps = np.diff(starts)
    return bool(gaps.max() <= STAIR_INTERVAL_RATIO * gaps.min()
                and heights.max() <= STAIR_HEIGHT_RATIO * heights.min()
                and (lasts - starts).max() <= 0.5 * gaps.min())
