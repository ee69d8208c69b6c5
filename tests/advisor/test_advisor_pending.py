"""``Advisor.pending_judgements``: which checks cannot judge yet, in sentences."""

from __future__ import annotations

from advisor_support import GIB, gpu, snapshot

from gpuwatch.advisor import Advisor
from gpuwatch.core.history import History
from gpuwatch.core.snapshot import GpuState


def advisor_after(seconds: float, procs=lambda t: [(7, 10 * GIB)], step: float = 5.0,
                  **gpu_kw: object) -> Advisor:
    advisor, history = Advisor(), History()
    t = 0.0
    while t <= seconds:
        history.append(snapshot(t, gpu(used=11 * GIB, procs=procs(t), **gpu_kw)))
        advisor.update(history)
        t += step
    return advisor


def test_nothing_is_pending_before_the_first_sample() -> None:
    assert Advisor().pending_judgements() == []


def test_a_fresh_start_says_what_cannot_be_judged_yet() -> None:
    assert advisor_after(40).pending_judgements() == [
        "Forecasts of GPU 0 running out of memory need 2 min of history (40 s so far)",
        "Warming up on GPU 0, so growth at its starting pace is not forecast until it has "
        "run 6 min: pid 7 (proc7) has 40 s so far",
        "Leak detection needs 16 min of history per process: pid 7 (proc7) has 40 s so far",
    ]


def test_leak_detection_is_the_last_to_be_ready() -> None:
    assert advisor_after(6 * 60 + 20).pending_judgements() == [
        "Leak detection needs 16 min of history per process: pid 7 (proc7) has 6 min so far"]
    assert advisor_after(16 * 60).pending_judgements() == []


def test_a_newcomer_is_named_beside_older_processes() -> None:
    procs = lambda t: [(7, 10 * GIB)] + ([(8, GIB)] if t >= 600 else [])   # noqa: E731
    pending = advisor_after(17 * 60, procs).pending_judgements()
    assert pending == ["Leak detection needs 16 min of history per process: "
                       "pid 8 (proc8) has 7 min so far"]


def test_several_young_processes_are_named_or_counted() -> None:
    two = lambda t: [(7, GIB)] + ([(8, GIB)] if t >= 120 else [])   # noqa: E731
    (*_, leak) = advisor_after(300, two).pending_judgements()
    assert leak.endswith(": pid 7 (proc7) and pid 8 (proc8) have 3 min to 5 min so far")
    five = lambda t: [(p, GIB) for p in range(10, 15)]   # noqa: E731
    (*_, leak) = advisor_after(180, five).pending_judgements()
    assert leak.endswith(": pid 10 (proc10), pid 11 (proc11), pid 12 (proc12) and 2 more "
                         "have 3 min so far")


def test_lost_gpus_and_graphics_only_gpus_are_not_pending() -> None:
    assert advisor_after(40, kind="graphics").pending_judgements() == []
    advisor, history = Advisor(), History()
    history.append(snapshot(0, gpu(used=None, state=GpuState.LOST, procs=[(7, GIB)])))
    advisor.update(history)
    assert advisor.pending_judgements() == []
