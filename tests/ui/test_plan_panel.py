"""The Plan tab: computed off the GUI thread when first shown, filled from the planner."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

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
    assert "Cheapest" in advice and advice.count("\n") <= 2          # three lines at most
    assert "/h" in advice and "per step" not in advice
    full = panel.advice.toolTip()                                   # the rest on hover
    assert "ignores" in full and "Preset" in full and "image-classification" in full
    assert first[COLUMNS.index("Cost / h")].endswith("/h")
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
    priced = [panel.table.item(r, COLUMNS.index("Cost / 1M tokens")).text()
              for r in range(panel.table.rowCount())]
    assert any(t != "—" and float(t.split()[0].replace(",", "")) >= 0.01 for t in priced)


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


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 1e7), st.integers(0, 10**9), st.one_of(st.none(), st.integers(1, 10**7)),
       st.floats(0, 1e4))
def test_costs_read_per_hour_epoch_and_million_tokens(step_cost, tokens, steps, hourly):
    """From any plan figures: a currency amount with two decimals at most, never a
    string of zeros after the point."""
    from types import SimpleNamespace

    from gpuwatch.plan.cloud import CloudFit
    from gpuwatch.ui.live.plan_costs import cost_cells

    fit = SimpleNamespace(config=SimpleNamespace(tokens_per_step=tokens),
                          instance=SimpleNamespace(on_demand_per_hour=hourly),
                          cost_per_step=step_cost, steps_per_epoch=steps)
    fit.cost_per_epoch = CloudFit.cost_per_epoch.fget(fit)
    for cell in cost_cells(fit, "USD", True):
        assert cell == "—" or re.fullmatch(r"[\d,]+(\.\d\d)? USD(/h)?", cell), cell


def test_catalog_gpu_reads_nvml_names() -> None:
    from gpuwatch.ui.live.budget_adapter import catalog_gpu

    GiB = 2**30
    assert catalog_gpu("NVIDIA A100-SXM4-40GB", 40 * GiB) == "A100-40GB"
    assert catalog_gpu("NVIDIA A100-SXM4-80GB", 80 * GiB) == "A100-80GB"
    assert catalog_gpu("NVIDIA H100 80GB HBM3", 80 * GiB).startswith("H100")
    assert catalog_gpu("NVIDIA GeForce Unknown 1", 8 * GiB) is None
    assert catalog_gpu(None, None) is None


def test_the_plan_opens_on_this_machine_and_its_workload(make_window, scenario, qtbot):
    """oom-ramp: an A100 40 GB running ``finetune.py --model llama-3.1-8b``."""
    from tests.ui.conftest import feed

    window = make_window()
    feed(window, scenario("oom-ramp"), [200])
    panel = window.plan
    window.tabs.setCurrentWidget(panel)
    window.show()
    qtbot.waitUntil(lambda: panel.plan is not None or bool(panel.error), timeout=30_000)
    assert panel.error == "" and panel.plan.request.spec.name == "llama-3.1-8b"
    assert panel.machine == ("A100-40GB",)
    first = panel.table.item(0, 0)
    assert first.text() == "A100-40GB · this machine" and first.font().bold()


def test_auto_efficiency_is_the_presets_or_the_model_kinds_as_the_planner_assumes():
    from gpuwatch.budget.catalog import lookup_model
    from gpuwatch.plan.efficiency import default_efficiency
    from gpuwatch.plan.presets import PRESETS, lookup_preset
    from gpuwatch.ui.live.plan_panel import AUTO, compute_plan

    for model in ("resnet-50", "gpt2", "llama-3.1-8b"):
        plan = compute_plan(CUSTOM, model, "recommended", 8, "time", AUTO)
        assert plan.request.efficiency.compute == default_efficiency(
            lookup_model(model)).compute
    cnn = compute_plan(CUSTOM, "resnet-50", "recommended", 8, "time", AUTO)
    llm = compute_plan(CUSTOM, "llama-3.1-8b", "recommended", 8, "time", AUTO)
    assert cnn.request.efficiency.compute < llm.request.efficiency.compute
    name = next(iter(PRESETS))
    preset = compute_plan(name, "", "recommended", 8, "time", AUTO)
    assert preset.request.efficiency.compute == lookup_preset(name).efficiency
    typed = compute_plan(CUSTOM, "resnet-50", "recommended", 8, "time", 42)
    assert typed.request.efficiency.compute == 0.42
