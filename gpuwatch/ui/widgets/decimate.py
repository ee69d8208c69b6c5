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
