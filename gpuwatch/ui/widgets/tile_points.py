"""The points a run of canvas tiles draws: each line's samples over the tiles' columns,
read in whole time buckets and decimated to the columns, in device pixels.

Every GPU's ring holds the same sample times, so the lines of a plot are read and
decimated together: the bucket edges are found once, and the values of all lines go
through each numpy operation as the rows of one array (one call instead of one a
line). Each row comes out exactly as that line read alone would (the same operations,
element by element); a ring whose times differ is read alone.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from gpuwatch.core.history import Ring
from gpuwatch.ui.widgets.decimate import bucket_band, bucket_minmax

if TYPE_CHECKING:
    from gpuwatch.ui.widgets.curve_canvas import Grid, Layer

Points = tuple[np.ndarray, ...]   # (x in columns, then y rows: the line, or a band's low and high)


def layers_points(layers: list[Layer], grid: Grid, c0: int, c1: int) -> list[Points | None]:
    """The points of each layer (None: nothing to draw) from column ``c0`` to ``c1``,
    with the whole bucket either side; layers of one kind whose rings share their
    sample times over the span are worked out together."""
    out: list[Points | None] = [None] * len(layers)
    groups: dict[tuple, list[int]] = {}
    for k, layer in enumerate(layers):
        if len(layer.ring):
            kind = (layer.column, layer.bucket_columns, layer.brush is not None, layer.mean)
            groups.setdefault(kind, []).append(k)
    t0, t1 = c0 * grid.dt, c1 * grid.dt
    for members in groups.values():
        width = grid.dt * layers[members[0]].bucket_columns
        while members:
            lead = layers[members[0]]
            rows, start, end, reach, found = _span(lead.ring, lead.column, t0, t1, width)
            t = rows["timestamp_s"]
            together, values, rest = [members[0]], [rows[lead.column]], []
            for k in members[1:]:
                ring = layers[k].ring
                other = ring.since(t0 - reach, ("timestamp_s", layers[k].column))
                ts = other["timestamp_s"]
                if len(ts) == len(t) and (found or len(ring) == len(ts)) \
                        and np.array_equal(ts, t):
                    together.append(k)
                    values.append(other[layers[k].column])
                else:
                    rest.append(k)
            members = rest
            if end <= start:
                continue
            span_t = np.array(t[start:end])
            block = np.empty((len(together), end - start))
            for row, v in enumerate(values):
                block[row] = v[start:end]
            block /= np.array([layers[k].scale for k in together])[:, None]
            for k, points in zip(together, _decimate(layers[together[0]], grid, span_t,
                                                     block, width), strict=True):
                out[k] = points
    return out


def _decimate(layer: Layer, grid: Grid, t: np.ndarray, values: np.ndarray, width: float
              ) -> list[Points]:
    """The points of each row of ``values`` (samples at times ``t``) for layers of
    ``layer``'s kind."""
    if layer.brush is not None or layer.mean:
        mid, mean, low, high = bucket_band(t, values, width)
        x = mid / grid.dt
        if layer.brush is not None:
            return [(x, r0, r1) for r0, r1 in zip(_rows(low, grid), _rows(high, grid),
                                                   strict=True)]
        return [(x, r) for r in _rows(mean, grid)]
    x, y = bucket_minmax(t, values, width)
    x = x / grid.dt
    return [(x, r) for r in _rows(y, grid)]


def _rows(values: np.ndarray, grid: Grid) -> np.ndarray:
    return (grid.y_top - values) / grid.y_per_px + grid.frac_y


def _edge(t: float, width: float) -> float:
    """The start of the bucket holding time ``t``, as ``bucket_starts`` cuts them."""
    k = math.floor(t / width)
    if t < k * width:
        k -= 1
    elif t >= (k + 1) * width:
        k += 1
    return k * width


def _span(ring: Ring, column: str, t0: float, t1: float, width: float
          ) -> tuple[dict[str, np.ndarray], int, int, float, bool]:
    """(rows read, first, end) of the samples from ``t0`` to ``t1`` in whole buckets,
    with a whole bucket more either side of the ones holding the samples just outside:
    whichever span asks, a bucket gets all its samples, and the points next to the span
    are there. Also the reach back from ``t0`` the rows were read from, and whether the
    samples before ``t0`` were found in it (else the rows are the whole ring)."""
    reach = 4 * width
    while True:
        rows = ring.since(t0 - reach, ("timestamp_s", column))
        t = rows["timestamp_s"]
        whole = len(t) == len(ring)
        i = int(np.searchsorted(t, t0, side="left")) - 1          # the sample before t0
        j = -1 if i < 0 else int(np.searchsorted(t, _edge(t[i], width), side="left")) - 1
        if j >= 0 or whole:
            break
        reach *= 8          # the samples before t0 lie further back (a gap, a pause)
    start = int(np.searchsorted(t, _edge(t[j], width), side="left")) if j >= 0 else 0
    tail = t[start:]
    end = int(np.searchsorted(tail, t1, side="right"))               # the sample after t1
    if end < len(tail):
        end = int(np.searchsorted(tail, _edge(tail[end], width) + width, side="left"))
    if end < len(tail):
        end = int(np.searchsorted(tail, _edge(tail[end], width) + width, side="left"))
    return rows, start, start + end, reach, j >= 0
