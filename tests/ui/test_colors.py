"""Colours that carry meaning: danger has its own (no process looks like a warning), the
processes on one GPU differ, and everything stays apart for a deuteranope."""

from __future__ import annotations

import itertools
import zlib

import pytest

from gpuwatch.ui.widgets import theme
from tests.ui.colour_math import ciede2000, delta_e
from tests.ui.conftest import feed

DANGER = {f"{name} {which}": getattr(colors, which)
          for name, colors in (("light", theme.LIGHT), ("dark", theme.DARK))
          for which in ("warning", "critical")} | {"unexplained": theme.UNEXPLAINED_COLOR}
GREYS = {f"{name} {which}": getattr(colors, which)
         for name, colors in (("light", theme.LIGHT), ("dark", theme.DARK))
         for which in ("other", "reserved")}
FAR_FROM_DANGER = 20.0    # CIEDE2000: clearly another colour, not a shade of it
APART = 10.0              # CIEDE2000 between two series, for a deuteranope
APART_NORMAL = 15.0       # and in normal vision


def test_the_colour_difference_is_ciede2000() -> None:
    """Sharma, Wu & Dalal (2005), pairs 1, 7, 13 and 25 of their test data."""
    pairs = [((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425),
             ((50, 0, 0), (50, -1, 2), 2.3669),
             ((50, 2.49, -0.001), (50, -2.49, 0.0011), 7.2195),
             ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644)]
    for lab1, lab2, expected in pairs:
        assert ciede2000(lab1, lab2) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("color", theme.PROCESS_COLORS)
def test_no_process_colour_looks_like_danger(color: str) -> None:
    for name, danger in DANGER.items():
        assert delta_e(color, danger) >= FAR_FROM_DANGER, (color, name, danger)
    for name, grey in GREYS.items():     # nor like the bar's "other" and reserved parts
        assert delta_e(color, grey) >= APART, (color, name, grey)


def test_process_colours_stay_apart_under_deuteranopia() -> None:
    for a, b in itertools.combinations(theme.PROCESS_COLORS, 2):
        assert delta_e(a, b) >= APART_NORMAL, (a, b)
        assert delta_e(a, b, deuteranope=True) >= APART, (a, b)


def test_gpu_line_colours_stay_apart_under_deuteranopia() -> None:
    assert len(set(theme.GPU_COLORS)) == 8
    for a, b in itertools.combinations(theme.GPU_COLORS, 2):
        assert delta_e(a, b) >= APART_NORMAL, (a, b)
        assert delta_e(a, b, deuteranope=True) >= APART, (a, b)


def test_processes_on_one_gpu_get_different_colours() -> None:
    # pids the old colour-by-hash gave one colour
    pids = [p for p in range(1000, 5000)
            if zlib.crc32(str(p).encode()) % len(theme.PROCESS_COLORS) == 3][:4]
    colors = theme.ProcessColors()
    colors.place(0, tuple(pids))
    assert len({colors.color(p).name() for p in pids}) == len(pids)
    # a newcomer between two: unlike both neighbours, and the others keep theirs
    before = {p: colors.color(p).name() for p in pids}
    newcomer = pids[-1] + 1
    colors.place(0, (pids[0], newcomer, *pids[1:]))
    assert {p: colors.color(p).name() for p in pids} == before
    assert colors.color(newcomer).name() not in before.values()


def test_more_processes_than_colours_still_differ_from_their_neighbours() -> None:
    colors = theme.ProcessColors()
    pids = tuple(range(100, 100 + 3 * len(theme.PROCESS_COLORS) + 1))
    colors.place(2, pids)
    for a, b in itertools.pairwise(pids):
        assert colors.color(a) != colors.color(b)


def test_a_process_keeps_its_colour_while_it_stays() -> None:
    colors = theme.ProcessColors()
    colors.place(0, (1, 2, 3))
    kept = {p: colors.color(p).name() for p in (1, 2, 3)}
    colors.place(0, (1, 3))                  # 2 leaves: its colour is free again
    colors.place(0, (1, 3, 4))
    assert colors.color(4).name() == kept[2]
    assert {p: colors.color(p).name() for p in (1, 3)} == {1: kept[1], 3: kept[3]}
    colors.place(0, (1, 3, 4, 2))            # 2 is back; 4 holds its colour now
    assert colors.color(2).name() != kept[2]
    assert len({colors.color(p).name() for p in (1, 2, 3, 4)}) == 4


def test_a_process_on_two_gpus_has_one_colour() -> None:
    colors = theme.ProcessColors()
    colors.place(0, (7, 8))
    first = colors.color(8).name()
    colors.place(1, (8,))
    assert colors.color(8).name() == first


def test_the_cards_bars_and_table_agree(make_window, scenario) -> None:
    """In the window: neighbours in a card's bar differ, the bar, the legend and the
    table's swatch are one colour, and no process is drawn in a danger colour."""
    window = make_window()
    feed(window, scenario("workstation"), range(290, 331, 5))
    for card in window.cards.cards.values():
        segments = [s for s in card.bar.measured_segments() if "(pid " in s.what]
        assert len(segments) >= 2
        for a, b in itertools.pairwise(segments):
            assert a.color != b.color, (a.what, b.what)
        for s in segments:
            pid = int(s.what.rsplit("(pid ", 1)[1].rstrip(")"))
            assert s.color == theme.process_color(pid)
            for danger in DANGER.values():
                assert delta_e(s.color.name(), danger) >= FAR_FROM_DANGER, (s.what, danger)
