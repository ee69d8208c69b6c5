"""What-if: the saving of each lever the chosen setup does not use yet."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuwatch.budget.bounds import MAX_GRAD_ACCUM
from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.estimator import Estimate, estimate
from gpuwatch.budget.specs import CnnSpec, ModelSpec, TransformerSpec
from gpuwatch.budget.workload import Setup, Workload


@dataclass(frozen=True)
class WhatIf:
    change: str
    total_bytes: int
    saves_bytes: int


def _candidates(spec: ModelSpec, wl: Workload, s: Setup) -> list[tuple[str, Workload, Setup]]:
    out: list[tuple[str, Workload, Setup]] = []
    train = wl.mode == "train"
    tf = isinstance(spec, TransformerSpec)
    attention = tf or (isinstance(spec, CnnSpec) and spec.has_attention)

    def add(change: str, setup: Setup | None = None, workload: Workload | None = None) -> None:
        out.append((change, workload or wl, setup or s))

    if s.precision == "fp32":
        add("--precision amp-bf16 (autocast)", replace(s, precision="amp-bf16"))
    if s.precision in ("fp32", "amp-bf16", "amp-fp16") and train:
        add(
            "--precision mixed-bf16 (16-bit weights, fp32 master)",
            replace(s, precision="mixed-bf16"),
        )
    if s.precision in ("fp32", "amp-bf16", "amp-fp16", "mixed-bf16", "mixed-fp16"):
        add("--precision bf16 (everything 16-bit)", replace(s, precision="bf16"))
    if not train and s.precision not in ("int8", "int4"):
        add("--precision int8 (weights)", replace(s, precision="int8"))
        add("--precision int4 (weights)", replace(s, precision="int4"))
    if train:
        if s.optimizer in ("adam", "adamw"):
            add("--optimizer adam8bit", replace(s, optimizer="adam8bit"))
        if attention and s.checkpointing == "none" and not s.flash_attention:
            add("--checkpointing selective", replace(s, checkpointing="selective"))
        if s.checkpointing != "full":
            add("--checkpointing full (+33% compute)", replace(s, checkpointing="full"))
        if s.dp > 1:
            for stage in range(s.zero + 1, 4):
                add(f"--zero {stage}", replace(s, zero=stage))
        if wl.batch > 1 and wl.batch * wl.grad_accum <= MAX_GRAD_ACCUM:
            add(
                f"--batch 1 --grad-accum {wl.batch * wl.grad_accum} (same effective batch)",
                workload=replace(wl, batch=1, grad_accum=wl.batch * wl.grad_accum),
            )
        if tf and not s.lora_rank:
            add("--lora 16", replace(s, lora_rank=16))
        if not s.offload:
            add("--offload optimizer", replace(s, offload="optimizer"))
    elif tf and s.kv_precision not in ("fp8", "int8", "int4"):
        add("--kv-precision fp8", replace(s, kv_precision="fp8"))
    if attention and not s.flash_attention:
        add("--flash-attention", replace(s, flash_attention=True))
    return out


def what_if(spec: ModelSpec, base: Estimate) -> tuple[WhatIf, ...]:
    """Each unused lever with the total it gives and what it saves, largest saving first."""
    out = []
    for change, wl, setup in _candidates(spec, base.workload, base.setup):
        try:
            e = estimate(spec, wl, setup)
        except BudgetError:
            continue
        saving = base.total_bytes - e.total_bytes
        if saving > 0:
            out.append(WhatIf(change, e.total_bytes, saving))
    return tuple(sorted(out, key=lambda w: -w.saves_bytes))
