"""The Budget tab sets the selected linked process against its budget: a "measured" and a
"predicted" row on one scale, each ending in a tick with its figure, and neutral words."""

from __future__ import annotations

from PySide6.QtGui import QColor

from gpuwatch.core.units import format_bytes
from gpuwatch.ui.live.budget_adapter import BudgetRequest, predict
from gpuwatch.ui.live.overlay import budget_color
from tests.ui.conftest import feed

KEY = (0, 66120)


def test_the_selected_linked_process_is_measured_against_its_budget(make_window, scenario,
                                                                     qtbot) -> None:
    window = make_window()
    window.resize(1280, 800)
    with qtbot.waitExposed(window):
        window.show()
    backend = scenario("fragmentation")
    feed(window, backend, [890, 900])
    rows = window.budget.linked
    request = BudgetRequest(model="gpt2-medium", batch=32, seq=1024, precision="amp-bf16")
    prediction = predict(request)
    assert prediction is not None
    window.link_process(KEY, request)
    window.processes.select(KEY)
    snap = feed(window, backend, [901])
    window.tabs.setCurrentIndex(1)
    qtbot.waitUntil(rows.isVisible)
    measured = next(p for p in snap.processes if p.pid == KEY[1]).used_bytes
    overlay = rows.overlay
    assert overlay is not None and overlay.measured_bytes == measured
    words = rows.words()
    assert f"measured {format_bytes(measured)}" in words
    assert f"predicted peak {format_bytes(prediction.total_bytes)}" in words
    assert overlay.headroom_words("iec") in words
    # the rows: measured in the process's colour up to its figure, predicted by category
    measured_row, predicted_row, _ = rows.rows()
    image = rows.grab().toImage()
    dpr = image.devicePixelRatio()
    y_measured = int(measured_row.center().y() * dpr)
    y_predicted = int(predicted_row.center().y() * dpr)
    first = QColor(image.pixelColor(int((measured_row.left() + 2) * dpr), y_measured))
    assert first.name() == window.budget.linked.process_color.name()
    key, _ = prediction.categories[0]
    start = QColor(image.pixelColor(int((predicted_row.left() + 2) * dpr), y_predicted))
    assert start.name() == budget_color(key)
    assert all(t.startswith("Predicted ") for t in rows.category_tooltips())
    # unlinked: the rows go
    window.unlink_process(KEY)
    feed(window, backend, [902])
    assert not rows.isVisible()
