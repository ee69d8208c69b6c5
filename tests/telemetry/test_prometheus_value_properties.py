"""Every number a Prometheus answer carries is read at the boundary with bounds: the
form Prometheus writes (ASCII digits only), finite, within ±2**60; anything else is
unknown (None) or refused with a reason, whatever text the server sends."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.telemetry.prometheus.response import (
    MAX_VALUE,
    ResponseError,
    parse_response,
    parse_value,
)

# digits of every script Python's float() and isdigit() accept, and the usual suspects
odd_digits = st.sampled_from(["١٢٣", "²", "߁", "１２", "𝟙", "1_000", " 12 ", "0x10", "1e",
                              "١e٣", "∞", "--1", "+-1", ".", "e5", "1.2.3"])
numbers = st.one_of(
    st.floats().map(repr), st.integers(-10**400, 10**400).map(str),
    st.floats().map(lambda f: f"{f:.400f}"[:420]),
    st.sampled_from(["NaN", "+Inf", "-Inf", "inf", "nan", "Infinity"]), odd_digits,
    st.text(max_size=30))


@given(numbers)
def test_any_value_text_is_a_bounded_number_none_or_refused(text: str) -> None:
    try:
        value = parse_value(text)
    except ResponseError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    if value is None:
        return
    assert math.isfinite(value) and abs(value) <= MAX_VALUE
    assert text.isascii()                     # no other script's digits got through
    assert value == float(text)


@given(odd_digits)
def test_digits_of_other_scripts_are_refused(text: str) -> None:
    try:
        parse_value(text)
    except ResponseError:
        return
    raise AssertionError(f"{text!r} was read as a number")


@given(st.integers(1, 6000), st.sampled_from(["value", "stamp"]))
def test_numbers_of_thousands_of_digits_never_escape(digits: int, where: str) -> None:
    big = "9" * digits
    value: object = big if where == "value" else "1"
    stamp: object = 1.0 if where == "value" else None
    body = ('{"status":"success","data":{"resultType":"vector","result":[{"metric":{},'
            f'"value":[{big if stamp is None else stamp},{json.dumps(value)}]}}]}}}}')
    problems: list[str] = []
    try:
        series = parse_response(body, problems)
    except ResponseError as exc:
        assert str(exc)
        return
    assert series[0].value is None or abs(series[0].value) <= MAX_VALUE
    assert len(problems) <= 1
