"""A card's memory bar is repainted only when one of its pixels would change: a sample
that moves no column asks for no paint, and whenever it asks for none, a fresh paint of
the new data gives exactly the pixels already shown."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QColor

from gpuwatch.ui.live.memory_bar import MemoryBar, Segment

GiB = 1 << 30
TOTAL = 80 * GiB
COLORS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948")


class PaintCounter(QObject):
    def __init__(self, widget) -> None:
        super().__init__()
        self.paints = 0
        widget.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


def _segments(sizes: list[int], reserved: int = 0) -> list[Segment]:
    out = [Segment(size, QColor(COLORS[i % len(COLORS)]), f"p{i}", units="iec")
           for i, size in enumerate(sizes)]
    if reserved:
        out.append(Segment(reserved, QColor("#888888"), "Reserved",
                           Qt.BrushStyle.Dense4Pattern, units="iec"))
    return out


def _bar(qtbot) -> MemoryBar:
    bar = MemoryBar()
    bar.setFixedWidth(300)
    bar.set_background(QColor("#ffffff"))
    qtbot.addWidget(bar)
    with qtbot.waitExposed(bar):
        bar.show()
    return bar


def test_a_change_that_moves_no_pixel_paints_nothing_and_one_that_does_paints(qtbot):
    bar = _bar(qtbot)
    counter = PaintCounter(bar)
    bar.set_data(TOTAL, _segments([10 * GiB + 100 * (1 << 20), 20 * GiB], GiB))
    qtbot.wait(30)
    painted = counter.paints
    assert painted >= 1
    bar.set_data(TOTAL, _segments([10 * GiB + 101 * (1 << 20), 20 * GiB], GiB))   # 1 MiB
    qtbot.wait(30)
    assert counter.paints == painted
    assert bar.segment_tooltips()[0].endswith("10.1 GiB")       # the tooltips are new
    bar.set_data(TOTAL, _segments([14 * GiB, 20 * GiB], GiB))    # several columns
    qtbot.wait(30)
    assert counter.paints == painted + 1


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 12 * GiB), min_size=1, max_size=6),
       reserved=st.sampled_from([0, GiB // 2]),
       nudges=st.lists(st.integers(-(64 << 20), 64 << 20), min_size=6, max_size=6))
def test_a_skipped_paint_never_hides_a_pixel_change(qtbot, sizes, reserved, nudges):
    bar = _bar(qtbot)
    bar.set_data(TOTAL, _segments(sizes, reserved))
    before = bar.grab().toImage()              # painted: what the screen shows
    asked: list[bool] = []
    bar.update = lambda *a: asked.append(True)   # type: ignore[method-assign]
    moved = [max(0, s + n) for s, n in zip(sizes, nudges, strict=False)]
    bar.set_data(TOTAL, _segments(moved, reserved))
    del bar.update
    if not asked:                              # no paint asked: a fresh one shows the same
        assert bar.grab().toImage() == before
