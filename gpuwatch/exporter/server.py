"""The exporter's HTTP endpoint: ``/metrics`` in Prometheus text or OpenMetrics (as the
scraper asks), rendered by prometheus_client from the sampler's latest view.

A scrape is rendered once per sample and format (text or OpenMetrics, gzip or not) and
the bytes are served to every scraper until the next sample, so a burst of scrapes
costs one rendering; the HTTP side is :mod:`gpuwatch.exporter.httpd`.
"""

from __future__ import annotations

import gzip
import sys
import threading
from collections.abc import Callable, Iterator

from prometheus_client import PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.registry import Collector, CollectorRegistry

from gpuwatch.exporter.complaints import KINDS, Complaints
from gpuwatch.exporter.families import DEFAULT_TOP_PROCESSES, Families
from gpuwatch.exporter.httpd import Answer, HttpServer
from gpuwatch.exporter.listen import ListenAddress
from gpuwatch.exporter.state import ExporterState

HTTP_PROBLEMS = "gpuwatch_exporter_http_problems"
MAX_ACCEPT_CHARS = 1024
MAX_CACHED_FORMATS = 8
ALLOW = [("Allow", "GET, HEAD, OPTIONS")]


class SnapshotCollector(Collector):
    def __init__(self, state: ExporterState, hostname: str,
                 top: int = DEFAULT_TOP_PROCESSES):
        self.state = state
        self.hostname = hostname
        self.top = top
        self.complaints: Complaints | None = None

    def collect(self) -> Iterator[Metric]:
        samples = CounterMetricFamily("gpuwatch_exporter_samples",
                                      "Samples taken since the exporter started.")
        samples.add_metric([], float(self.state.samples))
        yield samples
        if self.complaints is not None:
            problems = CounterMetricFamily(
                HTTP_PROBLEMS, "Connections the endpoint dropped or refused, by kind: "
                "reset, bad-request, slow, overload, error.", labels=["kind"])
            for kind in KINDS:
                problems.add_metric([kind], float(self.complaints.counts[kind]))
            yield problems
        view = self.state.view
        if view is None:
            return          # before the first sample: no GPU series rather than zeros
        yield from Families(view.snapshot, self.hostname, view.hints, view.links, self.top)


class MetricsApp:
    """Answers a request from the rendering cached for the current sample."""

    def __init__(self, registry: CollectorRegistry, state: ExporterState):
        self.registry = registry
        self.state = state
        self._cache: dict[tuple[str, bool], bytes] = {}
        self._cached_for = -1
        self.renders = 0

    def __call__(self, method: str, path: str, headers: dict[str, str]) -> Answer:
        if method not in ("GET", "HEAD", "OPTIONS"):
            return 405, ALLOW, f"{method[:16]} is not served; use GET\n".encode()
        if method == "OPTIONS":
            return 200, ALLOW, b""
        path = path.partition("?")[0]
        if path == "/":
            return 200, [("Content-Type", "text/plain; charset=utf-8")], \
                b"gpuwatch exporter: the metrics are at /metrics\n"
        if path != "/metrics":
            return 404, [("Content-Type", "text/plain; charset=utf-8")], \
                b"not found: the metrics are at /metrics\n"
        accept = headers.get("accept", "")
        if len(accept) > MAX_ACCEPT_CHARS or not accept.isascii():
            accept = ""
        encoder, content_type = choose_encoder(accept)
        zipped = gzip_accepted(headers.get("accept-encoding", "")[:MAX_ACCEPT_CHARS])
        body = self._render(encoder, content_type, zipped)
        extra = [("Content-Type", content_type)]
        if zipped:
            extra.append(("Content-Encoding", "gzip"))
        return 200, extra, body

    def _render(self, encoder: Callable[[CollectorRegistry], bytes], content_type: str,
                zipped: bool) -> bytes:
        sample = self.state.samples
        if sample != self._cached_for:
            self._cache.clear()
            self._cached_for = sample
        key = (content_type, zipped)
        body = self._cache.get(key)
        if body is None:
            body = encoder(self.registry)
            if zipped:
                body = gzip.compress(body, compresslevel=6)
            self.renders += 1
            if len(self._cache) < MAX_CACHED_FORMATS:
                self._cache[key] = body
        return body


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def serve_metrics(address: ListenAddress, collector: SnapshotCollector,
                  log: Callable[[str], None] = _stderr) -> tuple[HttpServer, threading.Thread]:
    """Start the HTTP server on its own thread; (server, thread). Raises OSError when
    the address cannot be bound."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    # the exporter's own CPU, memory and Python version (process_*, python_info), as
    # every Prometheus exporter offers
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    complaints = Complaints(log)
    collector.complaints = complaints
    server = HttpServer(address.host, address.port, MetricsApp(registry, collector.state),
                        complaints)
    thread = threading.Thread(target=server.serve_forever, name="gpuwatch-http",
                              daemon=True)
    thread.start()
    return server, thread
