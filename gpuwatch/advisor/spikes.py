"""Spikes of the peak envelope: memory that rose at once and fell back at once within a
few minutes — an evaluation's buffers, a short-lived helper process.

A spike is not the envelope. While it lasts it tops every earlier peak, and once over it
stands above the climb that goes on underneath for as long as that climb takes to catch
up: minutes in which no new high can be made, so a trend is not seen. Its samples are
left out of the envelope (``without``). But it tends to come back (an evaluation every
so many steps), and then it comes on top of the envelope: the card fills when the
envelope is a spike's height short of full (``tallest``).

Pure functions over numpy arrays; ``rules/oom_climb.py`` keeps what they find.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from gpuwatch.advisor.trend import bucket_extremes


@dataclass(frozen=True, slots=True)
class Spike:
    start_s: float      # its first sample (a timestamp)
    end_s: float        # its last
    height: float       # bytes above the envelope either side of it


def find(t: np.ndarray, used: np.ndarray, width_s: float, margin: float,
         most_s: float) -> list[Spike]:
    """The spikes of ``used`` (samples at times ``t``, oldest first) on buckets of
    ``width_s`` (a training step and a half: each holds a step's top): a bucket whose
    peak tops the median of the three before it by ``margin`` or more starts one, and
    it ends at the last bucket before the peaks fall back at least half-way, within
    ``most_s``. Its height is its median bucket peak above the higher of the median
    peaks either side of it (three buckets each, fewer where the samples end), and at
    least ``margin``. A rise that has not fallen back is a step, or a spike still under
    way: neither is one yet."""
    keep = ~np.isnan(used)
    t, used = t[keep], used[keep]
    if t.size < 3 or width_s <= 0:
        return []
    number = np.floor((t[-1] - t) / width_s).astype(np.int64)
    number = number.max() - number                  # oldest bucket first
    starts = np.flatnonzero(np.concatenate(([True], number[1:] != number[:-1])))
    peaks = np.maximum.reduceat(used, starts)
    ends = np.append(starts[1:], t.size) - 1        # each bucket's last sample
    longest = max(1, int(most_s // width_s))
    out: list[Spike] = []
    j = 1
    while j < peaks.size - 1:
        before = float(np.median(peaks[max(0, j - 3):j]))
        rise = float(peaks[j]) - before
        if rise < margin:
            j += 1
            continue
        back = before + 0.5 * rise
        fell = next((m for m in range(j, min(peaks.size - 1, j + longest))
                     if peaks[m + 1] <= back), None)
        if fell is None:
            j += 1
            continue
        after = float(np.median(peaks[fell + 1:fell + 4]))
        height = float(np.median(peaks[j:fell + 1])) - max(before, after)
        if height >= margin:
            out.append(Spike(float(t[starts[j]]), float(t[ends[fell]]), height))
        j = fell + 1
    return out


def without(t: np.ndarray, used: np.ndarray, spikes: Iterable[Spike]) -> np.ndarray:
    """``used`` with the samples of the spikes unknown (NaN): what the envelope is."""
    out = None
    for s in spikes:
        inside = (t >= s.start_s) & (t <= s.end_s)
        if inside.any():
            if out is None:
                out = used.astype(float, copy=True)
            out[inside] = np.nan
    return used if out is None else out


def under_way(t: np.ndarray, used: np.ndarray, rate: float, width_s: float,
              span_s: float) -> float:
    """How far the newest bucket's peak stands above the envelope of ``span_s`` before,
    carried on at ``rate`` (the median of its three newest buckets then): the height of
    a spike that may be under way, about nothing on a steady climb. 0 when the samples
    do not reach that far back."""
    keep = ~np.isnan(used)
    t, used = t[keep], used[keep]
    if t.size < 3 or width_s <= 0:
        return 0.0
    centres, peaks = bucket_extremes(t, used, width_s, "max")
    level = peaks - rate * centres
    before = level[centres < t[-1] - span_s][-3:]
    if before.size == 0:
        return 0.0
    return max(0.0, float(level[-1] - np.median(before)))


def tallest(spikes: Iterable[Spike]) -> Spike | None:
    """The highest of the spikes (None: none)."""
    return max(spikes, key=lambda s: s.height, default=None)
