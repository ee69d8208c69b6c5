"""Peak-preserving min/max decimation: many samples down to two points per pixel column.

Averaging or striding a day of 1 Hz samples down to a plot's width hides the one-second
spike that caused an out-of-memory error. Here each bucket keeps its minimum and its
maximum (in the order they happened), so every peak survives at any zoom. Gaps (NaN,
a lost GPU) stay gaps: a bucket with no finite sample comes out NaN.
"""

from __future__ import annotations

import numpy as np


def minmax_decimate(x: np.ndarray, y: np.ndarray, buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``2 * buckets`` points that keep each bucket's minimum and maximum of ``y``."""
    n = len(x)
    if buckets < 1:
        raise ValueError("buckets must be at least 1")
    if n <= 2 * buckets:
        return x, y
    w = -(-n // buckets)                  # samples per bucket (the last one may be short)
    b = -(-n // w)
    pad = b * w - n
    nan = np.isnan(y)
    low = np.where(nan, np.inf, y)
    high = np.where(nan, -np.inf, y)
    if pad:
        low = np.concatenate([low, np.full(pad, np.inf)])
        high = np.concatenate([high, np.full(pad, -np.inf)])
    low = low.reshape(b, w)
    high = high.reshape(b, w)
    i_min = low.argmin(axis=1)
    i_max = high.argmax(axis=1)
    rows = np.arange(b)
    lows = low[rows, i_min]
    highs = high[rows, i_max]
    empty = ~np.isfinite(lows)
    lows[empty] = np.nan
    highs[empty] = np.nan
    first_is_max = i_max < i_min
    starts = rows * w
    ends = np.minimum(starts + w, n) - 1
    out_x = np.empty(2 * b, dtype=np.float64)
    out_y = np.empty(2 * b, dtype=np.float64)
    out_x[0::2] = x[starts]
    out_x[1::2] = x[ends]
    out_y[0::2] = np.where(first_is_max, highs, lows)
    out_y[1::2] = np.where(first_is_max, lows, highs)
    return out_x, out_y


def window_slice(t: np.ndarray, start_s: float, end_s: float) -> slice:
    """The index range of sorted times ``t`` within [start_s, end_s], one sample either side."""
    i = max(0, int(np.searchsorted(t, start_s, side="left")) - 1)
    j = min(len(t), int(np.searchsorted(t, end_s, side="right")) + 1)
    return slice(i, j)


def band_decimate(x: np.ndarray, y: np.ndarray, buckets: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per bucket of samples: (its middle time, mean, minimum, maximum) of ``y``, for a
    signal that ripples faster than the plot can show (bandwidth over minutes or hours):
    a mean line with the min/max band around it reads where a min/max zigzag is a solid
    block. At most ``buckets`` points; fewer samples come back as they are, with no band
    (minimum and maximum equal to the value). Buckets with no finite sample are NaN."""
    n = len(x)
    if buckets < 1:
        raise ValueError("buckets must be at least 1")
    if n <= buckets:
        return x, y, y, y
    w = -(-n // buckets)
    b = -(-n // w)
    pad = b * w - n
    values = np.asarray(y, dtype=np.float64)
    starts = np.arange(b) * w
    ends = np.minimum(starts + w, n) - 1
    mid = (x[starts] + x[ends]) / 2.0
    if not np.isnan(values).any():       # the usual case: plain reductions, no masks
        full = values[:(n // w) * w].reshape(-1, w)
        mean, low, high = full.mean(axis=1), full.min(axis=1), full.max(axis=1)
        if pad:
            tail = values[(n // w) * w:]
            mean = np.append(mean, tail.mean())
            low = np.append(low, tail.min())
            high = np.append(high, tail.max())
        return mid, mean, low, high
    if pad:
        values = np.concatenate([values, np.full(pad, np.nan)])
    values = values.reshape(b, w)
    finite = np.isfinite(values)
    counts = finite.sum(axis=1)
    sums = np.where(finite, values, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums / counts
    low = np.where(finite, values, np.inf).min(axis=1)
    high = np.where(finite, values, -np.inf).max(axis=1)
    empty = counts == 0
    low[empty] = np.nan
    high[empty] = np.nan
    return mid, mean, low, high


def bucket_starts(t: np.ndarray, width: float, origin: float = 0.0
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(bucket number of each run of samples, index of the run's first sample) for sorted
    times ``t`` cut into buckets ``[origin + k * width, origin + (k + 1) * width)``.

    Buckets fixed in time (not in sample count, as ``minmax_decimate`` cuts them) give
    the same points for the same time whatever window they are read in: what a plot
    that keeps its past as an image and draws only its newest columns needs."""
    if not len(t):
        return np.empty(0), np.empty(0, dtype=np.intp)
    first, last = (int(np.floor((v - origin) / width)) for v in (t[0], t[-1]))
    if t[0] < origin + first * width:        # rounding: the edges below decide
        first -= 1
    k = np.arange(first, last + 2)
    edges = np.searchsorted(t, origin + k * width, side="left")   # each bucket's start
    edges[0] = 0
    used = np.flatnonzero(edges[1:] > edges[:-1])                 # buckets with samples
    return k[used].astype(np.float64), edges[used]


def bucket_minmax(t: np.ndarray, y: np.ndarray, width: float, origin: float = 0.0
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Two points per time bucket (see ``bucket_starts``): its first and last sample's
    times, with its minimum and maximum of ``y`` in the order they happened. A bucket of
    one or two samples keeps them as they are (its gaps too); a longer one ignores NaN
    unless it has nothing else (a loss shorter than a bucket is not drawn).

    ``y`` may hold several series over the same times as rows (shape ``(lines, n)``):
    each row comes out as it would alone, for the cost of one."""
    n = len(t)
    _, starts = bucket_starts(t, width, origin)
    if not n:
        return np.empty(0), np.empty((*y.shape[:-1], 0))
    ends = np.append(starts[1:], n)          # exclusive
    last = ends - 1
    out_x = np.empty(2 * len(starts))
    out_y = np.empty((*y.shape[:-1], 2 * len(starts)))
    out_x[0::2] = t[starts]
    out_x[1::2] = t[last]
    out_y[..., 0::2] = y[..., starts]
    out_y[..., 1::2] = y[..., last]
    counts = ends - starts
    long = np.flatnonzero(counts > 2)
    if len(long):
        first_max, low, high = _ordered_extremes(y, starts[long], counts[long])
        out_y[..., 2 * long] = np.where(first_max, high, low)
        out_y[..., 2 * long + 1] = np.where(first_max, low, high)
    return out_x, out_y


_ROWS_AT_ONCE = 1 << 17    # padded values read in one go: more spill out of the CPU's cache


def _ordered_extremes(y: np.ndarray, starts: np.ndarray, counts: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(maximum came first, minimum, maximum) of the runs ``y[..., start:start + count]``,
    NaN ignored (both NaN where a run has nothing else). The runs are read as rows of
    one padded array (a run's last sample repeated, which moves no extreme), unless
    their lengths differ so much that the padding would cost more than the data."""
    m = int(counts.max())
    padded = len(counts) * m
    if y.ndim > 1 and (padded > 4 * int(counts.sum()) + 64 or padded * len(y) > _ROWS_AT_ONCE):
        rows = [_ordered_extremes(row, starts, counts) for row in y]
        return tuple(np.stack(parts) for parts in zip(*rows, strict=True))  # type: ignore
    if padded <= 4 * int(counts.sum()) + 64:
        index = np.minimum(starts[:, None] + np.arange(m), (starts + counts - 1)[:, None])
        rows = y[..., index]
        if np.isnan(np.add.reduce(rows, axis=None)):
            low_rows = np.where(np.isnan(rows), np.inf, rows)
            high_rows = np.where(np.isnan(rows), -np.inf, rows)
        else:                                  # the usual case: no copies
            low_rows = high_rows = rows
        at_min, at_max = low_rows.argmin(axis=-1), high_rows.argmax(axis=-1)
        low = np.take_along_axis(low_rows, at_min[..., None], axis=-1)[..., 0]
        high = np.take_along_axis(high_rows, at_max[..., None], axis=-1)[..., 0]
    else:
        runs = [y[a:a + c] for a, c in zip(starts.tolist(), counts.tolist(), strict=True)]
        low_runs = [np.where(np.isnan(r), np.inf, r) for r in runs]
        high_runs = [np.where(np.isnan(r), -np.inf, r) for r in runs]
        at_min = np.array([int(r.argmin()) for r in low_runs])
        at_max = np.array([int(r.argmax()) for r in high_runs])
        low = np.array([r[i] for r, i in zip(low_runs, at_min, strict=True)])
        high = np.array([r[i] for r, i in zip(high_runs, at_max, strict=True)])
    empty = ~np.isfinite(low)
    low[empty] = np.nan
    high[empty] = np.nan
    return at_max < at_min, low, high


def bucket_band(t: np.ndarray, y: np.ndarray, width: float, origin: float = 0.0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per time bucket (see ``bucket_starts``): (the middle of its first and last
    sample's times, mean, minimum, maximum) of ``y``, NaN where it has no finite
    sample: ``band_decimate`` with buckets fixed in time. ``y`` may hold several series
    over the same times as rows, as in ``bucket_minmax``."""
    n = len(t)
    _, starts = bucket_starts(t, width, origin)
    if not n:
        empty = np.empty((*y.shape[:-1], 0))
        return np.empty(0), empty, empty, empty
    ends = np.append(starts[1:], n)
    mid = (t[starts] + t[ends - 1]) / 2.0
    if not np.isnan(np.add.reduce(y, axis=None)):      # the usual case: plain reductions
        counts = np.diff(np.append(starts, n))
        sums = np.add.reduceat(y, starts, axis=-1)
        low = np.minimum.reduceat(y, starts, axis=-1)
        high = np.maximum.reduceat(y, starts, axis=-1)
    else:
        finite = np.isfinite(y)
        counts = np.add.reduceat(finite.astype(np.int32), starts, axis=-1)
        sums = np.add.reduceat(np.where(finite, y, 0.0), starts, axis=-1)
        low = np.minimum.reduceat(np.where(finite, y, np.inf), starts, axis=-1)
        high = np.maximum.reduceat(np.where(finite, y, -np.inf), starts, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums / counts
    none = np.broadcast_to(counts == 0, low.shape)
    low[none] = high[none] = np.nan
    return mid, mean, low, high
