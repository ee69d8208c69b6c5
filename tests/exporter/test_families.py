"""What one scrape holds: dcgm-exporter's names and units, gpuwatch's own metrics, the
bounded process series and labels made safe, read back with prometheus_client's parser."""

from __future__ import annotations

import math

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry
from sim_support import make_scenario, sim_backend

from gpuwatch.advisor import LinkedBudget
from gpuwatch.core.hints import Hint, Severity
from gpuwatch.core.probe_format import AllocatorFacts, ProbeReport
from gpuwatch.exporter.families import Families
from gpuwatch.exporter.server import SnapshotCollector
from gpuwatch.exporter.state import ExporterState
from gpuwatch.telemetry.prometheus import names as n

MIB = 1 << 20


def _scrape(families: Families) -> dict[str, list]:
    registry = CollectorRegistry(auto_describe=False)

    class Once:
        def collect(self):
            return iter(families)

    registry.register(Once())
    text = generate_latest(registry).decode()
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        out[family.name] = family.samples
    return out


def _snapshot(processes: list[dict], at_s: float = 50.0):
    backend = sim_backend(make_scenario(processes=processes), at_s).open()
    try:
        return backend.sample()
    finally:
        backend.close()


def test_gpu_metrics_use_dcgm_names_units_and_labels() -> None:
    snap = _snapshot([{"pid": 7, "gpu": 0, "name": "python", "memory": "10GiB",
                       "gpu_util_percent": 90}])
    metrics = _scrape(Families(snap, "node-1"))
    used = {s.labels["gpu"]: s for s in metrics[n.FB_USED]}
    g0 = snap.gpu(0)
    assert used["0"].value == g0.memory.used_bytes / MIB           # MiB, as dcgm-exporter
    assert used["0"].labels == {"gpu": "0", "UUID": g0.uuid, "pci_bus_id": "00000000:18:00.0",
                                "device": "nvidia0", "modelName": g0.name,
                                "hostname": "node-1",
                                "DCGM_FI_DRIVER_VERSION": snap.backend.driver_version}
    total = {s.labels["gpu"]: s.value for s in metrics[n.GPU_TOTAL]}
    assert total["0"] == g0.memory.total_bytes
    util = {s.labels["gpu"]: s.value for s in metrics[n.GPU_UTIL]}
    assert util["0"] == 90
    # only GPU 0 of the test scenario has a bus width and a memory clock to know its peak
    peak = {s.labels["gpu"]: s.value for s in metrics[n.GPU_PEAK_BANDWIDTH]}
    assert peak == {"0": g0.peak_bandwidth_bytes_per_s}


def test_unreported_fields_are_left_out_not_zero() -> None:
    snap = _snapshot([{"pid": 7, "gpu": 0, "name": "p", "memory": "1GiB"}])
    gpu = snap.gpus[0]
    assert gpu.nvlink_tx_bytes_per_s is None
    snap = snap.__class__(snap.timestamp_s, snap.backend, (
        gpu.__class__(gpu.index, gpu.uuid, gpu.name, gpu.state, gpu.memory,
                      processes=gpu.processes),), snap.warnings)
    metrics = _scrape(Families(snap, "h"))
    for name in (n.GPU_TEMP, n.POWER_USAGE, n.PCIE_TX, n.GPU_UTIL, n.GPU_POWER_LIMIT):
        assert metrics.get(name, []) == [], name
    assert metrics[n.FB_USED]


def test_processes_past_the_top_n_are_summed_under_other() -> None:
    processes = [{"pid": 100 + i, "gpu": 0, "name": f"w{i}", "memory": f"{i + 1}GiB"}
                 for i in range(12)]
    snap = _snapshot(processes)
    metrics = _scrape(Families(snap, "h", top=5))
    series = [s for s in metrics[n.PROCESS_USED] if s.labels["gpu"] == "0"]
    assert len(series) == 6
    named = {s.labels["pid"]: s.value for s in series}
    assert set(named) == {"111", "110", "109", "108", "107", "other"}
    assert named["other"] == sum((i + 1) * 2**30 for i in range(7))
    assert sum(named.values()) == sum(p.used_bytes for p in snap.gpu(0).processes)


def test_hostile_process_labels_are_escaped_and_clipped() -> None:
    evil = "\x1b]0;pwned\x07" + "x" * 200 + '"}\nfake_metric 1'
    snap = _snapshot([{"pid": 9, "gpu": 0, "name": evil, "user": "bob\r\n", "memory": "1GiB"}])
    metrics = _scrape(Families(snap, "h"))
    (sample,) = [s for s in metrics[n.PROCESS_USED] if s.labels["pid"] == "9"]
    name = sample.labels["name"]
    assert "\x1b" not in name and "\n" not in name and len(name) <= 64
    assert name.startswith("\\x1b]0;pwned\\x07")
    assert sample.labels["user"] == "bob\\r\\n"
    assert "fake_metric" not in metrics


def test_budgets_allocator_figures_hints_and_time_to_full() -> None:
    snap = _snapshot([{"pid": 7, "gpu": 0, "name": "python", "memory": "10GiB"}])
    snap = snap.__class__(snap.timestamp_s, snap.backend, snap.gpus, snap.warnings, (
        ProbeReport(7, snap.timestamp_s, allocator=AllocatorFacts(
            allocated_bytes=6 << 30, reserved_bytes=9 << 30, inactive_split_bytes=1 << 30)),))
    hints = [Hint("oom-risk", Severity.CRITICAL, 0, 7, "t", values=(("time_to_full_s", 90.0),)),
             Hint("memory-leak", Severity.WARNING, 0, 7, "t",
                  values=(("time_to_full_s", 600.0),)),
             Hint("underused", Severity.INFO, 1, None, "t")]
    links = {(0, 7): LinkedBudget("gpt2 · batch 8", 12 << 30)}
    metrics = _scrape(Families(snap, "h", hints, links))
    (peak,) = metrics[n.PROCESS_BUDGET]
    assert peak.value == 12 << 30 and peak.labels["pid"] == "7"
    alloc = {name: metrics[name][0].value
             for name in (n.ALLOC_ALLOCATED, n.ALLOC_RESERVED, n.ALLOC_INACTIVE)}
    assert alloc == {n.ALLOC_ALLOCATED: 6 << 30, n.ALLOC_RESERVED: 9 << 30,
                     n.ALLOC_INACTIVE: 1 << 30}
    open_hints = {(s.labels["gpu"], s.labels["code"], s.labels["severity"]): s.value
                  for s in metrics[n.HINTS_OPEN]}
    assert open_hints == {("0", "oom-risk", "critical"): 1, ("0", "memory-leak", "warning"): 1,
                          ("1", "underused", "info"): 1}
    (full,) = metrics[n.SECONDS_TO_FULL.removesuffix("_seconds") + "_seconds"]
    assert full.labels["gpu"] == "0" and full.value == 90.0


def test_the_collector_runs_the_advisor_and_links_budgets_by_command_line() -> None:
    from gpuwatch.exporter.budgets import BudgetRule

    scenario = make_scenario()
    backend = sim_backend(scenario, 0.0).open()
    state = ExporterState([BudgetRule("train.py", LinkedBudget("est", 20 << 30))])
    collector = SnapshotCollector(state, "node-1")
    assert [m.name for m in collector.collect()] == ["gpuwatch_exporter_samples"]  # nothing yet
    for step in range(5):
        backend.clock.set_elapsed(step * 10.0)
        state.on_snapshot(backend.sample())
    backend.close()
    metrics = {m.name: m.samples for m in collector.collect()}
    assert metrics["gpuwatch_exporter_samples"][0].value == 5       # a counter: _total
    (peak,) = metrics[n.PROCESS_BUDGET]
    assert peak.labels["pid"] == "1001" and peak.value == 20 << 30
    assert all(math.isfinite(s.value) for samples in metrics.values() for s in samples)


def test_a_lost_gpu_keeps_only_its_readable_series_at_zero() -> None:
    scenario = make_scenario(faults=[{"start_s": 10, "gpu": 1, "call": "*",
                                      "error": "GPU_IS_LOST"}])
    backend = sim_backend(scenario, 20.0).open()
    try:
        snap = backend.sample()
    finally:
        backend.close()
    assert snap.gpu(1).state.value == "lost"
    metrics = _scrape(Families(snap, "h"))
    readable = {s.labels["gpu"]: s.value for s in metrics[n.GPU_READABLE]}
    assert readable == {"0": 1.0, "1": 0.0}
    for name in (n.FB_USED, n.FB_FREE, n.GPU_UTIL, n.GPU_TOTAL):
        assert {s.labels["gpu"] for s in metrics[name]} == {"0"}, name    # no fake zeros


def test_the_readings_are_served_when_the_advisor_fails() -> None:
    class Broken:          # an advisor whose rule raises
        def update(self, history):
            raise RuntimeError("a rule broke")

    failures = []
    state = ExporterState(on_error=failures.append)
    state.advisor = Broken()
    backend = sim_backend(make_scenario(), 10.0).open()
    state.on_snapshot(backend.sample())
    backend.close()
    assert state.view is not None and state.view.hints == ()
    assert state.advisor_failures == 1 and str(failures[0]) == "a rule broke"
    metrics = {m.name: m.samples for m in SnapshotCollector(state, "h").collect()}
    assert metrics[n.FB_USED]


def test_dcgm_exporter_parity_names_units_and_what_is_left_out() -> None:
    import dataclasses

    snap = _snapshot([{"pid": 7, "gpu": 0, "name": "python", "memory": "10GiB",
                       "gpu_util_percent": 90, "memory_busy_percent": 50}])
    g0, g1 = snap.gpus
    measured = dataclasses.replace(
        g0, dram_active_percent=40.0, measured_bandwidth_bytes_per_s=0.4 * 2e12,
        tensor_active_percent=30.0, graphics_active_percent=90.0, last_xid=79,
        memory_temperature_c=51.0, encoder_util_percent=3.0, decoder_util_percent=0.0)
    snap = dataclasses.replace(snap, gpus=(measured, g1))
    metrics = _scrape(Families(snap, "node-1"))
    by_gpu = {name: {s.labels["gpu"]: s.value for s in samples}
              for name, samples in metrics.items()}
    # ratios 0-1 as DCGM's profiling fields; GPUs without GPM have no series at all
    assert by_gpu[n.DRAM_ACTIVE] == {"0": 0.4}
    assert by_gpu[n.PIPE_TENSOR_ACTIVE] == {"0": 0.3}
    assert by_gpu[n.GR_ENGINE_ACTIVE] == {"0": 0.9}
    assert by_gpu[n.XID_ERRORS] == {"0": 79}
    assert by_gpu[n.MEMORY_TEMP]["0"] == 51 and by_gpu[n.ENC_UTIL]["0"] == 3
    assert by_gpu[n.GPU_MEASURED_BANDWIDTH] == {"0": 0.4 * 2e12}
    assert by_gpu[n.GPU_ESTIMATED_BANDWIDTH] == {"0": g0.estimated_bandwidth_bytes_per_s}
    # every DCGM name is one of dcgm-exporter's; the NVLink rates moved to gpuwatch's own
    dcgm = {name for name in metrics if name.startswith("DCGM_")}
    assert dcgm <= {*n.DCGM_METRICS, *n.DCGM_WRITE_ONLY}
    # energy in mJ, as dcgm-exporter's counter (written as a gauge: see docs/cluster.md)
    joules = dict(snap.energy_consumed_j)
    assert joules[0] > 0 and by_gpu[n.TOTAL_ENERGY] == {
        str(i): j * 1000 for i, j in joules.items()}
    assert "DCGM_FI_PROF_NVLINK_TX_BYTES" not in metrics
    assert n.GPU_NVLINK_TX in metrics
    for sample in metrics[n.DRAM_ACTIVE]:
        assert set(sample.labels) == set(n.GPU_LABELS)
        assert sample.labels["pci_bus_id"] == g0.pci_bus_id and \
            sample.labels["hostname"] == "node-1"
