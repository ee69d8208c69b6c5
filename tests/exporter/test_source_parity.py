"""Reading what dcgm-exporter's current defaults and gpuwatch's exporter write: the
lower-case ``hostname``, GPM's ``DCGM_FI_PROF_*`` ratios, two exporters on one host,
targets already down at the start, and budgets exported with ``serve --budget``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_support import StaticTarget

from gpuwatch.core.snapshot import BudgetPeak, GpuState
from gpuwatch.telemetry.prometheus import names as n
from gpuwatch.telemetry.prometheus.assemble import Assembler, host_of
from gpuwatch.telemetry.prometheus.backend import (
    PrometheusBackend,
    PrometheusUnavailableError,
)
from gpuwatch.telemetry.prometheus.response import Series

MIB = 1 << 20


def gpu(host: str, index: int = 0, *, job: str = "dcgm", port: int = 9400,
        spelling: str = "hostname", **values: float) -> list[Series]:
    labels = {"job": job, "instance": f"{host}:{port}", "gpu": str(index),
              "UUID": f"GPU-{host}-{port}-{index}",
              "pci_bus_id": f"00000000:{0x18 + index:02X}:00.0",
              "modelName": "NVIDIA H100 80GB HBM3", spelling: host}
    values = {n.FB_USED: 1000.0, n.FB_FREE: 80000.0, **values}
    return [Series({**labels, "__name__": name}, 1.0, value) for name, value in values.items()]


def up(host: str, value: float, *, job: str = "dcgm", port: int = 9400) -> Series:
    return Series({"__name__": "up", "job": job, "instance": f"{host}:{port}"}, 1.0, value)


@given(host=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                    max_size=30).filter(str.strip),
       spelling=st.sampled_from(["hostname", "Hostname"]))
def test_either_spelling_of_the_host_label_names_the_host(host, spelling):
    (g,) = Assembler().build(gpu(host, spelling=spelling), 1.0)[0]
    assert g.name.startswith(f"{host_of({spelling: host})}/0 · ")
    assert not g.name.startswith("127.0.0.1")


def test_gpm_ratios_become_percentages_and_measured_bandwidth():
    gpuwatch_gpu = gpu("a", job="gw", **{n.DRAM_ACTIVE: 0.42, n.PIPE_TENSOR_ACTIVE: 0.3,
                                         n.GR_ENGINE_ACTIVE: 0.9, n.GPU_PEAK_BANDWIDTH: 3e12,
                                         n.MEM_COPY_UTIL: 60, n.ENC_UTIL: 5,
                                         n.MEMORY_TEMP: 48})
    dcgm_gpu = gpu("b", **{n.DRAM_ACTIVE: 1.7})        # not a ratio: unknown, not 170 %
    a, b = Assembler().build([*gpuwatch_gpu, *dcgm_gpu], 1.0)[0]
    assert a.dram_active_percent == pytest.approx(42)
    assert a.measured_bandwidth_bytes_per_s == pytest.approx(0.42 * 3e12)
    assert a.estimated_bandwidth_bytes_per_s == pytest.approx(0.6 * 3e12)
    assert (a.tensor_active_percent, a.graphics_active_percent) == pytest.approx((30, 90))
    assert (a.encoder_util_percent, a.memory_temperature_c) == (5, 48)
    assert a.pci_bus_id == "00000000:18:00.0"
    # plain dcgm-exporter: no peak, so no bandwidth figure of either kind
    assert (b.dram_active_percent, b.measured_bandwidth_bytes_per_s) == (None, None)


@pytest.mark.parametrize("ports", [(9400, 9401), (9400, 9400)])
def test_two_exporters_on_one_host_are_two_hosts_not_interleaved(ports):
    jobs = ("gw", "dcgm") if ports[0] == ports[1] else ("gw", "gw")
    series = [*gpu("vm", 0, job=jobs[0], port=ports[0]), *gpu("vm", 1, job=jobs[0], port=ports[0]),
              *gpu("vm", 0, job=jobs[1], port=ports[1]), *gpu("vm", 1, job=jobs[1], port=ports[1])]
    gpus = Assembler().build(series, 1.0)[0]
    names = [g.name.partition(" · ")[0] for g in gpus]
    assert len(set(names)) == 4
    hosts = [name.rpartition("/")[0] for name in names]
    assert hosts[0] == hosts[1] != hosts[2] == hosts[3]     # one exporter's GPUs together
    assert all(h.startswith("vm [") for h in hosts)


def test_a_target_down_from_the_start_is_unreachable_then_takes_its_place():
    a = Assembler()
    gpus, _, warnings = a.build([*gpu("a", job="gw"), up("b", 0, job="gw"),
                                 up("node-exporter", 0, job="node")], 1.0)
    assert [(g.state, g.name.partition(" · ")[0]) for g in gpus] == [
        (GpuState.OK, "a/0"), (GpuState.ERROR, "b")]
    assert "host b unreachable" in gpus[1].error and "up is 0" in gpus[1].error
    assert warnings and "b" in warnings[0] and "node-exporter" not in warnings[0]
    gpus, _, warnings = a.build([*gpu("a", job="gw"), *gpu("b", 0, job="gw"),
                                 *gpu("b", 1, job="gw")], 2.0)
    assert [(g.index, g.state, g.name.partition(" · ")[0]) for g in gpus] == [
        (0, GpuState.OK, "a/0"), (1, GpuState.OK, "b/0"), (2, GpuState.OK, "b/1")]
    assert warnings == ()


def test_budgets_exported_with_serve_come_back_per_process():
    labels = {"job": "gw", "instance": "a:9400", "gpu": "0", "hostname": "a", "pid": "77",
              "name": "python", "user": "u", "container": ""}
    series = [*gpu("a", job="gw"),
              Series({**labels, "__name__": n.PROCESS_USED}, 1.0, 5e9),
              Series({**labels, "__name__": n.PROCESS_BUDGET}, 1.0, 7.5e9),
              Series({**labels, "pid": "other", "__name__": n.PROCESS_BUDGET}, 1.0, 1e9),
              Series({**labels, "pid": "78", "__name__": n.PROCESS_BUDGET}, 1.0, -5)]
    a = Assembler()
    a.build(series, 1.0)
    assert a.budget_peaks == (BudgetPeak(0, 77, 7_500_000_000),)


def _answer(series: list[dict]) -> str:
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": labels, "value": [1.0, value]} for labels, value in series]}})


def test_only_down_targets_at_the_start_is_a_failure_that_names_them():
    server = StaticTarget(_answer([({"__name__": "up", "job": "gw",
                                     "instance": "gpu-1:9400"}, "0")]), "application/json")
    try:
        with pytest.raises(PrometheusUnavailableError) as info:
            PrometheusBackend(f"http://127.0.0.1:{server.port}", timeout_s=2.0).open()
    finally:
        server.stop()
    assert "gw/gpu-1:9400" in str(info.value) and "up == 0" in str(info.value)


def test_the_snapshot_carries_the_budgets_and_the_down_target():
    labels = {"job": "gw", "instance": "a:9400", "gpu": "0", "hostname": "a"}
    server = StaticTarget(_answer([
        ({**labels, "__name__": n.FB_USED}, "1000"), ({**labels, "__name__": n.FB_FREE}, "9"),
        ({**labels, "pid": "5", "__name__": n.PROCESS_BUDGET}, "1e9"),
        ({"__name__": "up", "job": "gw", "instance": "b:9400"}, "0")]), "application/json")
    try:
        backend = PrometheusBackend(f"http://127.0.0.1:{server.port}", timeout_s=2.0).open()
        snap = backend.sample()
    finally:
        server.stop()
    assert [g.state for g in snap.gpus] == [GpuState.OK, GpuState.ERROR]
    assert snap.budget_peaks == (BudgetPeak(0, 5, 1_000_000_000),)
