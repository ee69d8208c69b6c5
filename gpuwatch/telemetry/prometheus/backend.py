"""PrometheusBackend: GPUs of many hosts, read from a Prometheus server once per tick.

It has the NVML backend's shape (``open``, ``sample``, ``close``, ``info``, ``clock``),
so the sampler, the window, ``record`` and ``snapshot`` use it unchanged. One instant
query per tick reads every metric it knows (see :mod:`.names`) for the series that
``--match`` selects.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from gpuwatch.core.snapshot import BackendInfo, BackendKind, Snapshot
from gpuwatch.telemetry.clock import Clock, WallClock
from gpuwatch.telemetry.errors import NvmlUnavailableError
from gpuwatch.telemetry.prometheus import names as n
from gpuwatch.telemetry.prometheus.assemble import Assembler
from gpuwatch.telemetry.prometheus.caps import GpuCaps
from gpuwatch.telemetry.prometheus.client import PrometheusClient, QueryFailed
from gpuwatch.telemetry.prometheus.response import QueryRefused
from gpuwatch.telemetry.prometheus.selector import Matcher, render


class PrometheusUnavailableError(NvmlUnavailableError):
    """The Prometheus server cannot be used at start: not there, not Prometheus, the
    query refused, or no GPU series match. Like a missing NVML, the commands end with
    exit code 1 and this reason."""


def gpu_selector(matchers: tuple[Matcher, ...]) -> str:
    """One selector for every GPU metric the source reads, narrowed by ``matchers``."""
    names = "|".join(n.READ_METRICS)
    extra = render(matchers)
    return f'{{__name__=~"{names}"{"," + extra if extra else ""}}}'


def query_for(matchers: tuple[Matcher, ...]) -> str:
    """The tick's query: the GPU series, and the targets whose scrape fails (only those:
    a Prometheus that also scrapes a thousand other exporters answers no more for it)."""
    extra = render(matchers)
    up = f"{n.UP}{{{extra}}}" if extra else n.UP
    return f"{gpu_selector(matchers)} or {up} == 0"


class PrometheusBackend:
    def __init__(self, base_url: str, matchers: tuple[Matcher, ...] = (),
                 clock: Clock | None = None, timeout_s: float = 5.0,
                 caps: GpuCaps | None = None):
        self.client = PrometheusClient(base_url, timeout_s)
        self.caps = caps or GpuCaps()
        self.matchers = matchers
        self.query = query_for(matchers)
        self.clock: Clock = clock or WallClock()
        self.scenario_duration_s: float | None = None
        self._assembler = Assembler()
        self.info = BackendInfo(kind=BackendKind.PROMETHEUS,
                                hostname=urlsplit(base_url).netloc or base_url)

    @property
    def hosts(self) -> list[str]:
        """The hosts whose GPUs have been seen, by name."""
        return self._assembler.hosts

    def open(self) -> PrometheusBackend:
        where = f"Prometheus at {self.client.base_url}"
        try:
            series = self.client.query(self.query)
        except QueryFailed as exc:
            raise PrometheusUnavailableError(exc.reason) from None
        except QueryRefused as exc:
            raise PrometheusUnavailableError(
                f"{where} refused the query ({exc}); check --match") from None
        now = self.clock.now_s()
        gpus, _, _ = self._assembler.build(self.caps.admit(series, now), now)
        if not gpus:
            selection = f" matching {{{render(self.matchers)}}}" if self.matchers else ""
            down = self._assembler.down_targets(series)
            if down:
                shown = ", ".join(down[:5]) + (f" and {len(down) - 5} more"
                                               if len(down) > 5 else "")
                raise PrometheusUnavailableError(
                    f"{where} has no GPU series{selection}, and the scrape of "
                    f"{len(down)} target{'s' if len(down) != 1 else ''} fails "
                    f"(up == 0): {shown}. Check that the exporters there are running")
            raise PrometheusUnavailableError(
                f"{where} has no GPU series{selection}: neither gpuwatch's exporter "
                f"(`gpuwatch serve`) nor dcgm-exporter ({n.FB_USED}) is scraped there")
        return self

    def sample(self) -> Snapshot:
        now = self.clock.now_s()
        try:
            series = self.client.query(self.query)
        except (QueryFailed, QueryRefused) as exc:
            reason = f"Prometheus at {self.client.base_url} did not answer: {exc}"
            return Snapshot(now, self.info, self._assembler.unreadable(reason), (reason,))
        series = self.caps.admit(series, now)
        self._assembler.forget(self.caps.gone(now))
        gpus, probes, warnings = self._assembler.build(series, now)
        return Snapshot(now, self.info, gpus, warnings + self._bounds_warnings(), probes,
                        self._assembler.budget_peaks)

    def _bounds_warnings(self) -> tuple[str, ...]:
        out = []
        if self.caps.refused:
            out.append(f"{self.caps.refused} GPU{'s' if self.caps.refused != 1 else ''} "
                       f"left out: the source reads at most {self.caps.per_target} per "
                       f"exporter and {self.caps.total} in all (narrow --match)")
        if self.client.problems:
            out.append(f"Prometheus at {self.client.base_url}: values out of range read "
                       f"as unknown: {'; '.join(self.client.problems)}")
        return tuple(out)

    def set_host_detail(self, full: bool) -> None:
        """Nothing to lighten: the exporters read their hosts' processes."""

    def close(self) -> None:
        """Nothing to release: each query is its own HTTP request."""

    def __enter__(self) -> PrometheusBackend:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
