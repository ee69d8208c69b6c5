"""The Advisor tab's "cannot judge yet" list is worked out every few seconds of
snapshot time, not on every sample, and still follows the history."""

from __future__ import annotations

from gpuwatch.ui.live.advisor_bridge import PENDING_EVERY_S
from tests.ui.conftest import sample_at


def test_pending_checks_are_shown_every_few_seconds(make_window, scenario, monkeypatch):
    window = make_window()
    backend = scenario("workstation")
    shown: list[list[str]] = []
    original = window.advisor.set_pending
    monkeypatch.setattr(window.advisor, "set_pending",
                        lambda lines: (shown.append(list(lines)), original(lines)))
    seconds = 30
    for t in range(100, 100 + seconds):      # "… need 2 min of history (30 s so far)"
        window.on_snapshots([sample_at(backend, float(t))])
    assert not window.hint_source.active
    assert 1 < len(shown) <= seconds / PENDING_EVERY_S + 1
    assert shown[-1] and "so far" in shown[-1][0]
