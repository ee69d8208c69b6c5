"""One snapshot, its open hints and linked budgets -> Prometheus metric families.

dcgm-exporter's names, units and labels for what both know; gpuwatch's own under the
``gpuwatch_`` prefix with units in the names (see :mod:`gpuwatch.telemetry.prometheus.names`,
shared with the reading side). A value the GPU does not report is left out, never 0.

Cardinality is bounded: per GPU, the ``top_processes`` processes using the most memory
get their own series; the rest are summed in one series with ``pid="other"``. Process
names, users and containers come from /proc and other users: they are shown with
control characters escaped and clipped to ``LABEL_CHARS``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.samples import Sample

from gpuwatch.advisor import LinkedBudget
from gpuwatch.core.hints import Hint
from gpuwatch.core.safe_text import clip
from gpuwatch.core.snapshot import GpuSample, GpuState, ProcessSample, Snapshot
from gpuwatch.telemetry.prometheus import names as n

LABEL_CHARS = 64
DEFAULT_TOP_PROCESSES = 8

def _mib(value: int | None) -> float | None:
    return None if value is None else value / n.MIB


def _ratio(percent: float | None) -> float | None:
    return None if percent is None else percent / 100


# (name, help as dcgm-exporter's counter lists word it, GpuSample -> value in its unit)
_DCGM = (
    (n.SM_CLOCK, "SM clock frequency (in MHz).", lambda g: g.graphics_clock_mhz),
    (n.MEM_CLOCK, "Memory clock frequency (in MHz).", lambda g: g.memory_clock_mhz),
    (n.MEMORY_TEMP, "Memory temperature (in C).", lambda g: g.memory_temperature_c),
    (n.GPU_TEMP, "GPU temperature (in C).", lambda g: g.temperature_c),
    (n.POWER_USAGE, "Power draw (in W).", lambda g: g.power_w),
    (n.GPU_UTIL, "GPU utilization (in %).", lambda g: g.gpu_util_percent),
    (n.MEM_COPY_UTIL, "Memory utilization (in %).", lambda g: g.memory_busy_percent),
    (n.ENC_UTIL, "Encoder utilization (in %).", lambda g: g.encoder_util_percent),
    (n.DEC_UTIL, "Decoder utilization (in %).", lambda g: g.decoder_util_percent),
    (n.XID_ERRORS, "Value of the last XID error encountered.", lambda g: g.last_xid),
    (n.FB_FREE, "Framebuffer memory free (in MiB).", lambda g: _mib(g.memory.free_bytes)),
    (n.FB_USED, "Framebuffer memory used (in MiB).", lambda g: _mib(g.memory.used_bytes)),
    (n.FB_RESERVED, "Framebuffer memory reserved (in MiB).",
     lambda g: _mib(g.memory.reserved_bytes)),
    (n.GR_ENGINE_ACTIVE, "Ratio of time the graphics engine is active.",
     lambda g: _ratio(g.graphics_active_percent)),
    (n.PIPE_TENSOR_ACTIVE, "Ratio of cycles the tensor (HMMA) pipe is active.",
     lambda g: _ratio(g.tensor_active_percent)),
    (n.DRAM_ACTIVE, "Ratio of cycles the device memory interface is active sending or "
     "receiving data.", lambda g: _ratio(g.dram_active_percent)),
    (n.PCIE_TX, "The rate of data transmitted over the PCIe bus - including both protocol "
     "headers and data payloads - in bytes per second.", lambda g: g.pcie_tx_bytes_per_s),
    (n.PCIE_RX, "The rate of data received over the PCIe bus - including both protocol "
     "headers and data payloads - in bytes per second.", lambda g: g.pcie_rx_bytes_per_s),
)
# gpuwatch's own per-GPU rates: (name, help, GpuSample -> value)
_OWN_RATES = (
    (n.GPU_MEASURED_BANDWIDTH, "Device memory bandwidth in use, measured by the GPU's "
     "performance monitor (GPM: DRAM active x peak), in bytes per second. Only GPUs with "
     "GPM (Hopper and later).", lambda g: g.measured_bandwidth_bytes_per_s),
    (n.GPU_ESTIMATED_BANDWIDTH, "Device memory bandwidth in use, estimated as the share "
     "of time memory was busy x peak (an upper bound), in bytes per second.",
     lambda g: g.estimated_bandwidth_bytes_per_s),
    (n.GPU_NVLINK_TX, "The rate of data transmitted over NVLink, all links, in bytes per "
     "second.", lambda g: g.nvlink_tx_bytes_per_s),
    (n.GPU_NVLINK_RX, "The rate of data received over NVLink, all links, in bytes per "
     "second.", lambda g: g.nvlink_rx_bytes_per_s),
)


@lru_cache(maxsize=4096)
def label(text: str | None) -> str:
    """Text from /proc made safe for a label value: controls escaped, clipped. Cached:
    the same names come back every scrape."""
    if not text:
        return ""
    if len(text) <= LABEL_CHARS and text.isprintable() and "\\" not in text:
        return text
    return clip(text, LABEL_CHARS)


def top_processes(processes: Sequence[ProcessSample], top: int,
                  ) -> tuple[list[ProcessSample], int | None]:
    """The ``top`` processes using the most memory, and the sum of the rest (None: none)."""
    known = sorted((p for p in processes if p.used_bytes is not None),
                   key=lambda p: (-(p.used_bytes or 0), p.pid))
    rest = known[top:]
    return known[:top], (sum(p.used_bytes or 0 for p in rest) if rest else None)


class Families:
    """Metric families for one scrape, built from what the sampler last saw."""

    def __init__(self, snapshot: Snapshot, hostname: str, hints: Sequence[Hint] = (),
                 links: Mapping[tuple[int, int], LinkedBudget] | None = None,
                 top: int = DEFAULT_TOP_PROCESSES):
        self.snapshot = snapshot
        self.host = label(hostname)
        self.hints = hints
        self.links = links or {}
        self.top = top

    def _ids(self, g: GpuSample) -> list[str]:
        return [str(g.index), label(g.uuid), self.host]

    def __iter__(self) -> Iterator[Metric]:
        gpus = self.snapshot.gpus
        ok = [g for g in gpus if g.state is GpuState.OK]
        driver = label(self.snapshot.backend.driver_version)
        # one label set per GPU, shared by its series (the exposition only reads them)
        dcgm_labels = [dict(zip(n.GPU_LABELS, (
            str(g.index), label(g.uuid), label(g.pci_bus_id), f"nvidia{g.index}",
            label(g.name), self.host, driver), strict=True)) for g in ok]
        for name, help_text, read in _DCGM:
            family = GaugeMetricFamily(name, help_text, labels=n.GPU_LABELS)
            samples = family.samples
            for g, labels in zip(ok, dcgm_labels, strict=True):
                value = read(g)
                if value is not None:
                    samples.append(Sample(name, labels, float(value)))
            yield family
        energy = GaugeMetricFamily(
            n.TOTAL_ENERGY, "Total energy consumption since boot (in mJ).",
            labels=n.GPU_LABELS)       # dcgm-exporter's counter, as a gauge: see docs
        by_index = dict(zip((g.index for g in ok), dcgm_labels, strict=True))
        for index, joules in self.snapshot.energy_consumed_j:
            labels = by_index.get(index)
            if labels is not None:
                energy.samples.append(Sample(n.TOTAL_ENERGY, labels, joules * 1000))
        yield energy
        yield from self._gpu_families(gpus, ok)
        yield from self._process_families(ok)
        yield from self._hint_families(gpus)

    def _gpu_families(self, gpus: Sequence[GpuSample], ok: Sequence[GpuSample],
                      ) -> Iterator[Metric]:
        readable = GaugeMetricFamily(n.GPU_READABLE, "1 when the GPU was read at the last "
                                     "sample, 0 when it is lost or its reads fail.",
                                     labels=n.OWN_GPU_LABELS)
        total = GaugeMetricFamily(n.GPU_TOTAL, "Memory the GPU has, in bytes.",
                                  labels=n.OWN_GPU_LABELS)
        limit = GaugeMetricFamily(n.GPU_POWER_LIMIT, "Enforced power limit, in watts.",
                                  labels=n.OWN_GPU_LABELS)
        peak = GaugeMetricFamily(n.GPU_PEAK_BANDWIDTH, "Peak device memory bandwidth (bus "
                                 "width x maximum memory clock x 2), in bytes per second.",
                                 labels=n.OWN_GPU_LABELS)
        for g in gpus:
            readable.add_metric(self._ids(g), 1.0 if g.state is GpuState.OK else 0.0)
        for g in ok:
            if g.memory.total_bytes is not None:
                total.add_metric(self._ids(g), float(g.memory.total_bytes))
            if g.power_limit_w is not None:
                limit.add_metric(self._ids(g), float(g.power_limit_w))
            if g.peak_bandwidth_bytes_per_s is not None:
                peak.add_metric(self._ids(g), float(g.peak_bandwidth_bytes_per_s))
        yield from (readable, total, limit, peak)
        own_labels = [dict(zip(n.OWN_GPU_LABELS, self._ids(g), strict=True)) for g in ok]
        for name, help_text, read in _OWN_RATES:
            family = GaugeMetricFamily(name, help_text, labels=n.OWN_GPU_LABELS)
            for g, labels in zip(ok, own_labels, strict=True):
                value = read(g)
                if value is not None:
                    family.samples.append(Sample(name, labels, float(value)))
            yield family

    def _process_families(self, ok: Sequence[GpuSample]) -> Iterator[Metric]:
        used = GaugeMetricFamily(
            n.PROCESS_USED, "GPU memory a process uses, in bytes; the processes past the "
            "largest few on a GPU are summed under pid=\"other\".", labels=n.PROCESS_LABELS)
        budget = GaugeMetricFamily(
            n.PROCESS_BUDGET, "The peak its linked memory budget predicts for a process, "
            "in bytes.", labels=n.PROCESS_LABELS)
        alloc = {metric: GaugeMetricFamily(metric, text, labels=n.PROCESS_LABELS)
                 for metric, text in (
                     (n.ALLOC_ALLOCATED, "Bytes PyTorch's caching allocator holds in tensors "
                      "(from the in-process probe)."),
                     (n.ALLOC_RESERVED, "Bytes PyTorch's caching allocator reserved from "
                      "the driver (from the in-process probe)."),
                     (n.ALLOC_INACTIVE, "Bytes in reserved blocks split but not in use: "
                      "fragmentation (from the in-process probe)."))}
        probes = {r.pid: r.allocator for r in self.snapshot.probes if r.allocator is not None}
        for g in ok:
            shown, rest = top_processes(g.processes, self.top)
            for p in shown:
                ids = [*self._ids(g), str(p.pid), label(p.name), label(p.user),
                       label(p.container)]
                used.add_metric(ids, float(p.used_bytes or 0))
                linked = self.links.get((g.index, p.pid))
                if linked is not None:
                    budget.add_metric(ids, float(linked.peak_bytes))
                facts = probes.get(p.pid)
                if facts is not None:
                    for metric, value in ((n.ALLOC_ALLOCATED, facts.allocated_bytes),
                                          (n.ALLOC_RESERVED, facts.reserved_bytes),
                                          (n.ALLOC_INACTIVE, facts.inactive_split_bytes)):
                        if value is not None:
                            alloc[metric].add_metric(ids, float(value))
            if rest is not None:
                used.add_metric([*self._ids(g), n.OTHER_PID, n.OTHER_NAME, "", ""],
                                float(rest))
        yield used
        yield budget
        yield from alloc.values()

    def _hint_families(self, gpus: Sequence[GpuSample]) -> Iterator[Metric]:
        by_index = {g.index: g for g in gpus}
        counts: Counter[tuple[int, str, str]] = Counter()
        to_full: dict[int, float] = {}
        for h in self.hints:
            if h.gpu_index not in by_index:
                continue
            counts[(h.gpu_index, h.code, h.severity.value)] += 1
            ttf = h.value("time_to_full_s")
            if ttf is not None and ttf >= 0:
                to_full[h.gpu_index] = min(float(ttf), to_full.get(h.gpu_index, float(ttf)))
        hints = GaugeMetricFamily(n.HINTS_OPEN, "The advisor's open hints, by code and "
                                  "severity.", labels=n.HINT_LABELS)
        for (index, code, severity), count in sorted(counts.items()):
            hints.add_metric([*self._ids(by_index[index]), label(code), severity],
                             float(count))
        yield hints
        full = GaugeMetricFamily(n.SECONDS_TO_FULL, "Seconds until the GPU's memory is "
                                 "full at its current trend, where the advisor projects one.",
                                 labels=n.OWN_GPU_LABELS)
        for index, seconds in sorted(to_full.items()):
            full.add_metric(self._ids(by_index[index]), seconds)
        yield full
