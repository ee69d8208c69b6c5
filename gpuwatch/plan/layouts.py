"""Each catalog GPU at 1, 2, 4 and 8 per node, in the simplest layout that fits and runs
(nearly) fastest.

The global batch is the user's (``batch × grad_accum × dp``): every configuration does
the same work per step, so their step times and costs compare. A layout splits it over
its data-parallel replicas; each runs the largest micro-batch that fits (the budget's
solver) and accumulates the rest; replicas never outnumber the global batch. Layouts
tried for n GPUs: data parallel with each ZeRO stage (training), and tensor parallel of
2, 4 or 8 — only inside one NVLink or Infinity Fabric domain, and only where it divides
the heads — with data parallel over the rest; of the layouts within 2 % of the fastest,
the simplest is shown.
Pipeline parallelism is not tried (its bubbles are outside a roofline).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.estimator import Estimate, estimate
from gpuwatch.budget.solver import max_batch_size
from gpuwatch.budget.specs import ModelSpec, TransformerSpec
from gpuwatch.budget.workload import Setup, Workload
from gpuwatch.plan.flops import sequence
from gpuwatch.plan.hardware import Hardware
from gpuwatch.plan.roofline import Efficiency, StepTime, step_time

GPU_COUNTS = (1, 2, 4, 8)


@dataclass(frozen=True)
class Layout:
    dp: int
    tp: int
    zero: int

    @property
    def gpus(self) -> int:
        return self.dp * self.tp

    def describe(self) -> str:
        parts = []
        if self.tp > 1:
            parts.append(f"TP {self.tp}")
        if self.dp > 1:
            parts.append(f"DP {self.dp}" + (f" ZeRO-{self.zero}" if self.zero else ""))
        return " × ".join(parts) or "single GPU"


@dataclass(frozen=True)
class Config:
    """One GPU type at one count: fits or not, and how fast."""

    hardware: Hardware
    gpus: int
    layout: Layout | None  # None: nothing fits
    max_micro_batch: int
    micro_batch: int
    grad_accum: int
    peak_bytes: int  # per GPU at the chosen micro-batch (nothing fits: the smallest peak)
    step: StepTime | None
    samples_per_step: int  # the global batch
    tokens_per_step: int
    note: str = ""  # why nothing runs, when it is not memory

    @property
    def fits(self) -> bool:
        return self.layout is not None

    @property
    def samples_per_s_per_gpu(self) -> float | None:
        return None if self.step is None else self.samples_per_step / self.step.total_s / self.gpus

    @property
    def tokens_per_s_per_gpu(self) -> float | None:
        return None if self.step is None else self.tokens_per_step / self.step.total_s / self.gpus


class Estimates:
    """The budget's estimates, cached by layout and batch: they do not depend on the GPU."""

    def __init__(self, spec: ModelSpec, workload: Workload, setup: Setup):
        self.spec, self.workload, self.setup = spec, workload, setup
        self._cache: dict[tuple[int, int, int, int, int], Estimate | None] = {}

    def get(self, layout: Layout, batch: int, accum: int) -> Estimate | None:
        key = (layout.dp, layout.tp, layout.zero, batch, accum)
        if key not in self._cache:
            wl = replace(self.workload, batch=batch, grad_accum=accum)
            s = replace(self.setup, dp=layout.dp, tp=layout.tp, zero=layout.zero, pp=1)
            try:
                self._cache[key] = estimate(self.spec, wl, s)
            except BudgetError:
                self._cache[key] = None
        return self._cache[key]


def global_batch(workload: Workload, setup: Setup) -> int:
    """Samples per step over all GPUs (training) or sequences decoded at once."""
    accum = workload.grad_accum if workload.mode == "train" else 1
    return workload.batch * accum * setup.dp


def layouts(spec: ModelSpec, hw: Hardware, gpus: int, train: bool,
            params_offloaded: bool = False) -> list[Layout]:
    """The layouts tried for ``gpus`` GPUs, cheapest in communication first (offloaded
    parameters need ZeRO-3, on any number of GPUs)."""
    out: list[Layout] = []
    tps = [1]
    if isinstance(spec, TransformerSpec) and gpus <= hw.sheet.fast_domain:
        tps += [t for t in (2, 4, 8) if t <= gpus and spec.heads % t == 0 and spec.kv % t == 0]
    for tp in tps:
        dp = gpus // tp
        stages = (3,) if params_offloaded else (0, 1, 2, 3) if train and dp > 1 else (0,)
        out += [Layout(dp, tp, z) for z in stages]
    return out


def evaluate(spec: ModelSpec, cache: Estimates, hw: Hardware, gpus: int,
             efficiency: Efficiency) -> Config:
    """The fastest layout of ``gpus`` GPUs of ``hw`` that fits, or why none does."""
    wl = cache.workload
    train = wl.mode == "train"
    total = global_batch(wl, cache.setup)
    capacity = hw.gpu.memory_bytes
    usable: list[Config] = []
    smallest: int | None = None
    too_few = False
    for layout in layouts(spec, hw, gpus, train, cache.setup.offload == "params"):
        if layout.dp > total:  # a replica with no sample of its own would only repeat work
            too_few = True
            continue
        one = cache.get(layout, 1, 1)
        if one is None:
            continue
        smallest = one.total_bytes if smallest is None else min(smallest, one.total_bytes)
        mb = max_batch_size(one, capacity)
        if mb < 1:
            continue
        per_replica = math.ceil(total / layout.dp)
        accum = math.ceil(per_replica / min(per_replica, mb))
        micro = math.ceil(per_replica / accum)  # even micro-batches: no padded samples
        est = cache.get(layout, micro, accum)
        while est is not None and est.total_bytes > capacity and micro > 1:
            micro -= max(1, micro // 8)  # accumulation's gradient buffer took the room
            accum = math.ceil(per_replica / micro)
            est = cache.get(layout, micro, accum)
        if est is None or est.total_bytes > capacity:
            continue
        step = step_time(spec, est, hw, accum, efficiency, gpus)
        tokens = total * _tokens_per_sample(spec, est)
        config = Config(hw, gpus, layout, mb, micro, accum, est.total_bytes, step, total, tokens)
        usable.append(config)
    if usable:
        return _simplest_of_the_fastest(usable)
    note = ""
    if too_few and smallest is None:
        note = (f"a global batch of {total} leaves data-parallel replicas without a sample, "
                "and tensor parallelism needs an NVLink domain and heads it divides; "
                "raise --batch or --grad-accum")
    return Config(hw, gpus, None, 0, 0, 0, smallest or 0, None, total, 0, note)



SIMPLER_WITHIN = 0.02  # a simpler layout wins when it is at most this much slower


def _simplest_of_the_fastest(usable: list[Config]) -> Config:
    """The first layout (simplest: least tensor parallelism, lowest ZeRO stage) whose step
    is within :data:`SIMPLER_WITHIN` of the fastest: a roofline cannot tell 2 % apart,
    and plain data parallelism is what people run when it is as fast."""
    fastest = min(c.step.total_s for c in usable if c.step is not None)
    return next(c for c in usable
                if c.step is not None and c.step.total_s <= fastest * (1 + SIMPLER_WITHIN))


def _tokens_per_sample(spec: ModelSpec, est: Estimate) -> int:
    """Tokens one sample carries through a training step (images and decoding: 1)."""
    if est.workload.mode == "train" and isinstance(spec, TransformerSpec):
        return sequence(spec, est)
    return 1
