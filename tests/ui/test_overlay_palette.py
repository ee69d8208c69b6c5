"""The budget overlay's own look: a muted palette that no process or danger colour is
near, the predicted figures called predicted, a neutral predicted-peak line, neutral
headroom words."""

from __future__ import annotations

import itertools

import pytest

from gpuwatch.core.units import format_bytes
from gpuwatch.ui.live.budget_adapter import BudgetRequest, predict
from gpuwatch.ui.live.overlay import BUDGET_COLORS, Overlay, Prediction, budget_color
from gpuwatch.ui.live.process_plot import peak_pen_color
from gpuwatch.ui.widgets import theme
from tests.ui.colour_math import delta_e
from tests.ui.conftest import feed

DANGER = [c for colors in (theme.LIGHT, theme.DARK) for c in (colors.warning, colors.critical)]
DANGER.append(theme.UNEXPLAINED_COLOR)
CATEGORIES = sorted(set(BUDGET_COLORS.values()))


@pytest.mark.parametrize("color", CATEGORIES)
def test_no_budget_colour_is_a_process_or_danger_colour(color: str) -> None:
    for process in theme.PROCESS_COLORS:
        assert delta_e(color, process) >= 13, (color, process)
    for danger in DANGER:
        assert delta_e(color, danger) >= 20, (color, danger)


def test_budget_colours_stay_apart() -> None:
    for a, b in itertools.combinations(CATEGORIES, 2):
        assert delta_e(a, b) >= 11, (a, b)
        assert delta_e(a, b, deuteranope=True) >= 8, (a, b)
    assert budget_color("allocator_cache") == BUDGET_COLORS["other"]


def test_the_predicted_peak_line_is_neutral() -> None:
    for colors in (theme.LIGHT, theme.DARK):
        theme._current = colors
        try:
            line = peak_pen_color()
            for danger in DANGER:
                assert delta_e(line, danger) >= 20, (line, danger)
        finally:
            theme._current = theme.LIGHT


@pytest.mark.parametrize(("measured", "words"), [
    (10 * 2**30, "may grow ~8.0 GiB more"),
    (18 * 2**30, "at its predicted peak"),
    (20 * 2**30, "holds 2.0 GiB more than predicted"),
    (None, "measured memory unknown"),
])
def test_headroom_in_neutral_words(measured, words) -> None:
    prediction = Prediction("m", (("parameters", 8 * 2**30), ("activations", 10 * 2**30)))
    overlay = Overlay(1, 0, prediction, measured)
    assert overlay.headroom_words("iec") == words
    assert not any(w in words for w in ("safe", "danger", "below its peak"))


def test_the_budget_form_says_predicted_and_uses_its_palette(make_window, scenario) -> None:
    window = make_window()
    feed(window, scenario("fragmentation"), [900])
    request = BudgetRequest(model="gpt2-medium", batch=8, seq=1024, precision="amp-bf16")
    window.budget.set_request(request)
    prediction = predict(request)
    assert prediction is not None
    assert "predicted peak per GPU" in window.budget.total.text()
    assert format_bytes(prediction.total_bytes) in window.budget.total.text()
    tips = window.budget.bar.segment_tooltips()
    assert tips and all(t.startswith("Predicted ") for t in tips)
    legend = window.budget.legend.text()
    for key, _ in prediction.categories:
        assert budget_color(key) in legend
