"""The Plan tab: computed off the GUI thread when first shown, filled from the planner."""

from __future__ import annotations

from gpuwatch.ui.live.plan_panel import COLUMNS, CUSTOM, PlanPanel


def shown_panel(qtbot) -> PlanPanel:
    panel = PlanPanel()
    qtbot.addWidget(panel)
    assert panel.plan is None  # nothing computed before the tab is seen
    panel.show()
    qtbot.waitUntil(lambda: panel.plan is not None or bool(panel.error), timeout=30_000)
    return panel


def test_first_show_computes_the_preset_plan(qtbot):
    panel = shown_panel(qtbot)
    assert panel.error == ""
    assert panel.plan.request.spec.name == "resnet-50"
    assert panel.table.columnCount() == len(COLUMNS)
    assert panel.table.rowCount() == len(panel.plan.configs)
    first = [panel.table.item(0, c).text() for c in range(len(COLUMNS))]
    assert first[3] == "yes" and first[7].endswith(("ms", "s"))
    assert "images/s" in first[9]
    advice = panel.advice.toPlainText()
    assert "Cheapest" in advice and "ignores" in advice
    assert "Preset image-classification" in advice and "fp32" in advice
    gpu = panel.table.item(0, 0)
    assert "TFLOP/s" in gpu.toolTip() and "Source:" in gpu.toolTip()


def test_a_change_recomputes_and_sorting_by_memory_orders_the_peaks(qtbot):
    panel = shown_panel(qtbot)
    before = panel.plan
    index = panel.preset.findData("llm-finetuning")
    panel.preset.setCurrentIndex(index)
    panel.sort.setCurrentIndex(panel.sort.findData("memory"))
    qtbot.waitUntil(lambda: panel.plan is not before
                    and panel.plan.request.spec.name == "llama-3.1-8b"
                    and panel.sort.currentData() == "memory", timeout=30_000)
    qtbot.waitUntil(lambda: "peak memory" in panel.status.text(), timeout=30_000)
    fits = [c for c in panel.plan.sorted_configs("memory") if c.fits]
    peaks = [c.peak_bytes for c in fits]
    assert peaks == sorted(peaks)
    assert "tokens/s" in panel.table.item(0, 9).text()


def test_custom_model_and_fp32(qtbot):
    panel = shown_panel(qtbot)
    panel.preset.setCurrentIndex(panel.preset.findData(CUSTOM))
    assert panel.model.isEnabled()
    panel.model.setCurrentText("gpt2")
    panel.precision.setCurrentIndex(panel.precision.findData("fp32"))
    qtbot.waitUntil(lambda: panel.plan is not None and panel.plan.request.spec.name == "gpt2"
                    and panel.plan.request.setup.precision == "fp32", timeout=30_000)
    assert panel.plan.configs[0].step.precision_format == "fp32" or not panel.plan.configs[0].fits


def test_the_window_has_a_plan_tab(make_window):
    window = make_window()
    titles = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    assert "Plan" in titles
    assert window.plan.plan is None  # not computed until shown


def test_every_input_has_a_name_and_a_keyboard_label(qtbot):
    from PySide6.QtWidgets import QLabel

    panel = PlanPanel()
    qtbot.addWidget(panel)
    inputs = [panel.preset, panel.sort, panel.model, panel.precision, panel.batch,
              panel.efficiency]
    assert all(w.accessibleName() for w in [*inputs, panel.table, panel.advice])
    buddies = {label.buddy() for label in panel.findChildren(QLabel)
               if "&" in label.text()}
    assert set(inputs) <= buddies
