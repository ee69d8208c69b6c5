"""The published-runs table (tests/plan/data/published.toml) is well formed, and the
planner predicts every run at its defaults, most within 1.5× (benchmarks/plan.py prints
the figures and docs/plan.md quotes them)."""

from __future__ import annotations

import pytest

from benchmarks.plan_published import WITHIN, figure, load, plan_now, ratio, within
from gpuwatch.plan.hardware import hardware_for

RUNS = load()
METRICS = {"tokens_per_s_per_gpu", "images_per_s_per_gpu", "generation_tokens_per_s",
           "time_to_first_token_s"}


def test_the_table_is_well_formed():
    assert len(RUNS) >= 20 and len({r.id for r in RUNS}) == len(RUNS)
    for r in RUNS:
        assert r.source and r.what and r.metric in METRICS and r.published > 0
        assert hardware_for(r.gpu).name == r.gpu and r.gpus >= 1
        assert "--efficiency" not in r.args  # the defaults are what is checked
        assert r.args[r.args.index("--gpus") + 1] == str(r.gpus)


@pytest.fixture(scope="module")
def ratios() -> dict[str, float | None]:
    out = {}
    for run in RUNS:
        doc = plan_now(run)
        out[run.id] = None if doc is None else ratio(figure(run, doc), run.published)
    return out


def test_every_published_run_is_predicted(ratios):
    assert [k for k, v in ratios.items() if v is None] == []


def test_most_published_runs_land_within_one_and_a_half_times(ratios):
    hits = sum(within(v) for v in ratios.values())
    assert hits >= 0.85 * len(ratios), {k: v for k, v in ratios.items() if not within(v)}
    assert WITHIN == 1.5
