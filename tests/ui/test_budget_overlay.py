"""Linking a process to a budget draws predicted categories beside its measured memory."""

from __future__ import annotations

from gpuwatch.core.units import format_bytes
from gpuwatch.ui.live.budget_adapter import BudgetRequest, predict, request_from_cmdline
from tests.ui.conftest import feed

FRAG = BudgetRequest(model="gpt2-medium", batch=8, seq=1024, precision="amp-bf16")
KEY = (0, 66120)


def test_linking_draws_the_overlay_with_the_right_numbers(make_window, scenario) -> None:
    window = make_window()
    snap = feed(window, scenario("fragmentation"), [890, 900])
    measured = next(p for p in snap.processes if p.pid == 66120).used_bytes
    window.link_process(KEY, FRAG)
    prediction = predict(FRAG)
    assert prediction is not None
    overlay = window.overlays[KEY]
    assert overlay.prediction == prediction
    assert overlay.measured_bytes == measured
    assert overlay.unexplained_bytes == measured - prediction.total_bytes > 0
    # the card draws each predicted category, then the unexplained remainder
    card = window.cards.cards[0]
    tips = card.bar.segment_tooltips()
    predicted = [t for t in tips if t.startswith("Predicted")]
    assert len(predicted) == len(prediction.categories)
    assert any(t.startswith("Predicted Activations") for t in predicted)
    assert tips[-1].startswith("Unexplained")
    assert format_bytes(overlay.unexplained_bytes) in tips[-1]
    text = card.budget.text()
    assert format_bytes(prediction.total_bytes) in text and "unexplained" in text
    # the table shows the predicted peak; the process plot draws it as a line
    model = window.processes.model
    assert model.budget(KEY) == prediction.total_bytes
    window.processes.select(KEY)
    line = window.processes.peak_line
    assert line.isVisible()
    assert abs(line.value() - prediction.total_bytes / 2**30) < 1e-6
    window.unlink_process(KEY)
    assert not line.isVisible() and line.scene() is None    # out of the plot, not just hidden


def test_links_are_remembered_per_command_line(make_window, scenario, settings_path) -> None:
    window = make_window()
    feed(window, scenario("fragmentation"), [900])
    window.link_process(KEY, FRAG)
    window.close()
    again = make_window(settings_path)
    feed(again, scenario("fragmentation"), [905])
    assert KEY in again.overlays
    again.unlink_process(KEY)
    assert KEY not in again.overlays


def test_link_from_the_form(make_window, scenario) -> None:
    window = make_window()
    feed(window, scenario("fragmentation"), [900])
    window.budget.set_request(FRAG)
    window.processes.select(KEY)
    window.budget.link_clicked.emit()
    assert window.overlays[KEY].prediction.label == FRAG.label


def test_the_form_shows_breakdown_max_batch_and_what_ifs(make_window, scenario) -> None:
    window = make_window()
    feed(window, scenario("fragmentation"), [900])
    window.budget.set_request(FRAG)
    result = window.budget.result
    assert result is not None and result.max_batch and result.max_batch > 8
    assert "largest batch that fits" in window.budget.total.text()
    assert window.budget.levers.topLevelItemCount() == len(result.what_if) > 0
    window.budget.model.setCurrentText("no-such-model")
    window.budget.recompute()
    assert window.budget.result is None and "unknown model" in window.budget.total.text()


def test_guessing_a_budget_from_a_command_line() -> None:
    r = request_from_cmdline(("python3", "finetune.py", "--model", "gpt2-medium", "--batch", "8",
                              "--seq", "1024", "--precision", "amp-bf16"))
    assert r is not None and (r.model, r.batch, r.seq, r.precision) == (
        "gpt2-medium", 8, 1024, "amp-bf16")
    r = request_from_cmdline(("python", "pretrain.py", "--model", "llama-3.1-8b", "--zero", "2",
                              "--micro-batch=2", "--seq", "8192"), gpus=8)
    assert r is not None and (r.zero, r.dp, r.batch) == (2, 8, 2)
    assert request_from_cmdline(("python", "train.py", "--config", "x.yaml")) is None
    assert request_from_cmdline(("python", "t.py", "--model", "nope")) is None


def test_the_budget_form_follows_the_usual_precision_of_its_mode(make_window) -> None:
    budget = make_window().budget
    assert (budget.mode.currentText(), budget.precision.currentText()) == ("train", "amp-bf16")
    budget.mode.setCurrentText("infer")            # serving loads 16-bit weights
    assert budget.precision.currentText() == "bf16"
    budget.mode.setCurrentText("train")
    assert budget.precision.currentText() == "amp-bf16"
    budget.precision.setCurrentText("fp32")        # the user's choice stays
    budget.mode.setCurrentText("infer")
    assert budget.precision.currentText() == "fp32"


def test_a_budget_the_source_reports_fills_the_budget_column(make_window, scenario) -> None:
    """Over Prometheus, budgets linked on the exporter (`serve --budget`) come with the
    snapshot; a link made in this window wins for its process."""
    import dataclasses

    from gpuwatch.core.snapshot import BudgetPeak

    window = make_window()
    backend = scenario("fragmentation")
    snap = feed(window, backend, [890])
    window.on_snapshot(dataclasses.replace(snap, budget_peaks=(BudgetPeak(*KEY, 7 << 30),)))
    assert window.processes.model.budget(KEY) == 7 << 30
    window.link_process(KEY, FRAG)
    window.on_snapshot(dataclasses.replace(snap, budget_peaks=(BudgetPeak(*KEY, 7 << 30),)))
    assert window.processes.model.budget(KEY) == predict(FRAG).total_bytes
    window.on_snapshot(snap)
    window.unlink_process(KEY)
    window.on_snapshot(snap)
    assert window.processes.model.budget(KEY) is None


def test_linking_a_budget_adds_its_lines_and_leaves_no_empty_band(make_window, scenario,
                                                                  qtbot) -> None:
    """The card grows by the budget's two lines, no more: the cards' area the window
    gives it ends where the card's contents end (a word-wrapped label's size hint used
    to ask for lines it never drew, an empty band under the card)."""
    window = make_window()
    window.resize(1280, 800)
    window.show()
    feed(window, scenario("fragmentation"), [890])
    card = window.cards.cards[0]
    before = card.sizeHint().height()
    window.link_process(KEY, FRAG)
    feed(window, scenario("fragmentation"), [900])
    qtbot.waitUntil(lambda: not card.budget.isHidden())
    assert len(card.budget.lines()) == 2
    spacing = card.layout().spacing()
    assert card.sizeHint().height() - before == card.budget.sizeHint().height() + spacing
    text = card.budget.text()
    assert text.splitlines()[0].startswith("Budget predicted ")    # the key figures first
    qtbot.wait(50)
    bottom = card.budget.geometry().bottom() + card.layout().contentsMargins().bottom()
    assert card.height() - bottom <= spacing + 2                 # no band under the lines
    grid = window.cards._grid.contentsMargins()
    assert window.cards.height() - (card.y() + card.height()) <= grid.bottom() + 2
