"""``likely-oom``: a process that exits with its GPU full is named, with what it held and
what would have saved it; the stale ``oom-risk`` over the emptied GPU closes at once."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from advisor_support import GIB, MIB, T0, gpu, snapshot

from gpuwatch.advisor import Advisor, LinkedBudget
from gpuwatch.advisor.rules.likely_oom import short_command
from gpuwatch.core.hints import HintAction, HintEvent, HintEventKind, Severity
from gpuwatch.core.history import History
from gpuwatch.core.snapshot import GpuState, Snapshot

TOTAL = 40 * GIB


def drive(make: Callable[[float], Snapshot], until: float, advisor: Advisor | None = None,
          step: float = 1.0) -> tuple[Advisor, list[tuple[float, HintEvent]]]:
    advisor = advisor or Advisor()
    history, log = History(), []
    t = 0.0
    while t <= until:
        history.append(make(t))
        log += [(e.at_s - T0, e) for e in advisor.update(history)]
        t += step
    return advisor, log


def dies_at(used: Callable[[float], float], end: float,
            lost: bool = False) -> Callable[[float], Snapshot]:
    """GPU 0 with pid 7 using ``used(t)`` until ``end`` s; then the GPU is empty (or lost)."""
    def make(t: float) -> Snapshot:
        if t < end:
            return snapshot(t, gpu(total=TOTAL, used=512 * MIB + used(t),
                                   procs=[(7, used(t))]))
        if lost:
            return snapshot(t, gpu(total=TOTAL, used=None, state=GpuState.LOST))
        return snapshot(t, gpu(total=TOTAL, used=512 * MIB))
    return make


def opened(log: list[tuple[float, HintEvent]], code: str) -> list[tuple[float, HintEvent]]:
    return [(t, e) for t, e in log if e.kind is HintEventKind.OPENED and e.hint.code == code]


def test_a_process_that_exits_with_its_gpu_full_is_named_at_once() -> None:
    # climbs 3 GiB/min from 20 GiB; the GPU is full at ~380 s; it dies at 400 s
    ramp = lambda t: min(20 * GIB + t * 50 * MIB, TOTAL - 600 * MIB)   # noqa: E731
    advisor, log = drive(dies_at(ramp, 400), 1100)
    ((t, event),) = opened(log, "likely-oom")
    h = event.hint
    assert t == 400 and h.severity is Severity.WARNING and (h.gpu_index, h.pid) == (0, 7)
    assert h.title == "pid 7 (proc7) exited at 39.9 GiB / 40.0 GiB — likely out of memory"
    assert any("(100 %) in its last 30 s" in e and e.endswith(" of it held by this process")
               for e in h.evidence), h.evidence
    assert any("out-of-memory warning had been up for" in e for e in h.evidence)
    assert h.badge == "OOM · pid 7"
    assert "CUDA out of memory" in h.actions[0].text
    assert any("smaller micro-batch" in a.text for a in h.actions)
    assert h.value("gpu_used_bytes") == pytest.approx(TOTAL - 88 * MIB, abs=MIB)
    # the critical oom-risk over the emptied GPU closes on the same sample…
    risk = [(t, e.kind.value, e.hint.severity.value) for t, e in log
            if e.hint.code == "oom-risk"]
    assert risk[-1] == (400, "closed", "critical")
    # …and the likely-oom hint stays up 10 minutes, then closes
    closed = [t for t, e in log if e.hint.code == "likely-oom"
              and e.kind is HintEventKind.CLOSED]
    assert closed == [1000]
    assert advisor.active == []


def test_a_linked_budget_and_its_levers_are_named() -> None:
    advisor = Advisor()
    advisor.link(0, 7, LinkedBudget("llama · batch 8", 44 * GIB,
                                    (HintAction("--batch 2 --grad-accum 4", 12 * GIB),)))
    _, log = drive(dies_at(lambda t: 39 * GIB, 100), 110, advisor)
    ((_, event),) = opened(log, "likely-oom")
    assert any("its linked budget (llama · batch 8) peaks at 44.0 GiB" in e
               for e in event.hint.evidence)
    resume = [a for a in event.hint.actions if a.text.startswith("Resume")]
    assert resume == [HintAction("Resume from its last checkpoint with --batch 2 "
                                 "--grad-accum 4", 12 * GIB)]
    assert event.hint.value("budget_bytes") == 44 * GIB


def test_an_exit_while_oom_risk_was_open_counts_even_below_the_bar() -> None:
    # past its warm-up, climbs 6 GiB/min and dies at 80 % full while oom-risk warns
    _, log = drive(dies_at(lambda t: 10 * GIB + max(0, t - 400) * 100 * MIB, 600), 610)
    assert opened(log, "oom-risk")
    ((_, event),) = opened(log, "likely-oom")
    assert any("had been up for" in e for e in event.hint.evidence)


@pytest.mark.parametrize(("name", "make"), [
    ("a healthy run that ends at 70 %", dies_at(lambda t: 28 * GIB, 300)),
    ("a run on a GPU that falls off the bus", dies_at(lambda t: 39.5 * GIB, 300, lost=True)),
])
def test_other_exits_are_not_called_out_of_memory(name: str,
                                                  make: Callable[[float], Snapshot]) -> None:
    _, log = drive(make, 320)
    assert opened(log, "likely-oom") == []


def test_a_pid_that_comes_back_was_not_gone() -> None:
    full = 39.5 * GIB

    def make(t: float) -> Snapshot:
        if 100 <= t < 110:                       # missing from the list for 10 s
            return snapshot(t, gpu(total=TOTAL, used=512 * MIB + full))
        return snapshot(t, gpu(total=TOTAL, used=512 * MIB + full, procs=[(7, full)]))

    _, log = drive(make, 130)
    assert [(t, e.kind.value) for t, e in log if e.hint.code == "likely-oom"] == [
        (100, "opened"), (110, "closed")]


@pytest.mark.parametrize(("name", "cmdline", "short"), [
    ("python", ("python", "train.py", "--batch", "8"), "python train.py"),
    ("python3", ("/home/a/.venv/bin/python3", "-m", "ipykernel_launcher", "-f", "k.json"),
     "python3 -m ipykernel_launcher"),
    ("python", ("/usr/bin/python", "/home/a/jobs/finetune.py"), "python finetune.py"),
    ("torchrun", ("torchrun", "--nproc-per-node", "8", "train.py"), "torchrun"),
    ("job", (), "job"),
])
def test_short_command(name: str, cmdline: tuple[str, ...], short: str) -> None:
    assert short_command(name, cmdline) == short
