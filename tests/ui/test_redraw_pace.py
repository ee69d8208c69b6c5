"""A calm window draws a sample every 5 s while nothing moves, and at once when memory
moves, crosses a threshold, a GPU goes busy or idle, a process comes or goes, or a GPU
changes state; what it shows is never more than the pace and 1 % of a GPU behind."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwatch.core.snapshot import (
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    MemoryInfo,
    ProcessSample,
    Snapshot,
)
from gpuwatch.ui.live.redraw_pace import (
    BUSY_SWING,
    CALM_S,
    JITTER_S,
    MOVE_FRACTION,
    worth_drawing,
)
from gpuwatch.ui.live.window_chrome import pace_text
from gpuwatch.ui.settings import Thresholds
from tests.ui.conftest import drawn_samples

GIB = 1 << 30
TOTAL = 80 * GIB
BACKEND = BackendInfo(BackendKind.SIMULATED, scenario="pace")
THRESHOLDS = Thresholds()


def gpu(used: int, pids: tuple[int, ...] = (100, 101), state: GpuState = GpuState.OK,
        temperature_c: float = 50.0, index: int = 0, busy: float | None = 90.0) -> GpuSample:
    processes = tuple(ProcessSample(pid, index, used // max(1, len(pids)), name="python")
                      for pid in pids)
    return GpuSample(index, f"GPU-{index}", "NVIDIA H100 80GB HBM3", state,
                     MemoryInfo(TOTAL, used, TOTAL - used, 0), processes=processes,
                     temperature_c=temperature_c, gpu_util_percent=busy)


def snap(t: float, *gpus: GpuSample, warnings: tuple[str, ...] = ()) -> Snapshot:
    return Snapshot(t, BACKEND, gpus or (gpu(40 * GIB),), warnings)


SHOWN = snap(100.0, gpu(40 * GIB))
SOON = 100.0 + CALM_S - JITTER_S - 0.01      # the latest a calm window still waits


def test_a_sample_the_pace_later_is_drawn_and_a_quiet_one_sooner_is_not():
    assert worth_drawing(snap(100.0 + CALM_S, gpu(40 * GIB)), SHOWN, THRESHOLDS)
    assert worth_drawing(snap(100.0 + CALM_S - 0.05, gpu(40 * GIB)), SHOWN, THRESHOLDS)
    assert not worth_drawing(snap(101.0, gpu(40 * GIB + 100 * 2**20)), SHOWN, THRESHOLDS)
    assert not worth_drawing(snap(SOON, gpu(40 * GIB)), SHOWN, THRESHOLDS)


def test_memory_that_moves_a_percent_of_the_gpu_is_drawn_at_once():
    step = math.ceil(MOVE_FRACTION * TOTAL)
    assert worth_drawing(snap(101.0, gpu(40 * GIB + step)), SHOWN, THRESHOLDS)
    assert worth_drawing(snap(101.0, gpu(40 * GIB - step)), SHOWN, THRESHOLDS)
    assert not worth_drawing(snap(101.0, gpu(40 * GIB + step - 1)), SHOWN, THRESHOLDS)


def test_a_threshold_crossed_by_a_small_move_is_drawn_at_once():
    below = snap(100.0, gpu(int(0.849 * TOTAL)))
    assert worth_drawing(snap(101.0, gpu(int(0.851 * TOTAL))), below, THRESHOLDS)
    near_critical = snap(100.0, gpu(int(0.951 * TOTAL)))
    assert worth_drawing(snap(101.0, gpu(int(0.949 * TOTAL))), near_critical, THRESHOLDS)
    warm = snap(100.0, gpu(40 * GIB, temperature_c=82.5))
    assert worth_drawing(snap(101.0, gpu(40 * GIB, temperature_c=83.0)), warm, THRESHOLDS)
    unread = replace(gpu(40 * GIB), temperature_c=None)
    assert worth_drawing(snap(101.0, unread), SHOWN, THRESHOLDS)


def test_a_gpu_going_busy_or_idle_is_drawn_at_once_and_its_wobble_is_not():
    assert worth_drawing(snap(101.0, gpu(40 * GIB, busy=90.0 - BUSY_SWING)), SHOWN,
                         THRESHOLDS)                                   # a stalled job
    idle = snap(100.0, gpu(40 * GIB, busy=0.0))
    assert worth_drawing(snap(101.0, gpu(40 * GIB, busy=BUSY_SWING)), idle, THRESHOLDS)
    wobble = gpu(40 * GIB, busy=90.0 - BUSY_SWING + 1)
    assert not worth_drawing(snap(101.0, wobble), SHOWN, THRESHOLDS)
    assert worth_drawing(snap(101.0, gpu(40 * GIB, busy=None)), SHOWN, THRESHOLDS)


def test_processes_coming_or_going_and_gpu_states_are_drawn_at_once():
    assert worth_drawing(snap(101.0, gpu(40 * GIB, pids=(100, 101, 102))), SHOWN, THRESHOLDS)
    assert worth_drawing(snap(101.0, gpu(40 * GIB, pids=(100, 102))), SHOWN, THRESHOLDS)
    assert not worth_drawing(snap(101.0, gpu(40 * GIB, pids=(101, 100))), SHOWN, THRESHOLDS)
    lost = replace(gpu(40 * GIB), state=GpuState.LOST)
    assert worth_drawing(snap(101.0, lost), SHOWN, THRESHOLDS)
    assert worth_drawing(snap(101.0, gpu(40 * GIB), gpu(1 * GIB, index=1)), SHOWN,
                         THRESHOLDS)
    assert worth_drawing(snap(101.0, warnings=("processes hidden",)), SHOWN, THRESHOLDS)
    unknown = replace(gpu(40 * GIB), memory=MemoryInfo(TOTAL, None, None, None))
    assert worth_drawing(snap(101.0, unknown), SHOWN, THRESHOLDS)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.tuples(st.floats(0.2, 1.5), st.integers(-3 * GIB, 3 * GIB),
                                st.floats(-40.0, 40.0), st.booleans()),
                      min_size=1, max_size=60))
def test_what_is_shown_is_never_more_than_the_pace_and_a_percent_behind(steps):
    """Feed a random walk of samples; after each, what the window shows is the newest
    sample, or one less than the pace older, less than 1 % of the GPU away and less than
    a busy swing in utilization."""
    t, used, busy, pids = 0.0, 40 * GIB, 50.0, (100, 101)
    shown = snap(t, gpu(used, pids, busy=busy))
    for dt, move, swing, newcomer in steps:
        t += dt
        used = min(TOTAL, max(0, used + move))
        busy = min(100.0, max(0.0, busy + swing))
        pids = (100, 101, 102) if newcomer else (100, 101)
        new = snap(t, gpu(used, pids, busy=busy))
        if worth_drawing(new, shown, THRESHOLDS):
            shown = new
        assert new.timestamp_s - shown.timestamp_s < CALM_S - JITTER_S
        held = shown.gpus[0].memory.used_bytes
        assert abs(used - (held or 0)) < MOVE_FRACTION * TOTAL
        assert abs(busy - (shown.gpus[0].gpu_util_percent or 0.0)) < BUSY_SWING
        assert {p.pid for p in shown.gpus[0].processes} == set(pids)


# -- the window ---------------------------------------------------------------------------

def test_a_calm_window_holds_quiet_samples_and_draws_moves_at_once(make_window, qtbot,
                                                                      monkeypatch):
    window = make_window()
    window.rest_when_hidden = True
    window.pace.set_calm(True)
    with qtbot.waitExposed(window):
        window.show()
    drawn = drawn_samples(window, monkeypatch)
    card_text = lambda: window.cards.cards[0].percent.text()   # noqa: E731
    window.on_snapshots([snap(100.0, gpu(40 * GIB))])
    assert drawn == [1] and card_text().startswith("50")
    window.on_snapshots([snap(101.0, gpu(40 * GIB + GIB // 2))])
    assert drawn == [1] and card_text().startswith("50")        # held: moved 0.6 %
    assert window.samples == 2 and len(window.history.gpu(0).column("used_bytes")) == 2
    window.on_snapshots([snap(100.0 + CALM_S, gpu(40 * GIB + GIB // 2))])
    assert drawn == [1, 3] and card_text().startswith("51")     # the pace
    window.on_snapshots([snap(101.0 + CALM_S, gpu(50 * GIB))])
    assert drawn == [1, 3, 4] and card_text().startswith("62")  # moved 12 %: at once
    window.on_snapshots([snap(101.5 + CALM_S, gpu(50 * GIB, pids=(100, 101, 102)))])
    assert drawn == [1, 3, 4, 5]                                # a newcomer: at once
    window.on_snapshots([snap(102.0 + CALM_S, gpu(50 * GIB, pids=(100, 101, 102),
                                                   busy=0.0))])
    assert drawn == [1, 3, 4, 5, 6]                             # gone idle: at once
    assert window.pace.held == 1


def test_a_held_sample_is_drawn_when_no_other_follows(make_window, qtbot, monkeypatch):
    window = make_window()
    window.pace.set_calm(True, calm_s=0.3)
    with qtbot.waitExposed(window):
        window.show()
    drawn = drawn_samples(window, monkeypatch)
    window.on_snapshots([snap(100.0, gpu(40 * GIB))])
    window.on_snapshots([snap(100.01, gpu(40 * GIB + 1))])      # sampling pauses here
    assert drawn == [1]
    qtbot.waitUntil(lambda: drawn == [1, 2], timeout=3000)


def test_turning_calm_off_draws_a_held_sample_and_every_later_one(make_window, qtbot,
                                                                  monkeypatch):
    window = make_window()
    window.pace.set_calm(True)
    with qtbot.waitExposed(window):
        window.show()
    drawn = drawn_samples(window, monkeypatch)
    window.on_snapshots([snap(100.0, gpu(40 * GIB))])
    window.on_snapshots([snap(101.0, gpu(40 * GIB))])
    assert drawn == [1]
    window.pace.set_calm(False)
    assert drawn == [1, 2]
    window.on_snapshots([snap(101.5, gpu(40 * GIB))])
    assert drawn == [1, 2, 3]


def test_a_window_without_a_calm_pace_draws_every_sample(make_window, monkeypatch):
    window = make_window()                 # tests and screenshots: the pace is off
    drawn = drawn_samples(window, monkeypatch)
    for t in (100.0, 100.5, 101.0):
        window.on_snapshots([snap(t, gpu(40 * GIB))])
    assert drawn == [1, 2, 3]


def test_a_calm_window_still_reads_the_budgets_capacity_about_every_tenth_sample(
        make_window, qtbot, monkeypatch):
    window = make_window()
    window.pace.set_calm(True)
    with qtbot.waitExposed(window):
        window.show()
    read: list[int] = []
    original = window.budget.follow_gpu
    monkeypatch.setattr(window.budget, "follow_gpu",
                        lambda *a: (read.append(window.samples), original(*a)))
    drawn = drawn_samples(window, monkeypatch)
    pace = round(CALM_S)                   # quiet samples a second apart: one in the pace drawn
    for k in range(10 * pace + 1):
        window.on_snapshots([snap(100.0 + k, gpu(40 * GIB))])
    assert drawn == list(range(1, 10 * pace + 2, pace)) and window.pace.held == 10 * (pace - 1)
    first_in_each_ten = sorted({min(d for d in drawn if d // 10 == tens)
                                for tens in {d // 10 for d in drawn}})
    assert sorted(set(read)) == first_in_each_ten and len(first_in_each_ten) > 2
    assert not window._stale               # the newest was drawn: nothing left to catch up


def test_the_status_bar_says_how_often_a_calm_window_draws(make_window):
    window = make_window()
    window.apply_preferences(replace(window.prefs, interval_s=1.0))
    assert window.status_interval.text() == "every 1 s"
    window.pace.set_calm(True)
    assert window.status_interval.text() == f"every 1 s · drawn every {CALM_S:g} s while steady"
    window.pace.set_calm(False)
    assert window.status_interval.text() == "every 1 s"
    assert pace_text(0.5, 2.0) == "every 500 ms · drawn every 2 s while steady"
    assert pace_text(CALM_S, CALM_S) == f"every {CALM_S:g} s"   # every sample drawn anyway
