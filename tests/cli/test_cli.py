"""The command line, run in-process and as a real subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib

import pytest
from cli_support import run


def test_snapshot_json_follows_the_schema(capsys):
    code, out, _ = run(capsys, "snapshot", "--demo", "--at", "600", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "gpuwatch.snapshot/1"
    assert doc["backend"]["kind"] == "simulated" and doc["backend"]["scenario"] == "workstation"
    assert isinstance(doc["timestamp_s"], float)
    g0 = doc["gpus"][0]
    assert set(g0) >= {"index", "uuid", "name", "state", "memory", "utilization", "bandwidth",
                       "pcie", "temperature_c", "power_w", "processes"}
    assert set(g0["memory"]) == {"total_bytes", "used_bytes", "free_bytes", "reserved_bytes"}
    assert set(g0["utilization"]) >= {"gpu_percent", "memory_busy_percent"}
    assert {"peak_bytes_per_s", "estimated_bytes_per_s"} <= set(g0["bandwidth"])
    assert set(g0["pcie"]) == {"tx_bytes_per_s", "rx_bytes_per_s"}
    assert all(isinstance(g0["memory"][k], int) for k in g0["memory"])
    proc = g0["processes"][0]
    assert {"pid", "name", "cmdline", "user", "used_bytes", "container"} <= set(proc)
    assert proc["cmdline"][1] == "train.py"


def test_snapshot_table_has_units_and_processes(capsys):
    code, out, _ = run(capsys, "snapshot", "--demo", "workstation", "--at", "600")
    assert code == 0
    assert "Simulated GPUs" in out and "GiB" in out and "train.py" in out
    assert "(estimate)" in out


def test_unsupported_values_are_null_in_json(capsys):
    _code, out, _ = run(capsys, "snapshot", "--demo", "faults", "--at", "35", "--json")
    doc = json.loads(out)
    lost = doc["gpus"][1]
    assert lost["state"] == "lost" and lost["memory"]["used_bytes"] is None


def test_record_runs_virtual_time_at_full_speed(capsys):
    code, out, _ = run(capsys, "record", "--demo", "oom-ramp", "--time-scale", "max",
                       "--duration", "30", "--interval", "1")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("Recording Simulated GPUs")
    assert sum(line.strip().split("  ")[1:2] == ["GPU 0"] for line in lines) == 31
    assert lines[-1].startswith("Recorded 31 samples over 30 s: GPU 0 peak")


def test_record_json_lines(capsys):
    code, out, err = run(capsys, "record", "--demo", "--time-scale", "max", "--duration", "3",
                         "--json")
    assert code == 0
    docs = [json.loads(line) for line in out.splitlines()]
    assert len(docs) == 4 and all(d["schema"] == "gpuwatch.snapshot/1" for d in docs)
    assert "Recorded 4 samples" in err


def test_scenarios_lists_the_builtins(capsys):
    code, out, _ = run(capsys, "scenarios")
    assert code == 0
    assert {line.split()[0] for line in out.splitlines()} >= {
        "workstation", "oom-ramp", "leak", "fragmentation", "multi-gpu-ddp", "churn", "faults"}


@pytest.mark.parametrize(("argv", "words"), [
    (["record", "--interval", "0.01"], "between 0.1 and 3600"),
    (["record", "--interval", "soon"], "must be a number"),
    (["record", "--time-scale", "-2"], "between 0.001 and 1e+06"),
    (["record", "--demo", "--time-scale", "1e-300"], "between 0.001 and 1e+06"),
    (["record", "--duration", "0"], "more than 0"),
    (["record", "--demo", "--duration", "1e300"], "366 days"),
    (["snapshot", "--at", "-5"], "between 0 and"),
    (["gui", "--screenshot-after", "inf"], "finite"),
    (["snapshot", "--at", "5"], "--at applies to simulated GPUs only"),
    (["record", "--time-scale", "10"], "--time-scale applies to simulated GPUs only"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_values_exit_2_with_a_sentence(capsys, argv, words):
    code, _, err = run(capsys, *argv)
    assert code == 2 and words in err


def test_bad_scenario_file_exits_2_naming_file_and_field(capsys, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('schema = "gpuwatch.scenario/1"\nname = "x"\nduration_s = 10\n'
                    '[[gpus]]\nname = "g"\nmemory_total = "lots"\n')
    code, _, err = run(capsys, "snapshot", "--demo", str(path))
    assert code == 2
    assert str(path) in err and "gpus[0].memory_total" in err and "Traceback" not in err


def test_missing_driver_is_one_clear_sentence_and_an_offer_of_demo(capsys, tmp_path):
    path = tmp_path / "nodriver.toml"
    path.write_text('schema = "gpuwatch.scenario/1"\nname = "nodriver"\nduration_s = 10\n'
                    '[[gpus]]\nname = "g"\nmemory_total = "8GiB"\n'
                    '[[faults]]\nstart_s = 0\ncall = "nvmlInit"\nerror = "LIBRARY_NOT_FOUND"\n')
    code, _, err = run(capsys, "snapshot", "--demo", str(path))
    assert code == 1
    assert "No NVIDIA driver found" in err and "--demo" in err


def test_python_dash_m_runs_without_a_traceback():
    result = subprocess.run([sys.executable, "-m", "gpuwatch", "snapshot"],
                            capture_output=True, text=True, timeout=60)
    assert "Traceback" not in result.stderr
    if result.returncode == 1:                   # no NVIDIA driver on this machine
        assert "--demo" in result.stderr
    else:
        assert result.returncode == 0 and "NVML" in result.stdout


def test_ctrl_c_ends_a_recording_cleanly_with_a_summary():
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "gpuwatch", "record", "--demo", "leak",
                             "--interval", "0.1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()
    assert first.startswith("Recording")
    proc.stdout.readline()                      # at least one tick has been printed
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.splitlines()[-1].startswith("Recorded ")
    assert "Traceback" not in err


def test_a_closed_pipe_ends_a_recording_quietly():
    result = subprocess.run(f"'{sys.executable}' -m gpuwatch record --demo --time-scale max "
                            "| head -n 3", shell=True, capture_output=True, text=True,
                            timeout=60)
    assert len(result.stdout.splitlines()) == 3
    assert "Traceback" not in result.stderr


def test_record_prints_hints_as_they_fire(capsys):
    code, out, _ = run(capsys, "record", "--demo", "oom-ramp", "--time-scale", "max",
                       "--no-save")
    assert code == 0
    hints = [line for line in out.splitlines() if line.lstrip().startswith("hint ")]
    assert hints and "oom-risk [GPU 0]" in hints[0] and "full in" in hints[0]
    assert re.search(r"\. 1 critical hint, 1 warning hint\.", out.splitlines()[-1])


def test_record_json_carries_hint_events(capsys):
    _, out, _ = run(capsys, "record", "--demo", "oom-ramp", "--time-scale", "max",
                       "--no-save", "--json")
    docs = [json.loads(line) for line in out.splitlines()]
    events = [d for d in docs if d["schema"] == "gpuwatch.hint-event/1"]
    assert events and events[0]["event"] == "opened"
    assert events[0]["hint"]["code"] == "oom-risk"


def test_the_window_without_a_display_says_so(capsys, monkeypatch):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    code, _, err = run(capsys, "gui", "--demo")
    assert code == 1
    assert "No desktop display found" in err and "gpuwatch record --demo" in err


# -- what the telemetry cannot see, said plainly ------------------------------------------

SMALL_SCENARIO = '''schema = "gpuwatch.scenario/1"
name = "small"
duration_s = 60

[[gpus]]
name = "NVIDIA A100-SXM4-80GB"
memory_total = "80GiB"

[[gpus]]
name = "NVIDIA A100-SXM4-80GB"
memory_total = "80GiB"

[[processes]]
pid = 4100
gpu = 0
name = "python"
cmdline = ["python", "train.py"]
user = "bob"
memory = "22GiB"

[[processes]]
pid = 4200
gpu = 1
name = "python"
cmdline = ["python", "serve.py"]
user = "bob"
memory = "5GiB"
'''


def _scenario_file(tmp_path, *faults: tuple[str, str, int]) -> str:
    text = SMALL_SCENARIO
    for call, error, gpu in faults:
        text += (f'\n[[faults]]\nstart_s = 0\ngpu = {gpu}\ncall = "{call}"\n'
                 f'error = "{error}"\n')
    path = tmp_path / "small.toml"
    path.write_text(text)
    return str(path)


def _gpu_block(out: str, index: int) -> str:
    """The text of one GPU's block in `gpuwatch snapshot`."""
    blocks = out.split("\n\n")
    return next(b for b in blocks if b.startswith(f"GPU {index} "))


@pytest.fixture
def patched_source(monkeypatch):
    """patched_source(patch_lib, gone_pids): `snapshot` and `record` run on the small
    scenario over a simulated NVML that ``patch_lib`` changed, on a host without ``gone``."""
    from gpuwatch.commands import record_cmd, snapshot_cmd
    from gpuwatch.core.snapshot import BackendKind
    from gpuwatch.telemetry.clock import SteppedClock
    from gpuwatch.telemetry.nvml import NvmlBackend
    from gpuwatch.telemetry.sim.host import ScenarioHost
    from gpuwatch.telemetry.sim.library import SimulatedNvml
    from gpuwatch.telemetry.sim.scenario import parse_scenario

    def install(patch_lib=None, gone=()):
        class Host(ScenarioHost):
            def lookup(self, pids):
                return super().lookup(set(pids) - set(gone))

        def open_backend(options):
            clock = SteppedClock()
            scenario = parse_scenario(tomllib.loads(SMALL_SCENARIO), "small.toml")
            lib = SimulatedNvml(scenario, clock)
            if patch_lib is not None:
                patch_lib(lib)
            return NvmlBackend(lib, Host(lib, clock), clock, kind=BackendKind.SIMULATED,
                               scenario="small", pcie_thread=False,
                               scenario_duration_s=60).open()

        for command in (snapshot_cmd, record_cmd):
            monkeypatch.setattr(command, "open_backend", open_backend)

    return install


def test_snapshot_shows_an_exited_process_that_still_holds_memory(capsys, patched_source):
    patched_source(gone={4100})
    code, out, _ = run(capsys, "snapshot")
    assert code == 0
    block = _gpu_block(out, 0)
    (row,) = [line for line in block.splitlines() if line.lstrip().startswith("4100 ")]
    assert "22.0 GiB" in row and "(exited, still holding memory)" in row
    assert "train.py" not in row and "bob" not in row          # no host details
    code, out, _ = run(capsys, "snapshot", "--json")
    (p,) = json.loads(out)["gpus"][0]["processes"]
    assert (p["pid"], p["used_bytes"], p["host_status"]) == (4100, 22 * 1024**3, "exited")
    assert p["resolved"] is False and p["name"] is None and p["cmdline"] == []


def test_snapshot_says_when_the_process_list_cannot_be_read(capsys, tmp_path):
    path = _scenario_file(tmp_path, ("nvmlDeviceGetComputeRunningProcesses", "TIMEOUT", 0),
                          ("nvmlDeviceGetGraphicsRunningProcesses", "TIMEOUT", 0))
    code, out, _ = run(capsys, "snapshot", "--demo", path)
    assert code == 0
    block = _gpu_block(out, 0)
    assert "process list unavailable: NVML timed out (TIMEOUT)" in block
    assert "no processes" not in block and "[" not in block.splitlines()[0]   # still OK
    assert "serve.py" in _gpu_block(out, 1)
    code, out, _ = run(capsys, "snapshot", "--demo", path, "--json")
    g0, g1 = json.loads(out)["gpus"]
    assert g0["state"] == "ok" and g0["processes"] == []
    assert g0["processes_error"] == "NVML timed out (TIMEOUT)"
    assert g1["processes_error"] is None


def test_snapshot_says_no_processes_only_when_there_are_none(capsys, tmp_path):
    path = tmp_path / "idle.toml"
    path.write_text(SMALL_SCENARIO.split("[[processes]]")[0])
    _, out, _ = run(capsys, "snapshot", "--demo", str(path))
    assert "no processes" in _gpu_block(out, 0)
    assert "process list" not in out


def test_record_marks_ticks_whose_process_list_is_missing(capsys, tmp_path):
    path = _scenario_file(tmp_path, ("nvmlDeviceGetComputeRunningProcesses", "TIMEOUT", 0),
                          ("nvmlDeviceGetGraphicsRunningProcesses", "TIMEOUT", 0))
    code, out, _ = run(capsys, "record", "--demo", path, "--time-scale", "max",
                       "--duration", "2", "--no-save")
    assert code == 0
    ticks = [line for line in out.splitlines() if "  GPU " in line]
    assert ticks and all(("processes unavailable" in t) == (" GPU 0 " in t + " ")
                         for t in ticks)


def test_snapshot_without_gpus_says_what_to_check(capsys, patched_source):
    def no_gpus(lib):
        lib.nvmlDeviceGetCount = lambda: 0

    patched_source(no_gpus)
    code, out, _ = run(capsys, "snapshot")
    assert code == 0
    assert len(out.splitlines()) > 1                      # more than the header
    for words in ("NVML lists no GPUs", "driver is loaded", "nvidia-smi -L",
                  "CUDA_VISIBLE_DEVICES does not apply", "--gpus all"):
        assert words in out
    code, out, _ = run(capsys, "snapshot", "--json")
    doc = json.loads(out)
    assert doc["gpus"] == [] and "NVML lists no GPUs" in doc["warnings"][0]
    code, out, _ = run(capsys, "record", "--duration", "2", "--no-save")
    assert code == 0 and "no GPUs" in out.splitlines()[1]


@pytest.mark.parametrize(("error", "state"), [
    ("UNKNOWN", "ok"), ("TIMEOUT", "ok"), ("NOT_SUPPORTED", "ok"), ("NO_PERMISSION", "ok"),
    ("GPU_IS_LOST", "lost"), ("RESET_REQUIRED", "lost"),
])
def test_a_pcie_fault_gives_the_same_state_in_snapshot_and_record(capsys, tmp_path, error,
                                                                   state):
    path = _scenario_file(tmp_path, ("nvmlDeviceGetPcieThroughput", error, 0))
    _, out, _ = run(capsys, "snapshot", "--demo", path, "--json")
    g0 = json.loads(out)["gpus"][0]
    assert g0["state"] == state and g0["pcie"]["rx_bytes_per_s"] is None
    _, out, _ = run(capsys, "record", "--demo", path, "--json", "--time-scale", "max",
                    "--duration", "3", "--no-save")
    docs = [json.loads(line) for line in out.splitlines()]
    states = {d["gpus"][0]["state"] for d in docs if d["schema"] == "gpuwatch.snapshot/1"}
    assert states == {state}
    _, out, _ = run(capsys, "snapshot", "--demo", path)
    assert ("[LOST]" in _gpu_block(out, 0)) == (state == "lost")


def test_a_lost_gpu_is_said_once_in_one_sentence(capsys):
    _, out, _ = run(capsys, "snapshot", "--demo", "faults", "--at", "35")
    block = _gpu_block(out, 1)
    assert block.splitlines()[:2] == [
        "GPU 1  unknown GPU  [LOST]",
        "  GPU lost (it stopped answering; a reset or reboot may be needed)"]
    assert "GPU is lost" not in out and "LOST: GPU lost" not in out
    _, out, _ = run(capsys, "record", "--demo", "faults", "--time-scale", "max",
                    "--duration", "40", "--no-save")
    lost = [line for line in out.splitlines() if "GPU 1  GPU lost" in line]
    assert lost and all(line.endswith("GPU 1  GPU lost (it stopped answering; a reset or "
                                      "reboot may be needed)") for line in lost)
