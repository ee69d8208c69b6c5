"""The window end to end on simulated scenarios: cards, lost GPUs, every scenario, threads."""

from __future__ import annotations

import threading

import pytest

from gpuwatch.core.snapshot import GpuState
from gpuwatch.telemetry.sampler import Sampler
from gpuwatch.telemetry.sim.catalog import builtin_scenarios
from gpuwatch.ui.live.bridge import SnapshotBridge
from tests.ui.conftest import feed


def test_a_card_per_gpu_that_updates(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("workstation")
    feed(window, backend, [300])
    assert sorted(window.cards.cards) == [0, 1]
    card = window.cards.cards[1]
    assert "RTX 3090" in card.title.text()
    before = card.used.text()
    feed(window, backend, range(301, 340))           # the notebook steps up at 300–320 s
    assert card.used.text() != before
    assert "/ 24.0 GiB used" in card.used.text()
    assert "Memory busy" in card.busy.text() and "of time" in card.busy.text()
    assert "est." in card.bandwidth.text() and "GB/s" in card.bandwidth.text()
    assert "PCIe" in card.pcie.text()
    assert "°C" in card.vitals.text() and "W" in card.vitals.text()
    tips = card.bar.segment_tooltips()
    assert any("pid 39102" in t for t in tips) and any("Reserved" in t for t in tips)


def test_eight_gpus_get_eight_cards(make_window, scenario) -> None:
    window = make_window()
    feed(window, scenario("multi-gpu-ddp"), [600])
    assert len(window.cards.cards) == 8
    assert window.processes.model.rowCount() == 8


def test_a_gpu_lost_and_back(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("faults")
    feed(window, backend, [20])
    card = window.cards.cards[1]
    assert card.state is GpuState.OK and card.badge.isHidden()
    feed(window, backend, [40])                       # GPU 1 falls off the bus at 30 s
    assert card.state is GpuState.LOST
    assert not card.badge.isHidden() and card.badge.text() == "LOST"
    assert "RTX A6000" in card.title.text()           # the last known name stays
    assert card.used.text().startswith("Last known ")
    assert card.property("lost") is True
    # its process stays in the table, greyed: not known to have exited
    model = window.processes.model
    lost = [k for k in model.exited.rows if k[0] == 1]
    assert lost and all(model.is_exited(k) for k in lost)
    assert model.exited.rows[lost[0]].unseen == "GPU lost"
    assert window.cards.cards[0].state is GpuState.OK  # the other GPU keeps updating
    feed(window, backend, [100])                      # back after a reset at 90 s
    assert card.state is GpuState.OK and card.badge.isHidden()
    assert "used" in card.used.text()
    assert not any(e.unseen for e in model.exited.rows.values())   # running, or exited


@pytest.mark.parametrize("name", [s.name for s in builtin_scenarios()])
def test_no_exception_escapes_in_any_scenario(make_window, scenario, qtbot, name) -> None:
    """pytest-qt fails the test if a slot or virtual raised inside the event loop."""
    window = make_window()
    window.show()
    backend = scenario(name)
    duration = backend.scenario_duration_s
    times = [i * duration / 40 for i in range(41)]
    feed(window, backend, times)
    for window_s in (60, 3600, 86400):
        window.plots.set_window(window_s)
    window.plots.toggle_pause()
    window.processes.table.sortByColumn(0, window.processes.model._sort_order)
    if window.processes.model.rowCount():
        window.processes.table.selectRow(0)
    feed(window, backend, [duration + 1, duration + 2])
    qtbot.wait(10)


def test_the_sampler_thread_feeds_the_window_and_stops_on_close(make_window, scenario,
                                                                qtbot) -> None:
    window = make_window()
    backend = scenario("churn")
    bridge = SnapshotBridge()
    bridge.snapshots.connect(window.on_snapshots)
    threads: set[str] = set()
    original = window.on_snapshots

    def record(snaps) -> None:
        threads.add(threading.current_thread().name)
        original(snaps)

    bridge.snapshots.disconnect(window.on_snapshots)
    bridge.snapshots.connect(record)
    sampler = Sampler(backend, 1.0, bridge.push, bridge.error).start()
    window.closing.connect(bridge.close)       # a sampler waiting for the window lets go
    window.closing.connect(sampler.stop)
    qtbot.waitUntil(lambda: window.samples >= 50, timeout=10_000)
    window.close()
    assert not sampler.running
    assert threads == {threading.main_thread().name}   # the GUI only ran on its own thread


def test_banner_says_simulated(make_window) -> None:
    window = make_window(banner="<b>Simulated GPUs</b> — no NVIDIA driver found")
    assert not window.banner.isHidden()
    assert "Simulated GPUs" in window.banner_label.text()


def test_a_cluster_view_names_each_gpu_by_its_host_and_hides_host_only_columns(
        make_window, scenario) -> None:
    """GPUs read from Prometheus: under a header naming their host, "GPU n  model" on
    the card (its index on its host), no CPU, RSS or Running column (no host of ours can
    read them)."""
    import dataclasses

    from gpuwatch.core.snapshot import BackendKind
    from gpuwatch.ui.live.process_texts import CPU, RSS, RUNNING
    from tests.ui.conftest import sample_at

    window = make_window()
    snap = sample_at(scenario("workstation"), 300.0)
    gpus = tuple(dataclasses.replace(g, name=f"node-h100-07/{g.index} · H100 80GB HBM3")
                 for g in snap.gpus)
    remote = dataclasses.replace(snap, gpus=gpus, backend=dataclasses.replace(
        snap.backend, kind=BackendKind.PROMETHEUS))
    window.on_snapshot(remote)
    title = window.cards.cards[1].title.text()
    assert title.startswith("GPU 1") and "H100 80GB HBM3" in title
    assert "node-h100-07 · GPU 1" in window.cards.cards[1].title.toolTip()
    (header,) = window.cards._headers.values()
    assert "node-h100-07" in header.text() and "2 GPUs" in header.text()
    table = window.processes.table
    assert all(table.isColumnHidden(c) for c in (CPU, RSS, RUNNING))
    window.on_snapshot(dataclasses.replace(snap, timestamp_s=snap.timestamp_s + 1))
    assert not any(table.isColumnHidden(c) for c in (CPU, RSS, RUNNING))
    assert window.cards.cards[1].title.text().startswith("GPU 1  ")
    assert not window.cards._headers       # local GPUs: no host headers


def test_a_cluster_host_that_goes_down_is_said_whole_above_its_cards(
        make_window, scenario) -> None:
    """Two hosts; one stops answering: its cards stay together under its header, which
    gives the source's reason whole (word-wrapped, never cut), and the banner counts
    "1 of 2 hosts unreachable"."""
    import dataclasses

    from gpuwatch.core.snapshot import GpuState, MemoryInfo
    from gpuwatch.ui.live.host_headers import ClusterBanner, cluster_banner
    from tests.ui.conftest import sample_at

    why = "its scrape fails (Prometheus's up is 0)"
    snap = sample_at(scenario("multi-gpu-ddp"), 300.0)
    hosts = ("node-a6000-02",) * 3 + ("node-h100-07",) * (len(snap.gpus) - 3)
    local = [0, 1, 2, *range(len(snap.gpus) - 3)]
    gpus = tuple(dataclasses.replace(g, name=f"{h}/{n} · H100") for g, h, n
                 in zip(snap.gpus, hosts, local, strict=True))
    unknown = MemoryInfo(None, None, None, None)
    down = tuple(dataclasses.replace(g, state=GpuState.ERROR, memory=unknown, processes=(),
                                     error=f"host node-a6000-02 unreachable: {why}")
                 if g.index < 3 else g for g in gpus)
    window = make_window(banner=cluster_banner("http://p:9090", sorted(set(hosts))))
    banner = ClusterBanner(window.banner_label, "http://p:9090")
    window.resize(1280, 800)
    for shown in (gpus, down):
        frame = dataclasses.replace(snap, gpus=shown)
        window.on_snapshot(frame)
        banner.on_snapshots([frame])
    headers = window.cards._headers
    assert list(headers) == ["node-a6000-02", "node-h100-07"]
    text = headers["node-a6000-02"].text()
    assert "unreachable" in text and "up is 0" in text
    assert "unreachable" not in headers["node-h100-07"].text()
    assert headers["node-a6000-02"].wordWrap()
    grid = window.cards._grid
    rows = {i: grid.getItemPosition(grid.indexOf(c))[0] for i, c in window.cards.cards.items()}
    header_rows = [grid.getItemPosition(grid.indexOf(h))[0] for h in headers.values()]
    assert header_rows[0] < min(rows[i] for i in range(3)) < header_rows[1] \
        < min(rows[i] for i in range(3, len(gpus)))
    assert window.cards.cards[0].legend.text() == f"Unreachable: {why}"
    assert "1 of 2 hosts unreachable" in window.banner_label.text()
    assert "node-a6000-02" in window.banner_label.text()
