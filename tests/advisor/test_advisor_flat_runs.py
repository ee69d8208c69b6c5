"""The rules' shortcuts for flat memory (``RuleContext.process_peaks``, ``gpu_peak``,
``gpu_flat``, ``floor_may_move``) against reading every window, on random histories:
memory that stays flat, steps, climbs, is unknown for a while, processes that come and
go; with windows short enough that every rule has something to judge."""

from __future__ import annotations

import numpy as np
from advisor_support import GIB, MIB, context, gpu, snapshot
from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.advisor import AdvisorSettings
from gpuwatch.advisor.rules import RULES
from gpuwatch.advisor.rules.leak import floor_may_move, floor_trend
from gpuwatch.core.history import History, Ring

SETTINGS = AdvisorSettings(
    free_window_s=5, trend_window_s=40, trend_bucket_s=2, trend_min_span_s=10,
    trend_recent_s=16, oom_warmup_s=6, leak_window_s=60, leak_bucket_s=2,
    leak_min_span_s=12, leak_warmup_s=4, leak_min_rate_bytes_per_s=1 * MIB,
    contention_window_s=10, contention_min_process_bytes=1 * GIB,
    underused_window_s=20, bandwidth_window_s=10)
SPANS = (3.0, 10.0, 25.0, 60.0)


class WithoutRuns:
    """A history that does not know its runs: every rule reads its windows."""

    def __init__(self, history: History):
        self._history = history

    def __getattr__(self, name: str):
        return getattr(self._history, name)

    def process_runs(self, gpu_index: int) -> None:
        return None

    def gpu_run(self, gpu_index: int) -> None:
        return None


# per process: a memory pattern (GiB steps, repeated so that runs of equal values are
# common), how many samples each step holds, how often it is missing, and a climb (MiB
# a sample, on a sawtooth: a leak, or a run towards a full GPU)
_pattern = st.lists(st.sampled_from([None, 1, 1, 1, 2, 2, 3, 6, 9]), min_size=1, max_size=8)
_process = st.tuples(_pattern, st.integers(1, 20), st.integers(0, 3),
                     st.sampled_from([0, 0, 0, 8, 150]))
_gpu = st.lists(_process, min_size=0, max_size=4)


def _history(gpus: list, samples: int) -> History:
    history = History(capacity=400, process_capacity=50)
    for i in range(samples):
        listed = []
        for index, processes in enumerate(gpus):
            procs = []
            for n, (values, hold, gap, climb) in enumerate(processes):
                if gap and i % (gap * 7 + 5) == gap:      # missing now and then
                    continue
                v = values[(i // hold) % len(values)]
                if v is not None and climb:
                    v = min(v + climb * i / 1024 + (i % 3) / 8, 11)
                procs.append((100 * index + n, None if v is None else int(v * GIB) + n))
            known = [u for _, u in procs if u is not None]
            used = None if i % 13 == 12 else 0.5 * GIB + sum(known)
            listed.append(gpu(index, total=24 * GIB, used=used, util=60.0,
                              busy=97.0 if index else 40.0, procs=procs))
        history.append(snapshot(float(i), *listed))
    return history


@given(st.lists(_gpu, min_size=1, max_size=2), st.integers(1, 120))
def test_flat_shortcuts_read_what_the_windows_say(gpus, samples):
    history = _history(gpus, samples)
    ctx = context(history, SETTINGS)
    for g in ctx.snapshot.gpus:
        for span in SPANS:
            want = [ctx.process_peak(g.index, p.pid, span) for p in g.processes]
            assert ctx.process_peaks(g, span) == want
            window = ctx.gpu_window(g.index, span)["used_bytes"]
            assert ctx.gpu_peak(g.index, span) == Ring.peak_of(window)
            if ctx.gpu_flat(g.index, span):
                known = window[~np.isnan(window)]
                assert (known == known[:1]).all()
        may_move = set(floor_may_move(ctx, g))
        for i, p in enumerate(g.processes):
            if i not in may_move:
                assert floor_trend(ctx, g.index, p.pid) is None


@given(st.lists(_gpu, min_size=1, max_size=2), st.integers(1, 120))
def test_every_rule_finds_what_it_finds_reading_every_window(gpus, samples):
    history = _history(gpus, samples)
    fast = context(history, SETTINGS)
    slow = context(WithoutRuns(history), SETTINGS)   # type: ignore[arg-type]
    for rule in RULES:
        assert rule(fast) == rule(slow), rule.__name__
