"""The points the plot tiles draw: lines read and decimated together (every GPU's ring
holds the same times) come out exactly as each line read alone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PySide6.QtGui import QBrush, QColor, QPen

from gpuwatch.core.history import GPU_COLUMNS, Ring
from gpuwatch.ui.widgets.curve_canvas import Grid, Layer
from gpuwatch.ui.widgets.decimate import bucket_band, bucket_minmax
from gpuwatch.ui.widgets.tile_points import layers_points


def _ring(t: np.ndarray, used: np.ndarray, capacity: int | None = None,
          appended: bool = False) -> Ring:
    ring = Ring(capacity or len(t), GPU_COLUMNS)
    if appended:                      # row by row: a full ring wraps around its end
        for when, value in zip(t.tolist(), used.tolist(), strict=True):
            ring.append({"timestamp_s": when, "used_bytes": value})
    else:
        cols = {name: np.full(len(t), np.nan) for name in GPU_COLUMNS}
        cols["timestamp_s"], cols["used_bytes"] = t, used
        ring.load_columns(cols)
    return ring


def _same(a: tuple | None, b: tuple | None) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(x.shape == y.shape and np.array_equal(x, y, equal_nan=True)
                                    for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("kind", ["line", "mean", "band"])
@given(seed=st.integers(0, 2**32 - 1), dt=st.sampled_from([0.3, 1.0, 2.0, 12.0, 200.0]),
       back=st.integers(-60, 60), columns=st.integers(8, 300))
def test_lines_read_together_equal_each_line_read_alone(kind, seed, dt, back, columns) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 2500))
    t = 1.7e9 + np.cumsum(rng.choice([1.0, 1.0, 1.0, 0.5, 7.0, 300.0], size=n))
    rings = []
    for g in range(5):
        used = rng.normal(5e9, 1e9, n)
        if g == 1:
            used[rng.random(n) < 0.1] = np.nan          # lost for a while
        if g == 2:                                      # came later: other times
            rings.append(_ring(t[n // 3:], used[n // 3:]))
            continue
        if g == 3:                                      # wrapped around its end
            rings.append(_ring(t, used, capacity=max(2, n - 7), appended=n < 600))
            continue
        rings.append(_ring(t, used, capacity=n + 40))
    if kind == "line":
        layers = [Layer(r, "used_bytes", 2**30 * (k + 1), ("line", k), pen=QPen())
                  for k, r in enumerate(rings)]
    elif kind == "mean":
        layers = [Layer(r, "used_bytes", 1e9 + k, ("mean", k), pen=QPen(), mean=True)
                  for k, r in enumerate(rings)]
    else:
        layers = [Layer(r, "used_bytes", 1e9 * (k + 1), ("band", k), brush=QBrush(QColor("red")))
                  for k, r in enumerate(rings)]
    grid = Grid(dt, 300, 7.0, 0.03, 0.4, 1.0)
    c1 = int(t[-1] / dt) + back
    c0 = c1 - columns
    together = layers_points(layers, grid, c0, c1)
    alone = [layers_points([layer], grid, c0, c1)[0] for layer in layers]
    assert all(_same(a, b) for a, b in zip(together, alone, strict=True))
    assert any(points is not None for points in together)


@given(seed=st.integers(0, 2**32 - 1), width=st.sampled_from([0.7, 2.0, 5.0, 30.0]))
def test_decimating_rows_equals_decimating_each_row(seed, width) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    t = np.cumsum(rng.choice([1.0, 0.5, 7.0, 60.0], size=n))
    rows = rng.normal(size=(3, n))
    rows[rng.random((3, n)) < 0.15] = np.nan
    rows[1, : n // 2] = np.nan
    for decimate in (bucket_minmax, bucket_band):
        whole = decimate(t, rows, width)
        for r in range(3):
            alone = decimate(t, rows[r], width)
            for a, b in zip(alone, whole, strict=True):
                assert np.array_equal(a, b if b.ndim == 1 else b[r], equal_nan=True)


def test_a_ring_with_older_rows_before_a_pause_is_read_alone() -> None:
    """A GPU seen only since sampling resumed after a pause shares its times with the
    others from then on; they alone have rows before the pause, which their lines into
    the window reach back to."""
    t = 1.7e9 + np.concatenate([np.arange(500.0), 1000 + np.arange(500.0)])
    used = np.linspace(1e9, 2e9, len(t))
    late = Layer(_ring(t[500:], used[500:]), "used_bytes", 1e9, ("line", 0), pen=QPen())
    full = Layer(_ring(t, used), "used_bytes", 1e9, ("line", 1), pen=QPen())
    grid = Grid(1.0, 300, 7.0, 0.03, 0.4, 1.0)
    c0 = int(t[500]) - 1
    together = layers_points([late, full], grid, c0, c0 + 100)
    alone = layers_points([full], grid, c0, c0 + 100)[0]
    assert _same(together[1], alone) and together[1][0][0] < t[500]   # the older point
