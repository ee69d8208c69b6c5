"""The promises signals make to the simulation: a flat span holds one value exactly, and
a straight piece is evaluated by the same operations as ``at``."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.telemetry.sim.signals import Constant, Points, Sawtooth, Spikes, Wave

times_ = st.floats(0, 1e6, allow_nan=False)
values_ = st.sampled_from([0.0, 1.0, 1.0, 2.5, 1e9, 1e9, 3.3e10])


@st.composite
def point_lists(draw) -> Points:
    ts = sorted(draw(st.sets(times_, min_size=1, max_size=8)))
    return Points(tuple(ts), tuple(draw(values_) for _ in ts))


def inside(lo: float, hi: float, draw) -> float:
    """A time in [lo, hi] (closed), towards the ends as often as not."""
    lo_f, hi_f = max(lo, -1e7), min(hi, 1e7)
    return draw(st.one_of(st.just(lo_f), st.just(hi_f), st.floats(lo_f, hi_f)))


@given(point_lists(), st.floats(-10, 1.1e6, allow_nan=False), st.data())
def test_a_flat_span_holds_the_value(points, t, data):
    span = points.flat_span(t)
    if span is None:
        return
    lo, hi = span
    assert lo <= t <= hi
    x = inside(lo, hi, data.draw)
    assert points.at(x) == points.at(t)


@given(point_lists(), st.floats(-10, 1.1e6, allow_nan=False), st.data())
def test_a_straight_piece_is_at_s_own_arithmetic(points, t, data):
    lo, hi, v0, rise, t0, run = points.segment(t)
    assert lo <= t < hi
    x = data.draw(st.one_of(st.just(t), st.floats(max(lo, -1e7), min(hi, 1e7),
                                                  exclude_max=True)))
    if lo <= x < hi:
        assert v0 + rise * (x - t0) / run == points.at(x)


@given(st.floats(-10, 1e6, allow_nan=False))
def test_generators_without_swing_are_flat_for_ever(t):
    for flat in (Constant(3.0), Sawtooth(2.0, 2.0, 5.0), Spikes(1.0, 1.0, 4.0, 1.0),
                 Wave(7.0, 0.0, 3.0)):
        assert flat.flat_span(t) == (-math.inf, math.inf)
        assert flat.at(t) == flat.at(0.0)
    for moving in (Sawtooth(1.0, 2.0, 5.0), Sawtooth(2.0, 2.0, 5.0, 0.1),
                   Spikes(1.0, 2.0, 4.0, 1.0), Wave(7.0, 1.0, 3.0)):
        assert moving.flat_span(t) is None
