"""Cards and the advisor agree: the worst open hint is the card's outline and badge (its
reason in words); % used takes the colour of its memory threshold; a lost GPU is the
loudest card; the wording of headroom is neutral."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QApplication

from gpuwatch.core.hints import Hint, Severity
from gpuwatch.core.snapshot import GpuSample, GpuState, MemoryInfo
from gpuwatch.ui.live.budget_adapter import BudgetRequest, predict
from gpuwatch.ui.live.card_reason import card_reasons
from gpuwatch.ui.live.card_state import fill_level, lost_phrase, since_text
from gpuwatch.ui.live.card_texts import budget_lines, link_text, metric_texts
from gpuwatch.ui.live.overlay import Overlay
from gpuwatch.ui.settings import Thresholds
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.bandwidth_units import format_bandwidth
from tests.ui.conftest import feed


def _hint(gpu: int, severity: Severity, code: str = "oom-risk", pid: int | None = None) -> Hint:
    return Hint(code=code, severity=severity, gpu_index=gpu, pid=pid, title=f"{code} here",
                evidence=(), actions=())


def test_card_reasons_take_the_worst_warning_or_critical_per_gpu() -> None:
    hints = [_hint(0, Severity.WARNING), _hint(0, Severity.CRITICAL, "leak", 5),
             _hint(1, Severity.INFO), _hint(2, Severity.WARNING)]
    reasons = card_reasons(hints)
    assert {gpu: hs[0].severity for gpu, hs in reasons.items()} == {
        0: Severity.CRITICAL, 2: Severity.WARNING}
    assert [h.code for h in reasons[0]] == ["leak", "oom-risk"]
    assert 1 not in reasons


def test_fill_level_follows_the_memory_thresholds_alone() -> None:
    t = Thresholds()
    assert fill_level(None, t) is None and fill_level(50, t) is None
    assert fill_level(t.memory_warning_percent, t) is Severity.WARNING
    assert fill_level(99, t) is Severity.CRITICAL


def test_lost_wording_says_how_long_ago() -> None:
    assert lost_phrase(GpuState.LOST, 55.2) == "lost 55 s ago"
    assert lost_phrase(GpuState.LOST, 12 * 60 + 5) == "lost 12 min ago"
    assert lost_phrase(GpuState.ERROR, 3) == "read failed 3 s ago"
    assert lost_phrase(GpuState.LOST, None) == "lost"
    assert since_text(2 * 86400 + 5) == "2 d"


def test_links_share_their_unit_when_compact() -> None:
    assert link_text("PCIe", 1.8e9, 1.9e9, True) == "PCIe ↓1.8 ↑1.9 GB/s"
    assert link_text("PCIe", 1.8e9, 6.4e8, True) == "PCIe ↓1.8 ↑0.6 GB/s"
    assert link_text("NVLink", 2.17e11, 2.2e11, True) == "NVLink ↓217 ↑220 GB/s"
    assert link_text("PCIe", 0.0, 0.0, True) == "PCIe ↓0 ↑0 B/s"
    assert link_text("NVLink", 1.8e9, 1.9e9, False) == "NVLink ↓ 1.8 GB/s  ↑ 1.9 GB/s"


def test_budget_headroom_is_in_neutral_words() -> None:
    prediction = predict(BudgetRequest(model="gpt2-medium", batch=8, seq=1024,
                                       precision="amp-bf16"))
    assert prediction is not None
    overlay = Overlay(7, 0, prediction, int(prediction.total_bytes * 0.5))
    assert overlay.headroom_bytes
    lines, tooltip = budget_lines(overlay, 80 * 2**30, None, "iec")
    assert "may grow ~" in tooltip and "more" in tooltip
    for color in (theme.LIGHT.ok, theme.DARK.ok):
        assert all(r.color != color for line in lines for r in line)   # no green "fine"


def test_set_hint_levels_outlines_badges_and_colours_the_used_figure(make_window, scenario,
                                                                       qtbot,
                                                                       assistive_tool) -> None:
    window = make_window()
    feed(window, scenario("workstation"), [300])
    cards = window.cards
    c = theme.colors()
    card0, card1 = cards.cards[0], cards.cards[1]
    assert card0.badge.isHidden() and card0.outline is None
    cards.set_hint_levels({0: Severity.CRITICAL, 1: Severity.WARNING})
    assert card0.badge.text() == "CRITICAL" and not card0.badge.isHidden()
    assert card1.badge.text() == "WARNING"
    assert card0.outline is Severity.CRITICAL and card1.outline is Severity.WARNING
    # % used follows the memory thresholds, not the hints: these cards are not that full
    assert card0.percent._color.name() == c.text == card1.percent._color.name()
    assert "Critical" in card0.accessibleDescription()
    cards.set_hint_levels({0: Severity.CRITICAL}, {0: ("Critical: why",)}, {0: "OOM in ~2 min"})
    assert card0.badge.text() == "OOM in ~2 min" and card0.badge.toolTip() == "Critical: why"
    assert "OOM in ~2 min" in card0.accessibleDescription()
    cards.set_hint_levels({1: Severity.INFO})       # info hints leave the card alone
    assert card0.badge.isHidden() and card1.badge.isHidden()
    assert card0.percent._color.name() == c.text and card1.outline is None


def test_the_card_and_the_advisor_never_disagree(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("oom-ramp")
    feed(window, backend, range(0, 320, 2))
    active = window.hint_source.active
    assert active and active[0].severity is Severity.CRITICAL
    card = window.cards.cards[active[0].gpu_index]
    assert card.badge.text().startswith("OOM in ~") and card.badge.text().endswith("min")
    assert card.outline is Severity.CRITICAL
    assert card.badge.toolTip().startswith("Critical: GPU 0 memory full")
    assert active[0].evidence[0] in card.badge.toolTip()      # the hint's sentences
    used = card._used_percent
    assert used is not None
    want = fill_level(used, window.prefs.thresholds)
    assert card.percent._color.name() == (theme.colors().text if want is None
                                          else theme.colors().warning if want is
                                          Severity.WARNING else theme.colors().critical)
    # a card made after the hint opened starts with it too
    assert window.cards._levels == {g: hs[0].severity
                                    for g, hs in card_reasons(active).items()}


def test_threshold_ticks_on_the_bar(make_window, scenario, qtbot) -> None:
    window = make_window()
    window.resize(1280, 800)
    window.show()
    feed(window, scenario("workstation"), [300])
    QApplication.processEvents()
    bar = window.cards.cards[0].bar
    t = window.prefs.thresholds
    xs = bar.tick_positions()
    assert len(xs) == 2
    for x, pct in zip(xs, (t.memory_warning_percent, t.memory_critical_percent), strict=True):
        assert abs(x - pct / 100 * bar.width()) <= 2.5


def test_a_lost_gpu_is_the_loudest_card(make_window, scenario, assistive_tool) -> None:
    window = make_window()
    backend = scenario("faults")
    feed(window, backend, [20, 25, 29])
    card = window.cards.cards[1]
    feed(window, backend, [31, 40, 86])                 # GPU 1 falls off the bus at 30 s
    assert card.state is GpuState.LOST
    assert card.badge.text() == "LOST" and card.outline is Severity.CRITICAL
    assert card.percent.text() == "lost 55 s ago"
    assert card.used.text().startswith("Last known") and "GiB used" in card.used.text()
    assert card.legend.text().startswith("Driver: ")
    assert card.bar._greyed and card.bar.measured_segments()     # last known, faded
    assert card.free.isHidden()
    assert "LOST" in card.accessibleDescription()
    feed(window, backend, [100])                        # back after a reset at 90 s
    assert card.state is GpuState.OK and card.outline is None and card.badge.isHidden()
    assert card.percent.text().endswith("% used") and not card.free.isHidden()


def test_bandwidth_without_a_known_peak_says_so_instead_of_two_unknowns() -> None:
    g = GpuSample(0, None, "L40S", GpuState.OK, MemoryInfo(1, 0, 1, 0), memory_busy_percent=50)
    assert metric_texts(g)[1] == "bandwidth n/a (peak unknown)"
    assert metric_texts(g, compact=True)[1] == "bandwidth n/a"
    known = GpuSample(0, None, "A100", GpuState.OK, MemoryInfo(1, 0, 1, 0),
                      peak_bandwidth_bytes_per_s=2e12, estimated_bandwidth_bytes_per_s=1e12)
    assert metric_texts(known)[1] == "≈ 1,000 GB/s est. of 2,000 GB/s"   # the plot's unit
    assert metric_texts(known, compact=True)[1] == "≈ 1,000 GB/s est."


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 1e14))
def test_bandwidth_reads_in_the_plots_unit_everywhere(rate) -> None:
    """The card's estimate and peak and the plot's peak line say GB/s, whole from 100 on
    with thousands separators: the same number the plot's axis shows."""
    text = format_bandwidth(rate)
    number, unit = text.rsplit(" ", 1)
    assert unit == "GB/s"
    assert abs(float(number.replace(",", "")) - rate / 1e9) <= (0.5 if rate >= 99.95e9
                                                                 else 0.05)
    assert format_bandwidth(None) == "n/a" == format_bandwidth(float("nan"))


def test_the_long_forms_give_way_when_they_do_not_fit(make_window, scenario, qtbot) -> None:
    """Eight cards at the default 1500 px: each metric shows whole, in its long form
    where that fits its half of the card, else in its short one."""
    window = make_window()
    window.resize(1500, 950)
    window.show()
    feed(window, scenario("multi-gpu-ddp"), range(300, 330, 3))
    QApplication.processEvents()
    for card in window.cards.cards.values():
        for part in (card.busy, card.util, card.pcie, card.nvlink):
            if part.isHidden():
                continue
            width = QFontMetricsF(card.font()).horizontalAdvance(part.text())
            assert width <= part.rect.width() + 0.5, (card.index, part.text(), part.rect)
        assert card.busy.text().startswith("Mem busy" if card.metrics.compact else "Memory busy")
    window.resize(1920 * 2, 1080)           # room for the long forms again
    QApplication.processEvents()
    feed(window, scenario("multi-gpu-ddp"), [333])
    assert all(not c.metrics.compact for c in window.cards.cards.values())


def test_a_measured_bandwidth_is_shown_as_measured_beside_the_estimate() -> None:
    g = GpuSample(0, None, "H100", GpuState.OK, MemoryInfo(1, 0, 1, 0),
                  peak_bandwidth_bytes_per_s=3e12, estimated_bandwidth_bytes_per_s=2e12,
                  measured_bandwidth_bytes_per_s=1.5e12, dram_active_percent=50)
    assert metric_texts(g)[1] == "1,500 GB/s measured (≈ 2,000 GB/s est.) of 3,000 GB/s"
    assert metric_texts(g, compact=True)[1] == "1,500 GB/s meas."
