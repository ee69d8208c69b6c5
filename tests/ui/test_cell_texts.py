"""The process table's cell texts: drawn the same either way, laid out only when they
come back, and kept only while they are shown."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from gpuwatch.core.units import format_duration
from gpuwatch.ui.live.cell_texts import BOLD, ITALIC, KEEP_PAINTS, LIMIT, NORMAL, CellTexts


def _image() -> QImage:
    image = QImage(260, 30, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QColor("white"))
    return image


def _draw(cells: CellTexts, text: str, style: int, right: bool, room: int = 200) -> QImage:
    image = _image()
    p = QPainter(image)
    p.setFont(cells.fonts[style])
    p.setPen(QColor("black"))
    cells.draw(p, text, 10, room, 3, 24, right, style)
    p.end()
    return image


@pytest.mark.parametrize("size", [None, 8.5, 13.0])
def test_shaped_and_static_texts_look_the_same(qapp, size) -> None:
    font = QFont(qapp.font())
    if size:
        font.setPointSizeF(size)
    texts = ["12.3 GiB", "12 min 05 s", "95 %", "exited 12:03:41", "n/a", "python3 train.py"]
    for style in (NORMAL, BOLD, ITALIC):
        for right in (False, True):
            for text in texts:
                cells = CellTexts()
                cells.begin(font, full=True)
                first = _draw(cells, text, style, right)      # shaped as drawn
                assert len(cells) == 0
                second = _draw(cells, text, style, right)     # drawn again: laid out
                assert len(cells) == 1
                assert first == second, (text, style, right)
                assert first != _image()                       # something was drawn


def test_elides_what_does_not_fit_either_way(qapp) -> None:
    cells = CellTexts()
    cells.begin(qapp.font(), full=True)
    long = "python train.py " + "--flag " * 40
    assert cells.static(long, 120, NORMAL)[0].text().endswith("…")
    assert cells.static(long, 120, NORMAL)[1] <= 120
    shaped = _draw(cells, long + " ", NORMAL, False, room=120)
    laid = CellTexts()
    laid.begin(qapp.font(), full=True)
    laid.static(long + " ", 120, NORMAL)
    assert shaped == _draw(laid, long + " ", NORMAL, False, room=120)
    assert all(shaped.pixelColor(x, y) == QColor("white")
               for x in range(131, 260) for y in range(30))


def test_a_text_shown_once_is_never_laid_out(qapp) -> None:
    """A running time that changes every second: nothing is kept for it."""
    cells = CellTexts()
    image = _image()
    for second in range(3000):
        cells.begin(qapp.font(), full=True)
        p = QPainter(image)
        cells.draw(p, format_duration(second), 10, 200, 0, 24, True, NORMAL)
        cells.draw(p, "python3", 10, 200, 0, 24, False, NORMAL)    # shown every time
        p.end()
    assert len(cells) == 1


def test_what_is_no_longer_shown_is_dropped(qapp) -> None:
    """Screenfuls of different texts, many full paints each: the cache holds what the
    latest screenfuls showed, never every text shown."""
    cells = CellTexts()
    image = _image()
    screen = 40
    for page in range(50):
        for _ in range(KEEP_PAINTS):
            cells.begin(qapp.font(), full=True)
            p = QPainter(image)
            for row in range(screen):
                cells.draw(p, f"pid {page * screen + row}", 10, 200, 0, 24, False, NORMAL)
            p.end()
        assert len(cells) <= 3 * screen
    assert len(cells) >= screen        # the screenful shown is kept


def test_partial_paints_alone_stay_bounded(qapp) -> None:
    cells = CellTexts()
    image = _image()
    for k in range(3 * LIMIT):
        for _ in range(2):                     # each text comes back once: laid out
            cells.begin(qapp.font(), full=False)
            p = QPainter(image)
            cells.draw(p, f"{k} MiB", 10, 200, 0, 24, True, NORMAL)
            p.end()
    assert len(cells) <= 2 * LIMIT + 2


def test_a_new_font_starts_over(qapp) -> None:
    cells = CellTexts()
    cells.begin(qapp.font(), full=True)
    cells.static("python3", 200, NORMAL)
    assert len(cells) == 1
    bigger = QFont(qapp.font())
    bigger.setPointSizeF(bigger.pointSizeF() + 3)
    fonts = cells.begin(bigger, full=True)
    assert len(cells) == 0 and fonts[NORMAL].key() == bigger.key()
    assert fonts[BOLD].bold() and fonts[ITALIC].italic()


def test_a_launchers_row_names_its_script() -> None:
    from gpuwatch.ui.live.process_texts import script_name

    assert script_name(("/opt/conda/bin/python", "-u", "pretrain.py", "--seq", "8")) == \
        "pretrain.py"
    assert script_name(("python3.11", "-m", "ipykernel_launcher", "-f", "x.json")) == \
        "ipykernel_launcher"
    assert script_name(("torchrun", "--nproc_per_node", "8", "train.py")) == "train.py"
    assert script_name(("python", "-u")) is None
    assert script_name(("gnome-shell", "--replace")) is None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=200), min_size=0, max_size=12))
def test_any_command_line_gives_a_short_script_name_or_none(words) -> None:
    """Command lines come from /proc: anything, of any length."""
    from gpuwatch.ui.live.process_texts import SCRIPT_CHARS, script_name

    found = script_name(("python", *words))
    assert found is None or (0 < len(found) <= SCRIPT_CHARS and "/" not in found)
