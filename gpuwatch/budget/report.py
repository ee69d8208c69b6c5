"""An estimate for people (a table) and for programs (``gpuwatch.estimate/1`` JSON)."""

from __future__ import annotations

from typing import Any

from gpuwatch.budget.counts import format_count
from gpuwatch.budget.estimator import CATEGORIES, Estimate
from gpuwatch.budget.fit import GpuFit
from gpuwatch.budget.gpus import GpuInfo
from gpuwatch.budget.levers import WhatIf
from gpuwatch.budget.precision import PRECISIONS
from gpuwatch.budget.workload import default_precision
from gpuwatch.core.units import format_bytes

SCHEMA = "gpuwatch.estimate/1"

LABELS = {
    "parameters": "parameters",
    "gradients": "gradients",
    "optimizer_states": "optimizer states",
    "activations": "activations",
    "kv_cache": "KV cache",
    "framework_overhead": "framework overhead",
}


def _gib(n: int) -> str:
    return format_bytes(n, digits=2)


def inputs_dict(est: Estimate) -> dict[str, Any]:
    wl, s = est.workload, est.setup
    return {
        "model": est.model,
        "params": est.params,
        "trainable_params": est.trainable_params,
        "mode": wl.mode,
        "batch": wl.batch,
        "seq": wl.seq,
        "image": f"{wl.image[0]}x{wl.image[1]}" if wl.image else None,
        "grad_accum": wl.grad_accum,
        "context": wl.kv_context if wl.mode == "infer" else None,
        "precision": s.precision,
        "optimizer": s.optimizer if wl.mode == "train" else None,
        "checkpointing": s.checkpointing,
        "flash_attention": s.flash_attention,
        "zero": s.zero,
        "dp": s.dp,
        "tp": s.tp,
        "pp": s.pp,
        "sequence_parallel": s.sequence_parallel,
        "offload": s.offload,
        "lora_rank": s.lora_rank or None,
        "sparsity": s.sparsity or None,
        "kv_precision": s.kv_precision,
        "teacher": getattr(s.teacher, "name", None) if s.teacher is not None else None,
    }


_INFER_REGIME = {
    "fp32": "fp32 weights and activations",
    "amp-bf16": "fp32 weights, torch autocast bf16 compute",
    "amp-fp16": "fp32 weights, torch autocast fp16 compute",
    "mixed-bf16": "bf16 weights and activations",
    "mixed-fp16": "fp16 weights and activations",
    "bf16": "bf16 weights and activations",
    "fp16": "fp16 weights and activations",
}


def regime_line(est: Estimate) -> str:
    """The precision regime in words, and whether it is the mode's default."""
    name, mode = est.setup.precision, est.workload.mode
    regime = PRECISIONS[name].description if name in PRECISIONS else name
    if mode == "infer" and name in _INFER_REGIME:
        regime = _INFER_REGIME[name]
    why = (f"the default for --mode {mode}; --precision changes it"
           if name == default_precision(mode) else "as given")
    return f"precision {name}: {regime} ({why})"


def to_json(
    est: Estimate,
    capacity_bytes: int | None,
    max_batch: int | None,
    max_seq: int | None,
    what_if: tuple[WhatIf, ...],
    fit: tuple[GpuFit, ...] | None = None,
    gpu: GpuInfo | None = None,
) -> dict[str, Any]:
    """The JSON document; ``gpu`` names the catalog GPU the capacity came from."""
    inputs = inputs_dict(est)
    inputs["gpu"] = gpu.name if gpu is not None else None
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "inputs": inputs,
        "breakdown_bytes": est.breakdown.as_dict(),
        "formulas": dict(est.formulas),
        "overlap_bytes": est.overlap_bytes,
        "peak_phase": est.peak_phase,
        "total_bytes": est.total_bytes,
        "capacity_bytes": capacity_bytes,
        "fits": None if capacity_bytes is None else est.total_bytes <= capacity_bytes,
        "headroom_bytes": None if capacity_bytes is None else capacity_bytes - est.total_bytes,
        "max_batch_size": max_batch,
        "max_seq_len": max_seq,
        "host_offload_bytes": est.detail.host_bytes or None,
        "notes": list(est.notes),
        "what_if": [
            {"change": w.change, "total_bytes": w.total_bytes, "saves_bytes": w.saves_bytes}
            for w in what_if
        ],
    }
    if fit is not None:
        doc["gpus"] = [
            {
                "name": f.gpu.name,
                "memory_bytes": f.gpu.memory_bytes,
                "bandwidth_bytes_per_s": f.gpu.bandwidth_bytes_per_s,
                "fits": f.fits,
                "headroom_bytes": f.headroom_bytes,
                "max_batch_size": f.max_batch_size,
                "min_gpus_zero3": f.min_gpus_zero3,
            }
            for f in fit
        ]
    return doc


def to_table(
    est: Estimate,
    capacity_bytes: int | None,
    max_batch: int | None,
    max_seq: int | None,
    what_if: tuple[WhatIf, ...],
    fit: tuple[GpuFit, ...] | None = None,
    gpu: GpuInfo | None = None,
) -> str:
    """The table; ``gpu`` names the catalog GPU the capacity came from."""
    wl, s = est.workload, est.setup
    count = f"{format_count(est.params)} params"
    name = est.model if est.model == count else f"{est.model}: {count}"  # a bare --params
    head = (
        f"{name}, {wl.mode}, batch {wl.batch}, "
        + (f"image {wl.image[0]}x{wl.image[1]}, " if wl.image else f"seq {wl.seq}, ")
        + f"{s.precision}"
        + (f", {s.optimizer}" if wl.mode == "train" else "")
    )
    lines = [head, regime_line(est)]
    if gpu is not None:
        lines.append(f"GPU: {gpu.name}, {_gib(gpu.memory_bytes)}")
    lines += ["", f"{'category':<20}{'per GPU':>12}  how"]
    for cat in CATEGORIES:
        lines.append(
            f"{LABELS[cat]:<20}{_gib(est.breakdown.as_dict()[cat]):>12}  {est.formula(cat)}"
        )
    if est.overlap_bytes:
        lines.append(
            f"{'not alive together':<20}{'-' + _gib(est.overlap_bytes):>12}  "
            f"peak at the {est.peak_phase}"
        )
    lines.append(f"{'total':<20}{_gib(est.total_bytes):>12}  peak per GPU")
    if capacity_bytes is not None:
        room = capacity_bytes - est.total_bytes
        where = f"{gpu.name} ({_gib(capacity_bytes)})" if gpu is not None else _gib(
            capacity_bytes
        )
        verdict = (
            f"fits in {where}: {_gib(room)} headroom"
            if room >= 0
            else f"does NOT fit in {where}: {_gib(-room)} over"
        )
        lines += ["", verdict]
        if max_batch is not None:
            lines.append(f"largest batch that fits: {max_batch}")
        if max_seq is not None:
            lines.append(f"longest sequence that fits at batch {wl.batch}: {max_seq}")
    if what_if:
        lines += ["", "what if"]
        for w in what_if:
            lines.append(f"  {w.change:<58} {_gib(w.total_bytes):>11}  saves {_gib(w.saves_bytes)}")
    if fit:
        lines += [
            "",
            f"{'GPU':<12}{'memory':>11}{'bandwidth':>12}  {'fits':<5}{'headroom':>12}"
            f"{'max batch':>10}{'ZeRO-3 GPUs':>13}",
        ]
        for f in fit:
            z = "-" if f.min_gpus_zero3 is None else str(f.min_gpus_zero3)
            lines.append(
                f"{f.gpu.name:<12}{_gib(f.gpu.memory_bytes):>11}"
                f"{f.gpu.bandwidth_bytes_per_s / 1e12:>8.2f} TB/s  "
                f"{'yes' if f.fits else 'no':<5}{_gib(f.headroom_bytes):>12}"
                f"{f.max_batch_size:>10}{z:>13}"
            )
    lines += ["", "notes"] + [f"  - {n}" for n in est.notes]
    return "\n".join(lines)
