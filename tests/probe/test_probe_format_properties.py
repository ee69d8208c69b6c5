"""Probe documents come from other processes: whatever JSON a file holds, parsing it
gives a report or a ProbeFormatError naming the problem, never another exception; and a
report written back out reads back the same."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.core.probe_format import (
    PROBE_SCHEMA,
    ProbeFormatError,
    parse_probe_report,
    probe_report_to_json,
)

scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | \
    st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                           max_leaves=12)
counts = st.none() | st.integers(0, 2**40)
change = st.none() | st.fixed_dictionaries({}, optional={
    "reason": st.none() | st.sampled_from(["out-of-memory", "headroom"]) | st.text(max_size=60),
    "old_micro_batch": counts | json_values,
    "at_s": st.none() | st.floats(allow_nan=False, allow_infinity=False) | json_values,
    "step": json_values})
adaptive = json_values | st.fixed_dictionaries({}, optional={
    "micro_batch": counts | json_values, "grad_accum": counts, "effective_batch": counts,
    "changes": counts, "steps": json_values, "last_change": change | json_values})


def _doc(extra: dict) -> dict:
    return {"schema": PROBE_SCHEMA, "pid": 4242, "published_at_s": 1000.0, **extra}


@given(st.dictionaries(st.sampled_from(["model", "optimizer", "allocator", "adaptive_batch",
                                        "devices", "device_uuids", "torch_version",
                                        "alloc_conf"]), json_values, max_size=4),
       adaptive)
def test_any_document_parses_or_is_refused_by_name(extra, batch):
    for doc in (_doc(extra), _doc({**extra, "adaptive_batch": batch})):
        try:
            report = parse_probe_report(doc)
        except ProbeFormatError as exc:
            assert str(exc)
            continue
        assert parse_probe_report(probe_report_to_json(report)) == report
        if report.adaptive_batch is not None:
            assert isinstance(report.adaptive_batch.describe(2000.0), str)


@given(json_values)
def test_a_document_that_is_not_an_object_is_refused(value):
    if isinstance(value, dict):
        value = [value]
    try:
        parse_probe_report(value)
    except ProbeFormatError:
        return
    raise AssertionError("a non-object was accepted")
