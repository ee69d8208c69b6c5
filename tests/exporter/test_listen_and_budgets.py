"""``--listen`` and ``--budget``: what `gpuwatch serve` accepts, what it refuses and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run
from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.exporter.budgets import BudgetFileError, budget_from_estimate, parse_budget_rule
from gpuwatch.exporter.listen import ListenAddress, ListenError, parse_listen


@pytest.mark.parametrize("text, address, loopback", [
    ("127.0.0.1:9400", ListenAddress("127.0.0.1", 9400), True),
    ("9401", ListenAddress("127.0.0.1", 9401), True),
    ("localhost:80", ListenAddress("localhost", 80), True),
    ("[::1]:9400", ListenAddress("::1", 9400), True),
    ("127.8.9.10:1", ListenAddress("127.8.9.10", 1), True),
    ("0.0.0.0:9400", ListenAddress("0.0.0.0", 9400), False),
    ("[::]:9400", ListenAddress("::", 9400), False),
    ("10.1.2.3:9400", ListenAddress("10.1.2.3", 9400), False),
    ("gpu-node-1:9400", ListenAddress("gpu-node-1", 9400), False),   # may resolve anywhere
])
def test_listen_addresses(text: str, address: ListenAddress, loopback: bool) -> None:
    parsed = parse_listen(text)
    assert parsed == address
    assert parsed.loopback is loopback
    assert parse_listen(str(parsed)) == parsed


@pytest.mark.parametrize("text", ["", ":9400", "host", "host:0", "host:65536", "host:x",
                                  "::1:9400", "[::1]9400", "[nope]:1", "a b:1", "h/x:1",
                                  "²", "host:²", "host:١٢", "[::1]:٩٤٠٠", "9" * 5000])
def test_bad_listen_addresses(text: str) -> None:
    with pytest.raises(ListenError):
        parse_listen(text)


@given(st.text(max_size=40))
def test_any_listen_text_parses_or_is_refused(text: str) -> None:
    try:
        address = parse_listen(text)
    except ListenError as exc:
        assert str(exc)
    else:
        assert 1 <= address.port <= 65535
        assert parse_listen(str(address)) == address


def test_serve_refuses_a_remote_address_without_allow_remote(capsys) -> None:
    code, _, err = run(capsys, "serve", "--demo", "--listen", "0.0.0.0:9400")
    assert code == 2
    assert "--allow-remote" in err and "no authentication" in err


def test_serve_refuses_to_spin_at_max_speed(capsys) -> None:
    code, _, err = run(capsys, "serve", "--demo", "--time-scale", "max")
    assert code == 2 and "--time-scale max" in err


def test_serve_refuses_a_bad_listen_value(capsys) -> None:
    code, _, err = run(capsys, "serve", "--listen", "host:99999")
    assert code == 2 and "--listen" in err and "65535" in err


ESTIMATE = {"schema": "gpuwatch.estimate/1", "inputs": {"model": "gpt2-medium", "batch": 8},
            "total_bytes": 13374210048}


def test_a_budget_rule_reads_an_estimate(tmp_path: Path) -> None:
    path = tmp_path / "budget.json"
    path.write_text(json.dumps(ESTIMATE))
    rule = parse_budget_rule(f"train.py={path}")
    assert rule.budget.peak_bytes == 13374210048
    assert rule.budget.label == "gpt2-medium · batch 8"
    assert rule.matches(("python", "train.py", "--batch", "8"))
    assert not rule.matches(("python", "eval.py"))


@pytest.mark.parametrize("text", ["nopattern", "=file.json", "p="])
def test_bad_budget_rules(text: str) -> None:
    with pytest.raises(BudgetFileError, match="PATTERN=FILE"):
        parse_budget_rule(text)


def test_a_missing_or_foreign_budget_file_is_named(tmp_path: Path, capsys) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"schema": "gpuwatch.snapshot/1"}')
    for path, problem in ((tmp_path / "none.json", "does not exist"),
                          (other, "not a gpuwatch.estimate/1")):
        code, _, err = run(capsys, "serve", "--demo", "--budget", f"x={path}")
        assert code == 2
        assert str(path) in err and problem in err


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=12)


@given(st.dictionaries(st.sampled_from(["schema", "total_bytes", "inputs", "x"]),
                       json_values, max_size=4), st.booleans())
def test_any_estimate_document_is_read_or_refused(doc: dict, stamped: bool) -> None:
    if stamped:
        doc["schema"] = "gpuwatch.estimate/1"
    try:
        budget = budget_from_estimate(doc, "f.json")
    except BudgetFileError as exc:
        assert str(exc).startswith("f.json: ")
    else:
        assert isinstance(budget.peak_bytes, int) and budget.peak_bytes > 0
