"""The advisor in the window: hints from the snapshot slot, the panel, the banner, clicks."""

from __future__ import annotations

from gpuwatch.core.hints import Severity
from gpuwatch.ui.live import budget_adapter
from gpuwatch.ui.live.advisor_panel import AdvisorPanel, HintView, hint_view
from tests.ui.conftest import feed

OOM_PID = 71310


def test_oom_ramp_fills_the_advisor_panel(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("oom-ramp")
    feed(window, backend, range(0, 320, 2))
    active = window.hint_source.active
    assert [h.code for h in active] == ["oom-risk"]
    assert active[0].severity is Severity.CRITICAL
    panel = window.advisor
    assert [h.code for h in panel.hints] == ["oom-risk"]
    view = panel.hints[0]
    assert view.severity == "critical" and view.gpu == 0 and view.pid is None
    assert "memory full" in view.title
    assert "free" in view.evidence and view.actions
    assert window.tabs.tabText(2) == "Advisor (1)"
    text = panel.list.itemWidget(panel.list.item(0)).text()
    assert "Critical" in text and "Save a checkpoint" in text and "GPU 0" in text
    # no tray here: the banner carries the alert too
    assert not window.hint_banner.isHidden()
    assert "memory full" in window.hint_banner.label.text()
    assert window.hint_banner.key == ("oom-risk", 0, None)
    assert window.hint_source.update_ms and window.hint_source.show_ms


def test_clicking_a_hint_selects_its_gpu_and_process(make_window, scenario, qtbot) -> None:
    window = make_window()
    window.show()
    backend = scenario("oom-ramp")
    feed(window, backend, range(0, 200, 2))
    window.processes.table.clearSelection()   # the largest process is selected by default
    assert window.processes.selected_key() is None
    # a hint about the whole GPU selects the process holding the most of it
    assert window.hint_source.open_hint(("oom-risk", 0, None))
    assert window.tabs.currentWidget() is window.advisor
    assert window.advisor.selected_key() == ("oom-risk", 0, None)
    assert window.processes.selected_key() == (0, OOM_PID)


def test_hint_rows_wait_for_their_tab(make_window, scenario, qtbot) -> None:
    window = make_window()
    with qtbot.waitExposed(window):
        window.show()
    window.tabs.setCurrentIndex(0)
    feed(window, scenario("oom-ramp"), range(0, 320, 2))
    panel = window.advisor
    assert [h.code for h in panel.hints] == ["oom-risk"]      # the data are current
    assert panel.list.count() == 0                            # the rows wait
    assert window.tabs.tabText(2) == "Advisor (1)"
    window.tabs.setCurrentWidget(panel)
    assert panel.list.count() == 1
    assert "memory full" in panel.list.itemWidget(panel.list.item(0)).text()
    assert panel.list.item(0).sizeHint().height() > 20        # fitted to its wrapped text


def test_the_banner_link_opens_the_hint(make_window, scenario, qtbot) -> None:
    window = make_window()
    window.tabs.setCurrentIndex(0)
    feed(window, scenario("oom-ramp"), range(0, 200, 2))
    window.hint_banner.label.linkActivated.emit("open")
    assert window.tabs.currentWidget() is window.advisor
    assert window.advisor.selected_key() == ("oom-risk", 0, None)


def test_the_forecast_clears_and_the_death_is_named(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("oom-ramp")
    feed(window, backend, range(0, 300, 2))
    assert window.advisor.hints
    feed(window, backend, range(300, 600, 2))     # the process died at 492 s
    # the forecast is gone; what remains names the death (for ten minutes)
    assert [h.code for h in window.hint_source.active] == ["likely-oom"]
    assert [h.code for h in window.advisor.hints] == ["likely-oom"]
    assert "likely out of memory" in window.hint_source.active[0].title


def test_a_linked_budget_reaches_the_advisor(make_window, scenario) -> None:
    """A budget linked in the window is the advisor's: a peak above the card fires."""
    window = make_window()
    backend = scenario("oom-ramp")
    snap = feed(window, backend, [60])
    p = next(p for p in snap.processes if p.pid == OOM_PID)
    too_big = budget_adapter.BudgetRequest(model="llama-3.1-8b", batch=64, seq=4096,
                                           optimizer="adamw", lora_rank=0)
    window.link_process((0, OOM_PID), too_big)
    assert window.links.get(p.cmdline) == too_big
    feed(window, backend, range(61, 100))
    assert (0, OOM_PID) in window.hint_source.engine.links
    assert "budget-exceeds-capacity" in {h.code for h in window.hint_source.active}
    window.unlink_process((0, OOM_PID))
    feed(window, backend, [101])
    assert (0, OOM_PID) not in window.hint_source.engine.links


def test_the_panel_keeps_rows_and_selection_across_updates(qtbot) -> None:
    panel = AdvisorPanel()
    qtbot.addWidget(panel)
    a = HintView("warning", "A", "e1", gpu=0, code="x")
    b = HintView("critical", "B", "e2", gpu=1, pid=5, code="y", actions=("do it",))
    panel.set_hints([a, b])
    assert [h.title for h in panel.hints] == ["B", "A"]        # worst first
    assert panel.select_key(("x", 0, None))
    first = panel.list.itemWidget(panel.list.item(0))
    panel.set_hints([a, HintView("critical", "B2", "e2", gpu=1, pid=5, code="y")])
    assert panel.list.itemWidget(panel.list.item(0)) is first      # the row was reused
    assert "B2" in first.text()
    assert panel.selected_key() == ("x", 0, None)
    panel.set_hints([a])
    assert panel.list.count() == 1 and panel.selected_key() == ("x", 0, None)
    assert HintView("info", "plain", action="go").key == ("", None, None)


def test_hint_view_from_a_core_hint() -> None:
    from gpuwatch.core.hints import Hint, HintAction

    h = Hint("memory-leak", Severity.WARNING, 1, 42, "pid 42 leaks", ("a", "b"),
             (HintAction("restart", 1 << 30),), process_name="python")
    v = hint_view(h)
    assert v.key == ("memory-leak", 1, 42) and v.evidence == "a\nb"
    assert v.actions == ("restart (saves 1.0 GiB)",)
    assert v.where == "GPU 1 · pid 42 · python"          # no nested brackets


def test_the_empty_advisor_says_what_it_cannot_judge_yet(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("workstation")
    feed(window, backend, range(0, 30, 2))
    assert not window.hint_source.active
    text = window.advisor.empty.text()
    assert "Not judged yet" in text and "need 2 min of history" in text
    feed(window, backend, range(30, 1000, 10))
    assert window.advisor.empty.text() == "No hints — nothing needs your attention."
