"""Series from Prometheus -> GPUs grouped by host: what plain dcgm-exporters give, what
gpuwatch's exporters add, and what happens when a host's series stop."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.core.snapshot import GpuState
from gpuwatch.telemetry.prometheus import names as n
from gpuwatch.telemetry.prometheus.assemble import Assembler, host_of
from gpuwatch.telemetry.prometheus.response import Series

MIB = 1 << 20


def gpu_series(host: str, gpu: int, used_mib: float, *, job: str = "dcgm",
               extra: dict[str, float] | None = None) -> list[Series]:
    labels = {"job": job, "instance": f"{host}:9400", "gpu": str(gpu),
              "UUID": f"GPU-{host}-{gpu}", "modelName": "NVIDIA H100 80GB HBM3",
              "Hostname": host, "device": f"nvidia{gpu}"}
    values = {n.FB_USED: used_mib, n.FB_FREE: 81559 - used_mib, n.FB_RESERVED: 520.0,
              **(extra or {})}
    return [Series({**labels, "__name__": name}, 1.0, value) for name, value in values.items()]


def up(host: str, value: float, job: str = "dcgm") -> Series:
    return Series({"__name__": "up", "job": job, "instance": f"{host}:9400"}, 1.0, value)


def test_dcgm_exporter_series_become_gpus_with_unknowns_as_none() -> None:
    a = Assembler()
    gpus, probes, warnings = a.build(
        [*gpu_series("node-b", 1, 2048), *gpu_series("node-a", 0, 1024),
         *gpu_series("node-b", 0, 4096), up("node-a", 1), up("node-b", 1)], 10.0)
    assert [g.name for g in gpus] == ["node-a/0 · H100 80GB HBM3",
                                      "node-b/0 · H100 80GB HBM3",
                                      "node-b/1 · H100 80GB HBM3"]   # host by host
    assert [g.index for g in gpus] == [0, 1, 2]
    g = gpus[0]
    assert g.state is GpuState.OK
    assert g.memory.used_bytes == 1024 * MIB
    assert g.memory.total_bytes == (81559 + 520) * MIB      # used + free + reserved
    # dcgm-exporter's defaults say nothing of these: n/a, never 0
    assert g.temperature_c is None and g.power_w is None and g.pcie_tx_bytes_per_s is None
    assert g.power_limit_w is None and g.estimated_bandwidth_bytes_per_s is None
    assert g.processes == () and "does not report processes" in g.processes_error
    assert probes == () and warnings == ()


def test_gpuwatch_series_add_processes_and_allocator_figures() -> None:
    base = gpu_series("n1", 0, 1024, job="gw", extra={
        n.GPU_TOTAL: 85899345920, n.GPU_READABLE: 1, n.GPU_PEAK_BANDWIDTH: 2e12,
        n.MEM_COPY_UTIL: 40, n.SM_CLOCK: 1980, n.GPU_NVLINK_TX: 5e9})
    labels = {"job": "gw", "instance": "n1:9400", "gpu": "0", "UUID": "GPU-n1-0",
              "Hostname": "n1"}
    proc = {**labels, "pid": "4242", "name": "python", "user": "ann", "container": ""}
    series = [*base,
              Series({**proc, "__name__": n.PROCESS_USED}, 1.0, 700 * MIB),
              Series({**labels, "pid": "other", "name": n.OTHER_NAME, "user": "",
                      "container": "", "__name__": n.PROCESS_USED}, 1.0, 10 * MIB),
              Series({**proc, "__name__": n.ALLOC_RESERVED}, 1.0, 600 * MIB),
              Series({**proc, "__name__": n.ALLOC_INACTIVE}, 1.0, 50 * MIB)]
    gpus, probes, _ = Assembler().build(series, 5.0)
    (g,) = gpus
    assert g.memory.total_bytes == 85899345920
    assert g.processes_error is None
    assert g.estimated_bandwidth_bytes_per_s == 0.4 * 2e12        # busy 40 % x peak
    assert g.graphics_clock_mhz == 1980 and g.nvlink_tx_bytes_per_s == 5e9
    assert g.nvlink_rx_bytes_per_s is None
    (p,) = g.processes                       # the "other" bucket is no process row
    assert (p.pid, p.name, p.user, p.container, p.used_bytes) == (4242, "python", "ann",
                                                                  None, 700 * MIB)
    (probe,) = probes
    assert probe.pid == 4242 and probe.device_uuids == ("GPU-n1-0",)
    assert probe.allocator.reserved_bytes == 600 * MIB
    assert probe.allocator.inactive_split_bytes == 50 * MIB
    assert probe.allocator.allocated_bytes is None


def test_a_host_whose_series_stop_is_unreachable_not_empty() -> None:
    a = Assembler()
    a.build([*gpu_series("a", 0, 1000), *gpu_series("b", 0, 2000), up("a", 1), up("b", 1)], 1)
    gpus, _, warnings = a.build([*gpu_series("a", 0, 1100), up("a", 1), up("b", 0)], 2)
    ok, gone = gpus
    assert ok.state is GpuState.OK and ok.memory.used_bytes == 1100 * MIB
    assert gone.state is GpuState.ERROR and gone.index == 1
    assert "host b unreachable" in gone.error and "up is 0" in gone.error
    assert gone.memory.used_bytes is None and gone.memory.total_bytes is None   # not 0
    assert warnings == ("1 of 2 hosts unreachable — b: its scrape fails (Prometheus's up is 0)",)
    # gone from Prometheus entirely (target removed): still unreachable, still there
    gpus, _, _ = a.build(gpu_series("a", 0, 1200), 3)
    assert "no current series" in gpus[1].error
    # back: the same row again
    gpus, _, warnings = a.build([*gpu_series("a", 0, 1, ), *gpu_series("b", 0, 5)], 4)
    assert gpus[1].state is GpuState.OK and gpus[1].index == 1 and warnings == ()


def test_one_gpu_gone_from_a_host_that_answers_is_lost() -> None:
    a = Assembler()
    a.build([*gpu_series("a", 0, 1), *gpu_series("a", 1, 1)], 1)
    gpus, _, warnings = a.build(gpu_series("a", 0, 1), 2)
    assert gpus[1].state is GpuState.LOST and "series stopped" in gpus[1].error
    assert warnings == ()
    gpus, _, _ = a.build([*gpu_series("a", 0, 1),
                          *gpu_series("a", 1, 1, extra={n.GPU_READABLE: 0})], 3)
    assert gpus[1].state is GpuState.LOST and "cannot be read" in gpus[1].error


def test_hosts_come_from_hostname_or_the_instance() -> None:
    assert host_of({"Hostname": "n", "instance": "10.0.0.1:9400"}) == "n"
    assert host_of({"instance": "10.0.0.1:9400"}) == "10.0.0.1"
    assert host_of({"instance": "[fd00::1]:9400"}) == "fd00::1"
    assert host_of({"instance": "gpu-7"}) == "gpu-7"
    assert host_of({}) == "?"
    hostile = host_of({"Hostname": "\x1b]0;owned\x07" + "h" * 500})
    assert hostile.startswith("\\x1b]0;owned\\x07") and len(hostile) <= 64


def test_the_advisor_runs_on_the_series_and_an_unreachable_host_is_no_oom() -> None:
    """Two hosts climb toward full; one stops answering. The advisor warns on both, and
    the silent host's processes are not taken for processes killed by an OOM: nothing
    opens for it, and its warning closes."""
    from gpuwatch.advisor import Advisor
    from gpuwatch.core.history import History
    from gpuwatch.core.snapshot import BackendInfo, BackendKind, Snapshot

    def proc(host: str, used: float) -> Series:
        return Series({"job": "gw", "instance": f"{host}:9400", "gpu": "0", "Hostname": host,
                       "UUID": f"GPU-{host}-0", "pid": "77", "name": "python", "user": "u",
                       "container": "", "__name__": n.PROCESS_USED}, 1.0, used)

    assembler, history, advisor = Assembler(), History(), Advisor()
    opened_after_silence, closed = [], set()
    for t in range(400):
        series = []
        climb = min(max(0, t - 50) * 40, 11000)   # steady first, then a climb: no warm-up
        for host in ("a", "b") if t < 300 else ("a",):
            series += gpu_series(host, 0, 70000 + climb, job="gw", extra={n.GPU_READABLE: 1})
            series.append(proc(host, (69000 + climb) * MIB))
        gpus, probes, warnings = assembler.build(series, 1000.0 + t)
        history.append(Snapshot(1000.0 + t, BackendInfo(BackendKind.NVML), gpus, warnings,
                                probes))
        for event in advisor.update(history):
            if t >= 300 and event.hint.gpu_index == 1:
                if event.kind.value == "opened":
                    opened_after_silence.append(event.hint.code)
                elif event.kind.value == "closed":
                    closed.add(event.hint.code)
    assert {h.gpu_index for h in advisor.active} == {0}
    assert advisor.active[0].code == "oom-risk"
    assert opened_after_silence == []
    assert "oom-risk" in closed


_series = st.builds(
    lambda metric, job, host, gpu, pid, value, spelling, port: Series(
        {"__name__": metric, "job": job, "instance": f"{host}:{port}", spelling: host,
         **({"gpu": gpu} if gpu is not None else {}), **({"pid": pid} if pid else {})},
        1.0, value),
    st.sampled_from((n.UP, *n.READ_METRICS)), st.sampled_from(["gw", "dcgm"]),
    st.sampled_from(["a", "b", "c"]), st.none() | st.sampled_from(["0", "1", "x"]),
    st.none() | st.sampled_from(["1", "42", "other", "-3", "99999999999"]),
    st.none() | st.floats(-1e12, 1e15, allow_nan=False),
    st.sampled_from(["Hostname", "hostname"]), st.sampled_from([9400, 9401]))


def _host(name: str) -> str:
    """The host a GPU's name starts with, without the instance that tells two exporters
    on one host apart (added when the second one is seen)."""
    return name.partition(" · ")[0].partition("/")[0].partition(" [")[0]


@given(st.lists(st.lists(_series, max_size=25), min_size=1, max_size=4))
def test_any_series_make_gpus_that_keep_their_index(ticks: list[list[Series]]) -> None:
    assembler = Assembler()
    names: dict[int, str | None] = {}
    for t, series in enumerate(ticks):
        gpus, probes, _ = assembler.build(series, float(t))
        assert [g.index for g in gpus] == list(range(len(gpus)))   # none dropped
        for g in gpus:
            # a row stays its host's (an exporter down from the start holds a row that its
            # first GPU takes when it answers)
            assert _host(names.setdefault(g.index, g.name)) == _host(g.name)
            for value in (g.memory.used_bytes, g.memory.free_bytes, g.memory.total_bytes,
                          g.measured_bandwidth_bytes_per_s):
                assert value is None or value >= 0          # negative readings: unknown
            for percent in (g.dram_active_percent, g.tensor_active_percent,
                            g.graphics_active_percent):     # DCGM ratios outside 0-1: unknown
                assert percent is None or 0 <= percent <= 100
            assert g.last_xid is None or (type(g.last_xid) is int and g.last_xid >= 1)
            assert all(p.pid > 0 for p in g.processes)
        assert all(p.pid > 0 for p in probes)


def test_allocator_figures_of_a_pid_two_hosts_share_go_to_neither() -> None:
    series = []
    for host in ("a", "b"):
        labels = {"job": "gw", "instance": f"{host}:9400", "gpu": "0", "Hostname": host,
                  "UUID": f"GPU-{host}", "pid": "1", "name": "python", "user": "", "container": ""}
        series += gpu_series(host, 0, 100, job="gw")
        series.append(Series({**labels, "__name__": n.PROCESS_USED}, 1.0, 50 * MIB))
    labels_a = {**series[-1].labels}
    labels_a.update(instance="a:9400", Hostname="a", UUID="GPU-a",
                    __name__=n.ALLOC_RESERVED)
    gpus, probes, _ = Assembler().build([*series, Series(labels_a, 1.0, 40 * MIB)], 1.0)
    assert [len(g.processes) for g in gpus] == [1, 1]
    assert probes == ()            # pid 1 on both hosts: whose figures would they be?
    # alone, the same figures come through
    _, probes, _ = Assembler().build([*series[:len(series) // 2],
                                      Series(labels_a, 1.0, 40 * MIB)], 1.0)
    assert [p.pid for p in probes] == [1]
