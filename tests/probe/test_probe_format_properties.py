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


# --- numbers at the boundary: every one bounded where it is read -------------------

from gpuwatch.core.probe_format import MAX_PROBE_INT  # noqa: E402

huge = st.integers(MAX_PROBE_INT + 1, 10**4000) | st.integers(-10**4000, -1)
number_fields = st.sampled_from(
    [("allocator", f) for f in ("allocated_bytes", "reserved_bytes", "inactive_split_bytes",
                                "num_ooms", "num_alloc_retries")]
    + [("model", f) for f in ("parameters", "parameter_bytes", "gradient_bytes")]
    + [("optimizer", "state_bytes"), ("optimizer", "step"), ("adaptive_batch", "changes")])


@given(number_fields, huge)
def test_a_number_out_of_range_is_refused_naming_its_field(field, value):
    table, key = field
    try:
        parse_probe_report(_doc({table: {key: value}}))
    except ProbeFormatError as exc:
        assert f"{table}.{key}" in str(exc) and "2**60" in str(exc)
        assert len(str(exc)) < 200            # a number of 4,000 digits is not repeated
    else:
        raise AssertionError(f"{table}.{key} = {value} was accepted")


@given(st.one_of(huge, st.floats(allow_nan=True, allow_infinity=True),
                 st.integers(0, MAX_PROBE_INT)),
       st.sampled_from(["published_at_s", "pid"]))
def test_times_and_pids_are_bounded(value, key):
    try:
        report = parse_probe_report(_doc({key: value}))
    except ProbeFormatError as exc:
        assert key in str(exc)
        return
    assert 0 < report.pid <= 1 << 22 and 0 <= report.published_at_s <= 1e11


@given(st.dictionaries(st.text(max_size=80), st.integers(-1, 2**70) | json_values,
                       max_size=80))
def test_dtype_tables_are_bounded(table):
    try:
        report = parse_probe_report(_doc({"model": {"parameter_bytes_by_dtype": table}}))
    except ProbeFormatError as exc:
        assert "parameter_bytes_by_dtype" in str(exc)
        return
    by_dtype = report.model.parameter_bytes_by_dtype
    assert len(by_dtype) <= 64
    assert all(len(k) <= 64 and 0 <= v <= MAX_PROBE_INT for k, v in by_dtype.items())
