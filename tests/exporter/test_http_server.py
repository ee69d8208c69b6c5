"""`serve`'s HTTP side against hostile clients: resets, bad requests, slowloris, floods.
Each is counted and said at most once per kind per minute, never with a traceback, and
a normal scrape is answered throughout. Loopback only; every client here is bounded."""

from __future__ import annotations

import contextlib
import re
import resource
import signal
import socket
import struct
import time
import urllib.request
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_support import start_exporter
from sim_support import make_scenario, sim_backend

from gpuwatch.exporter import httpd
from gpuwatch.exporter.complaints import Complaints
from gpuwatch.exporter.listen import ListenAddress
from gpuwatch.exporter.server import SnapshotCollector, serve_metrics
from gpuwatch.exporter.state import ExporterState


class Endpoint:
    def __init__(self, max_connections: int | None = None):
        self.lines: list[str] = []
        self.state = ExporterState()
        backend = sim_backend(make_scenario(), 0.0).open()
        try:
            self.state.on_snapshot(backend.sample())
        finally:
            backend.close()
        self.collector = SnapshotCollector(self.state, "node-t")
        self.server, self.thread = serve_metrics(ListenAddress("127.0.0.1", 0),
                                                 self.collector, self.lines.append)
        if max_connections is not None:
            self.server.max_connections = max_connections
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/metrics"

    def scrape(self, timeout_s: float = 10.0) -> str:
        with urllib.request.urlopen(self.url, timeout=timeout_s) as response:
            return response.read().decode()

    def exchange(self, data: bytes, timeout_s: float = 5.0) -> bytes:
        """Send ``data`` on a new connection; everything answered until it closes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout_s) as s:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            got = b""
            with contextlib.suppress(ConnectionResetError):
                while chunk := s.recv(65536):
                    got += chunk
        return got

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint()
    yield e
    e.stop()


def _lines_of(lines: list[str], word: str) -> list[str]:
    return [line for line in lines if word in line]


def _reset(port: int, send: bytes = b"") -> None:
    s = socket.create_connection(("127.0.0.1", port))
    if send:
        s.sendall(send)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def test_resets_are_counted_and_said_once(endpoint: Endpoint) -> None:
    for i in range(100):
        _reset(endpoint.port, b"GET /metr" if i % 2 else b"")
    assert "DCGM_FI_DEV_FB_USED{" in endpoint.scrape()
    time.sleep(0.5)
    assert len(_lines_of(endpoint.lines, "reset")) <= 1
    assert not any("Traceback" in line for line in endpoint.lines)
    assert endpoint.collector.complaints.counts["reset"] >= 1
    assert 'gpuwatch_exporter_http_problems_total{kind="reset"}' in endpoint.scrape()


@pytest.mark.parametrize("request_bytes, status", [
    (b"hello\r\n\r\n", b"400"),
    (b"GET /metrics SPDY/3\r\n\r\n", b"505"),
    (b"GET /metrics HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n", b"431"),
    (b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 20_000, b"431"),
    (b"GET /metrics HTTP/1.1\r\nContent-Length: \xd9\xa1\r\n\r\n", b"400"),
    (b"GET /metrics HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", b"413"),
    (b"POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", b"501"),
    (b"GET /metrics HTTP/1.1\r\n bad: folded\r\n\r\n", b"400"),
    (b"GET /metrics HTTP/1.1\r\nAccept: text/plain;version=1.0.0\nX-Injected: 1\r\n\r\n",
     b"400"),
])
def test_bad_requests_are_refused_counted_and_said_once(endpoint: Endpoint,
                                                        request_bytes: bytes,
                                                        status: bytes) -> None:
    for _ in range(20):
        answer = endpoint.exchange(request_bytes)
        assert answer.startswith(b"HTTP/1.1 " + status), answer[:80]
    assert "DCGM_FI_DEV_FB_USED{" in endpoint.scrape()
    assert endpoint.collector.complaints.counts["bad-request"] == 20
    assert len(_lines_of(endpoint.lines, "bad requests")) == 1


def test_methods_paths_keep_alive_and_pipelining(endpoint: Endpoint) -> None:
    two = (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
           b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
           b"POST /api/v1/query HTTP/1.1\r\nContent-Length: 7\r\n\r\nquery=1"
           b"OPTIONS * HTTP/1.1\r\n\r\n"
           b"GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n")
    answer = endpoint.exchange(two)
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", answer)
    assert statuses == [b"200", b"200", b"405", b"200", b"404"]
    assert answer.count(b"# HELP DCGM_FI_DEV_FB_USED") == 1      # HEAD has no body
    assert endpoint.collector.complaints.counts["bad-request"] == 0


def test_a_burst_is_served_from_one_rendering(endpoint: Endpoint) -> None:
    app = endpoint.server.app
    before = app.renders
    for _ in range(30):
        endpoint.scrape()
    assert app.renders - before <= 1
    endpoint.state.on_snapshot(endpoint.state.view.snapshot)     # a new sample
    endpoint.scrape()
    assert app.renders - before <= 2


def test_slowloris_is_cut_and_scrapes_go_on(monkeypatch, endpoint: Endpoint) -> None:
    monkeypatch.setattr(httpd, "REQUEST_S", 0.6)
    slow = [socket.create_connection(("127.0.0.1", endpoint.port)) for _ in range(50)]
    try:
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            for s in slow:
                with contextlib.suppress(OSError):
                    s.send(b"G")
            assert "DCGM_FI_DEV_FB_USED{" in endpoint.scrape(timeout_s=5)
            time.sleep(0.2)
        time.sleep(0.5)
        assert endpoint.server.open_connections <= 1
        closed = 0
        for s in slow:
            s.settimeout(2)
            with contextlib.suppress(OSError):
                closed += s.recv(100) == b""
        assert closed == 50
    finally:
        for s in slow:
            s.close()
    assert endpoint.collector.complaints.counts["slow"] == 50
    assert len(_lines_of(endpoint.lines, "too slowly")) == 1


def test_a_flood_of_idle_connections_cannot_lock_a_scraper_out() -> None:
    endpoint = Endpoint(max_connections=20)
    idle = []
    try:
        idle = [socket.create_connection(("127.0.0.1", endpoint.port)) for _ in range(60)]
        time.sleep(0.3)
        assert endpoint.server.open_connections <= 20
        assert "DCGM_FI_DEV_FB_USED{" in endpoint.scrape(timeout_s=5)
        assert endpoint.collector.complaints.counts["overload"] >= 40
        assert len(_lines_of(endpoint.lines, "make room")) == 1
    finally:
        for s in idle:
            s.close()
        endpoint.stop()


def test_complaints_say_each_kind_at_most_once_a_minute() -> None:
    lines: list[str] = []
    now = [0.0]
    complaints = Complaints(lines.append, clock=lambda: now[0])
    for step in range(600):                  # 10 minutes, a reset and a bad request a second
        now[0] = float(step)
        complaints.note("reset", "x")
        complaints.note("bad-request")
        complaints.flush()
    resets = _lines_of(lines, "reset")
    assert 9 <= len(resets) <= 11 and len(_lines_of(lines, "bad requests")) == len(resets)
    assert resets[1].startswith("gpuwatch serve: 60 connections reset")
    assert complaints.counts["reset"] == 600


settings_few = settings(max_examples=25)


@settings_few
@given(st.binary(max_size=300) | st.lists(
    st.sampled_from([b"GET", b" ", b"/metrics", b"HTTP/1.1", b"\r\n", b":", b"\n",
                     b"Content-Length", b"0", b"-1", b"\x00", b"\xff", b"Connection: close"]),
    max_size=30).map(b"".join))
def test_any_bytes_get_an_answer_or_a_close_and_the_endpoint_lives(data: bytes) -> None:
    endpoint = _shared()
    try:
        answer = endpoint.exchange(data, timeout_s=15)
    except TimeoutError:
        raise AssertionError("no answer and no close") from None
    assert answer == b"" or answer.startswith(b"HTTP/1.1 ")
    assert "DCGM_FI_DEV_FB_USED{" in endpoint.scrape()
    assert not any("error" in line for line in endpoint.lines)


_SHARED: list[Endpoint] = []


def _shared() -> Endpoint:
    if not _SHARED:
        _SHARED.append(Endpoint())
    return _SHARED[0]


@pytest.fixture(autouse=True, scope="module")
def _stop_shared() -> Iterator[None]:
    yield
    for e in _SHARED:
        e.stop()


def test_a_real_serve_stays_quiet_under_resets() -> None:
    exporter = start_exporter("node-r", "workstation")
    try:
        for i in range(200):
            _reset(exporter.port, b"GET / HTTP/1.1\r\n" if i % 2 else b"")
        assert "DCGM_FI_DEV_FB_USED{" in exporter.metrics()
    finally:
        exporter.process.send_signal(signal.SIGTERM)
        assert exporter.process.wait(20) == 0
    err = exporter.process.stderr.read().decode()
    assert "Traceback" not in err
    assert len(err.splitlines()) <= 2, err


def test_a_thousand_scrapes_at_once_are_all_answered() -> None:
    # before, about half of 1,000 got an answer within 60 s; the figures (latency before
    # and after) are in benchmarks/exporter_load.py and docs/cluster.md
    from load_clients import burst

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 2048), hard))
        if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1200:
            pytest.skip("too few file descriptors for 1,000 connections")
    exporter = start_exporter("node-b", "workstation")
    try:
        times = burst(exporter.port, 1000, deadline_s=60.0)
        assert sum(t is not None for t in times) == 1000
        assert "DCGM_FI_DEV_FB_USED{" in exporter.metrics()
    finally:
        exporter.process.send_signal(signal.SIGTERM)
        assert exporter.process.wait(20) == 0
    assert "Traceback" not in exporter.process.stderr.read().decode()
