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

from gpuwatch.advisor.climb import Sawtooth
from gpuwatch.advisor.trend import bucket_extremes

SIDE = 3                 # buckets either side of a spike that its height is measured from


@dataclass(frozen=True, slots=True)
class Spike:
    start_s: float      # its first sample (a timestamp)
    end_s: float        # its last
    height: float       # bytes above the envelope either side of it


def find(t: np.ndarray, used: np.ndarray, width_s: float, margin: float,
         most_s: float, first: bool = False) -> list[Spike]:
    """The spikes of ``used`` (samples at times ``t``, oldest first) on buckets of
    ``width_s`` (a training step and a half: each holds a step's top).

    A bucket whose peak tops each of the three before the one before it by ``margin``
    or more starts one. It ends at the last bucket before the peaks fall back at least
    half-way from its top to the level before, and stay there, within ``most_s``. Its
    height is its highest bucket peak above the level either side: the highest peak of
    three buckets, past the one next to it (which may hold a part of it), and at least
    ``margin``. Its buckets are those above that level (not a climb's run-up that the
    rise began with). Each side's highest peak, not its median: a bucket's peak falls
    short of the steps' top now and then, and a checkpoint's dip (no steps for a while)
    is not what a spike fell back to. A rise that has not fallen back is a step, or a
    spike still under way: neither is one yet. ``first``: the samples are the first
    there are, so fewer buckets before a spike will do (a process that comes and goes
    at the start)."""
    keep = ~np.isnan(used)
    t, used = t[keep], used[keep]
    if t.size < 3 or width_s <= 0:
        return []
    if first:            # the oldest sample is where the samples begin: whole buckets
        number = np.floor((t - t[0]) / width_s).astype(np.int64)    # from there on,
        whole = number < number[-1]          # the newest, a part of one, left out (it
        t, used, number = t[whole], used[whole], number[whole]   # may hold a step's low)
        if t.size < 3:
            return []
    else:                # cut from a longer history: whole buckets back from the newest
        number = np.floor((t[-1] - t) / width_s).astype(np.int64)
        number = number.max() - number              # oldest bucket first
    starts = np.flatnonzero(np.concatenate(([True], number[1:] != number[:-1])))
    peaks = np.maximum.reduceat(used, starts)
    ends = np.append(starts[1:], t.size) - 1        # each bucket's last sample
    longest = max(1, int(most_s // width_s))
    out: list[Spike] = []
    clear = np.ones(peaks.size, dtype=bool)       # buckets of no spike found
    newest: tuple[int, int, float] | None = None   # its first and last bucket, level before
    # three buckets before the one before it (the oldest may be a part of one), or, from
    # the first samples, whatever came before: at first, the first sample
    j = 0 if first else SIDE + 1
    while j < peaks.size - 1:
        earlier = peaks[:max(1, j - 1)][clear[:max(1, j - 1)]][-SIDE:]
        before = (float(used[0]) if j == 0 else
                  float(earlier.max()) if earlier.size else float(peaks[j - 1]))
        rise = float(peaks[j]) - before
        if rise < margin:
            j += 1
            continue
        # fallen back half-way from its top so far to the level before (a climb goes
        # on beneath it): the next bucket, and the one after where there is one (a
        # bucket of the spike may catch its steps low; a real fall holds)
        tops = np.maximum.accumulate(peaks[j:j + longest])
        fell = next((m for m in range(j, min(peaks.size - 1, j + longest))
                     if peaks[m + 1:m + 3].max() <= 0.5 * (tops[m - j] + before)), None)
        if fell is None:
            j += 1
            continue
        begin = j
        if newest is not None and newest[1] == j - 1:   # straight after one: the same
            begin, before = newest[0], newest[2]         # spike, cut short
            out.pop()
        rest = peaks[fell + 2:fell + 2 + SIDE]
        after = float(rest.max() if rest.size else peaks[fell + 1])
        # its highest bucket: one at either end may hold only a part of it, and the
        # highest sample of a bucket is never above the top it saw
        level = max(before, after)
        height = float(peaks[begin:fell + 1].max()) - level
        if height >= margin:
            # its buckets: those above the level either side (not a climb's run-up
            # that a rise began with, and that the level after has passed)
            above = np.flatnonzero(peaks[begin:fell + 1] >= level + 0.5 * margin)
            lo, hi = begin + int(above[0]), begin + int(above[-1])
            clear[lo:hi + 1] = False
            out.append(Spike(float(t[starts[lo]]), float(t[ends[hi]]), height))
            newest = (lo, fell, before)
        j = fell + 1
    return out


def margin(tie: float, saw: Sawtooth, width_s: float) -> float:
    """How far a bucket's peak must stand above those either side to start a spike.

    Three ties; four times the scale of a bucket's peak falling short of the steps' top
    by chance (``Sawtooth.top_noise``: the shortfall of the highest of n samples of a
    step has an exponential tail, and at three times its scale a flat sawtooth's buckets
    started a spike now and then); and the shortfall of a step the sampler keeps
    catching at the same few points. Under a step of a sample or three, each step is
    seen at one to three points, and as the step's clock wanders against the sampler's
    those points drift: the sampled tops beat, up and down by as much as half the
    sawtooth over minutes, and a beat's crest is a rise and a fall. Such a step is seen
    at half its size and twice its period (a 1 s step of 21 % sampled each second: 11 %
    every 2.1 s), so the bar is the size seen, times twice the samples' spacing over
    the period seen, up to all of it."""
    locked = (saw.size * min(1.0, 2 * saw.spacing_s / saw.period_s)
              if saw.period_s > 0 else 0.0)
    return max(3 * tie, 4 * saw.top_noise(width_s), locked)


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
    """How far the newest peak (the higher of the last two buckets') stands above the
    envelope of ``span_s`` before (the highest of its three newest buckets then), carried
    on at ``rate``: the height of a spike that may be under way, about nothing on a
    steady climb. 0 when the samples do not reach that far back."""
    keep = ~np.isnan(used)
    t, used = t[keep], used[keep]
    if t.size < 3 or width_s <= 0:
        return 0.0
    centres, peaks = bucket_extremes(t, used, width_s, "max")
    level = peaks - rate * centres
    before = level[centres < t[-1] - span_s][-3:]
    if before.size == 0:
        return 0.0
    # the higher of each side's buckets: any one may catch the steps low
    return max(0.0, float(level[-2:].max() - before.max()))


def tallest(spikes: Iterable[Spike]) -> Spike | None:
    """The highest of the spikes (None: none)."""
    return max(spikes, key=lambda s: s.height, default=None)
