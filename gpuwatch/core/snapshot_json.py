"""The ``gpuwatch.snapshot/1`` JSON document."""

from __future__ import annotations

from typing import Any

from gpuwatch.core.probe_format import probe_report_to_json
from gpuwatch.core.snapshot import BackendInfo, GpuSample, ProcessSample, Snapshot

SNAPSHOT_SCHEMA = "gpuwatch.snapshot/1"


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(float(value), digits)


def _int(value: float | None) -> int | None:
    return None if value is None else round(value)


def backend_to_json(backend: BackendInfo) -> dict[str, Any]:
    return {
        "kind": backend.kind.value,
        "driver_version": backend.driver_version,
        "nvml_version": backend.nvml_version,
        "cuda_driver_version": backend.cuda_driver_version,
        "scenario": backend.scenario,
        "hostname": backend.hostname,
    }


def process_to_json(p: ProcessSample) -> dict[str, Any]:
    return {
        "pid": p.pid,
        "name": p.name,
        "cmdline": list(p.cmdline),
        "user": p.user,
        "used_bytes": p.used_bytes,
        "container": p.container,
        "kind": p.kind,
        "cpu_percent": _round(p.cpu_percent),
        "rss_bytes": p.rss_bytes,
        "started_at_s": _round(p.started_at_s, 3),
        "resolved": p.resolved,
        # "found"; "exited": the driver lists it, the host has no such process (ended or
        # a zombie), so no host details; "hidden": a PID namespace hides it
        "host_status": p.host_status.value,
    }


def gpu_to_json(g: GpuSample) -> dict[str, Any]:
    m = g.memory
    return {
        "index": g.index,
        "uuid": g.uuid,
        "name": g.name,
        "state": g.state.value,
        "error": g.error,
        "memory": {
            "total_bytes": m.total_bytes,
            "used_bytes": m.used_bytes,
            "free_bytes": m.free_bytes,
            "reserved_bytes": m.reserved_bytes,
        },
        "pci_bus_id": g.pci_bus_id,
        "utilization": {
            "gpu_percent": _round(g.gpu_util_percent),
            "memory_busy_percent": _round(g.memory_busy_percent),
            # measured by the GPU's performance monitor (GPM); null without one
            "graphics_active_percent": _round(g.graphics_active_percent),
            "sm_active_percent": _round(g.sm_active_percent),
            "tensor_active_percent": _round(g.tensor_active_percent),
            "encoder_percent": _round(g.encoder_util_percent),
            "decoder_percent": _round(g.decoder_util_percent),
        },
        "bandwidth": {
            "peak_bytes_per_s": _int(g.peak_bandwidth_bytes_per_s),
            "estimated_bytes_per_s": _int(g.estimated_bandwidth_bytes_per_s),
            "estimate_method": "memory busy % x peak",
            # null where the GPU has no GPM (before Hopper) and on its first sample
            "measured_bytes_per_s": _int(g.measured_bandwidth_bytes_per_s),
            "dram_active_percent": _round(g.dram_active_percent),
            "measure_method": "GPM DRAM bandwidth utilisation x peak",
        },
        "pcie": {
            "tx_bytes_per_s": _int(g.pcie_tx_bytes_per_s),
            "rx_bytes_per_s": _int(g.pcie_rx_bytes_per_s),
        },
        "nvlink": {
            "tx_bytes_per_s": _int(g.nvlink_tx_bytes_per_s),
            "rx_bytes_per_s": _int(g.nvlink_rx_bytes_per_s),
        },
        "temperature_c": _round(g.temperature_c),
        "memory_temperature_c": _round(g.memory_temperature_c),
        # the driver's last XID error report since watching began (null: none seen)
        "last_xid": g.last_xid,
        "power_w": _round(g.power_w),
        "power_limit_w": _round(g.power_limit_w),
        "clocks": {"graphics_mhz": g.graphics_clock_mhz, "memory_mhz": g.memory_clock_mhz},
        "mig_enabled": g.mig_enabled,
        "processes": [process_to_json(p) for p in g.processes],
        # why the process list is missing or incomplete; null when it was read
        "processes_error": g.processes_error,
    }


def _with_energy(doc: dict[str, Any], joules: float | None) -> dict[str, Any]:
    # since the driver loaded (NVML's counter); null where the GPU does not count it
    doc["energy_consumed_j"] = _round(joules, 3)
    return doc


def snapshot_to_json(s: Snapshot) -> dict[str, Any]:
    energy = dict(s.energy_consumed_j)
    return {
        "schema": SNAPSHOT_SCHEMA,
        "timestamp_s": round(s.timestamp_s, 3),
        "backend": backend_to_json(s.backend),
        "gpus": [_with_energy(gpu_to_json(g), energy.get(g.index)) for g in s.gpus],
        "warnings": list(s.warnings),
        "probes": [probe_report_to_json(r) for r in s.probes],
    }
