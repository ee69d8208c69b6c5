"""Scenario files that are wrong in every way a person or a tool can make them wrong.

Each is refused with a ScenarioError naming the file, the field and the reason, and
``gpuwatch snapshot --demo FILE`` turns that into exit 2 and one line: no traceback,
no hang, no unbounded memory.
"""

from __future__ import annotations

import os
import stat
import sys

import pytest
from sim_support import scenario_dict

from gpuwatch.cli import main
from gpuwatch.telemetry.errors import ScenarioError
from gpuwatch.telemetry.sim.fields import MAX_FILE_BYTES, MAX_POINTS
from gpuwatch.telemetry.sim.scenario import (
    MAX_GPUS,
    MAX_PID,
    MAX_PROCESSES,
    load_scenario_file,
    parse_scenario,
)
from gpuwatch.telemetry.sim.signals import Sawtooth, SignalError, Spikes, Wave

HEAD = """schema = "gpuwatch.scenario/1"
name = "t"
duration_s = 100

[[gpus]]
name = "G"
memory_total = "80GiB"
"""

PROCESS = """
[[processes]]
pid = 10
gpu = 0
name = "p"
memory = "1GiB"
"""


def _proc(**fields):
    return {"pid": 10, "gpu": 0, "name": "p", "memory": "1GiB", **fields}


def _refused(changes, field, reason):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(scenario_dict(**changes), "bad.toml")
    assert info.value.field == field, str(info.value)
    assert reason in info.value.reason, str(info.value)
    assert "\n" not in str(info.value)
    return info.value


BAD = [
    # a list, a number or a string where a table belongs, at the top and nested
    ({"gpus": [1, 2]}, "gpus[0]", "expected a table"),
    ({"gpus": {"name": "x"}}, "gpus", "[[gpus]]"),
    ({"processes": {"pid": 1}}, "processes", "[[processes]]"),
    ({"processes": [[1, 2]]}, "processes[0]", "expected a table"),
    ({"processes": [_proc(repeat=[1])]}, "processes[0].repeat", "expected a table"),
    ({"processes": [_proc(probe="yes")]}, "processes[0].probe", "expected a table"),
    ({"processes": [_proc(memory={"generator": [1]})]}, "processes[0].memory.generator",
     "expected one of"),
    ({"processes": [_proc(memory={"generator": {"a": 1}})]}, "processes[0].memory.generator",
     "expected one of"),
    ({"processes": [_proc(cmdline="python train.py")]}, "processes[0].cmdline",
     "list of strings"),
    ({"processes": [_proc(cmdline=["python", 3])]}, "processes[0].cmdline[1]", "a string"),
    ({"processes": [_proc(kind=["compute"])]}, "processes[0].kind", "expected one of"),
    ({"faults": {"start_s": 1}}, "faults", "[[faults]]"),
    # sizes that overflow or pass the GPU
    ({"gpus": [{"name": "x", "memory_total": "1e300TiB"}]}, "gpus[0].memory_total",
     "more than 1 EiB"),
    ({"gpus": [{"name": "x", "memory_total": 10**400}]}, "gpus[0].memory_total",
     "more than 1 EiB"),
    ({"gpus": [{"name": "x", "memory_total": "24"}]}, "gpus[0].memory_total", "no unit"),
    ({"processes": [_proc(memory="100TiB")]}, "processes[0].memory", "memory_total"),
    ({"processes": [_proc(memory=[[0, "1GiB"], [5, "81GiB"]])]}, "processes[0].memory[1][1]",
     "memory_total"),
    ({"processes": [_proc(memory={"generator": "leak", "low": "1GiB", "high": "2GiB",
                                  "period_s": 1, "leak_per_min": "10GiB"})]},
     "processes[0].memory", "would reach"),
    ({"processes": [_proc(memory={"generator": "wave", "mean": "1GiB", "amplitude": "2GiB",
                                  "period_s": 1})]}, "processes[0].memory", "below 0"),
    ({"processes": [_proc(probe={"parameters": 1, "allocated": "90GiB"})]},
     "processes[0].probe.allocated", "memory_total"),
    # numbers out of range, NaN and infinity
    ({"processes": [_proc(pid=0)]}, "processes[0].pid", "at least 1"),
    ({"processes": [_proc(pid=-5)]}, "processes[0].pid", "at least 1"),
    ({"processes": [_proc(pid=2**22 + 1)]}, "processes[0].pid", f"and {MAX_PID}"),
    ({"processes": [_proc(pid=10**400)]}, "processes[0].pid", "digits"),
    ({"processes": [_proc(pid=1.5)]}, "processes[0].pid", "an integer"),
    ({"processes": [_proc(pid=True)]}, "processes[0].pid", "an integer"),
    ({"processes": [_proc(gpu=-1)]}, "processes[0].gpu", "at least 0"),
    ({"processes": [_proc(gpu=2**70)]}, "processes[0].gpu", "between"),
    ({"processes": [_proc(gpu_util_percent=float("nan"))]}, "processes[0].gpu_util_percent",
     "finite"),
    ({"processes": [_proc(gpu_util_percent=-1)]}, "processes[0].gpu_util_percent", "at least 0"),
    ({"processes": [_proc(memory_busy_percent=[[0, 50], [1, 101]])]},
     "processes[0].memory_busy_percent[1][1]", "between 0 and 100"),
    ({"processes": [_proc(gpu_util_percent={"generator": "wave", "mean": 90, "amplitude": 20,
                                            "period_s": 5})]},
     "processes[0].gpu_util_percent", "more than 100"),
    ({"processes": [_proc(start_s=float("inf"))]}, "processes[0].start_s", "finite"),
    ({"processes": [_proc(start_s=-1)]}, "processes[0].start_s", "at least 0"),
    ({"processes": [_proc(start_s=1e300)]}, "processes[0].start_s", "between"),
    ({"processes": [_proc(memory=[[float("nan"), "1GiB"]])]}, "processes[0].memory[0][0]",
     "finite"),
    ({"processes": [_proc(cpu_percent=1e9)]}, "processes[0].cpu_percent", "between"),
    ({"processes": [_proc(rss=float("inf"))]}, "processes[0].rss", "more than 1 EiB"),
    ({"processes": [_proc(probe={"parameters": 10**14})]}, "processes[0].probe.parameters",
     "between"),
    ({"processes": [_proc(probe={"parameters": 10, "trainable_parameters": 11})]},
     "processes[0].probe.trainable_parameters", "between 0 and 10"),
    ({"duration_s": float("nan")}, "duration_s", "finite"),
    ({"duration_s": 0}, "duration_s", "at least"),
    ({"duration_s": 10**400}, "duration_s", "between"),
    ({"faults": [{"start_s": float("-inf"), "error": "UNKNOWN"}]}, "faults[0].start_s",
     "finite"),
    ({"gpus": [{"name": "x", "memory_total": "1GiB", "power_limit_w": 1e9}]},
     "gpus[0].power_limit_w", "between"),
    ({"gpus": [{"name": "x", "memory_total": "1GiB", "nvlink_links": 10**6}]},
     "gpus[0].nvlink_links", "between"),
    ({"cuda_driver_version": 2**63}, "cuda_driver_version", "between"),
    ({"memory_info_v2": "yes"}, "memory_info_v2", "true or false"),
    # generators: periods of 0, negative, NaN; spikes wider than their period
    ({"processes": [_proc(memory={"generator": "sawtooth", "low": "1GiB", "high": "2GiB",
                                  "period_s": 0})]}, "processes[0].memory.period_s", "at least"),
    ({"processes": [_proc(memory={"generator": "sawtooth", "low": "1GiB", "high": "2GiB",
                                  "period_s": -3})]}, "processes[0].memory.period_s", "at least"),
    ({"processes": [_proc(memory={"generator": "wave", "mean": "1GiB", "amplitude": "0B",
                                  "period_s": float("nan")})]},
     "processes[0].memory.period_s", "finite"),
    ({"processes": [_proc(gpu_util_percent={"generator": "spikes", "base": 1, "peak": 50,
                                            "every_s": 2, "width_s": 3})]},
     "processes[0].gpu_util_percent.width_s", "every_s"),
    # counts: expansions and list lengths are capped
    ({"processes": [_proc(repeat={"every_s": 1, "count": 3_000_000})]},
     "processes[0].repeat.count", f"{MAX_PROCESSES:,} processes"),
    ({"processes": [_proc(repeat={"every_s": 1, "count": 10**400})]},
     "processes[0].repeat.count", "processes"),
    ({"processes": [_proc(pid=MAX_PID - 1, repeat={"every_s": 1, "count": 5})]},
     "processes[0].repeat.count", "largest Linux pid"),
    ({"processes": [_proc(repeat={"every_s": 0, "count": 5})]},
     "processes[0].repeat.every_s", "at least"),
    ({"gpus": [{"name": "x", "memory_total": "1GiB"}] * (MAX_GPUS + 1)}, "gpus", "at most"),
    ({"processes": [_proc(memory=[[t, "1GiB"] for t in range(MAX_POINTS + 1)])]},
     "processes[0].memory", "points"),
    # strings
    ({"name": ""}, "name", "non-empty"),
    ({"name": "x" * 5000}, "name", "characters long"),
    ({"schema": ["gpuwatch.scenario/1"] * 1000}, "schema", "expected"),
]


@pytest.mark.parametrize(("changes", "field", "reason"), BAD)
def test_bad_input_is_refused_with_file_field_and_reason(changes, field, reason):
    err = _refused(changes, field, reason)
    assert str(err).startswith(f"bad.toml: {field}: ")
    assert len(str(err)) < 400


def test_repeat_fills_up_to_the_process_cap_but_not_past_it():
    s = parse_scenario(scenario_dict(
        processes=[_proc(repeat={"every_s": 1, "count": MAX_PROCESSES})]), "ok.toml")
    assert len(s.processes) == MAX_PROCESSES
    err = _refused({"processes": [_proc(pid=1), _proc(pid=100, repeat={"every_s": 1,
                                                                        "count": MAX_PROCESSES})]},
                   "processes[1].repeat.count", "processes")
    assert "1 before this entry" in err.reason


def test_unknown_keys_are_shown_quoted_and_short():
    with pytest.raises(ScenarioError) as info:
        gpus = [{"name": "x", "memory_total": "1GiB", "a\nb" * 100: 1}]
        parse_scenario(scenario_dict(gpus=gpus), "bad.toml")
    assert info.value.field.startswith("gpus[0].'a\\nb") and info.value.field.endswith("…")
    assert len(info.value.field) < 60 and "\n" not in str(info.value)


def test_generators_refuse_impossible_parameters_when_built():
    for make, key in ((lambda: Sawtooth(0, 1, 0), "period_s"),
                      (lambda: Sawtooth(0, float("nan"), 1), "high"),
                      (lambda: Spikes(0, 1, -1, 1), "every_s"),
                      (lambda: Spikes(0, 1, 1, 2), "width_s"),
                      (lambda: Wave(0, 1, float("inf")), "period_s")):
        with pytest.raises(SignalError) as info:
            make()
        assert info.value.key == key


def test_bounds_hold_over_a_process_lifetime_not_the_whole_scenario():
    leak = {"generator": "leak", "low": "1GiB", "high": "2GiB", "period_s": 1,
            "leak_per_min": "1GiB"}
    # 60 s of leaking stays far below 80 GiB; 100 minutes would not
    parse_scenario(scenario_dict(duration_s=6000, processes=[_proc(end_s=60, memory=leak)]),
                   "ok.toml")
    _refused({"duration_s": 6000, "processes": [_proc(memory=leak)]}, "processes[0].memory",
             "would reach")


# -- the file itself -------------------------------------------------------------------


def _file(tmp_path, text: str | bytes, name: str = "s.toml"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_a_fifo_is_refused_without_blocking(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    with pytest.raises(ScenarioError, match="not a regular file"):
        load_scenario_file(fifo)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_is_refused_without_reading_it():
    with pytest.raises(ScenarioError, match="not a regular file"):
        load_scenario_file("/dev/zero")


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(ScenarioError, match="is a folder"):
        load_scenario_file(tmp_path)


def test_a_file_over_one_mebibyte_is_refused(tmp_path):
    path = _file(tmp_path, HEAD + "#" * MAX_FILE_BYTES + "\n")
    with pytest.raises(ScenarioError, match=r"larger than 1\.0 MiB"):
        load_scenario_file(path)


@pytest.mark.parametrize(("data", "reason"), [
    ((HEAD + PROCESS).encode("utf-16"), "is UTF-16 text; save it as UTF-8"),
    (HEAD.replace('"G"', '"Gé"').encode("latin-1"), "is not UTF-8 text (byte 0xe9"),
    (b"\x00\x01\x02garbage", "not valid TOML"),
])
def test_text_that_is_not_utf8_is_named(tmp_path, data, reason):
    with pytest.raises(ScenarioError) as info:
        load_scenario_file(_file(tmp_path, data))
    assert reason in str(info.value)


def test_a_utf8_byte_order_mark_is_fine(tmp_path):
    s = load_scenario_file(_file(tmp_path, b"\xef\xbb\xbf" + (HEAD + PROCESS).encode()))
    assert s.name == "t"


def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path):
    path = _file(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ScenarioError, match=r"nested too deeply|not valid TOML|unknown key"):
        load_scenario_file(path)


def test_a_file_name_with_control_characters_is_shown_on_one_line(tmp_path):
    path = _file(tmp_path, "x = 1\n", "bad\nname.toml")
    with pytest.raises(ScenarioError) as info:
        load_scenario_file(path)
    assert "\n" not in str(info.value)


def test_reading_leaves_the_file_as_it_was(tmp_path):
    path = _file(tmp_path, HEAD + PROCESS)
    before = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    load_scenario_file(path)
    assert (path.read_bytes(), stat.S_IMODE(path.stat().st_mode)) == before


# -- through the command line ----------------------------------------------------------


@pytest.mark.parametrize("text", [
    "gpus = [1, 2]\n",
    HEAD.replace('"80GiB"', '"1e300TiB"'),
    HEAD + PROCESS + "repeat = { every_s = 1, count = 3000000 }\n",
    HEAD + PROCESS.replace("pid = 10", "pid = 99999999999999999999999"),
    "x = " + "[" * 1000 + "]" * 1000 + "\n",
])
def test_the_command_exits_2_with_one_line(tmp_path, capsys, text):
    path = _file(tmp_path, text)
    assert main(["snapshot", "--demo", str(path), "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("gpuwatch: scenario ") and err.count("\n") == 1, err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX special files")
def test_the_command_refuses_special_files(capsys):
    assert main(["snapshot", "--demo", "/dev/null", "--json"]) == 2
    assert "not a regular file" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["a\x00b", "a\x00b.toml", "x" * 5000, "x" * 300 + ".toml",
                                  "bad\nname", "/", "nope"])
def test_any_demo_name_is_a_scenario_or_one_line(capsys, name):
    assert main(["snapshot", "--demo", name, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("gpuwatch: scenario ") and err.count("\n") == 1, err
    assert len(err) < 1000
