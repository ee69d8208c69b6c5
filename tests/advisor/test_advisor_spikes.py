"""Spikes of the peak envelope (``gpuwatch/advisor/spikes.py``): memory up at once and
back within minutes, an evaluation's buffers. Found on any envelope, flat or climbing,
under any sawtooth, with about their height; a climb, a step that holds, a checkpoint's
dip and a short step beating against the sampler are none. Buckets and margin as the
rule sets them: a training step and a half (10 s at least) and ``spikes.margin``, above
the ties, the sampled tops' scatter and that beat. And the advisor on whole runs: a
climb whose card a later evaluation fills is warned in time."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from generated_shapes import (
    RunSpec,
    Shape,
    assert_warned_in_time,
    climbs_filled_by_an_evaluation,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpuwatch.advisor import spikes
from gpuwatch.advisor.climb import sawtooth

TOTAL = 80.0 * 1024**3
TIE = 0.002 * TOTAL
MOST_S = 240.0
SECONDS = 900


def sampled(seed: int) -> np.ndarray:
    """One sample a second, each at an instant that wanders across its second."""
    rng = np.random.default_rng(seed)
    return np.arange(SECONDS, dtype=float) + rng.uniform(0.0, 1.0, SECONDS)


def training(t: np.ndarray, period: float, size: float, per_min: float) -> np.ndarray:
    """A sawtooth of ``size`` (of the card) under ``period`` s steps, on a level that
    climbs ``per_min`` of the card a minute."""
    return (0.3 + per_min * t / 60 + size * (t % period) / period) * TOTAL


def bars(t: np.ndarray, used: np.ndarray) -> tuple[float, float]:
    """(bucket width, margin) as the rule sets them."""
    saw = sawtooth(t, used, TIE)
    width = max(10.0, 1.5 * saw.period_s)
    return width, spikes.margin(TIE, saw, width)


steps = st.tuples(st.floats(1.0, 20.0), st.floats(0.0, 0.2))      # period, size
climbs = st.floats(0.0, 0.005)                                      # of the card a minute


@given(step=steps, per_min=climbs, height=st.floats(0.03, 0.15),
       start=st.floats(300, 500), seed=st.integers(0, 2**16), data=st.data())
def test_a_spike_is_found_with_about_its_height(step: tuple[float, float], per_min: float,
                                                 height: float, start: float, seed: int,
                                                 data: st.DataObject) -> None:
    """A spike of 3–15 % of the card for up to 3 min, on a level that is flat or climbs,
    under any sawtooth: found where it is. It holds two whole buckets at least (an
    evaluation outlasts a training step) and stands clear of twice the margin above what
    the level climbs while it lasts and a bucket or two either side."""
    period, size = step
    t = sampled(seed)
    width, margin = bars(t, training(t, period, size, per_min))
    lasts = data.draw(st.floats(2.5 * width, max(2.5 * width, 180.0)))
    climbed = per_min * TOTAL * (lasts + 4 * width) / 60
    assume(height * TOTAL - climbed >= 2 * margin)
    inside = (t >= start) & (t < start + lasts)
    used = training(t, period, size, per_min) + np.where(inside, height * TOTAL, 0.0)
    found = spikes.find(t, used, width, margin, MOST_S)
    assert len(found) == 1, found
    s = found[0]
    near = width + 1.0       # a bucket, and a sample past its edge
    assert abs(s.start_s - start) <= near and abs(s.end_s - (start + lasts)) <= near
    # about its height: less that climb, within the scatter of a sampled top (a bucket
    # of the spike that catches its steps low is the lower side's)
    assert height * TOTAL - climbed - 2 * margin <= s.height <= height * TOTAL + margin


def _no_spike_shapes(rng: np.random.Generator, t: np.ndarray) -> dict[str, np.ndarray]:
    """One drawing of each shape that holds no spike, on the same steps: a steady climb
    of up to 2 % of the card a minute; a level (flat or creeping) with a step up that
    holds (a process arriving); the same with a checkpoint's dip instead (no steps for
    5–60 s: a fall and a rise, not a rise and a fall)."""
    period = 1.0 if rng.random() < 0.3 else rng.uniform(1.0, 20.0)
    size = rng.uniform(0.0, 0.2)
    creep = rng.uniform(0.0, 0.005)
    level = training(t, period, size, creep)
    at, lasts = rng.uniform(100, 800), rng.uniform(5, 60)
    return {
        "climb": training(t, period, size, rng.uniform(0.0, 0.02)),
        "level": level,
        "step": level + np.where(t >= at, rng.uniform(0.03, 0.3) * TOTAL, 0.0),
        "dip": np.where((t >= at) & (t < at + lasts), (0.3 + creep * t / 60) * TOTAL, level),
    }


def _beating(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A level under a step of 1–3 s whose clock wanders against the sampler's, sampled
    as the generated runs are (``generated_shapes``): each step is seen at the same few
    points for minutes, and the sampled tops beat by up to half the sawtooth."""
    t = np.arange(SECONDS, dtype=float)
    seen = t + 0.5 * ((t * 0.6180339887) % 1.0)
    shape = Shape(start_s=0.0, end_s=None, context=0.3, level=0.3, warmup="linear",
                  warmup_s=10.0, steps=2, period_s=rng.uniform(1.0, 3.0),
                  amplitude=rng.uniform(0.02, 0.3), phase_s=rng.uniform(0.0, 60.0))
    return seen, shape.demand(seen) * TOTAL


def test_shapes_without_a_spike_show_none() -> None:
    """A climb, a level, a step that holds, a checkpoint's dip, under steps of 1–20 s of
    up to 20 % of the card, and a level under a short step that beats against the
    sampler: 400 drawings each, no spike. (Not a Hypothesis property: a bucket's peak
    falls short of the steps' top by chance, and a search over tens of thousands of
    drawings finds a run of buckets that all did, about once in 10⁵ bucket positions;
    3,000 drawings of each shape found none.)"""
    rng = np.random.default_rng(20261207)
    found: dict[str, int] = {}
    for _ in range(400):
        t = sampled(int(rng.integers(0, 2**16)))
        drawn = {name: (t, used) for name, used in _no_spike_shapes(rng, t).items()}
        drawn["beat"] = _beating(rng)
        for name, (at, used) in drawn.items():
            width, margin = bars(at, used if name != "dip" else np.nan_to_num(used))
            found[name] = found.get(name, 0) + bool(spikes.find(at, used, width, margin,
                                                                MOST_S))
    assert found == {"climb": 0, "level": 0, "step": 0, "dip": 0, "beat": 0}


@given(step=steps, per_min=st.floats(0.0, 0.1), seed=st.integers(0, 2**16))
def test_nothing_is_under_way_on_a_steady_climb(step: tuple[float, float], per_min: float,
                                               seed: int) -> None:
    """On a steady climb the newest peak is where the envelope before, carried on at the
    climb's pace, says it is: no spike under way, within a sampled top's scatter and
    what the climb adds over a bucket (a bucket's highest top falls anywhere in its last
    step)."""
    period, size = step
    t = sampled(seed)
    used = training(t, period, size, per_min)
    width, margin = bars(t, used)
    rate = per_min * TOTAL / 60
    assert spikes.under_way(t, used, rate, width, MOST_S) <= margin + rate * width


@given(step=steps, per_min=climbs, height=st.floats(0.03, 0.15), seed=st.integers(0, 2**16))
def test_a_spike_under_way_is_measured(step: tuple[float, float], per_min: float,
                                       height: float, seed: int) -> None:
    """While a spike is held (its newest minute), how far it stands above the envelope
    before is its height, within a sampled top's scatter and a tie."""
    period, size = step
    t = sampled(seed)
    width, margin = bars(t, training(t, period, size, per_min))
    used = training(t, period, size, per_min) + np.where(t >= SECONDS - 60, height * TOTAL, 0.)
    rate = per_min * TOTAL / 60
    assert abs(spikes.under_way(t, used, rate, width, MOST_S) - height * TOTAL) <= margin + TIE


def test_without_leaves_the_spikes_out_and_the_rest_alone() -> None:
    t = np.arange(100, dtype=float)
    used = np.full(100, 5.0)
    out = spikes.without(t, used, [spikes.Spike(10.0, 19.0, 1.0), spikes.Spike(50.0, 50.0, 1)])
    assert np.isnan(out[10:20]).all() and np.isnan(out[50])
    assert np.count_nonzero(np.isnan(out)) == 11 and not np.isnan(used).any()
    assert spikes.without(t, used, []) is used
    assert spikes.tallest([]) is None
    assert spikes.tallest([spikes.Spike(0, 1, 2.0), spikes.Spike(5, 6, 3.0)]).height == 3.0


@given(step=steps, height=st.floats(0.1, 0.6), lasts=st.floats(30, 120),
       seed=st.integers(0, 2**16))
def test_a_spike_at_the_first_samples_is_found_there(step: tuple[float, float],
                                                     height: float, lasts: float,
                                                     seed: int) -> None:
    """A process that comes and goes in a run's first minutes (a visitor holding half the
    card): with nothing before the samples, one bucket before it will do (cut from a
    longer history, the oldest bucket may be a part of one: three are asked for)."""
    period, size = step
    t = sampled(seed)
    width, margin = bars(t, training(t, period, size, 0.0))
    assume(lasts >= 1.5 * width and height * TOTAL >= 2 * margin)     # as above
    start = width + 1.0
    used = training(t, period, size, 0.0) + np.where((t >= start) & (t < start + lasts),
                                                     height * TOTAL, 0.0)
    found = spikes.find(t, used, width, margin, MOST_S, first=True)
    assert len(found) == 1 and abs(found[0].start_s - start) <= width + 1.0, found


# The advisor on whole runs: a climb whose card is filled by a recurring evaluation is
# warned in time. Each spike is left out of the envelope (before, it stood above the climb
# for minutes, and no new high could be made), and the tallest of late is counted on top
# of the climb's level: the card is full when the level is a spike's height short of it.
@settings(max_examples=6, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(climbs_filled_by_an_evaluation())
def test_a_climb_filled_by_its_next_evaluation_is_warned_in_time(spec: RunSpec) -> None:
    assert_warned_in_time(spec)


# Two of the family, drawn on the code before spikes were left out, where it warned late:
# a 36-minute drift under 42 s steps (462 s before full, 520 s owed) and a 24-minute ramp
# under 3 s steps beside another process (381 s, 415 s owed).
FILLED = [RunSpec.from_json(json.loads(line)) for line in
          (Path(__file__).with_name("data") / "evaluation_filled.jsonl").read_text()
          .splitlines()]


@pytest.mark.parametrize("spec", FILLED, ids=["drift", "ramp"])
def test_climbs_filled_by_an_evaluation_once_warned_late_are_in_time(spec: RunSpec) -> None:
    assert_warned_in_time(spec)
