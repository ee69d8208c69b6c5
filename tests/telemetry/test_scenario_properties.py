"""Property: any scenario file, however mangled, is a snapshot (exit 0) or one line (exit 2).

A valid scenario is mutated at random (wrong types, out-of-range and non-finite
numbers, unitless and overflowing sizes, lists where tables belong, deep nesting,
huge counts), written with a small TOML writer and run through
``gpuwatch snapshot --demo FILE --json`` in-process. No exception may escape, exit 2
prints nothing on stdout and one ``gpuwatch:`` line on stderr, and the file is left
as it was. Cases that used to take minutes or gigabytes are targeted regression
tests in ``test_scenario_inputs.py``; generated inputs stay small.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_support import run_captured as run_cli
from hypothesis import given
from hypothesis import strategies as st

VALID: dict[str, Any] = {
    "schema": "gpuwatch.scenario/1",
    "name": "prop",
    "description": "A scenario to mangle.",
    "duration_s": 120,
    "gpus": [
        {"name": "NVIDIA A100-SXM4-80GB", "memory_total": "80GiB", "memory_base": "512MiB",
         "memory_reserved": "256MiB", "memory_bus_width_bits": 5120,
         "max_memory_clock_mhz": 1593, "nvlink_links": 12,
         "nvlink_bytes_per_s": {"generator": "wave", "mean": "100GB", "amplitude": "20GB",
                                "period_s": 6}},
        {"name": "NVIDIA L4", "memory_total": 25769803776},
    ],
    "processes": [
        {"pid": 1001, "gpu": 0, "name": "python", "cmdline": ["python", "train.py"],
         "user": "alice", "start_s": 1, "end_s": 100,
         "memory": [[0, "1GiB"], [30, "11GiB"], [90, "20GiB"]],
         "gpu_util_percent": {"generator": "wave", "mean": 80, "amplitude": 10, "period_s": 9},
         "memory_busy_percent": 50, "cpu_percent": 120.0, "rss": "3GiB",
         "probe": {"parameters": 124439808, "optimizer": "adamw",
                   "allocated": {"generator": "sawtooth", "low": "8GiB", "high": "9GiB",
                                 "period_s": 2}}},
        {"pid": 2000, "gpu": 1, "name": "job", "start_s": 0, "end_s": 5,
         "repeat": {"every_s": 10, "count": 5},
         "memory": {"generator": "leak", "low": "1GiB", "high": "2GiB", "period_s": 1,
                    "leak_per_min": "10MiB"},
         "gpu_util_percent": {"generator": "spikes", "base": 3, "peak": 60, "every_s": 30,
                              "width_s": 4}},
        {"pid": 1002, "gpu": 1, "name": "Xorg", "kind": "graphics", "memory": "300MiB"},
    ],
    "faults": [{"start_s": 60, "end_s": 70, "gpu": 1, "call": "nvmlDeviceGetMemoryInfo",
                "error": "GPU_IS_LOST"}],
}


@dataclass(frozen=True)
class Deep:
    """Arrays nested ``depth`` deep, written as text (no deep Python structure)."""

    depth: int


def toml_string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def toml_value(value: Any) -> str:
    if isinstance(value, Deep):
        return "[" * value.depth + "]" * value.depth
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_string(str(k))} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    raise TypeError(type(value))


def toml_document(data: dict[str, Any]) -> str:
    """One ``key = value`` line per top-level key; tables inline."""
    return "".join(f"{toml_string(k)} = {toml_value(v)}\n" for k, v in data.items())


def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in the document a mutation can hit (the root excluded)."""
    out: list[tuple] = []
    items = node.items() if isinstance(node, dict) else \
        enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        out.append((*prefix, key))
        out += paths(child, (*prefix, key))
    return out


SIZES = st.builds(lambda n, u: f"{n}{u}",
                  st.sampled_from(["0", "1", "24", "1.5", "1e3", "1e300", "-1", ".5", "9" * 30]),
                  st.sampled_from(["", "B", "KiB", "MiB", "GiB", "TiB", "GB", "EiB", " parsecs"]))
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
EVIL = st.one_of(
    st.sampled_from([
        0, -1, 1, 2, 7, 2**22, 2**22 + 1, 2**31, 2**63, 2**64, 10**30, 10**400, -(10**400),
        0.0, -0.0, 1e-300, 0.5, 1e308, math.nan, math.inf, -math.inf, True, False,
        "", " ", "0", "24", "nan", "compute", "graphics", "GPU_IS_LOST", "*", "x" * 300, "a\nb",
        [], {}, [[]], [1, 2], [[0, "1GiB"]], [[0, "1GiB"], [0, "2GiB"]], [[math.nan, 1]],
        [[1e308, "1GiB"]], [[-1, "1GiB"]], [["0", "1GiB"]],
        {"generator": "wave"}, {"generator": [1]}, {"generator": {"a": 1}},
        {"generator": "sawtooth", "low": "1GiB", "high": "2GiB", "period_s": 0},
        {"generator": "spikes", "base": 1, "peak": 2, "every_s": 1, "width_s": 5},
        {"generator": "wave", "mean": 1, "amplitude": 5, "period_s": 1},
        {"every_s": 1, "count": 10**7}, {"every_s": 0, "count": 3},
        {"every_s": 1, "count": 10**400}, {"every_s": math.inf, "count": 2},
    ]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    SIZES,
    TEXT,
    st.lists(st.one_of(st.integers(-5, 5), SIZES), max_size=4),
    st.dictionaries(TEXT, st.integers(-5, 5), max_size=3),
    st.integers(min_value=1, max_value=3000).map(Deep),
)


MILD = st.sampled_from([0, 1, 5, 50, 99.5, "0", "1GiB", "10GiB", "100MiB", "L4", "python",
                        [[0, "1GiB"], [10, "2GiB"]], [[0, 10], [5, 90]], ["a", "b"]])


@st.composite
def mangled_scenarios(draw) -> dict[str, Any]:
    data = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(paths(data)))
        parent = data
        for key in where[:-1]:
            parent = parent[key]
        key = where[-1]
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "unknown",
                                       "wrap"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[key]
        elif action == "unknown" and isinstance(parent, dict):
            parent[draw(TEXT)] = copy.deepcopy(draw(EVIL))
        elif action == "wrap":
            parent[key] = [parent[key]]
        else:
            # a copy: sampled lists and tables are shared between examples, and a later
            # mutation of this document must not change (or nest) the shared original
            parent[key] = copy.deepcopy(draw(st.one_of(MILD, EVIL)))
        if not paths(data):
            break
    return data


def check_snapshot(text: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scenario.toml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        code, out, err = run_cli(["snapshot", "--demo", str(path), "--json"])
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert code in (0, 2), (code, err)
    if code == 2:
        assert out == ""
        assert err.startswith("gpuwatch:") and err.count("\n") == 1, err
    else:
        doc = json.loads(out)
        assert doc["schema"].startswith("gpuwatch.snapshot/")


def test_the_unmangled_scenario_runs():
    code, out, err = 0, "", ""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scenario.toml"
        path.write_text(toml_document(VALID), encoding="utf-8")
        code, out, err = run_cli(["snapshot", "--demo", str(path), "--json"])
    assert code == 0, err
    assert len(json.loads(out)["gpus"]) == 2


@given(mangled_scenarios())
def test_any_mangled_scenario_is_a_snapshot_or_one_line(data):
    check_snapshot(toml_document(data))


@given(st.sampled_from(["utf-8", "utf-16", "utf-16-le", "utf-32", "latin-1", "cp1252"]),
       st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20))
def test_any_encoding_is_a_snapshot_or_one_line(encoding, name):
    text = toml_document({**VALID, "name": name or "x"})
    check_snapshot(text.encode(encoding, errors="replace"))


@given(st.binary(max_size=200))
def test_any_bytes_are_a_snapshot_or_one_line(data):
    check_snapshot(data)
