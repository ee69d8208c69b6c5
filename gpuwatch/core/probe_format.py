"""The ``gpuwatch.probe/1`` document: what a training process tells the monitor.

Written by :mod:`gpuwatch.probe` inside the user's process, read by the monitor
(:mod:`gpuwatch.telemetry.probes`). Sizes are integer bytes; unknown values are null.
Parsing is strict: anything malformed is rejected with a reason, never half-read.

```json
{"schema": "gpuwatch.probe/1", "pid": 4242, "published_at_s": 1764700000.0,
 "torch_version": "2.13.0", "devices": ["cuda:0"], "device_uuids": ["GPU-…"],
 "model": {"class": "GPT2LMHeadModel", "parameters": 354823168,
           "trainable_parameters": 354823168, "parameter_bytes": 1419292672,
           "parameter_bytes_by_dtype": {"float32": 1419292672}, "buffer_bytes": 0,
           "gradient_bytes": 1419292672},
 "optimizer": {"class": "AdamW", "state_bytes": 2838585344, "step": 120},
 "allocator": {"allocated_bytes": …, "allocated_peak_bytes": …, "reserved_bytes": …,
               "reserved_peak_bytes": …, "active_bytes": …, "active_peak_bytes": …,
               "inactive_split_bytes": …, "num_alloc_retries": 0, "num_ooms": 0},
 "alloc_conf": "expandable_segments:True"}
```
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gpuwatch.core.hints import AllocatorStats
from gpuwatch.core.units import MAX_SIZE_BYTES, shown

PROBE_SCHEMA = "gpuwatch.probe/1"
MAX_PROBE_BYTES = 256 * 1024
# Every number in a probe document is bounded where it is read, so none can overflow a
# float, a SQLite integer or an exposition line downstream: byte counts and counters up
# to 1 EiB (2**60), times from the epoch to the year 5138, pids as Linux allows (2**22).
MAX_PROBE_INT = MAX_SIZE_BYTES
MAX_PROBE_TIME_S = 1e11
MAX_PID = 1 << 22


@dataclass(frozen=True)
class ModelFacts:
    class_name: str | None = None
    parameters: int | None = None
    trainable_parameters: int | None = None
    parameter_bytes: int | None = None
    parameter_bytes_by_dtype: dict[str, int] = field(default_factory=dict)
    buffer_bytes: int | None = None
    gradient_bytes: int | None = None


@dataclass(frozen=True)
class OptimizerFacts:
    class_name: str | None = None
    state_bytes: int | None = None
    step: int | None = None


@dataclass(frozen=True)
class AllocatorFacts:
    allocated_bytes: int | None = None
    allocated_peak_bytes: int | None = None
    reserved_bytes: int | None = None
    reserved_peak_bytes: int | None = None
    active_bytes: int | None = None
    active_peak_bytes: int | None = None
    inactive_split_bytes: int | None = None
    num_alloc_retries: int | None = None
    num_ooms: int | None = None

    @property
    def cached_free_bytes(self) -> int | None:
        """Reserved by PyTorch's cache but not holding a tensor (reserved − allocated)."""
        if self.reserved_bytes is None or self.allocated_bytes is None:
            return None
        return max(0, self.reserved_bytes - self.allocated_bytes)


@dataclass(frozen=True)
class AdaptiveBatchFacts:
    """What ``probe.AdaptiveBatch`` says of the training loop: the sizes it runs at
    now, and why and when it last changed them."""

    micro_batch: int | None = None
    grad_accum: int | None = None
    effective_batch: int | None = None
    changes: int | None = None
    last_reason: str | None = None         # "out-of-memory" or "headroom"
    last_old_micro_batch: int | None = None
    last_at_s: float | None = None         # Unix time

    def describe(self, now_s: float | None = None) -> str:
        """E.g. "micro-batch 8 × 4 (lowered 2 min ago: out of memory)"."""
        text = f"micro-batch {self.micro_batch or '?'} × {self.grad_accum or '?'}"
        if self.last_reason is None:
            return text
        lowered = (self.last_old_micro_batch is not None and self.micro_batch is not None
                   and self.micro_batch < self.last_old_micro_batch)
        when = ""
        if now_s is not None and self.last_at_s is not None:
            ago = max(0.0, now_s - self.last_at_s)
            when = f" {ago:.0f} s ago" if ago < 120 else f" {ago / 60:.0f} min ago"
        return (f"{text} ({'lowered' if lowered else 'raised'}{when}: "
                f"{self.last_reason.replace('-', ' ')})")


@dataclass(frozen=True)
class ProbeReport:
    pid: int
    published_at_s: float
    torch_version: str | None = None
    devices: tuple[str, ...] = ()
    device_uuids: tuple[str, ...] = ()
    model: ModelFacts | None = None
    optimizer: OptimizerFacts | None = None
    allocator: AllocatorFacts | None = None
    alloc_conf: str | None = None
    adaptive_batch: AdaptiveBatchFacts | None = None

    def allocator_stats(self) -> AllocatorStats | None:
        a = self.allocator
        if a is None:
            return None
        return AllocatorStats(self.published_at_s, a.reserved_bytes, a.allocated_bytes,
                              a.inactive_split_bytes, a.num_alloc_retries, a.num_ooms,
                              a.allocated_peak_bytes)


class ProbeFormatError(ValueError):
    """A probe document that does not follow gpuwatch.probe/1; says what is wrong."""


def _int(d: dict, key: str, where: str) -> int | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_PROBE_INT:
        raise ProbeFormatError(f"{where}{key} must be a whole number from 0 to 2**60"
                               + (f", not {shown(v)}" if isinstance(v, int) else ""))
    return v


def _time(d: dict, key: str, where: str) -> float | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) \
            or not 0 <= v <= MAX_PROBE_TIME_S:          # NaN fails too
        raise ProbeFormatError(f"{where}{key} must be a Unix time in seconds")
    return float(v)


def _str(d: dict, key: str, where: str) -> str | None:
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, str) or len(v) > 1000:
        raise ProbeFormatError(f"{where}{key} must be a short string")
    return v


def _table(d: dict, key: str) -> dict | None:
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, dict):
        raise ProbeFormatError(f"{key} must be an object")
    return v


def _strings(d: dict, key: str) -> tuple[str, ...]:
    v = d.get(key, [])
    if not isinstance(v, list) or len(v) > 64 \
            or not all(isinstance(s, str) and len(s) <= 200 for s in v):
        raise ProbeFormatError(f"{key} must be a list of at most 64 short strings")
    return tuple(v)


def parse_probe_report(doc: Any) -> ProbeReport:
    if not isinstance(doc, dict):
        raise ProbeFormatError("a probe document must be a JSON object")
    if doc.get("schema") != PROBE_SCHEMA:
        raise ProbeFormatError(f"schema must be {PROBE_SCHEMA!r}")
    pid = _int(doc, "pid", "")
    if not pid:
        raise ProbeFormatError("pid must be a positive whole number")
    if pid > MAX_PID:
        raise ProbeFormatError(f"pid must be at most {MAX_PID}")
    published = _time(doc, "published_at_s", "")
    if published is None:
        raise ProbeFormatError("published_at_s must be a Unix time in seconds")
    model = optimizer = allocator = None
    if (m := _table(doc, "model")) is not None:
        by_dtype = m.get("parameter_bytes_by_dtype") or {}
        if not isinstance(by_dtype, dict) or len(by_dtype) > 64 or not all(
                isinstance(k, str) and len(k) <= 64 and type(v) is int
                and 0 <= v <= MAX_PROBE_INT for k, v in by_dtype.items()):
            raise ProbeFormatError("model.parameter_bytes_by_dtype must map at most 64 "
                                   "dtype names to byte counts from 0 to 2**60")
        model = ModelFacts(_str(m, "class", "model."), _int(m, "parameters", "model."),
                           _int(m, "trainable_parameters", "model."),
                           _int(m, "parameter_bytes", "model."), dict(by_dtype),
                           _int(m, "buffer_bytes", "model."),
                           _int(m, "gradient_bytes", "model."))
    if (o := _table(doc, "optimizer")) is not None:
        optimizer = OptimizerFacts(_str(o, "class", "optimizer."),
                                   _int(o, "state_bytes", "optimizer."),
                                   _int(o, "step", "optimizer."))
    if (a := _table(doc, "allocator")) is not None:
        allocator = AllocatorFacts(**{f: _int(a, f, "allocator.")
                                      for f in AllocatorFacts.__dataclass_fields__})
    return ProbeReport(pid, published, _str(doc, "torch_version", ""),
                       _strings(doc, "devices"), _strings(doc, "device_uuids"),
                       model, optimizer, allocator, _str(doc, "alloc_conf", ""),
                       _adaptive_batch(doc))


def _adaptive_batch(doc: dict) -> AdaptiveBatchFacts | None:
    if (b := _table(doc, "adaptive_batch")) is None:
        return None
    last = _table(b, "last_change") or {}
    at = _time(last, "at_s", "adaptive_batch.last_change.")
    reason = _str(last, "reason", "adaptive_batch.last_change.")
    return AdaptiveBatchFacts(
        _int(b, "micro_batch", "adaptive_batch."), _int(b, "grad_accum", "adaptive_batch."),
        _int(b, "effective_batch", "adaptive_batch."), _int(b, "changes", "adaptive_batch."),
        None if reason is None else reason[:40],
        _int(last, "old_micro_batch", "adaptive_batch.last_change."),
        at)


def probe_report_to_json(r: ProbeReport) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": PROBE_SCHEMA, "pid": r.pid, "published_at_s": r.published_at_s,
        "torch_version": r.torch_version, "devices": list(r.devices),
        "device_uuids": list(r.device_uuids), "model": None, "optimizer": None,
        "allocator": None, "alloc_conf": r.alloc_conf,
    }
    if r.model is not None:
        m = asdict(r.model)
        m["class"] = m.pop("class_name")
        doc["model"] = m
    if r.optimizer is not None:
        o = asdict(r.optimizer)
        o["class"] = o.pop("class_name")
        doc["optimizer"] = o
    if r.allocator is not None:
        doc["allocator"] = asdict(r.allocator)
    if (b := r.adaptive_batch) is not None:
        doc["adaptive_batch"] = {
            "micro_batch": b.micro_batch, "grad_accum": b.grad_accum,
            "effective_batch": b.effective_batch, "changes": b.changes,
            "last_change": None if (b.last_reason, b.last_old_micro_batch,
                                    b.last_at_s) == (None, None, None) else {
                "reason": b.last_reason, "old_micro_batch": b.last_old_micro_batch,
                "at_s": b.last_at_s}}
    return doc


def default_probe_dir() -> str:
    """Where probes publish and the monitor looks: private to the user.

    ``$GPUWATCH_PROBE_DIR``, else ``$XDG_RUNTIME_DIR/gpuwatch/probes`` (a per-user
    tmpfs), else ``/tmp/gpuwatch-<uid>/probes``.
    """
    import os

    override = os.environ.get("GPUWATCH_PROBE_DIR")
    if override:
        return override
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, "gpuwatch", "probes")
    return os.path.join("/tmp", f"gpuwatch-{os.getuid()}", "probes")
