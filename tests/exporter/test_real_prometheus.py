"""End to end on real parts: a Prometheus server (the Debian package) scrapes real
`gpuwatch serve --demo` processes every second, and the Prometheus source reads them
back. Memory is compared with the scenario's truth, the exposition is checked with
promtool, and one exporter is killed mid-run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prometheus_support import (
    PROMTOOL,
    REPO,
    SCRAPE_INTERVAL_S,
    StaticTarget,
    free_port,
    have_prometheus,
    start_exporter,
    start_prometheus,
    stopping,
    wait_for,
)
from sim_support import sim_backend

from gpuwatch.core.snapshot import GpuState
from gpuwatch.telemetry.prometheus.backend import PrometheusBackend
from gpuwatch.telemetry.prometheus.selector import parse_selector
from gpuwatch.telemetry.sim.scenario import load_scenario_file

pytestmark = pytest.mark.skipif(not have_prometheus(),
                                reason="needs a Prometheus server: apt-get install prometheus")

MIB = 1 << 20
SAMPLE_INTERVAL_S = 0.5
# memory climbs ~10 MiB/s: steady enough to compare, steep enough to tell seconds apart
RAMP = """schema = "gpuwatch.scenario/1"
name = "ramp"
description = "One GPU whose training process climbs ~10 MiB per second."
duration_s = 3600

[[gpus]]
name = "NVIDIA H100 80GB HBM3"
memory_total = "80GiB"
memory_base = "500MiB"
memory_bus_width_bits = 5120
max_memory_clock_mhz = 2619
gpm = true

[[processes]]
pid = 4242
gpu = 0
name = "python"
cmdline = ["python", "train.py"]
user = "ann"
memory = [[0, "1GiB"], [3600, "36GiB"]]
gpu_util_percent = 80
memory_busy_percent = 50
"""
# What a plain dcgm-exporter with its default counters writes for one GPU (its labels,
# its units: MiB, %, C, W; no processes, no reserved memory, no total)
_DCGM_LABELS = ('gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",device="nvidia0",'
                'modelName="NVIDIA A100-SXM4-80GB",Hostname="dcgm-node"')
DCGM_TEXT = "".join(
    f"# HELP {name} {text}\n# TYPE {name} gauge\n{name}{{{_DCGM_LABELS}}} {value}\n"
    for name, text, value in (
        ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", 30720),
        ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", 50201),
        ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", 87),
        ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", 64)))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster")
    ramp = folder / "ramp.toml"
    ramp.write_text(RAMP)
    estimate = folder / "estimate.json"         # the fine-tunes of the contention demo
    estimate.write_text(subprocess.run(
        [sys.executable, "-m", "gpuwatch", "estimate", "--model", "gpt2-medium", "--batch",
         "12", "--seq", "1024", "--json"], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(REPO)}, timeout=120).stdout)
    exporters = {}
    server = None
    dcgm = StaticTarget(DCGM_TEXT)
    try:
        for host, demo, extra in (("node-a", str(ramp), ()), ("node-b", "workstation", ()),
                                  ("node-c", "contention", ("--budget", f"train.py={estimate}"))):
            exporters[host] = start_exporter(host, demo, *extra, interval_s=SAMPLE_INTERVAL_S)
        server = start_prometheus(folder, [f"127.0.0.1:{e.port}" for e in exporters.values()],
                                  {"dcgm": [f"127.0.0.1:{dcgm.port}"]})
        backend = PrometheusBackend(server.url)

        def all_hosts() -> bool:
            snap = backend.sample()
            hosts = {g.name.split("/")[0] for g in snap.gpus if g.state is GpuState.OK}
            return hosts == {"node-a", "node-b", "node-c", "dcgm-node"}

        wait_for("Prometheus to scrape every exporter", all_hosts)
        yield server, exporters, ramp
    finally:
        for e in exporters.values():
            e.stop()
        if server is not None:
            server.stop()
        dcgm.stop()


def _truth(ramp: Path, elapsed_s: float) -> int:
    backend = sim_backend(load_scenario_file(ramp), max(0.0, elapsed_s)).open()
    try:
        return backend.sample().gpus[0].memory.used_bytes
    finally:
        backend.close()


def _used(snapshot, host: str) -> int:
    (gpu,) = [g for g in snapshot.gpus if g.name.startswith(host + "/")]
    assert gpu.state is GpuState.OK, gpu.error
    return gpu.memory.used_bytes


def test_memory_read_back_matches_the_simulated_truth(cluster) -> None:
    server, exporters, ramp = cluster
    a = exporters["node-a"]
    backend = PrometheusBackend(server.url).open()
    for _ in range(3):
        before = time.time()
        observed = _used(backend.sample(), "node-a")
        after = time.time()
        # The exporter's virtual clock started between its launch and its first answer;
        # what Prometheus holds is at most one scrape interval (plus one sample) old.
        lag = SCRAPE_INTERVAL_S + SAMPLE_INTERVAL_S + 0.5
        low = _truth(ramp, before - a.serving_at_s - lag)
        high = _truth(ramp, after - a.started_at_s)
        assert low - MIB <= observed <= high + MIB, (low, observed, high)
        assert high - low < 200 * MIB          # the bound is tight enough to mean something
        time.sleep(0.7)


def test_the_read_back_is_at_most_one_scrape_behind_the_exporter(cluster) -> None:
    server, exporters, _ = cluster
    backend = PrometheusBackend(server.url).open()
    slope = 35 * 1024 * MIB / 3600                # the ramp, bytes per second
    for _ in range(3):
        observed = _used(backend.sample(), "node-a")
        direct = next(float(line.rsplit(" ", 1)[1]) * MIB
                      for line in exporters["node-a"].metrics().splitlines()
                      if line.startswith("DCGM_FI_DEV_FB_USED{"))
        behind_s = (direct - observed) / slope
        assert -1.0 <= behind_s <= SCRAPE_INTERVAL_S + SAMPLE_INTERVAL_S + 1.0, behind_s
        time.sleep(0.5)


def test_hosts_processes_and_fields_come_through(cluster) -> None:
    server, _, _ = cluster
    snap = PrometheusBackend(server.url).open().sample()
    by_host: dict[str, list] = {}
    for g in snap.gpus:
        by_host.setdefault(g.name.split("/")[0], []).append(g)
    assert sorted(by_host) == ["dcgm-node", "node-a", "node-b", "node-c"]
    assert [g.index for g in snap.gpus] == sorted(g.index for g in snap.gpus)
    # indices run host by host
    order = [g.name.split("/")[0] for g in snap.gpus]
    assert order == sorted(order)
    (a,) = by_host["node-a"]
    assert [(p.pid, p.name, p.user) for p in a.processes] == [(4242, "python", "ann")]
    assert a.memory.total_bytes == 80 << 30
    assert a.power_limit_w is not None and a.temperature_c is not None
    assert len(by_host["node-c"]) == 2 and len(by_host["node-b"]) == 2
    budgets = server.query('gpuwatch_process_budget_peak_bytes{hostname="node-c"}')
    peak = json.loads(Path(server.data.parent / "estimate.json").read_text())["total_bytes"]
    assert {r["metric"]["pid"] for r in budgets} <= {"5100", "5200"} and budgets
    assert all(float(r["value"][1]) == peak for r in budgets)


def test_a_plain_dcgm_exporter_reads_with_unknowns_as_na(cluster) -> None:
    server, _, _ = cluster
    snap = PrometheusBackend(server.url, parse_selector('{job="dcgm"}')).open().sample()
    (g,) = snap.gpus
    assert g.name == "dcgm-node/0 · A100-SXM4-80GB"
    assert g.uuid == "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"
    assert g.state is GpuState.OK
    assert g.memory.used_bytes == 30720 * MIB
    assert g.memory.total_bytes == (30720 + 50201) * MIB       # no reserved counter
    assert g.memory.reserved_bytes is None
    assert (g.gpu_util_percent, g.temperature_c) == (87, 64)
    # not exported by its default counters: n/a, never 0
    assert g.power_w is None and g.pcie_tx_bytes_per_s is None and g.power_limit_w is None
    assert g.memory_busy_percent is None
    assert g.processes == () and "does not report processes" in g.processes_error


def test_match_selects_hosts_and_a_bad_regex_is_refused(cluster) -> None:
    server, _, _ = cluster
    snap = PrometheusBackend(server.url, parse_selector('{hostname=~"node-[ab]"}')).open().sample()
    assert {g.name.split("/")[0] for g in snap.gpus} == {"node-a", "node-b"}
    env = {"PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-m", "gpuwatch", "snapshot", "--prometheus",
                             server.url, "--match", '{Hostname=~"("}'],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 1
    assert "refused the query" in result.stderr and "--match" in result.stderr
    assert "Traceback" not in result.stderr


def test_snapshot_command_reads_the_cluster(cluster) -> None:
    server, _, _ = cluster
    result = subprocess.run([sys.executable, "-m", "gpuwatch", "snapshot", "--prometheus",
                             server.url, "--match", '{cluster="test"}', "--json"],
                            capture_output=True, text=True, env={"PYTHONPATH": str(REPO)},
                            timeout=60)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert len(doc["gpus"]) == 5                        # the dcgm job is cluster=other
    assert all(g["state"] == "ok" for g in doc["gpus"])


def test_record_runs_the_advisor_over_the_cluster(cluster) -> None:
    server, _, _ = cluster
    result = subprocess.run([sys.executable, "-m", "gpuwatch", "record", "--prometheus",
                             server.url, "--interval", "1", "--duration", "3", "--json",
                             "--no-save"], capture_output=True, text=True,
                            env={"PYTHONPATH": str(REPO)}, timeout=120)
    assert result.returncode == 0, result.stderr
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    ticks = [d for d in docs if d["schema"] == "gpuwatch.snapshot/1"]
    assert len(ticks) >= 3
    assert all(len(t["gpus"]) == 6 for t in ticks)
    assert "Recorded" in result.stderr


def test_the_window_opens_on_the_cluster(cluster, tmp_path) -> None:
    server, _, _ = cluster
    png = tmp_path / "cluster.png"
    env = {"PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen",
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "GPUWATCH_DATA_DIR": str(tmp_path / "data")}
    result = subprocess.run([sys.executable, "-m", "gpuwatch", "gui", "--prometheus", server.url,
                             "--screenshot", str(png), "--screenshot-after", "2"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert png.stat().st_size > 10_000
    text = subprocess.run([sys.executable, "-m", "gpuwatch", "snapshot", "--prometheus",
                           server.url], capture_output=True, text=True, env=env, timeout=60)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("GPUs read from Prometheus at 127.0.0.1:")


def test_exposition_passes_promtool(cluster) -> None:
    _, exporters, _ = cluster
    text = exporters["node-c"].metrics()
    result = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                            text=True, timeout=60)
    problems = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    # The only remarks allowed: dcgm-exporter's own label names (modelName, Hostname,
    # UUID) are not snake_case, and are kept so that its dashboards work unchanged.
    unexpected = [p for p in problems
                  if not (p.startswith("DCGM_FI_") and "camelCase" in p)]
    assert unexpected == [], unexpected
    assert result.returncode in (0, 3)          # 3: lint remarks only, no parse error


def test_the_grafana_dashboard_queries_run_and_find_series(cluster) -> None:
    from test_dashboard import DASHBOARD, _exprs

    server, _, _ = cluster
    exprs = _exprs(json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"])
    empty = []
    for expr in exprs:
        result = server.query(expr.replace("$host", ".*").replace("$job", ".*"))
        if not result:
            empty.append(expr)
    # no budget is linked and no probe runs in these demos: those panels stay empty
    assert all("budget" in e or "allocator" in e or "time_to_full" in e or "hints" in e
               for e in empty), empty


def test_the_documented_alert_rules_evaluate(cluster) -> None:
    import re

    from test_alert_rules import _rules

    server, _, _ = cluster
    exprs = re.findall(r"^\s+expr: (.+)$", _rules(), re.MULTILINE)
    assert len(exprs) == 4
    for expr in exprs:
        server.query(expr)                  # a bad join or name: HTTP 400 here
    # the budget join finds the linked processes (both below 110 % of their budget)
    below = server.query("gpuwatch_process_memory_used_bytes <= on (hostname, gpu, pid) "
                         "group_left gpuwatch_process_budget_peak_bytes * 1.1")
    assert {r["metric"]["pid"] for r in below} <= {"5100", "5200"} and below


def test_a_target_that_dies_makes_its_host_unreachable(cluster) -> None:
    server, exporters, _ = cluster
    backend = PrometheusBackend(server.url).open()
    before = backend.sample()
    assert any(g.name.startswith("node-c/") and g.state is GpuState.OK for g in before.gpus)
    exporters["node-c"].stop()

    def unreachable():
        snap = backend.sample()
        c = [g for g in snap.gpus if g.name.startswith("node-c/")]
        return snap if c and all(g.state is GpuState.ERROR for g in c) else None

    snap = wait_for("node-c to turn unreachable", unreachable)
    gone = [g for g in snap.gpus if g.name.startswith("node-c/")]
    assert len(gone) == 2
    for g in gone:
        assert "host node-c unreachable" in g.error and "up is 0" in g.error
        assert g.memory.used_bytes is None and g.memory.free_bytes is None   # n/a, not 0
    assert any("node-c" in w for w in snap.warnings)
    # the others carry on, with the indices they had
    assert [g.index for g in snap.gpus] == [g.index for g in before.gpus]
    assert all(g.state is GpuState.OK for g in snap.gpus if not g.name.startswith("node-c"))


def test_a_gpm_gpu_shows_dram_active_with_dcgm_labels_and_reads_back_measured(cluster):
    server, _, _ = cluster
    (series,) = server.query('DCGM_FI_PROF_DRAM_ACTIVE{hostname="node-a"}')
    labels = series["metric"]
    assert labels["pci_bus_id"] == "00000000:18:00.0" and labels["gpu"] == "0"
    assert labels["modelName"] == "NVIDIA H100 80GB HBM3" and "DCGM_FI_DRIVER_VERSION" in labels
    assert float(series["value"][1]) == pytest.approx(0.4)       # 0.8 x 50 % busy
    assert server.query("DCGM_FI_PROF_NVLINK_TX_BYTES") == []     # in neither list
    snap = PrometheusBackend(server.url, parse_selector('{hostname="node-a"}')).open().sample()
    (gpu,) = snap.gpus
    assert gpu.pci_bus_id == "00000000:18:00.0"
    assert gpu.dram_active_percent == pytest.approx(40)
    assert gpu.measured_bandwidth_bytes_per_s == pytest.approx(
        0.4 * gpu.peak_bandwidth_bytes_per_s)
    assert gpu.measured_bandwidth_bytes_per_s < gpu.estimated_bandwidth_bytes_per_s


def test_a_target_down_from_the_start_is_reported_from_the_first_snapshot(tmp_path):
    exporter = start_exporter("node-up", "workstation", interval_s=SAMPLE_INTERVAL_S)
    dead = free_port()                          # nothing listens there
    server = start_prometheus(tmp_path, [f"127.0.0.1:{exporter.port}", f"127.0.0.1:{dead}"])
    with stopping(exporter, server):
        wait_for("one target up with GPUs, one down", lambda: (
            server.query("DCGM_FI_DEV_FB_USED") and server.query("up == 0")))
        done = subprocess.run([sys.executable, "-m", "gpuwatch", "snapshot", "--prometheus",
                               server.url, "--json"], capture_output=True, text=True,
                              timeout=120, cwd=REPO)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    doc = json.loads(done.stdout)
    down = [g for g in doc["gpus"] if g["state"] == "error"]
    assert len(down) == 1 and "unreachable" in down[0]["error"]
    assert "up is 0" in down[0]["error"] and down[0]["name"].startswith("127.0.0.1")
    assert {g["name"].split("/")[0] for g in doc["gpus"] if g["state"] == "ok"} == {"node-up"}
    assert any("127.0.0.1" in w for w in doc["warnings"])
