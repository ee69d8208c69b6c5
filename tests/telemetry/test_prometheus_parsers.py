"""The Prometheus source's parsers: --match selectors, --prometheus URLs and the HTTP
API's JSON answers. Property tests: whatever the input, a clean result or the module's
own error, never another exception."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.telemetry.prometheus.backend import gpu_selector, query_for
from gpuwatch.telemetry.prometheus.response import (
    MAX_VALUE,
    QueryRefused,
    ResponseError,
    parse_response,
)
from gpuwatch.telemetry.prometheus.selector import (
    Matcher,
    SelectorError,
    parse_selector,
    render,
)
from gpuwatch.telemetry.prometheus.url import ServerUrlError, parse_server_url

label_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True).filter(
    lambda s: s != "__name__")
ops = st.sampled_from(["=", "!=", "=~", "!~"])
values = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
matchers = st.lists(st.builds(Matcher, label_names, ops, values), max_size=5).map(tuple)


# --- --match ------------------------------------------------------------------------

@given(matchers)
def test_rendered_matchers_parse_back_to_themselves(ms: tuple[Matcher, ...]) -> None:
    assert parse_selector("{" + render(ms) + "}") == ms
    assert parse_selector(render(ms)) == ms           # the braces may be left out


@given(st.text(max_size=80))
def test_any_text_parses_or_is_refused_with_a_reason(text: str) -> None:
    try:
        parsed = parse_selector(text)
    except SelectorError as exc:
        assert str(exc)
    else:
        assert all(isinstance(m, Matcher) for m in parsed)


@given(st.lists(st.builds(Matcher, label_names, ops, values), min_size=1, max_size=3))
def test_a_value_cannot_escape_into_the_query(ms: list[Matcher]) -> None:
    """Whatever the values hold (quotes, braces, PromQL), the query keeps one selector
    whose matchers are exactly the ones given."""
    selector = gpu_selector(tuple(ms))
    assert selector.startswith('{__name__=~"') and selector.endswith("}")
    _names, _, rest = selector[1:-1].partition(",")
    assert parse_selector(rest) == tuple(ms)
    assert query_for(tuple(ms)) == f"{selector} or up{{{rest}}} == 0"


def test_the_query_without_matchers() -> None:
    assert query_for(()).endswith('"} or up == 0')


@pytest.mark.parametrize("text, expected", [
    ('{cluster="a"}', (Matcher("cluster", "=", "a"),)),
    ("cluster='a', node=~`gpu-.*`", (Matcher("cluster", "=", "a"),
                                      Matcher("node", "=~", "gpu-.*"))),
    ('{ job != "x\\"y" , }', (Matcher("job", "!=", 'x"y'),)),
    ("{}", ()),
    ('{a="\\u00e9\\n"}', (Matcher("a", "=", "é\n"),)),
])
def test_promql_forms(text: str, expected: tuple) -> None:
    assert parse_selector(text) == expected


@pytest.mark.parametrize("text, problem", [
    ('{a="b"', "closing }"),
    ('a="b"}', "opening {"),
    ('{a=b}', "quoted value"),
    ('{a~"b"}', "=, !=, =~ or !~"),
    ('{a="b" c="d"}', "comma"),
    ('{__name__="up"}', "__name__"),
    ('{a="b}', "not closed"),
    ('{1a="b"}', "label name"),
    ('{a="\\q"}', "unknown escape"),
])
def test_bad_selectors_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(SelectorError, match=problem.replace("{", "\\{").replace("}", "\\}")
                       .replace("|", "\\|")):
        parse_selector(text)


# --- --prometheus -------------------------------------------------------------------

@pytest.mark.parametrize("text, url", [
    ("http://prom:9090", "http://prom:9090"),
    ("prom:9090", "http://prom:9090"),
    ("https://example.org/prometheus/", "https://example.org/prometheus"),
    ("http://[::1]:9090/api/v1/query", "http://[::1]:9090"),
])
def test_server_urls(text: str, url: str) -> None:
    assert parse_server_url(text) == url


@pytest.mark.parametrize("text", ["", "ftp://x", "http://", "http://h:99999",
                                  "http://u:p@h:9090", "http://h:9090/?q=1", "http://h x",
                                  "http://h:0"])
def test_bad_server_urls(text: str) -> None:
    with pytest.raises(ServerUrlError):
        parse_server_url(text)


@given(st.text(max_size=60))
def test_any_url_text_parses_or_is_refused(text: str) -> None:
    try:
        url = parse_server_url(text)
    except ServerUrlError as exc:
        assert str(exc)
    else:
        assert url.startswith(("http://", "https://")) and not url.endswith("/")
        assert parse_server_url(url) == url            # a parsed URL is stable


# --- the HTTP API's answer ----------------------------------------------------------

sample_values = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["NaN", "+Inf", "-Inf", "0", "1e3"]))
series_docs = st.fixed_dictionaries({
    "metric": st.dictionaries(label_names | st.just("__name__"), values, max_size=5),
    "value": st.tuples(st.floats(0, 4e9, allow_nan=False), sample_values).map(list),
})


@given(st.lists(series_docs, max_size=8))
def test_vectors_parse_to_their_series(items: list[dict]) -> None:
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": items}})
    series = parse_response(body.encode())
    assert len(series) == len(items)
    for s, item in zip(series, items, strict=True):
        assert s.labels == item["metric"]
        expected = float(item["value"][1])
        if math.isfinite(expected) and abs(expected) <= MAX_VALUE:
            assert s.value == expected
        else:
            assert s.value is None     # not reported (or out of range), never 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=20)


@given(json_values)
def test_any_json_parses_or_is_refused(doc: object) -> None:
    shapes = [doc, {"status": "success", "data": doc},
              {"status": "success", "data": {"resultType": "vector", "result": doc}},
              {"status": "success", "data": {"resultType": "vector", "result": [doc]}}]
    for shape in shapes:
        try:
            parse_response(json.dumps(shape))
        except (ResponseError, QueryRefused) as exc:
            assert str(exc)


@given(st.binary(max_size=64))
def test_any_bytes_parse_or_are_refused(body: bytes) -> None:
    try:
        series = parse_response(body)
    except (ResponseError, QueryRefused) as exc:
        assert str(exc)
    else:
        assert isinstance(series, list)


def test_an_error_answer_carries_prometheus_reason() -> None:
    body = json.dumps({"status": "error", "errorType": "bad_data",
                       "error": "invalid regular expression"})
    with pytest.raises(QueryRefused, match="bad_data: invalid regular expression"):
        parse_response(body)


@pytest.mark.parametrize("doc, problem", [
    ({"status": "success", "data": {"resultType": "matrix", "result": []}}, "instant vector"),
    ({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {}, "value": [1, 2]}]}}, "short string"),
    ({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"a": 1}, "value": [1, "2"]}]}}, "labels"),
    ({"data": {}}, "not from a Prometheus"),
])
def test_malformed_answers_say_what_is_wrong(doc: dict, problem: str) -> None:
    with pytest.raises(ResponseError, match=problem):
        parse_response(json.dumps(doc))
