"""The exporter's HTTP endpoint: ``/metrics`` in Prometheus text or OpenMetrics (as the
scraper asks), served by prometheus_client from the sampler's latest view."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import PlatformCollector, ProcessCollector, start_http_server
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from gpuwatch.exporter.families import DEFAULT_TOP_PROCESSES, Families
from gpuwatch.exporter.listen import ListenAddress
from gpuwatch.exporter.state import ExporterState


class SnapshotCollector(Collector):
    def __init__(self, state: ExporterState, hostname: str,
                 top: int = DEFAULT_TOP_PROCESSES):
        self.state = state
        self.hostname = hostname
        self.top = top

    def collect(self) -> Iterator[Metric]:
        samples = CounterMetricFamily("gpuwatch_exporter_samples",
                                      "Samples taken since the exporter started.")
        samples.add_metric([], float(self.state.samples))
        yield samples
        view = self.state.view
        if view is None:
            return          # before the first sample: no GPU series rather than zeros
        yield from Families(view.snapshot, self.hostname, view.hints, view.links, self.top)


def serve_metrics(address: ListenAddress, collector: SnapshotCollector,
                  ) -> tuple[Any, threading.Thread]:
    """Start the HTTP server on its own thread; (server, thread)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    # the exporter's own CPU, memory and Python version (process_*, python_info), as
    # every Prometheus exporter offers
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    return start_http_server(address.port, addr=address.host, registry=registry)
