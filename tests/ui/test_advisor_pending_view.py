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


def test_pending_checks_read_as_a_list_from_the_top_left(make_window, qtbot) -> None:
    """Sixteen checks in a short tab: left-aligned, one line each, the first in view."""
    from PySide6.QtCore import Qt

    window = make_window()
    window.resize(1024, 640)
    window.show()
    window.tabs.setCurrentWidget(window.advisor)
    lines = [f"check {i} needs 12 min of history (5 min so far)" for i in range(16)]
    window.advisor.set_pending(lines)
    qtbot.wait(10)
    label = window.advisor.empty
    assert label.alignment() & Qt.AlignmentFlag.AlignLeft
    assert label.alignment() & Qt.AlignmentFlag.AlignTop
    assert not label.wordWrap() and label.text().count("\n") == 16
    top = label.mapTo(window.advisor, label.rect().topLeft()).y()
    assert top >= 0                                       # the first line is not clipped
    window.advisor.set_pending([])
    assert label.alignment() & Qt.AlignmentFlag.AlignHCenter
