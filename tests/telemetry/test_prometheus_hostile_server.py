"""The Prometheus client against a hostile server: whatever answers at the address, a
query ends within its deadline with one sentence ("cannot be reached: why"), never a
traceback, a hang or a terminal escape chosen by the server."""

from __future__ import annotations

import time

import pytest
from hostile_http import (
    HostileServer,
    answer,
    drips,
    endless_body,
    resets,
    sends,
    silent,
    vector,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwatch.telemetry.prometheus.client import PrometheusClient, QueryFailed
from gpuwatch.telemetry.prometheus.response import MAX_RESPONSE_BYTES, QueryRefused

OK_BODY = vector([({"__name__": "DCGM_FI_DEV_FB_USED", "gpu": "0"}, "1000")])


def _fails(server: HostileServer, timeout_s: float = 2.0) -> tuple[str, float]:
    client = PrometheusClient(server.url, timeout_s)
    start = time.monotonic()
    with pytest.raises(QueryFailed) as info:
        client.query("up")
    took = time.monotonic() - start
    reason = info.value.reason
    assert reason.startswith(("Prometheus at", server.url)) and "\n" not in reason
    assert "\x1b" not in reason and "\x07" not in reason
    return reason, took


@pytest.mark.parametrize("every_s, timeout_s", [(0.3, 1.5), (2.0, 3.0)])
def test_a_server_that_drips_trips_the_whole_request_deadline(every_s: float,
                                                              timeout_s: float) -> None:
    # each byte arrives well within a per-read timeout; the whole answer never does
    with HostileServer(drips(answer("200 OK", OK_BODY), every_s=every_s)) as server:
        reason, took = _fails(server, timeout_s=timeout_s)
    assert f"no complete answer within {timeout_s:g} s" in reason
    assert took < timeout_s + 1.0    # the deadline, and no more than the last wait


def test_a_silent_server_is_cut_at_the_deadline() -> None:
    with HostileServer(silent()) as server:
        reason, _ = _fails(server, timeout_s=1.0)
    assert "within 1 s" in reason or "in time" in reason


@pytest.mark.parametrize("raw, why", [
    (b"", "closed the connection without answering"),
    (b"hello there\r\n\r\n", "no HTTP status line"),
    (b"HTTP/1.1 200 OK\r\n" + b"X-Filler: 1\r\n" * 500 + b"\r\n{}", "not valid HTTP"),
    (b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 100_000 + b"\r\n\r\n", "too long"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", "cut short"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "cut short"),
])
def test_broken_http_is_unreachable_with_the_reason(raw: bytes, why: str) -> None:
    with HostileServer(sends(raw)) as server:
        reason, _ = _fails(server)
    assert "cannot be reached" in reason and why in reason


def test_a_reset_is_unreachable() -> None:
    with HostileServer(resets()) as server:
        reason, _ = _fails(server)
    assert "cannot be reached" in reason
    assert "reset" in reason or "closed the connection" in reason


def test_a_huge_body_is_refused_before_it_is_read() -> None:
    big = answer("200 OK", b"") .replace(b"Content-Length: 0",
                                        f"Content-Length: {MAX_RESPONSE_BYTES * 4}".encode())
    with HostileServer(sends(big)) as server:
        reason, _ = _fails(server)
    assert "64 MiB, more than the 16 MiB" in reason


def test_an_endless_body_stops_at_the_size_cap() -> None:
    with HostileServer(endless_body()) as server:
        reason, _ = _fails(server, timeout_s=20.0)
    assert "larger than 16 MiB" in reason


def test_a_redirect_is_named_not_followed() -> None:
    location = "http://elsewhere.example:9090/\x1b]0;owned\x07"
    with HostileServer(sends(answer("302 Found", b"", (f"Location: {location}",)))) as server:
        reason, _ = _fails(server)
        assert server.connections == 1           # nothing was sent anywhere else
    assert "redirects to http://elsewhere.example:9090/\\x1b]0;owned\\x07" in reason
    assert "give that address to --prometheus" in reason


def test_a_reason_phrase_with_escapes_is_shown_escaped() -> None:
    raw = answer("500 \x1b[2J\x1b]0;pwned\x07oops", b"<html>no</html>", content_type="text/html")
    with HostileServer(sends(raw)) as server:
        reason, _ = _fails(server)
    assert "HTTP 500 \\x1b[2J\\x1b]0;pwned\\x07oops" in reason


def test_an_error_answer_with_escapes_is_refused_escaped() -> None:
    body = (b'{"status":"error","errorType":"bad_data\\u001b[31m",'
            b'"error":"parse error \\u001b]0;x\\u0007' + b"y" * 5000 + b'"}')
    with HostileServer(sends(answer("400 Bad Request", body))) as server:
        client = PrometheusClient(server.url, 2.0)
        with pytest.raises(QueryRefused) as info:
            client.query("up")
    text = str(info.value)
    assert "\x1b" not in text and "\x07" not in text and len(text) < 600
    assert text.startswith("bad_data\\x1b[31m: parse error \\x1b]0;x\\x07")


def test_values_out_of_range_are_unknown_and_named() -> None:
    body = vector([({"__name__": "DCGM_FI_DEV_FB_USED", "gpu": "0"}, "1e308"),
                   ({"__name__": "DCGM_FI_DEV_FB_FREE", "gpu": "0"}, "2048"),
                   ({"__name__": "DCGM_FI_DEV_FB_RESERVED", "gpu": "0"}, "-1e300")])
    with HostileServer(sends(answer("200 OK", body))) as server:
        client = PrometheusClient(server.url, 2.0)
        series = client.query("up")
    assert [s.value for s in series] == [None, 2048.0, None]
    assert client.problems == ["DCGM_FI_DEV_FB_USED{gpu=0}: 1e308 is beyond ±2**60",
                               "DCGM_FI_DEV_FB_RESERVED{gpu=0}: -1e300 is beyond ±2**60"]


status_lines = st.sampled_from([b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 400 x\r\n",
                                b"HTTP/1.0 302 \x1b\r\n", b"HTTP/1.1 999 ?\r\n",
                                b"HTTP/2 200\r\n", b"", b"\r\n"])
header_lines = st.lists(st.sampled_from([
    b"Content-Length: 5\r\n", b"Content-Length: -1\r\n", b"Content-Length: \xd9\xa1\r\n",
    b"Transfer-Encoding: chunked\r\n", b"Location: \x1b]0;x\x07\r\n", b"X: \xff\r\n",
    b"Content-Type: application/json\r\n", b"no colon\r\n", b" folded\r\n"]), max_size=6)


@settings(max_examples=30)
@given(status_lines, header_lines, st.booleans(), st.binary(max_size=200))
def test_any_answer_is_series_or_one_reason(status: bytes, headers: list[bytes], end: bool,
                                            body: bytes) -> None:
    raw = status + b"".join(headers) + (b"\r\n" if end else b"") + body
    with HostileServer(sends(raw), lifetime_s=10) as server:
        client = PrometheusClient(server.url, 2.0)
        try:
            series = client.query("up")
        except QueryRefused as exc:
            text = str(exc)
        except QueryFailed as exc:
            text = exc.reason
        else:
            assert isinstance(series, list)
            return
    assert text and "\n" not in text and "\x1b" not in text and "\x07" not in text
