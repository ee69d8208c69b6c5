"""What each cell of the process table says: one function per row, no Qt.

Running rows are formatted every sample they are shown; exited rows (see
:mod:`~gpuwatch.ui.live.exited_rows`) once, since they no longer change.
"""

from __future__ import annotations

import os
import re
import shlex

from gpuwatch.core.snapshot import (
    EXITED_PROCESS_LABEL,
    HIDDEN_PROCESS_LABEL,
    HostStatus,
    ProcessSample,
)
from gpuwatch.core.units import UnitSystem, format_bytes, format_duration
from gpuwatch.ui.live.exited_rows import EXITED_ROW_KEEP_S, Exited

COLUMNS = ("PID", "User", "Name", "GPU", "GPU memory", "Budget", "CPU %", "RSS", "Running",
           "Container", "Command")
PID, USER, NAME, GPU, MEMORY, BUDGET, CPU, RSS, RUNNING, CONTAINER, COMMAND = range(len(COLUMNS))
NUMERIC = {PID, GPU, MEMORY, BUDGET, CPU, RSS, RUNNING}


# launchers whose own name says little: their script names the job
_LAUNCHERS = re.compile(r"(python|pypy|torchrun|accelerate|deepspeed|mpirun|bash|sh)"
                        r"[\d.]*(\.exe)?", re.IGNORECASE)
_FLAG_VALUES = {"-c", "-W", "-X", "--nproc_per_node", "--nproc-per-node", "--nnodes",
                "--config_file", "--config-file", "--num_processes", "--num-processes"}
SCRIPT_CHARS = 40


def script_name(cmdline: tuple[str, ...]) -> str | None:
    """What a launcher runs: ``pretrain.py`` for ``python -u pretrain.py --seq 8``,
    ``ipykernel_launcher`` for ``python -m ipykernel_launcher``; None where the
    command is no launcher or names nothing."""
    if len(cmdline) < 2 or not _LAUNCHERS.fullmatch(os.path.basename(cmdline[0])):
        return None
    args = iter(cmdline[1:])
    for arg in args:
        if arg == "-m":
            found = os.path.basename(next(args, None) or "")
        elif arg in _FLAG_VALUES:
            next(args, None)
            continue
        elif arg.startswith("-"):
            continue
        else:
            found = os.path.basename(arg)
        if not found:
            return None
        return found if len(found) <= SCRIPT_CHARS else found[:SCRIPT_CHARS - 1] + "…"
    return None


def shown_name(p: ProcessSample) -> str:
    """The Name column: the process name, and for a launcher its script, "python ·
    pretrain.py", so eight ``python`` rows can be told apart without the Command
    column."""
    name = p.name or unnamed(p)
    script = script_name(p.cmdline) if p.cmdline else None
    return name if script is None or script == name else f"{name} · {script}"


def command_line(p: ProcessSample) -> str:
    return shlex.join(p.cmdline) if p.cmdline else (p.name or "")


def row_texts(p: ProcessSample, units: UnitSystem, now_s: float, budget: int | None,
              probed: bool) -> list[str]:
    """A running process's row: ``budget`` the predicted peak of its linked budget,
    ``probed`` whether it runs the probe."""
    budget_text = format_bytes(budget, units) if budget is not None else ""
    if probed:
        # the key figure first: where the column is narrow, the word gives way
        budget_text = f"{budget_text} · probe" if budget_text else "probe"
    running = "n/a" if p.started_at_s is None else \
        format_duration(max(0.0, now_s - p.started_at_s))
    return [
        str(p.pid),
        p.user or "?",
        shown_name(p),
        str(p.gpu_index),
        format_bytes(p.used_bytes, units),
        budget_text or "—",
        "n/a" if p.cpu_percent is None else f"{p.cpu_percent:.0f} %",
        format_bytes(p.rss_bytes, units),
        running,
        p.container or "—",
        command_line(p),
    ]


def next_row_texts(old: ProcessSample, texts: list[str], p: ProcessSample, units: UnitSystem,
                   now_s: float) -> list[str]:
    """The row's texts for ``p`` from ``texts``, its texts for ``old`` (the same process's
    earlier sample, with the same budget and probe): only the figures that changed are
    formatted again (a command line is joined once, not every second)."""
    if p.name != old.name or p.cmdline != old.cmdline or p.user != old.user \
            or p.container != old.container or p.host_status is not old.host_status:
        new = row_texts(p, units, now_s, None, False)
        new[BUDGET] = texts[BUDGET]
        return new
    new = texts.copy()
    if p.used_bytes != old.used_bytes:
        new[MEMORY] = format_bytes(p.used_bytes, units)
    if p.cpu_percent != old.cpu_percent:
        new[CPU] = "n/a" if p.cpu_percent is None else f"{p.cpu_percent:.0f} %"
    if p.rss_bytes != old.rss_bytes:
        new[RSS] = format_bytes(p.rss_bytes, units)
    new[RUNNING] = "n/a" if p.started_at_s is None else \
        format_duration(max(0.0, now_s - p.started_at_s))
    return new


def exited_row_texts(gone: Exited, units: UnitSystem) -> list[str]:
    """An exited process's row: its last sample, what it held, when it went."""
    p = gone.sample
    texts = row_texts(p, units, gone.exited_at_s, None, False)
    if p.name is None:
        texts[NAME] = "?"
    texts[BUDGET] = texts[CPU] = texts[RSS] = "—"
    texts[RUNNING] = f"exited {gone.clock}" if gone.unseen is None else \
        f"unknown — {gone.unseen}"
    return texts


def exited_tooltip(gone: Exited, units: UnitSystem) -> str:
    p = gone.sample
    if gone.unseen is not None:
        driver = f" (the driver says: {gone.reason})" if gone.reason else ""
        return (f"pid {p.pid} on GPU {p.gpu_index}: {gone.unseen} at {gone.clock}{driver}, "
                f"holding {format_bytes(p.used_bytes, units)} when last seen. Whether it "
                "still runs is unknown until the GPU is read again.")
    return (f"pid {p.pid} left GPU {p.gpu_index} at {gone.clock} (the first sample without "
            f"it), holding {format_bytes(p.used_bytes, units)} when last seen; it holds "
            f"nothing now. The row goes {format_duration(EXITED_ROW_KEEP_S)} after the exit.")


def unnamed(p: ProcessSample) -> str:
    """The name of a process the host could not describe, saying why."""
    if p.host_status is HostStatus.EXITED:
        return EXITED_PROCESS_LABEL
    if p.host_status is HostStatus.HIDDEN:
        return HIDDEN_PROCESS_LABEL
    return "?"


def budget_tooltip_text(budget: int | None, units: UnitSystem) -> str | None:
    if budget is None:
        return None
    return f"Predicted peak of the linked budget: {format_bytes(budget, units)}"


def running_step(started_at_s: float | None, now_s: float) -> int | None:
    """The running time to the precision ``format_duration`` shows it: equal steps,
    equal text (seconds below an hour, minutes below a day, then hours)."""
    if started_at_s is None:
        return None
    s = round(max(0.0, now_s - started_at_s))
    return s if s < 3600 else s - s % 60 if s < 86400 else s - s % 3600
