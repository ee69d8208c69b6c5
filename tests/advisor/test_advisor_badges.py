"""A hint's badge (``Hint.badge``) names its reason in a few words and a figure, stays
badge-sized for any figure, and is what the rules put on the hints they open."""

from __future__ import annotations

import re

from advisor_support import GIB, MIB
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwatch.advisor import badges

figures = st.one_of(st.floats(allow_nan=False), st.integers(-2**63, 2**63))


def test_badges_name_the_reason_with_its_figure() -> None:
    assert badges.oom(130.0, 5 * GIB, full_now=False) == "OOM in ~2 min"
    assert badges.oom(170.0, 5 * GIB, full_now=False) == "OOM in ~3 min"
    assert badges.oom(None, 1.2 * GIB, full_now=False) == "1.2 GiB FREE"
    assert badges.oom(1.0, 0, full_now=True) == "FULL"
    assert badges.leak(71 * MIB / 60) == "LEAK +71 MiB/min"
    assert badges.leak(2 * GIB / 60) == "LEAK +2.0 GiB/min"
    assert badges.fragmented(3.1 * GIB) == "FRAGMENTED 3.1 GiB"
    assert badges.fragmented(None) == badges.fragmented(-1.0) == "FRAGMENTED"
    assert badges.died(71310) == "OOM · pid 71310"
    assert badges.over(2 * GIB) == "SHARED +2.0 GiB over"
    assert badges.short(3 * GIB) == "WON'T FIT: 3.0 GiB short"
    assert badges.LOST == "LOST"


@settings(max_examples=40, deadline=None)
@given(st.floats(allow_nan=False), figures, figures, st.booleans())
def test_any_figure_gives_a_short_badge(seconds, size, rate, full_now) -> None:
    """Forecasts of centuries, rates of exabytes, negative or infinite figures: the badge
    still reads, short, with no "nan" or "inf" in it."""
    for text in (badges.oom(seconds, size, full_now), badges.oom(None, size, full_now),
                 badges.leak(rate), badges.fragmented(size), badges.over(size),
                 badges.short(size)):
        assert text and len(text) <= 32, text
        assert not re.search(r"nan|inf", text, re.IGNORECASE), text


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 1e12))
def test_a_forecast_lead_is_rounded_and_never_zero(seconds) -> None:
    assert re.fullmatch(r"~[1-9]\d* (s|min|h|d)", badges.short_duration(seconds))
