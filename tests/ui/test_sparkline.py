"""A card's sparkline folds each new sample into its columns without redoing them; the
columns must always be what folding the whole history from scratch gives, whatever the
samples: gaps, unknown values, bursts of several rows, a ring that wraps."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuwatch.core.history import GPU_COLUMNS, Ring
from gpuwatch.ui.live.card_sparkline import Sparkline

TOTAL = 80e9

steps = st.lists(
    st.tuples(st.sampled_from([1.0, 1.0, 1.0, 0.5, 2.0, 7.0, 40.0]),     # time step, s
              st.one_of(st.none(), st.floats(0, TOTAL * 1.1)),         # used, or unknown
              st.integers(1, 3)),                                      # rows before a draw
    min_size=1, max_size=120)


def _row(t: float, used: float | None) -> list[float | None]:
    return [t if name == "timestamp_s" else used if name == "used_bytes" else
            TOTAL if name == "total_bytes" else None for name in GPU_COLUMNS]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=steps, capacity=st.sampled_from([50, 1000]), width=st.sampled_from([60, 202]))
def test_folding_sample_by_sample_gives_the_columns_of_a_fold_from_scratch(
        qtbot, rows, capacity, width):
    ring = Ring(capacity, GPU_COLUMNS)
    live = Sparkline(0)
    qtbot.addWidget(live)
    live.resize(width, Sparkline.HEIGHT)
    t = 1_000_000.0
    for step, used, burst in rows:
        for _ in range(burst):
            t += step
            ring.append_values(_row(t, used))
        live.update_from(ring, t)
        fresh = Sparkline(0)
        fresh.resize(width, Sparkline.HEIGHT)
        fresh.update_from(ring, t)
        assert live.columns().tolist() == fresh.columns().tolist()
        fresh.deleteLater()


def test_a_sample_in_the_newest_column_below_its_peak_asks_for_no_paint(qtbot):
    ring = Ring(1000, GPU_COLUMNS)
    line = Sparkline(0)
    qtbot.addWidget(line)
    line.resize(122, Sparkline.HEIGHT)        # 120 columns of 5 s
    t = 5 * math.floor(2_000_000 / 5)         # the start of a column
    ring.append_values(_row(t, 60e9))
    line.update_from(ring, t)
    asked: list[bool] = []
    line.update = lambda *a: asked.append(True)     # type: ignore[method-assign]
    ring.append_values(_row(t + 1, 50e9))     # same column, lower: the peak stands
    line.update_from(ring, t + 1)
    assert not asked
    ring.append_values(_row(t + 2, 79e9))     # same column, higher: a new pixel
    line.update_from(ring, t + 2)
    assert asked
