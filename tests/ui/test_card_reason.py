"""A card's badge names the reason of its worst hint, from the hint's figures; a death
keeps its forecast's severity until seen."""

from __future__ import annotations

import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwatch.advisor import badges
from gpuwatch.core.hints import Hint, Severity
from gpuwatch.ui.live.card_reason import badge_text, card_reasons, clock, hint_sentence
from gpuwatch.ui.live.post_mortem import FORECAST_LINK_S, PostMortems
from gpuwatch.ui.widgets import theme
from tests.ui.conftest import feed

MiB, GiB = 2**20, 2**30
numbers = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                    st.integers(-2**63, 2**63))


def _hint(code: str, severity: Severity = Severity.WARNING, gpu: int = 0,
          pid: int | None = 71310, at: float = 1000.0, badge: str | None = None,
          **values: float | None) -> Hint:
    return Hint(code=code, severity=severity, gpu_index=gpu, pid=pid, title=f"{code} title",
                evidence=("first sentence", "second sentence"), opened_at_s=at,
                updated_at_s=at, values=tuple(values.items()), badge=badge)


def test_badges_are_the_advisors_words() -> None:
    """One source of truth: the card shows ``Hint.badge`` as the advisor worded it."""
    for code, words in (("oom-risk", badges.oom(130.0, 0, full_now=False)),
                        ("memory-leak", badges.leak(71 * MiB / 60)),
                        ("fragmentation", badges.fragmented(3.1 * GiB)),
                        ("gpu-lost", badges.LOST)):
        assert badge_text(_hint(code, badge=words)) == words
    assert [badges.oom(130.0, 0, False), badges.leak(71 * MiB / 60),
            badges.fragmented(3.1 * GiB)] == \
        ["OOM in ~2 min", "LEAK +71 MiB/min", "FRAGMENTED 3.1 GiB"]


def test_a_death_gets_its_local_time_and_a_hint_without_words_its_severity() -> None:
    died = 1_700_000_000.0
    death = _hint("likely-oom", badge=badges.died(71310), exited_at_s=died)
    assert badge_text(death) == f"OOM {clock(died)} · pid 71310"
    assert badge_text(_hint("likely-oom", badge=badges.died(71310))) == "OOM · pid 71310"
    assert badge_text(_hint("something-new", Severity.CRITICAL)) == "CRITICAL"
    assert badge_text(_hint("something-new")) == "WARNING"


@settings(max_examples=40, deadline=None)
@given(numbers)
def test_a_death_at_any_time_gives_a_badge_and_never_fails(at) -> None:
    text = badge_text(_hint("likely-oom", badge=badges.died(71310), exited_at_s=at))
    assert text.startswith("OOM ") and text.endswith("· pid 71310")
    assert not re.search(r"nan|inf", text, re.IGNORECASE)


def test_the_tooltip_carries_the_sentences_worst_first() -> None:
    hints = [_hint("memory-leak", leak_bytes_per_s=1e6),
             _hint("oom-risk", Severity.CRITICAL, time_to_full_s=300.0),
             _hint("oom-risk", Severity.WARNING, gpu=1, time_to_full_s=60.0)]
    reasons = card_reasons(hints)
    assert [h.code for h in reasons[0]] == ["oom-risk", "memory-leak"]
    assert hint_sentence(reasons[0][0]) == \
        "Critical: oom-risk title\n  first sentence\n  second sentence"


# the post-mortem -------------------------------------------------------------------
def test_a_death_keeps_its_forecasts_severity_until_seen() -> None:
    pm = PostMortems()
    forecast = _hint("oom-risk", Severity.CRITICAL, pid=None, at=1000.0, time_to_full_s=60.0)
    assert pm.apply([forecast]) == [forecast]
    death = _hint("likely-oom", Severity.WARNING, at=1030.0, exited_at_s=1029.0)
    other = _hint("memory-leak", Severity.WARNING, gpu=1, at=1030.0)
    shown = pm.apply([other, death])
    assert shown[0].key == death.key and shown[0].severity is Severity.CRITICAL
    assert shown[0].title == death.title and shown[1] == other
    assert pm.apply([other, death])[0].severity is Severity.CRITICAL    # stays, sample on
    assert not pm.seen(1)                       # another GPU's card: nothing changes
    assert pm.seen(0)
    assert pm.apply([other, death]) == [other, death]       # calm again once seen
    assert not pm.seen(0)


def test_a_death_long_after_a_forecast_is_not_raised() -> None:
    pm = PostMortems()
    pm.apply([_hint("oom-risk", Severity.CRITICAL, pid=None, at=1000.0)])
    late = _hint("likely-oom", at=1000.0 + FORECAST_LINK_S + 60,
                 exited_at_s=1000.0 + FORECAST_LINK_S + 59)
    assert pm.apply([late]) == [late]
    warned = PostMortems()        # a warning forecast keeps the death a warning
    warned.apply([_hint("oom-risk", Severity.WARNING, pid=None, at=1000.0)])
    death = _hint("likely-oom", at=1010.0, exited_at_s=1009.0)
    assert warned.apply([death]) == [death]
    assert PostMortems().apply([death]) == [death]          # no forecast at all


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["oom-risk", "likely-oom", "memory-leak"]),
                          st.sampled_from(list(Severity)), st.integers(0, 2),
                          st.floats(0, 5000)), max_size=12))
def test_post_mortems_only_ever_raise_deaths_and_keep_every_hint(seq) -> None:
    pm = PostMortems()
    for code, severity, gpu, at in seq:
        h = _hint(code, severity, gpu=gpu, at=at, exited_at_s=at)
        out = pm.apply([h])
        assert [x.key for x in out] == [h.key]
        assert out[0].severity >= h.severity
        if out[0].severity != h.severity:
            assert code == "likely-oom" and math.isfinite(at)


def test_oom_ramp_before_and_after_the_crash(make_window, scenario) -> None:
    """The live window on the oom-ramp scenario: the critical forecast names the
    minutes left; after the crash the card says when and who died, stays critical (and
    the tray's hints with it) until the card is clicked, and its % used is not amber."""
    window = make_window()
    backend = scenario("oom-ramp")
    feed(window, backend, range(0, 400, 2))
    card = window.cards.cards[0]
    assert re.fullmatch(r"OOM in ~\d+ (s|min)", card.badge.text()), card.badge.text()
    assert card.outline is Severity.CRITICAL
    feed(window, backend, range(400, 520, 2))            # the process dies at 502 s
    active = window.hint_source.active
    death = next(h for h in active if h.code == "likely-oom")
    assert death.severity is Severity.CRITICAL             # the forecast's
    assert re.fullmatch(r"OOM \d\d:\d\d · pid 71310", card.badge.text()), card.badge.text()
    assert card.outline is Severity.CRITICAL
    assert death.title in card.badge.toolTip()
    assert card.percent._color.name() == theme.colors().text       # an empty GPU
    window.cards._card_activated(0)                        # the card clicked: seen
    death = next(h for h in window.hint_source.active if h.code == "likely-oom")
    assert death.severity is Severity.WARNING and card.outline is Severity.WARNING
    assert card.badge.text().startswith("OOM ")
