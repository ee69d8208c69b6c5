"""Reading and checking ``gpuwatch.scenario/1`` files (TOML).

A bad field is rejected with the file, the field's path and the reason, e.g.
``oom.toml: processes[0].memory[2]: times must increase (got 30 after 60)``.
Unknown keys are errors too: a typo must not silently change a scenario.

Only regular files of at most 1 MiB are read (a FIFO or ``/dev/zero`` given by
mistake must neither block nor fill memory), and every number is bounded (see
``docs/scenarios.md``): at most 64 GPUs, 10,000 processes after ``repeat`` and
1,000 faults, pids up to 2**22, process memory up to its GPU's ``memory_total``.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pynvml

from gpuwatch.core.units import format_bytes, shown
from gpuwatch.telemetry.errors import ScenarioError
from gpuwatch.telemetry.nvml import codes
from gpuwatch.telemetry.sim.fields import (
    MAX_TIME_S,
    FieldReader,
    decode_scenario_text,
    read_scenario_bytes,
    source_name,
)
from gpuwatch.telemetry.sim.signals import Constant, Signal

SCENARIO_SCHEMA = "gpuwatch.scenario/1"
PROCESS_KINDS = ("compute", "graphics", "compute+graphics")

MAX_GPUS = 64                # NVML hosts have at most 16 today
MAX_PROCESSES = 10_000       # after repeat; the busiest built-in (churn) has 691
MAX_FAULTS = 1_000
MAX_PID = 2**22              # Linux's PID_MAX_LIMIT
MAX_PARAMETERS = 10**13      # 10 T, five times the largest published model
MAX_CPU_PERCENT = 100 * 1024  # one process busy on 1,024 logical CPUs


@dataclass(frozen=True)
class ScenarioGpu:
    name: str
    memory_total_bytes: int
    memory_base_bytes: int = 0
    memory_reserved_bytes: int = 0
    memory_bus_width_bits: int | None = None
    max_memory_clock_mhz: int | None = None
    uuid: str | None = None
    power_limit_w: float = 300.0
    idle_power_w: float = 50.0
    nvlink_links: int = 0
    nvlink_bytes_per_s: Signal | None = None   # per direction, all links together
    pcie_bytes_per_s: Signal | None = None     # per direction; default follows utilisation
    gpm: bool = False      # the GPU's performance monitor answers (Hopper and later)


@dataclass(frozen=True)
class ScenarioProbe:
    """What an in-process probe would publish for a simulated process."""

    parameters: int
    dtype: str = "float32"
    trainable_parameters: int | None = None
    optimizer: str | None = None
    optimizer_state_bytes: int | None = None
    gradient_bytes: int | None = None
    buffer_bytes: int = 0
    allocated: Signal | None = None
    reserved: Signal | None = None
    inactive_split: Signal | None = None
    alloc_retries: Signal | None = None
    alloc_conf: str | None = None


@dataclass(frozen=True)
class ScenarioProcess:
    pid: int
    gpu: int
    name: str
    memory: Signal
    cmdline: tuple[str, ...] = ()
    user: str = "user"
    container: str | None = None
    start_s: float = 0.0
    end_s: float | None = None
    kind: str = "compute"
    report_memory: bool = True       # False: NVML reports the process's memory as unknown
    gpu_util_percent: Signal = field(default_factory=lambda: Constant(0.0))
    memory_busy_percent: Signal = field(default_factory=lambda: Constant(0.0))
    cpu_percent: float | None = None
    rss_bytes: int | None = None
    probe: ScenarioProbe | None = None

    def alive_at(self, t: float) -> bool:
        return self.start_s <= t and (self.end_s is None or t < self.end_s)


@dataclass(frozen=True)
class ScenarioFault:
    start_s: float
    end_s: float | None
    gpu: int | None
    call: str
    error: str    # the NVML_ERROR_ name without its prefix, e.g. "GPU_IS_LOST"
    code: int

    def active(self, call: str, gpu: int | None, t: float) -> bool:
        return (
            self.start_s <= t
            and (self.end_s is None or t < self.end_s)
            and (self.call == "*" or self.call == call)
            and (self.gpu is None or self.gpu == gpu)
        )


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    duration_s: float
    gpus: tuple[ScenarioGpu, ...]
    processes: tuple[ScenarioProcess, ...] = ()
    faults: tuple[ScenarioFault, ...] = ()
    driver_version: str = "550.54.15"
    nvml_version: str = "12.550.54.15"
    cuda_driver_version: int = 12040
    memory_info_v2: bool = True      # False: a driver that only has the v1 memory call
    source: str = "<scenario>"


def _error_code(reader: FieldReader, raw: Any, path: str) -> tuple[str, int]:
    name = reader.string(raw, path).upper()
    known = codes.all_codes()      # nvml.h's codes, whichever bindings are installed
    if name not in known:
        raise reader.fail(path, f"unknown NVML error {raw!r}; expected one of "
                                f"{', '.join(sorted(known))}")
    return name, known[name]


def _call_name(reader: FieldReader, raw: Any, path: str) -> str:
    call = reader.string(raw, path)
    if call != "*" and not (call.startswith("nvml") and callable(getattr(pynvml, call, None))):
        raise reader.fail(path, f"{call!r} is not a pynvml function name (or '*')")
    return call


def _gpu(r: FieldReader, raw: Any, path: str, duration_s: float) -> ScenarioGpu:
    t = r.table(raw, path, {
        "name", "memory_total", "memory_base", "memory_reserved", "memory_bus_width_bits",
        "max_memory_clock_mhz", "uuid", "power_limit_w", "idle_power_w", "nvlink_links",
        "nvlink_bytes_per_s", "pcie_bytes_per_s", "gpm",
    }, {"name", "memory_total"})
    total = r.size(t["memory_total"], f"{path}.memory_total")
    if total == 0:
        raise r.fail(f"{path}.memory_total", "must be greater than 0")
    base = r.size(t.get("memory_base", 0), f"{path}.memory_base")
    reserved = r.size(t.get("memory_reserved", 0), f"{path}.memory_reserved")
    if base + reserved >= total:
        raise r.fail(path, "memory_base + memory_reserved must be less than memory_total")
    rate = lambda v, p: float(r.size(v, p))  # noqa: E731 - sizes per second
    power = r.number(t.get("power_limit_w", 300), f"{path}.power_limit_w", 1, 10_000)
    optional_int = lambda key, hi: (  # noqa: E731
        r.integer(t[key], f"{path}.{key}", 1, hi) if key in t else None)
    return ScenarioGpu(
        name=r.string(t["name"], f"{path}.name"),
        memory_total_bytes=total,
        memory_base_bytes=base,
        memory_reserved_bytes=reserved,
        memory_bus_width_bits=optional_int("memory_bus_width_bits", 65_536),
        max_memory_clock_mhz=optional_int("max_memory_clock_mhz", 100_000),
        uuid=r.string(t["uuid"], f"{path}.uuid") if "uuid" in t else None,
        power_limit_w=power,
        idle_power_w=r.number(t.get("idle_power_w", min(50, power)), f"{path}.idle_power_w",
                              0, power),
        nvlink_links=r.integer(t.get("nvlink_links", 0), f"{path}.nvlink_links", 0, 64),
        nvlink_bytes_per_s=(r.signal(t["nvlink_bytes_per_s"], f"{path}.nvlink_bytes_per_s",
                                     rate, duration_s)
                            if "nvlink_bytes_per_s" in t else None),
        pcie_bytes_per_s=(r.signal(t["pcie_bytes_per_s"], f"{path}.pcie_bytes_per_s", rate,
                                   duration_s)
                          if "pcie_bytes_per_s" in t else None),
        gpm=r.boolean(t.get("gpm", False), f"{path}.gpm"),
    )


_PROCESS_KEYS = {
    "pid", "gpu", "name", "cmdline", "user", "container", "start_s", "end_s", "memory",
    "report_memory", "kind", "gpu_util_percent", "memory_busy_percent", "cpu_percent", "rss",
    "repeat", "probe",
}
_PROBE_KEYS = {
    "parameters", "dtype", "trainable_parameters", "optimizer", "optimizer_state",
    "gradients", "buffers", "allocated", "reserved", "inactive_split", "alloc_retries",
    "alloc_conf",
}


class _Bounds:
    """What a process's signals must stay within: its GPU's memory over its lifetime."""

    def __init__(self, r: FieldReader, gpu: ScenarioGpu, life_s: float):
        self.r, self.life_s, self.total = r, life_s, gpu.memory_total_bytes
        self.total_is = f"the GPU's memory_total ({format_bytes(self.total)})"

    def gpu_size(self, raw: Any, path: str) -> float:
        return float(self.r.size(raw, path, self.total, self.total_is))

    def memory(self, raw: Any, path: str) -> Signal:
        return self.r.signal(raw, path, self.gpu_size, self.life_s, self.total, self.total_is,
                             format_bytes)

    def percent(self, raw: Any, path: str) -> Signal:
        return self.r.signal(raw, path, self.r.percent, self.life_s, 100.0)


def _probe(r: FieldReader, raw: Any, path: str, bounds: _Bounds) -> ScenarioProbe:
    t = r.table(raw, path, _PROBE_KEYS, {"parameters"})
    opt_size = {key: r.size(t[key], f"{path}.{key}") for key in
                ("optimizer_state", "gradients", "buffers") if key in t}
    signals = {key: bounds.memory(t[key], f"{path}.{key}") for key in
               ("allocated", "reserved", "inactive_split") if key in t}
    parameters = r.integer(t["parameters"], f"{path}.parameters", 1, MAX_PARAMETERS)
    retries = lambda v, p: r.number(v, p, 0, 1e12)  # noqa: E731
    return ScenarioProbe(
        parameters=parameters,
        dtype=r.string(t.get("dtype", "float32"), f"{path}.dtype"),
        trainable_parameters=(r.integer(t["trainable_parameters"],
                                        f"{path}.trainable_parameters", 0, parameters)
                              if "trainable_parameters" in t else None),
        optimizer=r.string(t["optimizer"], f"{path}.optimizer") if "optimizer" in t else None,
        optimizer_state_bytes=opt_size.get("optimizer_state"),
        gradient_bytes=opt_size.get("gradients"),
        buffer_bytes=opt_size.get("buffers", 0),
        allocated=signals.get("allocated"),
        reserved=signals.get("reserved"),
        inactive_split=signals.get("inactive_split"),
        alloc_retries=(r.signal(t["alloc_retries"], f"{path}.alloc_retries", retries,
                                bounds.life_s)
                       if "alloc_retries" in t else None),
        alloc_conf=r.string(t["alloc_conf"], f"{path}.alloc_conf") if "alloc_conf" in t
        else None,
    )


def _processes(r: FieldReader, raw: Any, path: str, gpus: tuple[ScenarioGpu, ...],
               duration_s: float, room: int) -> list[ScenarioProcess]:
    """One ``[[processes]]`` entry; ``repeat = {every_s, count}`` expands it into several.

    ``room``: how many more processes the scenario may hold (of :data:`MAX_PROCESSES`).
    """
    t = r.table(raw, path, _PROCESS_KEYS, {"pid", "gpu", "name", "memory"})
    gpu = r.integer(t["gpu"], f"{path}.gpu")
    if gpu >= len(gpus):
        raise r.fail(f"{path}.gpu", f"no GPU {gpu}: the scenario has {len(gpus)}")
    pid = r.integer(t["pid"], f"{path}.pid", 1, MAX_PID)
    name = r.string(t["name"], f"{path}.name")
    cmdline = r.strings(t.get("cmdline", [name]), f"{path}.cmdline")
    kind = t.get("kind", "compute")
    if not isinstance(kind, str) or kind not in PROCESS_KINDS:
        raise r.fail(f"{path}.kind",
                     f"expected one of {', '.join(PROCESS_KINDS)}, got {shown(kind)}")
    start = r.time(t.get("start_s", 0), f"{path}.start_s")
    end = r.time(t["end_s"], f"{path}.end_s") if "end_s" in t else None
    if end is not None and end <= start:
        raise r.fail(f"{path}.end_s", f"must be after start_s ({start:g})")
    life = (end if end is not None else max(duration_s, start)) - start
    bounds = _Bounds(r, gpus[gpu], life)
    base = ScenarioProcess(
        pid=pid,
        gpu=gpu,
        name=name,
        memory=bounds.memory(t["memory"], f"{path}.memory"),
        cmdline=cmdline,
        user=r.string(t.get("user", "user"), f"{path}.user"),
        container=r.string(t["container"], f"{path}.container") if "container" in t else None,
        start_s=start,
        end_s=end,
        kind=kind,
        report_memory=r.boolean(t.get("report_memory", True), f"{path}.report_memory"),
        gpu_util_percent=bounds.percent(t.get("gpu_util_percent", 0),
                                        f"{path}.gpu_util_percent"),
        memory_busy_percent=bounds.percent(t.get("memory_busy_percent", 0),
                                           f"{path}.memory_busy_percent"),
        cpu_percent=(r.number(t["cpu_percent"], f"{path}.cpu_percent", 0, MAX_CPU_PERCENT)
                     if "cpu_percent" in t else None),
        rss_bytes=r.size(t["rss"], f"{path}.rss") if "rss" in t else None,
        probe=_probe(r, t["probe"], f"{path}.probe", bounds) if "probe" in t else None,
    )
    if "repeat" not in t:
        return [base]
    rep = r.table(t["repeat"], f"{path}.repeat", {"every_s", "count"}, {"every_s", "count"})
    every = r.time(rep["every_s"], f"{path}.repeat.every_s", 1e-3)
    count = r.integer(rep["count"], f"{path}.repeat.count", 1, math.inf)  # room says more
    if count > room:
        raise r.fail(f"{path}.repeat.count",
                     f"{shown(count)} copies would take the scenario past {MAX_PROCESSES:,} "
                     f"processes, the most it may hold ({MAX_PROCESSES - room:,} before this "
                     "entry)")
    if pid + count - 1 > MAX_PID:
        raise r.fail(f"{path}.repeat.count",
                     f"the copies' pids {pid}..{pid + count - 1} go past {MAX_PID}, "
                     "the largest Linux pid")
    if start + (count - 1) * every > MAX_TIME_S:
        raise r.fail(f"{path}.repeat",
                     f"the last copy would start after {MAX_TIME_S:g} s, the latest time allowed")
    return [replace(base, pid=pid + k, start_s=start + k * every,
                    end_s=None if end is None else start + k * every + life)
            for k in range(count)]


def _fault(r: FieldReader, raw: Any, path: str, n_gpus: int) -> ScenarioFault:
    t = r.table(raw, path, {"start_s", "end_s", "gpu", "call", "error"}, {"start_s", "error"})
    start = r.time(t["start_s"], f"{path}.start_s")
    end = r.time(t["end_s"], f"{path}.end_s") if "end_s" in t else None
    if end is not None and end <= start:
        raise r.fail(f"{path}.end_s", f"must be after start_s ({start:g})")
    gpu = r.integer(t["gpu"], f"{path}.gpu") if "gpu" in t else None
    if gpu is not None and gpu >= n_gpus:
        raise r.fail(f"{path}.gpu", f"no GPU {gpu}: the scenario has {n_gpus}")
    name, code = _error_code(r, t["error"], f"{path}.error")
    return ScenarioFault(start, end, gpu, _call_name(r, t.get("call", "*"), f"{path}.call"),
                         name, code)


def _entries(r: FieldReader, t: dict, key: str, limit: int, required: bool = False) -> list:
    """The ``[[key]]`` tables of a scenario, at most ``limit`` of them."""
    value = t.get(key, [])
    if not isinstance(value, list) or (required and not value):
        need = "at least one" if required else "a list of"
        raise r.fail(key, f"expected {need} [[{key}]] table{'s' if not required else ''}")
    if len(value) > limit:
        raise r.fail(key, f"has {len(value):,} entries; a scenario may have at most {limit:,}")
    return value


def parse_scenario(data: Mapping[str, Any], source: str = "<scenario>") -> Scenario:
    r = FieldReader(source)
    t = r.table(data, "", {
        "schema", "name", "description", "duration_s", "driver_version", "nvml_version",
        "cuda_driver_version", "memory_info_v2", "gpus", "processes", "faults",
    }, {"schema", "name", "duration_s", "gpus"})
    if t["schema"] != SCENARIO_SCHEMA:
        raise r.fail("schema", f"expected {SCENARIO_SCHEMA!r}, got {shown(t['schema'])}")
    duration = r.time(t["duration_s"], "duration_s", 1e-3)
    gpus = tuple(_gpu(r, g, f"gpus[{i}]", duration)
                 for i, g in enumerate(_entries(r, t, "gpus", MAX_GPUS, required=True)))
    processes: list[ScenarioProcess] = []
    for i, raw in enumerate(_entries(r, t, "processes", MAX_PROCESSES)):
        processes += _processes(r, raw, f"processes[{i}]", gpus, duration,
                                MAX_PROCESSES - len(processes))
        if len(processes) > MAX_PROCESSES:   # pragma: no cover - repeat checks its room
            raise r.fail("processes", f"more than {MAX_PROCESSES:,} processes")
    seen: set[int] = set()
    for p in processes:
        if p.pid in seen:
            raise r.fail("processes", f"pid {p.pid} is used twice")
        seen.add(p.pid)
    faults = tuple(_fault(r, f, f"faults[{i}]", len(gpus))
                   for i, f in enumerate(_entries(r, t, "faults", MAX_FAULTS)))
    return Scenario(
        name=r.string(t["name"], "name"),
        description=r.string(t.get("description", t["name"]), "description"),
        duration_s=duration,
        gpus=gpus,
        processes=tuple(processes),
        faults=faults,
        driver_version=r.string(t.get("driver_version", "550.54.15"), "driver_version"),
        nvml_version=r.string(t.get("nvml_version", "12.550.54.15"), "nvml_version"),
        cuda_driver_version=r.integer(t.get("cuda_driver_version", 12040),
                                      "cuda_driver_version", 1000, 999_999),
        memory_info_v2=r.boolean(t.get("memory_info_v2", True), "memory_info_v2"),
        source=source,
    )


def load_scenario_file(path: str | Path) -> Scenario:
    path = Path(path)
    source = source_name(path)
    text = decode_scenario_text(read_scenario_bytes(path, source), source)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(source, None, f"is not valid TOML ({exc})") from None
    except RecursionError:
        raise ScenarioError(source, None, "is not valid TOML (arrays or tables nested too "
                                          "deeply)") from None
    return parse_scenario(data, source)
