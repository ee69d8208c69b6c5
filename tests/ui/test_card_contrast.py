"""Every text on the cards and the hint banner keeps a WCAG 2 contrast of at least 4.5:1
against what it is drawn on, in both themes: the palette's pairs, and the runs, figures
and badges that real cards show (healthy, warned, critical and lost)."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor

from gpuwatch.core.hints import Severity
from gpuwatch.ui.live.card_parts import TextPart
from gpuwatch.ui.settings import Preferences
from gpuwatch.ui.widgets import theme
from tests.ui.conftest import feed

MINIMUM = 4.5


def luminance(color: str) -> float:
    """WCAG 2 relative luminance of an sRGB colour."""
    q = QColor(color)

    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(q.red()) + 0.7152 * channel(q.green()) + 0.0722 * channel(q.blue())


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_contrast_formula_matches_known_values() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    assert contrast("#ffffff", "#ffffff") == pytest.approx(1.0)


@pytest.mark.parametrize("c", [theme.LIGHT, theme.DARK], ids=["light", "dark"])
def test_palette_text_on_every_background_it_meets(c: theme.Colors) -> None:
    pairs = []
    for fg in (c.text, c.muted, c.warning, c.critical):
        pairs += [(fg, c.card), (fg, c.window), (fg, c.banner_warn)]
    pairs += [(c.muted, c.lost_card), (c.critical, c.lost_card), (c.text, c.lost_card)]
    pairs += [(c.on_severity, c.warning), (c.on_severity, c.critical)]
    for fg, bg in pairs:
        assert contrast(fg, bg) >= MINIMUM, (fg, bg, round(contrast(fg, bg), 2))


def _texts_on_cards(window) -> list[tuple[str, str, str]]:
    """(what, text colour, background) of every run, figure and badge shown."""
    c = theme.colors()
    out = []
    for card in window.cards.cards.values():
        lost = card.property("lost") is True
        card_bg = c.lost_card if lost else c.card
        labels = [part for part in card.parts if isinstance(part, TextPart)]
        assert len(labels) >= 9
        for label in labels:
            if label.isHidden() or label is card.probe:
                continue
            color, background = label.colors()
            bg = background.name() if background is not None else card_bg
            default = color.name() if color is not None else c.text
            for line in label.lines():
                for run in line:
                    if run.text.strip() and run.text.strip() != "■":
                        out.append((run.text, run.color or default, bg))
        for figure in (card.percent, card.free):
            if figure.isVisibleTo(card):
                bg = figure._background.name() if figure._background is not None else card_bg
                out.append((figure._big, (figure._color or QColor(c.text)).name(), bg))
                out.append((figure._small, (figure._small_color or QColor(c.muted)).name(),
                            bg))
        if card.badge.isVisibleTo(card):
            out.append((card.badge.text(), card.badge._ink.name(), card.badge._fill.name()))
    return out


@pytest.mark.parametrize("theme_name", ["light", "dark"])
def test_what_cards_show_is_readable(make_window, scenario, theme_name) -> None:
    window = make_window()
    window.apply_preferences(Preferences(**{**vars(window.prefs), "theme": theme_name}))
    backend = scenario("faults")
    feed(window, backend, [20, 29, 31, 60])            # GPU 1 lost at 30 s
    window.cards.set_hint_levels({0: Severity.WARNING})
    seen = _texts_on_cards(window)
    window.cards.set_hint_levels({0: Severity.CRITICAL})
    seen += _texts_on_cards(window)
    assert any(t == "LOST" for t, _, _ in seen) and any(t == "CRITICAL" for t, _, _ in seen)
    for text, fg, bg in seen:
        assert contrast(fg, bg) >= MINIMUM, (theme_name, text, fg, bg, contrast(fg, bg))


@pytest.mark.parametrize("theme_name", ["light", "dark"])
def test_the_hint_banner_is_readable(make_window, scenario, theme_name) -> None:
    window = make_window()
    window.apply_preferences(Preferences(**{**vars(window.prefs), "theme": theme_name}))
    feed(window, scenario("oom-ramp"), range(0, 320, 2))
    banner = window.hint_banner
    assert not banner.isHidden()
    c = theme.colors()
    color = c.critical if "Critical" in banner.label.text() else c.warning
    assert f"color:{color}" in banner.label.text()
    for fg in (color, c.text, c.warning, c.critical):
        assert contrast(fg, c.banner_warn) >= MINIMUM, (fg, c.banner_warn)
