"""The budget's levers in order of what they cost in time: what each saves in memory
per GPU, and what it adds to (or takes from) a step on the reference configuration.

The time comes from the same roofline as the plan: activation checkpointing adds its
recompute (full: one more forward pass, a third more compute), ZeRO stages add their
communication, a smaller micro-batch reads the weights more often. Offloading the
optimizer moves gradients to the CPU and weights back over PCIe every step (the CPU's
own Adam time is not counted). Levers that shrink the bytes a step moves (16-bit
formats, 8-bit optimizer states, an FP8 KV cache) save time as well as memory.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.estimator import Estimate, estimate
from gpuwatch.budget.specs import ModelSpec, TransformerSpec
from gpuwatch.budget.workload import Setup, Workload
from gpuwatch.plan.layouts import Config
from gpuwatch.plan.roofline import Efficiency, step_time


@dataclass(frozen=True)
class LeverCost:
    change: str  # the estimate options that apply it
    saves_bytes: int  # peak per GPU, at the reference micro-batch
    time_delta_s: float  # per step on the reference configuration; negative: faster
    time_ratio: float  # new step time / old
    why: str


def _candidates(spec: ModelSpec, wl: Workload, s: Setup
                ) -> list[tuple[str, Workload, Setup, str]]:
    train = wl.mode == "train"
    out: list[tuple[str, Workload, Setup, str]] = []

    def add(change: str, why: str, setup: Setup | None = None,
            workload: Workload | None = None) -> None:
        out.append((change, workload or wl, setup or s, why))

    if s.precision == "fp32":
        add("--precision amp-bf16", "16-bit matmuls on tensor cores, half the activation "
                                    "bytes", replace(s, precision="amp-bf16"))
    if train and s.precision in ("fp32", "amp-bf16", "amp-fp16"):
        add("--precision mixed-bf16", "16-bit weights and gradients, fp32 master copy",
            replace(s, precision="mixed-bf16"))
    if train:
        if s.optimizer in ("adam", "adamw"):
            add("--optimizer adam8bit", "8-bit optimizer states: fewer bytes to update",
                replace(s, optimizer="adam8bit"))
        if s.checkpointing == "none" and isinstance(spec, TransformerSpec):
            add("--checkpointing selective", "recomputes attention in the backward pass",
                replace(s, checkpointing="selective"))
        if s.checkpointing != "full":
            add("--checkpointing full", "recomputes the whole forward pass: +1 forward "
                                        "(≈ +33 % compute)", replace(s, checkpointing="full"))
        if s.dp > 1:
            for stage in range(s.zero + 1, 4):
                add(f"--zero {stage}", "shards " + ("optimizer states", "gradients too",
                                                    "weights too: gathered every pass")
                    [stage - 1] + f" over {s.dp} GPUs", replace(s, zero=stage))
        if wl.batch > 1:
            add(f"--batch {max(1, wl.batch // 2)} --grad-accum {wl.grad_accum * 2}",
                "half the micro-batch, twice the accumulation: weights read twice as often",
                workload=replace(wl, batch=max(1, wl.batch // 2), grad_accum=wl.grad_accum * 2))
        if isinstance(spec, TransformerSpec) and not s.lora_rank:
            add("--lora 16", "trains adapters only: no weight gradients for the base model "
                             "(a different training method)", replace(s, lora_rank=16))
        if not s.offload:
            add("--offload optimizer", "optimizer states in CPU memory: gradients down and "
                                       "weights up over PCIe every step",
                replace(s, offload="optimizer"))
    elif isinstance(spec, TransformerSpec):
        if s.kv_precision not in ("fp8", "int8", "int4"):
            add("--kv-precision fp8", "half the KV-cache bytes read per token",
                replace(s, kv_precision="fp8"))
        if s.precision not in ("int8", "int4"):
            add("--precision int4", "4-bit weights: a quarter of the bytes read per token",
                replace(s, precision="int4"))
    return out


def lever_costs(spec: ModelSpec, reference: Config, base: Estimate,
                efficiency: Efficiency) -> list[LeverCost]:
    """Each lever on ``reference`` (a fitting configuration), cheapest in time first."""
    assert reference.step is not None
    hw, accum, gpus = reference.hardware, reference.grad_accum, reference.gpus
    old = reference.step.total_s
    out = []
    for change, wl, setup, why in _candidates(spec, base.workload, base.setup):
        try:
            est = estimate(spec, wl, setup)
        except BudgetError:
            continue
        saves = base.total_bytes - est.total_bytes
        if saves <= 0:
            continue
        cp = reference.layout.cp if reference.layout is not None else 1
        net = reference.step.network_bytes_per_s or None
        new = step_time(spec, est, hw, wl.grad_accum if wl.mode == "train" else accum,
                        efficiency, gpus, cp, net).total_s
        out.append(LeverCost(change, saves, new - old, new / old, why))
    return sorted(out, key=lambda c: (c.time_delta_s, -c.saves_bytes))


def memory_levers(spec: ModelSpec, base: Estimate) -> list[LeverCost]:
    """The levers by what they save alone (no configuration runs to time them on), most
    first: for a workload that nothing holds yet."""
    out = []
    for change, wl, setup, why in _candidates(spec, base.workload, base.setup):
        try:
            est = estimate(spec, wl, setup)
        except BudgetError:
            continue
        saves = base.total_bytes - est.total_bytes
        if saves > 0:
            out.append(LeverCost(change, saves, 0.0, 1.0, why))
    return sorted(out, key=lambda c: -c.saves_bytes)
