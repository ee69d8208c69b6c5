"""Robust trend fitting for sawtooth-shaped memory: bucket extremes, Theil–Sen, Kendall.

Training memory rises and falls every step, so a least-squares line through raw samples
is dominated by where in the step the samples happened to fall. Instead we take the
maximum (or minimum) of each time bucket, which turns the sawtooth into its envelope,
and fit that with the Theil–Sen estimator (the median of all pairwise slopes: a step or
a spike moves it little). Kendall's tau over the same pairs says how consistently the
envelope climbs: ~1 for a steady ramp, ~0.5 for a single step, ~0 for a flat sawtooth.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True, slots=True)
class Trend:
    slope: float          # units per second
    intercept: float      # value at t = t_ref
    t_ref: float
    tau: float            # Kendall's tau in [-1, 1]
    n: int                # buckets used
    span_s: float         # time from the first to the last bucket

    def at(self, t: float) -> float:
        return self.intercept + self.slope * (t - self.t_ref)


_TRUE = np.ones(1, dtype=bool)


def bucket_extremes(t: np.ndarray, y: np.ndarray, width_s: float,
                    mode: str = "max") -> tuple[np.ndarray, np.ndarray]:
    """(time of each bucket's centre, its max or min) over buckets of ``width_s``.

    NaN values (unknown) are dropped first; buckets are aligned to the last sample so
    the newest bucket is complete.
    """
    keep = ~np.isnan(y)
    t, y = t[keep], y[keep]
    if t.size == 0:
        return t, y
    idx = np.floor((t[-1] - t) / width_s).astype(np.int64)
    idx = idx.max() - idx                     # oldest bucket first
    # (np.concatenate, not np.r_: the index trick costs more than the rest together)
    starts = np.flatnonzero(np.concatenate((_TRUE, idx[1:] != idx[:-1])))
    reduce = np.maximum if mode == "max" else np.minimum
    values = reduce.reduceat(y, starts)
    counts = np.diff(np.append(starts, t.size))
    centres = np.add.reduceat(t, starts) / counts
    return centres, values


@lru_cache(maxsize=256)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i < j) of n points; memoised, as n repeats tick after tick."""
    i, j = np.triu_indices(n, k=1)
    i.setflags(write=False)
    j.setflags(write=False)
    return i, j


def theil_sen(t: np.ndarray, y: np.ndarray, tie: float = 0.0) -> Trend | None:
    """The Theil–Sen line and Kendall's tau of the points, or None with under 3 points.

    Pairs whose values differ by no more than ``tie`` count as ties for tau, so
    sampling jitter on a flat envelope does not read as a trend.
    """
    n = t.size
    if n < 3:
        return None
    i, j = _pairs(n)
    dt = t[j] - t[i]
    dy = y[j] - y[i]
    ok = dt > 0
    pairs = int(np.count_nonzero(ok))
    if not pairs:
        return None
    if pairs < ok.size:                      # repeated times: those pairs have no slope
        dt, dy = dt[ok], dy[ok]
    slope = _median(dy / dt)
    tau = float((np.count_nonzero(dy > tie) - np.count_nonzero(dy < -tie)) / pairs)
    t_ref = float(t[-1])
    intercept = _median(y - slope * (t - t_ref))
    return Trend(slope, intercept, t_ref, tau, n, float(t[-1] - t[0]))


def _median(a: np.ndarray) -> float:
    """``np.median`` of a 1-d array, without its generic machinery (a partition around
    the middle; the rules take a few hundred medians a second)."""
    n = a.size
    if n == 0 or np.isnan(a).any():
        return float("nan")
    k = n // 2
    if n % 2:
        return float(np.partition(a, k)[k])
    low, high = np.partition(a, (k - 1, k))[k - 1 : k + 1]
    return float((low + high) / 2)
