"""A process that runs the in-process probe: its memory split on the card, the probe's
categories as its overlay, a badge in the table and its allocated line in the plot."""

from __future__ import annotations

from dataclasses import replace

from gpuwatch.core.snapshot import ProcessSample, Snapshot
from gpuwatch.core.units import format_bytes
from gpuwatch.ui.live.budget_adapter import BudgetRequest
from gpuwatch.ui.live.probe_view import FORGET_AFTER_S, ProbeHistory
from gpuwatch.ui.live.process_model import BUDGET
from tests.ui.conftest import feed, sample_at

KEY = (0, 66120)
GIB = 2**30
FRAG = BudgetRequest(model="gpt2-medium", batch=8, seq=1024, precision="amp-bf16")


def _split(window) -> list:
    """The card's segments for pid 66120 (one, or the three parts of the split)."""
    return [s for s in window.cards.cards[0].bar.measured_segments()
            if "(pid 66120)" in s.tooltip]


def _used(snap: Snapshot, pid: int = 66120) -> int:
    p = next(p for p in snap.processes if p.pid == pid)
    assert p.used_bytes is not None
    return p.used_bytes


def test_the_card_splits_a_probed_process(make_window, scenario) -> None:
    window = make_window()
    snap = feed(window, scenario("fragmentation"), [698, 699, 700])
    report = snap.probe(66120)
    assert report is not None and report.allocator is not None
    a = report.allocator
    assert a.allocated_bytes is not None and a.reserved_bytes is not None
    used = _used(snap)
    allocated, cached, outside = _split(window)
    assert 17 * GIB <= allocated.bytes <= 19.5 * GIB
    assert allocated.bytes == a.allocated_bytes
    assert cached.bytes == a.reserved_bytes - a.allocated_bytes == a.cached_free_bytes
    assert outside.bytes == used - a.reserved_bytes > 0
    assert allocated.bytes + cached.bytes + outside.bytes == used
    for seg, word in zip((allocated, cached, outside),
                         ("allocated", "cached free", "outside PyTorch"), strict=True):
        assert word in seg.tooltip and format_bytes(seg.bytes) in seg.tooltip
        assert seg.label == f"{word} {format_bytes(seg.bytes)}"
    assert len({(s.color.name(), s.pattern) for s in (allocated, cached, outside)}) == 3
    # the legend line, with the allocator's fragmentation figures (no OOMs: not shown)
    card = window.cards.cards[0]
    text = card.probe.text()
    assert not card.probe.isHidden()
    for seg in (allocated, cached, outside):
        assert format_bytes(seg.bytes) in text
    assert f"inactive split {format_bytes(a.inactive_split_bytes)}" in text
    assert f"{a.num_alloc_retries} alloc retries" in text and "OOM" not in text
    assert "PYTORCH_CUDA_ALLOC_CONF" not in text


def test_the_probe_fills_the_overlay_without_a_link(make_window, scenario) -> None:
    window = make_window()
    snap = feed(window, scenario("fragmentation"), [700])
    report = snap.probe(66120)
    assert report is not None and report.model and report.optimizer and report.allocator
    assert KEY not in window.overlays
    overlay = window.probe_overlays[KEY]
    cats = dict(overlay.prediction.categories)
    assert cats["parameters"] == report.model.parameter_bytes
    assert cats["gradients"] == report.model.gradient_bytes
    assert cats["optimizer"] == report.optimizer.state_bytes
    assert overlay.prediction.total_bytes == report.allocator.allocated_bytes
    tips = window.cards.cards[0].bar.segment_tooltips()
    probe_row = [t for t in tips if t.startswith("Probe · ")]
    assert len(probe_row) == 4 and probe_row[-1].startswith("Probe · Activations")
    assert not any(t.startswith(("Predicted", "Unexplained")) for t in tips)
    card = window.cards.cards[0]
    assert card.budget.isHidden()       # the probe's legend says it
    legend = card.probe.text()
    assert f"Tensors {format_bytes(overlay.prediction.total_bytes)}" in legend
    assert f"optimizer {format_bytes(report.optimizer.state_bytes)}" in legend
    assert "AdamW step" in card.probe.toolTip()
    # each legend swatch is its category's colour on the bar below it
    from gpuwatch.ui.live.overlay import budget_color
    swatches = [r.swatch.color.name() for line in card.probe.lines() for r in line
                if r.swatch is not None and r.text.strip() in ("params", "grads", "optimizer",
                                                               "activations")]
    assert swatches == [budget_color(k) for k, _ in overlay.prediction.categories]
    # the table: a badge, the figures on hover; no predicted peak of a budget
    model = window.processes.model
    row = model.row_of(KEY)
    assert model.data(model.index(row, BUDGET)) == "probe"
    tip = model.data(model.index(row, BUDGET), 3)
    assert format_bytes(report.allocator.allocated_bytes) in tip
    assert format_bytes(report.allocator.reserved_bytes) in tip
    assert model.budget(KEY) is None


def test_a_linked_budget_wins_and_the_split_stays(make_window, scenario) -> None:
    window = make_window()
    feed(window, scenario("fragmentation"), [700])
    window.link_process(KEY, FRAG)
    assert KEY in window.overlays and KEY not in window.probe_overlays
    card = window.cards.cards[0]
    tips = card.bar.segment_tooltips()
    assert any(t.startswith("Predicted") for t in tips) and tips[-1].startswith("Unexplained")
    assert len(_split(window)) == 3
    assert "the probe counts" in card.budget.text()
    model = window.processes.model
    assert model.data(model.index(model.row_of(KEY), BUDGET)).endswith(" · probe")


def test_an_unprobed_process_is_unchanged(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("fragmentation")
    snap = sample_at(backend, 700)
    g = snap.gpus[0]
    other = ProcessSample(pid=777, gpu_index=0, used_bytes=3 * GIB, name="other")
    window.on_snapshot(replace(snap, gpus=(replace(g, processes=(*g.processes, other)),)))
    segs = [s for s in window.cards.cards[0].bar.measured_segments() if "(pid 777)" in s.tooltip]
    assert len(segs) == 1 and segs[0].bytes == 3 * GIB and not segs[0].label
    model = window.processes.model
    assert model.data(model.index(model.row_of((0, 777)), BUDGET)) == "—"
    assert (0, 777) not in window.probe_overlays
    # a window of unprobed processes shows none of it
    plain = make_window()
    feed(plain, scenario("workstation"), [600])
    assert not plain.probe_overlays
    assert all(c.probe.isHidden() and not any(s.label for s in c.bar.measured_segments())
               for c in plain.cards.cards.values())


def test_a_probe_going_away_removes_the_split(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("fragmentation")
    feed(window, backend, [699, 700])
    card = window.cards.cards[0]
    model = window.processes.model
    # the probe stops publishing: the process is one plain segment again
    snap = sample_at(backend, 701)
    window.on_snapshot(replace(snap, probes=()))
    assert [s.bytes for s in _split(window)] == [_used(snap)]
    assert card.probe.isHidden() and not window.probe_overlays
    assert model.data(model.index(model.row_of(KEY), BUDGET)) == "—"
    assert card.budget.isHidden()
    # it comes back, then the process ends: no split, no legend, only an exited row
    feed(window, backend, [702])
    assert len(_split(window)) == 3
    gone = sample_at(backend, 703)
    window.on_snapshot(replace(gone, gpus=(replace(gone.gpus[0], processes=()),), probes=()))
    assert _split(window) == [] and card.probe.isHidden() and card.budget.isHidden()
    assert model.live_rows == 0 and not window.probe_overlays
    assert model.is_exited(KEY) and model.data(model.index(model.row_of(KEY), BUDGET)) == "—"


def test_unchanged_badges_are_not_announced(make_window, scenario, qtbot) -> None:
    window = make_window()
    backend = scenario("fragmentation")
    feed(window, backend, [700])
    model = window.processes.model
    probes = {KEY: sample_at(backend, 701).probe(66120)}
    with qtbot.assertNotEmitted(model.dataChanged):
        model.set_probes(probes)           # new figures, same badge
    with qtbot.waitSignal(model.dataChanged, timeout=100):
        model.set_probes({})               # the badge goes


def test_the_process_plot_draws_the_allocated_line(make_window, scenario) -> None:
    window = make_window()
    snap = feed(window, scenario("fragmentation"), range(640, 701))
    window.processes.select(KEY)
    _, y = window.processes.alloc_curve.getData()
    assert y is not None and len(y) > 10
    assert float(y.min()) >= 14 and float(y.max()) <= 20     # GiB, under the measured line
    _, measured = window.processes.detail_curve.getData()
    assert float(measured.min()) > float(y.max())
    assert "allocated" in window.processes.detail_title.text()
    history = ProbeHistory()
    history.observe(snap)
    assert history.ring(66120) is not None
    history.observe(replace(snap, timestamp_s=snap.timestamp_s + FORGET_AFTER_S + 1, probes=()))
    assert history.ring(66120) is None


def test_an_adaptive_batch_shows_on_the_probed_process() -> None:
    from gpuwatch.core.probe_format import AdaptiveBatchFacts, ProbeReport
    from gpuwatch.ui.live.probe_view import probe_label, probe_tooltip

    batch = AdaptiveBatchFacts(8, 4, 32, 1, "out-of-memory", 16, 1000.0)
    report = ProbeReport(4242, 1090.0, adaptive_batch=batch)
    assert probe_label(report) == "micro-batch 8 × 4"
    assert ("Adaptive batch: micro-batch 8 × 4 (lowered 90 s ago: out of memory)"
            in probe_tooltip(report, None, "iec").splitlines())
    assert probe_label(replace(report, adaptive_batch=None)) == "probe"
