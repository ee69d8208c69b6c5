"""``serve --budget PATTERN=FILE``: the file is read like every other user file (a
regular file only, a size cap, bounded numbers), so a FIFO cannot block `serve` before
it listens and an enormous integer cannot disable the advisor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_support import REPO
from sim_support import make_scenario, sim_backend

from gpuwatch.core.units import MAX_SIZE_BYTES
from gpuwatch.exporter.budgets import (
    MAX_ESTIMATE_BYTES,
    BudgetFileError,
    BudgetRule,
    budget_from_estimate,
    parse_budget_rule,
)
from gpuwatch.exporter.state import ExporterState


def _estimate(total: object, **inputs: object) -> dict:
    return {"schema": "gpuwatch.estimate/1", "inputs": inputs, "total_bytes": total}


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "budget.json"
    os.mkfifo(fifo)
    # in a child: a plain open() of a FIFO with no writer would block it for ever
    result = subprocess.run(
        [sys.executable, "-m", "gpuwatch", "serve", "--demo", "--listen", "127.0.0.1:1",
         "--budget", f"train.py={fifo}"],
        capture_output=True, text=True, timeout=60, env={**os.environ,
                                                         "PYTHONPATH": str(REPO)})
    assert result.returncode == 2
    assert f"--budget {fifo}: is not a regular file" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("make, problem", [
    (lambda p: p.mkdir(), "is a folder"),
    (lambda p: p.write_bytes(b" " * (MAX_ESTIMATE_BYTES + 1)), "is larger than"),
    (lambda p: p.write_text('{"a":' * 100_000 + "1" + "}" * 100_000), "too deeply"),
    (lambda p: p.write_bytes(b"\xff\xfe{"), "not JSON"),
    (lambda p: p.write_text(json.dumps(_estimate(0)).replace("0}", "9" * 5000 + "}")),
     "not JSON"),
])
def test_bad_budget_files_are_named_with_the_reason(tmp_path: Path, make, problem) -> None:
    path = tmp_path / "budget.json"
    make(path)
    with pytest.raises(BudgetFileError) as info:
        parse_budget_rule(f"train.py={path}")
    assert str(info.value).startswith(f"{path}: ") and problem in str(info.value)
    assert len(str(info.value)) < 400


@given(st.integers(-10**300, 10**300) | st.floats() | st.text(max_size=5) | st.booleans())
def test_totals_are_bounded(total: object) -> None:
    try:
        budget = budget_from_estimate(_estimate(total), "b.json")
    except BudgetFileError as exc:
        assert "total_bytes must be a whole number from 1 to 1 EiB" in str(exc)
        assert len(str(exc)) < 200
    else:
        assert type(budget.peak_bytes) is int and 0 < budget.peak_bytes <= MAX_SIZE_BYTES


@given(st.integers(-10**30, 10**30), st.text(max_size=200))
def test_batch_and_model_are_bounded_and_printable(batch: int, model: str) -> None:
    budget = budget_from_estimate(_estimate(1 << 30, model=model, batch=batch), "b.json")
    assert budget.batch is None or 0 < budget.batch <= 1 << 31
    assert budget.label.isprintable() and len(budget.label) <= 80 + len(" · batch ") + 10


@given(st.binary(max_size=200))
def test_any_file_content_is_read_or_refused(tmp_path_factory, content: bytes) -> None:
    path = tmp_path_factory.mktemp("b") / "budget.json"
    path.write_bytes(content)
    try:
        rule = parse_budget_rule(f"x={path}")
    except BudgetFileError as exc:
        assert str(exc).startswith(f"{path}: ")
    else:
        assert 0 < rule.budget.peak_bytes <= MAX_SIZE_BYTES


def test_the_largest_budget_keeps_the_advisor_working() -> None:
    # a budget file once disabled the advisor on every sample with a huge integer; the
    # largest accepted peak must leave it working
    budget = budget_from_estimate(_estimate(MAX_SIZE_BYTES, model="m"), "b.json")
    failures: list[Exception] = []
    state = ExporterState([BudgetRule("python", budget)], failures.append)
    scenario = make_scenario(processes=[{"pid": 4242, "gpu": 0, "name": "python",
                                         "cmdline": ["python", "train.py"],
                                         "memory": "2GiB"}])
    backend = sim_backend(scenario, 0.0).open()
    try:
        for i in range(30):
            backend.clock.set_elapsed(float(i))
            state.on_snapshot(backend.sample())
    finally:
        backend.close()
    assert failures == [] and state.advisor_failures == 0
    assert state.view is not None and state.view.links
