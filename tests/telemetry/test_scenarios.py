"""Scenario files: every built-in parses and runs; bad fields are named with a reason."""

from __future__ import annotations

import pytest
from sim_support import make_scenario, scenario_dict, sim_backend

from gpuwatch.core.snapshot import GpuState
from gpuwatch.telemetry.errors import ScenarioError
from gpuwatch.telemetry.sim.catalog import builtin_names, resolve_scenario
from gpuwatch.telemetry.sim.scenario import load_scenario_file, parse_scenario
from gpuwatch.telemetry.sim.signals import Points, Sawtooth

REQUIRED_BUILTINS = {"workstation", "oom-ramp", "leak", "fragmentation", "multi-gpu-ddp",
                     "churn", "faults"}


def test_the_required_builtins_exist():
    assert set(builtin_names()) >= REQUIRED_BUILTINS


@pytest.mark.parametrize("name", builtin_names())
def test_builtin_runs_from_start_to_end(name):
    scenario = resolve_scenario(name)
    backend = sim_backend(scenario).open()
    steps = 60
    try:
        for k in range(steps + 1):
            backend.clock.set_elapsed(scenario.duration_s * k / steps)
            snap = backend.sample()
            assert len(snap.gpus) == len(scenario.gpus)
            for g in snap.gpus:
                if g.state is GpuState.OK:
                    m = g.memory
                    assert 0 <= m.used_bytes <= m.total_bytes
                    assert m.used_bytes + m.free_bytes + m.reserved_bytes == m.total_bytes
                for p in g.processes:
                    assert p.name and p.user and p.cmdline
    finally:
        backend.close()


def test_workstation_has_training_notebook_and_desktop():
    s = resolve_scenario("workstation")
    assert len(s.gpus) == 2
    kinds = {p.kind for p in s.processes}
    assert {"compute", "graphics"} <= kinds
    assert any("ipykernel" in " ".join(p.cmdline) for p in s.processes)
    assert any("train.py" in p.cmdline for p in s.processes)


def test_multi_gpu_ddp_has_eight_gpus_with_nvlink():
    s = resolve_scenario("multi-gpu-ddp")
    assert len(s.gpus) == 8 and all(g.nvlink_links for g in s.gpus)


def test_churn_has_many_short_lived_processes():
    s = resolve_scenario("churn")
    short = [p for p in s.processes if p.end_s is not None and p.end_s - p.start_s < 60]
    assert len(short) > 100


def test_faults_covers_every_nvml_error_class():
    from gpuwatch.telemetry.nvml.codes import all_codes

    s = resolve_scenario("faults")
    assert set(all_codes()) <= {f.error for f in s.faults}


def test_signals_interpolate_and_hold_their_ends():
    p = Points((0.0, 10.0), (0.0, 100.0))
    assert p.at(-1) == 0 and p.at(5) == 50 and p.at(99) == 100
    saw = Sawtooth(10, 20, 4, leak_per_s=1)
    assert saw.at(0) == 10 and saw.at(2) == 17 and saw.at(4) == 14


def test_repeat_expands_into_new_pids_and_start_times():
    s = make_scenario(processes=[{"pid": 10, "gpu": 0, "name": "job", "memory": "1GiB",
                                  "start_s": 5, "end_s": 8,
                                  "repeat": {"every_s": 10, "count": 3}}])
    assert [(p.pid, p.start_s, p.end_s) for p in s.processes] == [
        (10, 5, 8), (11, 15, 18), (12, 25, 28)]


BAD_FIELDS = [
    ({"schema": "gpuwatch.scenario/2"}, "schema", "expected"),
    ({"duration_s": -5}, "duration_s", "at least"),
    ({"gpus": []}, "gpus", "at least one"),
    ({"gpus": [{"name": "x", "memory_total": "80 parsecs"}]}, "gpus[0].memory_total", "unit"),
    ({"gpus": [{"name": "x", "memory_total": "1GiB", "memory_base": "2GiB"}]}, "gpus[0]",
     "less than"),
    ({"gpus": [{"name": "x", "memory_total": "1GiB", "colour": "red"}]}, "gpus[0].colour",
     "unknown key"),
    ({"processes": [{"pid": 1, "gpu": 7, "name": "p", "memory": "1GiB"}]}, "processes[0].gpu",
     "no GPU 7"),
    ({"processes": [{"pid": 1, "gpu": 0, "name": "p", "memory": [[0, "1GiB"], [0, "2GiB"]]}]},
     "processes[0].memory[1]", "increase"),
    ({"processes": [{"pid": 1, "gpu": 0, "name": "p", "memory": [[0]]}]},
     "processes[0].memory[0]", "pair"),
    ({"processes": [{"pid": 1, "gpu": 0, "name": "p", "memory": {"generator": "zigzag"}}]},
     "processes[0].memory.generator", "sawtooth"),
    ({"processes": [{"pid": 1, "gpu": 0, "name": "p", "memory": "1GiB",
                     "gpu_util_percent": 140}]}, "processes[0].gpu_util_percent", "between"),
    ({"processes": [{"pid": 1, "gpu": 0, "name": "p"}]}, "processes[0].memory", "required"),
    ({"processes": [{"pid": 1, "gpu": 0, "name": "p", "memory": "1GiB", "start_s": 9,
                     "end_s": 3}]}, "processes[0].end_s", "after start_s"),
    ({"processes": [{"pid": 1, "gpu": 0, "name": "a", "memory": "1GiB"},
                    {"pid": 1, "gpu": 0, "name": "b", "memory": "1GiB"}]}, "processes",
     "used twice"),
    ({"faults": [{"start_s": 1, "error": "ON_FIRE"}]}, "faults[0].error", "unknown NVML error"),
    ({"faults": [{"start_s": 1, "error": "UNKNOWN", "call": "nvmlDeviceGetMagic"}]},
     "faults[0].call", "not a pynvml function"),
]


@pytest.mark.parametrize(("changes", "field", "reason"), BAD_FIELDS)
def test_bad_field_is_named_with_a_reason(changes, field, reason):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(scenario_dict(**changes), "bad.toml")
    assert info.value.source == "bad.toml"
    assert info.value.field == field
    assert reason in info.value.reason
    assert str(info.value).startswith(f"bad.toml: {field}: ")


def test_unreadable_files_are_named(tmp_path):
    with pytest.raises(ScenarioError, match="no such file"):
        load_scenario_file(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("name = [unclosed\n")
    with pytest.raises(ScenarioError, match=r"broken\.toml: is not valid TOML"):
        load_scenario_file(broken)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ScenarioError, match=r"binary\.toml"):
        load_scenario_file(binary)


def test_unknown_name_lists_the_builtins():
    with pytest.raises(ScenarioError, match="workstation"):
        resolve_scenario("no-such-scenario")
