"""Prometheus series -> the GPUs, processes and probe figures of one snapshot.

Each GPU is known by its target (Prometheus's ``job`` and ``instance``) and its ``gpu``
label, and keeps the index it was first given, so a GPU stays the same row while hosts
come and go. Its name leads with its host and its index there
(``node-3/1 · A100-SXM4-80GB``): GPUs are ordered, and read, host by host.

A GPU seen before whose series stop is kept: ``error`` with a reason naming its host
when the whole target went quiet or its scrape fails (the host is unreachable: what its
memory does is unknown, so every reading is ``None``, not 0); ``lost`` when its host
still answers without it, or the exporter there says the GPU cannot be read. A field a
source does not export (plain dcgm-exporter has no per-process figures, no power
limit) is ``None``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

from gpuwatch.core.probe_format import AllocatorFacts, ProbeReport
from gpuwatch.core.safe_text import clip
from gpuwatch.core.snapshot import BudgetPeak, GpuSample, GpuState, MemoryInfo, ProcessSample
from gpuwatch.core.units import MAX_SIZE_BYTES
from gpuwatch.telemetry.prometheus import names as n
from gpuwatch.telemetry.prometheus.response import Series

NO_PROCESSES = ("this host's exporter does not report processes (plain dcgm-exporter); "
                "run `gpuwatch serve` there to see them")
UNKNOWN_MEMORY = MemoryInfo(None, None, None, None)
NAME_CHARS = 64
_ALLOCATOR = {n.ALLOC_ALLOCATED: "allocated_bytes", n.ALLOC_RESERVED: "reserved_bytes",
              n.ALLOC_INACTIVE: "inactive_split_bytes"}


class GpuKey(NamedTuple):
    target: str          # "job/instance": one scraped exporter
    gpu: str             # the exporter's GPU index label


class Known(NamedTuple):
    index: int
    host: str
    name: str
    uuid: str | None


def _host_label(labels: dict[str, str]) -> str | None:
    """dcgm-exporter's host label: ``hostname`` now, ``Hostname`` before (both read)."""
    return labels.get(n.HOSTNAME) or labels.get(n.OLD_HOSTNAME)


def target_of(labels: dict[str, str]) -> str:
    instance = labels.get(n.INSTANCE) or _host_label(labels) or "?"
    return f"{labels.get(n.JOB, '')}/{instance}"


def _instance_host(instance: str) -> str:
    if instance.startswith("["):                      # [::1]:9400
        return instance[1:].partition("]")[0]
    return instance.rpartition(":")[0] if instance.count(":") == 1 else instance


def host_of(labels: dict[str, str]) -> str:
    """The host a series is from: dcgm-exporter's host label, else the instance's host.
    Labels are anyone's text: controls are shown escaped and the name is clipped."""
    host = _host_label(labels) or _instance_host(labels.get(n.INSTANCE, ""))
    return _shown(host) or "?"


@lru_cache(maxsize=1024)
def _shown(text: str) -> str:
    """``text`` with controls escaped and clipped; cached, as every series repeats it."""
    return clip(text, NAME_CHARS)


def _bytes(value: float | None, scale: float = 1.0) -> int | None:
    if value is None or not 0 <= value * scale <= MAX_SIZE_BYTES:     # 1e308 MiB: unknown
        return None
    return round(value * scale)


def _percent(value: float | None) -> float | None:
    return None if value is None or value < 0 else float(value)


class _Target:
    """What one tick says about one target."""

    def __init__(self) -> None:
        self.up: float | None = None
        self.gpus: dict[str, dict[str, Series]] = defaultdict(dict)
        self.processes: dict[str, list[Series]] = defaultdict(list)
        self.allocator: dict[str, dict[str, Series]] = defaultdict(dict)
        self.budgets: dict[tuple[str, str], float] = {}   # (gpu, pid) -> predicted peak
        self.job = ""
        self.gpuwatch = False            # a gpuwatch exporter (reports processes)
        self.host: str | None = None


def _by_target(series: Iterable[Series]) -> dict[str, _Target]:
    targets: dict[str, _Target] = defaultdict(_Target)
    for s in series:
        labels = s.labels
        metric = labels.get("__name__", "")
        t = targets[target_of(labels)]
        t.job = labels.get(n.JOB, "")
        if metric == n.UP:
            t.up = s.value
            if t.host is None:
                t.host = host_of(labels)
            continue
        gpu = labels.get(n.GPU)
        if gpu is None:
            continue
        if t.host is None or _host_label(labels):
            t.host = host_of(labels)
        if metric.startswith(n.PREFIX):
            t.gpuwatch = True
        if metric == n.PROCESS_USED:
            t.processes[gpu].append(s)
        elif metric == n.PROCESS_BUDGET:
            if s.value is not None and s.value > 0:
                t.budgets[(gpu, labels.get("pid", ""))] = s.value
        elif metric in _ALLOCATOR:
            t.allocator[labels.get("pid", "")][metric] = s
        else:
            t.gpus[gpu].setdefault(metric, s)
    return targets


UNSEEN_GPU = "?"        # the GPU key of a target down before any of its GPUs was seen


class Assembler:
    """Turns each tick's series into GPU samples; remembers the GPUs it has seen."""

    def __init__(self) -> None:
        self._known: dict[GpuKey, Known] = {}
        self._next_index = 0          # indices are never reused, even after forget()
        self._gpu_jobs: set[str] = set()     # jobs whose targets export GPU series
        self.budget_peaks: tuple[BudgetPeak, ...] = ()   # of the last build

    def forget(self, keys: Iterable[GpuKey]) -> None:
        """Stop listing these GPUs (gone for long): the next build leaves them out."""
        for key in keys:
            self._known.pop(key, None)

    @property
    def hosts(self) -> list[str]:
        return sorted({k.host for k in self._known.values()})

    def build(self, series: Iterable[Series], now_s: float,
              ) -> tuple[tuple[GpuSample, ...], tuple[ProbeReport, ...], tuple[str, ...]]:
        targets = _by_target(series)
        self._learn(targets)
        samples: list[GpuSample] = []
        unreachable: dict[str, str] = {}     # host -> why
        budgets: list[BudgetPeak] = []
        for key, known in self._known.items():
            t = targets.get(key.target)
            fields = t.gpus.get(key.gpu) if t is not None else None
            if t is None or (not t.gpus and not t.processes):
                why = ("its scrape fails (Prometheus's up is 0)" if t is not None and t.up == 0
                       else "Prometheus has no current series from it")
                unreachable[known.host] = why
                samples.append(GpuSample(
                    known.index, known.uuid, known.name, GpuState.ERROR, UNKNOWN_MEMORY,
                    error=f"host {known.host} unreachable: {why}",
                    processes_error=f"host {known.host} unreachable"))
            elif fields is None or _value(fields, n.GPU_READABLE) == 0:
                samples.append(GpuSample(
                    known.index, known.uuid, known.name, GpuState.LOST, UNKNOWN_MEMORY,
                    error=(f"the GPU cannot be read on {known.host}" if fields
                           else f"its series stopped while {known.host} still answers"),
                    processes_error="the GPU could not be read"))
            else:
                samples.append(self._gpu(known, fields, t, key.gpu))
                budgets += _budgets(t, key.gpu, known.index)
        samples.sort(key=lambda g: g.index)
        self.budget_peaks = tuple(budgets)
        probes = _probes(targets, now_s)
        warnings: tuple[str, ...] = ()
        if unreachable:      # "1 of 2 hosts unreachable — b: its scrape fails (…)"
            known_hosts = {k.host for k in self._known.values()}
            warnings = (f"{len(unreachable)} of {len(known_hosts)} "
                        f"host{'s' if len(known_hosts) != 1 else ''} unreachable — "
                        + "; ".join(f"{host}: {unreachable[host]}"
                                    for host in sorted(unreachable)),)
        return tuple(samples), probes, warnings

    def down_targets(self, series: Iterable[Series]) -> list[str]:
        """The targets of ``series`` whose scrape fails (up is 0), as ``job/instance``."""
        return sorted(target for target, t in _by_target(series).items() if t.up == 0)

    def unreadable(self, reason: str) -> tuple[GpuSample, ...]:
        """Every GPU seen so far, in ``error`` for ``reason`` (the server itself is gone)."""
        return tuple(GpuSample(k.index, k.uuid, k.name, GpuState.ERROR, UNKNOWN_MEMORY,
                               error=reason, processes_error=reason)
                     for k in sorted(self._known.values()))

    def _learn(self, targets: dict[str, _Target]) -> None:
        """Index the GPUs seen for the first time, host by host and exporter by exporter,
        by index on the host. A target down before any of its GPUs was seen (in a job
        whose other targets export GPUs) holds a place, in ``error``, from the first
        tick; its first GPU takes that place when it answers."""
        for t in targets.values():
            if t.gpus:
                self._gpu_jobs.add(t.job)
        new: list[tuple[str, str, str, GpuKey, dict[str, Series] | None]] = []
        for target, t in targets.items():
            for gpu, fields in t.gpus.items():
                key = GpuKey(target, gpu)
                if key not in self._known:                      # "2" before "10"
                    new.append((t.host or "?", target, gpu.zfill(12), key, fields))
            placeholder = GpuKey(target, UNSEEN_GPU)
            if (t.up == 0 and not t.gpus and t.job in self._gpu_jobs
                    and not any(k.target == target for k in self._known)):
                new.append((t.host or "?", target, "", placeholder, None))
        free: dict[str, int] = {}      # target -> the index its placeholder held
        for host, target, _, key, fields in sorted(new, key=lambda item: item[:3]):
            held = self._known.get(GpuKey(target, UNSEEN_GPU))
            if fields is not None and held is not None:
                del self._known[GpuKey(target, UNSEEN_GPU)]
                free[target] = held.index
            index = free.pop(target, None)
            if index is None:                 # never reused, even after forget()
                index = self._next_index
                self._next_index += 1
            if fields is None:
                self._known[key] = Known(index, host, f"{host} · exporter down", None)
                continue
            labels = next(iter(fields.values())).labels
            model = _shown(labels.get(n.MODEL, "").removeprefix("NVIDIA ")) or "GPU"
            self._known[key] = Known(index, host, f"{host}/{key.gpu} · {model}",
                                     labels.get(n.UUID) or None)
        if new:
            self._tell_apart(targets)

    def _tell_apart(self, targets: dict[str, _Target]) -> None:
        """Two exporters on one host (two jobs, or two ports): name each GPU with its
        instance, so ``vm/0`` of one is not taken for ``vm/0`` of the other."""
        by_host: dict[str, set[str]] = defaultdict(set)
        for key, known in self._known.items():
            by_host[known.host.partition(" [")[0]].add(key.target)
        for key, known in list(self._known.items()):
            host = known.host.partition(" [")[0]
            if len(by_host[host]) < 2 or known.host != host:
                continue
            instances = [target.partition("/")[2] for target in by_host[host]]
            instance = key.target.partition("/")[2]
            # the instance tells them apart, unless two jobs scrape the same one
            which = instance if instances.count(instance) == 1 else key.target
            shown = _shown(f"{host} [{which}]")
            self._known[key] = known._replace(host=shown,
                                              name=shown + known.name[len(host):])

    def _gpu(self, known: Known, fields: dict[str, Series], t: _Target, gpu: str) -> GpuSample:
        def v(metric: str) -> float | None:
            return _value(fields, metric)

        used, free = _bytes(v(n.FB_USED), n.MIB), _bytes(v(n.FB_FREE), n.MIB)
        reserved = _bytes(v(n.FB_RESERVED), n.MIB)
        total = _bytes(v(n.GPU_TOTAL))
        if total is None and used is not None and free is not None:
            total = used + free + (reserved or 0)
        processes = tuple(sorted(
            (p for s in t.processes.get(gpu, ()) if (p := _process(s, known.index))),
            key=lambda p: -(p.used_bytes or 0)))
        busy, peak = _percent(v(n.MEM_COPY_UTIL)), _percent(v(n.GPU_PEAK_BANDWIDTH))
        sm_clock, mem_clock = _percent(v(n.SM_CLOCK)), _percent(v(n.MEM_CLOCK))
        dram = _share(v(n.DRAM_ACTIVE))
        measured = _percent(v(n.GPU_MEASURED_BANDWIDTH))
        if measured is None and dram is not None and peak is not None:
            measured = dram / 100 * peak
        labels = next(iter(fields.values())).labels
        return GpuSample(
            known.index, known.uuid, known.name, GpuState.OK,
            MemoryInfo(total, used, free, reserved),
            gpu_util_percent=_percent(v(n.GPU_UTIL)),
            memory_busy_percent=busy,
            peak_bandwidth_bytes_per_s=peak,
            # the same estimate the NVML backend makes: busy share of time x peak
            estimated_bandwidth_bytes_per_s=(busy / 100 * peak if busy is not None
                                             and peak is not None else None),
            pcie_tx_bytes_per_s=_percent(v(n.PCIE_TX)),
            pcie_rx_bytes_per_s=_percent(v(n.PCIE_RX)),
            nvlink_tx_bytes_per_s=_first(v(n.GPU_NVLINK_TX), v(n.OLD_NVLINK_TX)),
            nvlink_rx_bytes_per_s=_first(v(n.GPU_NVLINK_RX), v(n.OLD_NVLINK_RX)),
            temperature_c=v(n.GPU_TEMP), power_w=_percent(v(n.POWER_USAGE)),
            power_limit_w=_percent(v(n.GPU_POWER_LIMIT)),
            graphics_clock_mhz=None if sm_clock is None else round(sm_clock),
            memory_clock_mhz=None if mem_clock is None else round(mem_clock),
            processes=processes,
            processes_error=None if t.gpuwatch else NO_PROCESSES,
            pci_bus_id=_shown(labels.get(n.PCI_BUS_ID, "")) or None,
            dram_active_percent=dram,
            measured_bandwidth_bytes_per_s=measured,
            graphics_active_percent=_share(v(n.GR_ENGINE_ACTIVE)),
            tensor_active_percent=_share(v(n.PIPE_TENSOR_ACTIVE)),
            encoder_util_percent=_percent(v(n.ENC_UTIL)),
            decoder_util_percent=_percent(v(n.DEC_UTIL)),
            memory_temperature_c=v(n.MEMORY_TEMP),
            last_xid=_xid(v(n.XID_ERRORS)))


def _first(*values: float | None) -> float | None:
    return next((_percent(v) for v in values if v is not None), None)


def _xid(value: float | None) -> int | None:
    """An XID code: a whole number from 1 (DCGM writes nothing, or 0, without one)."""
    if value is None or not 1 <= value < 1 << 32 or value != int(value):
        return None
    return int(value)


def _share(ratio: float | None) -> float | None:
    """A DCGM ratio (0-1) as a percentage; None outside 0-1."""
    if ratio is None or not 0 <= ratio <= 1:
        return None
    return ratio * 100


def _budgets(t: _Target, gpu: str, index: int) -> list[BudgetPeak]:
    return [BudgetPeak(index, int(pid), round(peak)) for (g, pid), peak in t.budgets.items()
            if g == gpu and pid.isdigit() and 0 < int(pid) < 1 << 32 and peak < 2**63]


def _value(fields: dict[str, Series], metric: str) -> float | None:
    s = fields.get(metric)
    return None if s is None else s.value


def _process(s: Series, gpu_index: int) -> ProcessSample | None:
    labels = s.labels
    pid = labels.get("pid", "")
    if not (pid.isascii() and pid.isdigit() and len(pid) < 11) or not 0 < int(pid) < 1 << 32:
        return None            # the "other" bucket: counted in the GPU's memory, no row
    # raw like names read from /proc (whoever shows them escapes them), only shortened
    return ProcessSample(int(pid), gpu_index, _bytes(s.value),
                         name=labels.get("name", "")[:NAME_CHARS] or None,
                         user=labels.get("user", "")[:NAME_CHARS] or None,
                         container=labels.get("container", "")[:NAME_CHARS] or None)


def _probes(targets: dict[str, _Target], now_s: float) -> tuple[ProbeReport, ...]:
    """Allocator figures as probe reports. Probe reports are known by pid alone, and pids
    repeat across hosts (pid 1 in every container): a pid that more than one target
    lists gets none, rather than another host's figures."""
    targets_of_pid: dict[str, set[str]] = defaultdict(set)
    for target, t in targets.items():
        for series in t.processes.values():
            for s in series:
                targets_of_pid[s.labels.get("pid", "")].add(target)
    reports = []
    for t in targets.values():
        for pid, figures in t.allocator.items():
            if not (pid.isascii() and pid.isdigit() and 0 < len(pid) < 11) \
                    or len(targets_of_pid.get(pid, ())) > 1:
                continue
            values = {_ALLOCATOR[m]: _bytes(s.value) for m, s in figures.items()}
            labels = next(iter(figures.values())).labels
            uuid = labels.get(n.UUID)
            reports.append(ProbeReport(int(pid), now_s, device_uuids=(uuid,) if uuid else (),
                                       allocator=AllocatorFacts(**values)))
    return tuple(reports)
