"""The real path end to end: the real pynvml binding over the fake driver library, real
child processes, real psutil and /proc, gpuwatch run as a command in a child process.

Every field of ``gpuwatch snapshot --json`` is checked against what the driver says
through the bare binding (``FAKENVML_TIME`` freezes its drift, so two processes read the
same figures) and against the children themselves.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import sys
import time

import psutil
import pytest

from gpuwatch.core.probe_format import PROBE_SCHEMA
from gpuwatch.telemetry.hostinfo import container_from_cgroup

FROZEN = {"time": 1234.5}
MiB = 1024**2


def _me() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def _container(pid: int) -> str | None:
    with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as f:
        return container_from_cgroup(f.read())


def _sleepers(spawn, n: int, first_arg: int = 7001) -> list:
    return [spawn(["sleep", str(first_arg + k)]) for k in range(n)]


def _wait_for_state(pid: int, state: str) -> None:
    for _ in range(1000):
        if psutil.Process(pid).status() == state:
            return
        time.sleep(0.01)
    pytest.fail(f"pid {pid} never reached {state}")


def test_snapshot_json_carries_every_field_the_driver_and_the_host_give(fake_driver, spawn):
    children = _sleepers(spawn, 6)
    pids = [c.pid for c in children]
    settings = dict(gpus=3, mem_gib=24, graphics=1, **FROZEN)
    before = time.time()
    doc = fake_driver.snapshot(pids, **settings)
    after = time.time()
    ref = fake_driver.reference(pids, **settings)

    assert doc["schema"] == "gpuwatch.snapshot/1"
    assert before - 1 <= doc["timestamp_s"] <= after + 1
    assert doc["backend"] == {"kind": "nvml", "driver_version": ref["driver"],
                              "nvml_version": ref["nvml"], "cuda_driver_version": "12.4",
                              "scenario": None, "hostname": os.uname().nodename}
    assert ref["driver"] == "550.127.05" and ref["cuda"] == 12040
    assert doc["warnings"] == [] and doc["probes"] == []
    assert [g["index"] for g in doc["gpus"]] == [0, 1, 2]

    for index, (g, r) in enumerate(zip(doc["gpus"], ref["gpus"], strict=True)):
        assert (g["uuid"], g["name"]) == (r["uuid"], r["name"]) == (r["uuid"],
                                                                    "NVIDIA Fake GPU 24GB")
        assert (g["state"], g["error"], g["processes_error"]) == ("ok", None, None)
        total = 24 * 1024**3
        assert g["memory"] == {"total_bytes": total, "used_bytes": r["used"],
                               "free_bytes": r["free"], "reserved_bytes": r["reserved"]}
        assert r["total"] == total and r["reserved"] > 0
        assert r["used"] + r["free"] + r["reserved"] == total
        assert g["utilization"] == {"gpu_percent": float(r["util_gpu"]),
                                    "memory_busy_percent": float(r["util_memory"]),
                                    # GPM needs two samples: one snapshot has none
                                    "graphics_active_percent": None,
                                    "sm_active_percent": None, "tensor_active_percent": None,
                                    "encoder_percent": 0.0, "decoder_percent": 0.0}
        assert g["pci_bus_id"] == r["pci_bus_id"] == f"00000000:{0x18 + 0x10 * index:02X}:00.0"
        assert g["memory_temperature_c"] == float(r["temperature_c"] + 4)
        # the fake driver's energy: (300 W + 0.5 W per % of load) x its frozen clock, in mJ
        assert g["energy_consumed_j"] == int(
            (300.0 + 0.5 * r["util_gpu"]) * FROZEN["time"] * 1000.0) / 1000
        assert g["last_xid"] is None
        peak = r["bus_width_bits"] / 8 * r["max_memory_clock_mhz"] * 1e6 * 2
        assert peak == 5120 / 8 * 2619e6 * 2                      # 3.35 TB/s, as an H100
        assert g["bandwidth"] == {"peak_bytes_per_s": round(peak),
                                  "estimated_bytes_per_s": round(r["util_memory"] / 100 * peak),
                                  "estimate_method": "memory busy % x peak",
                                  "measured_bytes_per_s": None, "dram_active_percent": None,
                                  "measure_method": "GPM DRAM bandwidth utilisation x peak"}
        assert g["pcie"] == {"tx_bytes_per_s": r["pcie_tx_kib"] * 1024,
                             "rx_bytes_per_s": r["pcie_rx_kib"] * 1024}
        assert g["nvlink"] == {"tx_bytes_per_s": None, "rx_bytes_per_s": None}  # no links
        assert g["temperature_c"] == float(r["temperature_c"])
        assert g["power_w"] == round(r["power_mw"] / 1000, 1)
        assert g["power_limit_w"] == r["power_limit_mw"] / 1000 == 700.0
        assert g["clocks"] == {"graphics_mhz": r["graphics_clock_mhz"],
                               "memory_mhz": r["memory_clock_mhz"]}
        assert g["mig_enabled"] is False and r["mig"] == 0

        # Round-robin: GPU i holds pids[i], pids[i + 3]; the first is also a graphics
        # process (64 MiB), reported once as compute+graphics with the larger figure.
        compute = dict(map(tuple, r["processes"]["compute"]))
        graphics = dict(map(tuple, r["processes"]["graphics"]))
        assert list(compute) == pids[index::3]
        assert list(graphics) == [pids[index]] and graphics[pids[index]] == 64 * MiB
        listed = g["processes"]
        assert [p["used_bytes"] for p in listed] == sorted(compute.values(), reverse=True)
        assert sum(p["used_bytes"] for p in listed) < r["used"]   # + the context overhead
        for p in listed:
            pid = p["pid"]
            proc = psutil.Process(pid)
            # Linux derives a start time from the boot time, which it recomputes from the
            # wall clock: two processes reading it a moment apart may differ by a second.
            started = p.pop("started_at_s")
            assert started == pytest.approx(proc.create_time(), abs=1.01)
            assert p == {
                "pid": pid,
                "name": "sleep",
                "cmdline": ["sleep", str(7001 + pids.index(pid))],
                "user": _me(),
                "used_bytes": compute[pid],
                "container": _container(pid),
                "kind": "compute+graphics" if pid in graphics else "compute",
                "cpu_percent": None,                   # one reading: no rate yet
                "rss_bytes": proc.memory_info().rss,
                "resolved": True,
                "host_status": "found",
            }
            assert p["rss_bytes"] > 0


def test_a_process_gone_before_the_host_looks_is_shown_exited_with_its_memory(
        fake_driver, spawn):
    alive = spawn(["sleep", "7101"])
    reaped = spawn(["sleep", "7102"])
    reaped.kill()
    reaped.wait()                                  # gone: no /proc entry at all
    zombie = spawn(["sleep", "7103"])
    zombie.send_signal(signal.SIGKILL)             # exited, not reaped: a zombie
    _wait_for_state(zombie.pid, psutil.STATUS_ZOMBIE)
    pids = [alive.pid, reaped.pid, zombie.pid]
    doc = fake_driver.snapshot(pids, gpus=1, **FROZEN)
    ref = fake_driver.reference(pids, gpus=1, **FROZEN)
    (gpu,) = doc["gpus"]
    by_pid = {p["pid"]: p for p in gpu["processes"]}
    assert set(by_pid) == set(pids)
    compute = dict(map(tuple, ref["gpus"][0]["processes"]["compute"]))
    for pid in (reaped.pid, zombie.pid):
        assert by_pid[pid] == {
            "pid": pid, "name": None, "cmdline": [], "user": None,
            "used_bytes": compute[pid], "container": None, "kind": "compute",
            "cpu_percent": None, "rss_bytes": None, "started_at_s": None,
            "resolved": False, "host_status": "exited"}
    assert by_pid[alive.pid]["host_status"] == "found"
    assert by_pid[alive.pid]["name"] == "sleep"
    assert sum(p["used_bytes"] for p in gpu["processes"]) == sum(compute.values())
    assert doc["warnings"] == []


@pytest.mark.parametrize("failing_call", ["nvmlDeviceGetMemoryInfo*",
                                          "nvmlDeviceGetHandleByIndex*",
                                          "nvmlDeviceGetUtilizationRates"])
def test_a_lost_gpu_is_shown_lost_while_the_others_keep_reading(fake_driver, spawn,
                                                                failing_call):
    pids = [c.pid for c in _sleepers(spawn, 4)]
    doc = fake_driver.snapshot(pids, gpus=2, fail=f"{failing_call}:1=15", **FROZEN)
    ok, lost = doc["gpus"]
    assert ok["state"] == "ok" and ok["error"] is None
    assert {p["pid"] for p in ok["processes"]} == {pids[0], pids[2]}
    assert lost["index"] == 1 and lost["state"] == "lost"
    assert lost["error"].startswith("GPU lost (it stopped answering")
    assert lost["memory"] == {"total_bytes": None, "used_bytes": None, "free_bytes": None,
                              "reserved_bytes": None}
    assert lost["processes"] == []
    assert lost["processes_error"] == "the GPU could not be read"   # unknown, not "none"
    for field in ("temperature_c", "power_w"):
        assert lost[field] is None


@pytest.mark.parametrize(("call", "field", "touched"), [
    ("nvmlDeviceGetTemperature", ("temperature_c",), {"temperature_c"}),
    ("nvmlDeviceGetPowerUsage", ("power_w",), {"power_w"}),
    ("nvmlDeviceGetEnforcedPowerLimit", ("power_limit_w",), {"power_limit_w"}),
    ("nvmlDeviceGetClockInfo", ("clocks", "graphics_mhz"), {"clocks"}),
    ("nvmlDeviceGetPcieThroughput", ("pcie", "tx_bytes_per_s"), {"pcie"}),
    ("nvmlDeviceGetMemoryBusWidth", ("bandwidth", "peak_bytes_per_s"), {"bandwidth"}),
    ("nvmlDeviceGetUtilizationRates", ("utilization", "gpu_percent"),
     {"utilization", "bandwidth"}),                  # no busy %: no bandwidth estimate
    ("nvmlDeviceGetMigMode", ("mig_enabled",), {"mig_enabled"}),
])
def test_an_unsupported_reading_is_null_and_nothing_else_changes(fake_driver, spawn, call,
                                                                 field, touched):
    pids = [c.pid for c in _sleepers(spawn, 2)]
    (normal,) = fake_driver.snapshot(pids, gpus=1, **FROZEN)["gpus"]
    (gpu,) = fake_driver.snapshot(pids, gpus=1, fail=f"{call}=3", **FROZEN)["gpus"]

    def dig(g: dict) -> object:
        for key in field:
            g = g[key]
        return g

    assert dig(normal) is not None
    assert dig(gpu) is None                            # unsupported is null, never 0
    assert gpu["state"] == "ok" and gpu["error"] is None
    assert len(gpu["processes"]) == 2 and gpu["processes_error"] is None
    assert {k: v for k, v in gpu.items() if k not in touched} == \
        {k: v for k, v in normal.items() if k not in touched}


def test_a_driver_without_memory_v2_gives_v1_figures_and_no_reserved(fake_driver, spawn):
    pids = [spawn(["sleep", "7201"]).pid]
    (gpu,) = fake_driver.snapshot(pids, gpus=1, fail="nvmlDeviceGetMemoryInfo_v2=13",
                                  **FROZEN)["gpus"]
    ref = fake_driver.reference(pids, gpus=1, **FROZEN)["gpus"][0]
    assert gpu["state"] == "ok"
    m = gpu["memory"]
    assert m["reserved_bytes"] is None                       # folded into used by v1
    assert m["used_bytes"] == ref["used"] + ref["reserved"]
    assert m["total_bytes"] == ref["total"] and m["free_bytes"] == ref["free"]


@pytest.mark.parametrize(("fail", "error"), [
    ("nvmlDeviceGetComputeRunningProcesses*:0=10",
     "NVML timed out (TIMEOUT) reading the compute processes"),
    ("nvmlDeviceGetComputeRunningProcesses*:0=4,nvmlDeviceGetGraphicsRunningProcesses*:0=4",
     "no permission (NO_PERMISSION)"),
])
def test_a_process_list_that_cannot_be_read_is_reported(fake_driver, spawn, fail, error):
    pids = [c.pid for c in _sleepers(spawn, 4)]
    doc = fake_driver.snapshot(pids, gpus=2, fail=fail, **FROZEN)
    broken, fine = doc["gpus"]
    assert broken["state"] == "ok" and broken["memory"]["used_bytes"] is not None
    assert broken["processes"] == [] and broken["processes_error"] == error
    assert fine["processes_error"] is None
    assert {p["pid"] for p in fine["processes"]} == {pids[1], pids[3]}


def test_hostile_names_and_arguments_stay_data(fake_driver, spawn):
    """A process names itself ``) Z 1 (`` (what /proc/<pid>/stat's parser must not take
    for a state) and passes terminal escapes, newlines and shell syntax as arguments."""
    hostile = ["\x1b[31mred\x1b[0m", "two\nlines", "$(rm -rf ~)", "tab\there", "ünï", ""]
    script = ("import sys, time\n"
              "open('/proc/self/comm', 'w').write(') Z 1 (')\n"
              "print('ready', flush=True)\n"
              "time.sleep(1000)\n")
    child = spawn([sys.executable, "-c", script, *hostile], stdout=-1, text=True)
    assert child.stdout.readline() == "ready\n"
    doc = fake_driver.snapshot([child.pid], gpus=1, **FROZEN)
    (p,) = doc["gpus"][0]["processes"]
    assert p["host_status"] == "found" and p["resolved"] is True
    assert p["cmdline"] == [sys.executable, "-c", script, *hostile]
    assert p["name"] == ") Z 1 ("
    assert p["rss_bytes"] > 0


def test_a_probe_report_of_a_live_process_is_attached(fake_driver, spawn):
    child = spawn(["sleep", "7301"])
    other = spawn(["sleep", "7302"])
    report = {"schema": PROBE_SCHEMA, "pid": child.pid, "published_at_s": time.time(),
              "allocator": {"allocated_bytes": 100, "reserved_bytes": 400,
                            "inactive_split_bytes": 50, "num_alloc_retries": 2}}
    (fake_driver.probe_dir / f"{child.pid}.json").write_text(json.dumps(report))
    (fake_driver.probe_dir / "notes.txt").write_text("not a report")
    doc = fake_driver.snapshot([child.pid, other.pid], gpus=1, **FROZEN)
    (probe,) = doc["probes"]
    assert probe["pid"] == child.pid
    assert probe["allocator"]["reserved_bytes"] == 400


def test_record_gives_cpu_rates_from_the_second_tick(fake_driver, spawn):
    idle = spawn(["sleep", "7401"])
    busy = spawn([sys.executable, "-c", "while True: pass"])
    done = fake_driver.run(["record", "--json", "--no-save", "--interval", "0.5",
                            "--duration", "2"], [idle.pid, busy.pid], gpus=1)
    assert done.returncode == 0, done.stderr
    snaps = [json.loads(line) for line in done.stdout.splitlines()
             if line.startswith('{"schema":"gpuwatch.snapshot/1"')]
    assert len(snaps) >= 3
    first = {p["pid"]: p for p in snaps[0]["gpus"][0]["processes"]}
    assert first[idle.pid]["cpu_percent"] is None and first[busy.pid]["cpu_percent"] is None
    for snap in snaps[1:]:
        procs = {p["pid"]: p for p in snap["gpus"][0]["processes"]}
        assert procs[idle.pid]["cpu_percent"] == 0.0          # sleep uses no CPU at all
        assert procs[busy.pid]["cpu_percent"] > 0.0
        assert procs[busy.pid]["rss_bytes"] > 0
    # a busy loop is not idle, however loaded the machine is
    busy_rates = [next(p for p in s["gpus"][0]["processes"] if p["pid"] == busy.pid)
                  ["cpu_percent"] for s in snaps[1:]]
    assert sum(busy_rates) / len(busy_rates) > 1.0


def test_no_driver_library_is_a_plain_message(fake_driver):
    env_lib = fake_driver.folder
    fake_driver.folder = env_lib / "missing"
    try:
        done = fake_driver.run(["snapshot", "--json"])
    finally:
        fake_driver.folder = env_lib
    if done.returncode == 0:
        pytest.skip("a real NVIDIA driver library is installed on this machine")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "--demo" in done.stderr


def test_record_for_a_duration_takes_one_sample_more_than_intervals(fake_driver):
    """Samples at the start and every interval up to the end, both ends included: the
    same count as a simulated run, however long the sampler thread took to start."""
    done = fake_driver.run(["record", "--no-save", "--interval", "0.25", "--duration", "1"],
                           gpus=1, procs=0)
    assert done.returncode == 0, done.stderr
    summary = done.stdout.splitlines()[-1]
    assert summary.startswith("Recorded 5 samples over 1"), summary
