"""One GPU type at one count, in the simplest layout that fits and runs (nearly) fastest.

The global batch is the user's (``batch × grad_accum × dp``): every configuration does
the same work per step, so their step times and costs compare. A layout splits it over
its data-parallel replicas; each runs the micro-batch that makes its step fastest
(without pipeline stages: the largest that fits, from the budget's solver) and
accumulates the rest; replicas never outnumber the global batch.

Layouts tried for n GPUs (in nodes of the GPU's node size, the last one full or not):
tensor parallel of 1, 2, 4
or 8 inside one NVLink or Infinity Fabric domain where it divides the heads (with
Megatron's sequence parallelism); pipeline stages in powers of two up to the layers;
context parallel for sequences of 16 Ki tokens and more; data parallel over the rest
with each ZeRO stage (0–1 under pipeline stages, as Megatron's distributed optimizer);
for each, the user's activation checkpointing or, when that does not fit, the next
stronger (selective, then full). Of the layouts within 2 % of the fastest, the simplest
is shown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.estimator import Estimate, estimate
from gpuwatch.budget.solver import max_batch_size
from gpuwatch.budget.specs import ModelSpec, TransformerSpec
from gpuwatch.budget.workload import CHECKPOINTING, Setup, Workload
from gpuwatch.plan.flops import sequence
from gpuwatch.plan.hardware import Hardware
from gpuwatch.plan.roofline import Efficiency, StepTime, step_time

GPU_COUNTS = (1, 2, 4, 8)
LONG_SEQUENCE = 16 * 1024  # context parallelism is tried from here on


@dataclass(frozen=True)
class Layout:
    dp: int
    tp: int
    zero: int
    pp: int = 1
    cp: int = 1
    checkpointing: str | None = None  # None: the setup's

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def model_parallel(self) -> int:
        return self.tp * self.pp * self.cp

    def describe(self) -> str:
        parts = []
        if self.tp > 1:
            parts.append(f"TP {self.tp}")
        if self.pp > 1:
            parts.append(f"PP {self.pp}")
        if self.cp > 1:
            parts.append(f"CP {self.cp}")
        if self.dp > 1:
            parts.append(f"DP {self.dp}" + (f" ZeRO-{self.zero}" if self.zero else ""))
        text = " × ".join(parts) or "single GPU"
        if self.checkpointing and self.checkpointing != "none":
            text += f", {self.checkpointing} recompute"
        return text


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
    def nodes(self) -> int:
        return math.ceil(self.gpus / self.hardware.sheet.node)

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
        self._cache: dict[tuple[object, ...], Estimate | None] = {}

    def get(self, layout: Layout, batch: int, accum: int) -> Estimate | None:
        key = (layout, batch, accum)
        if key not in self._cache:
            wl = replace(self.workload, batch=batch, grad_accum=accum,
                         seq=max(1, self.workload.seq // layout.cp))
            s = replace(self.setup, dp=layout.dp, tp=layout.tp, zero=layout.zero,
                        pp=layout.pp, checkpointing=layout.checkpointing or
                        self.setup.checkpointing,
                        sequence_parallel=self.setup.sequence_parallel or layout.tp > 1)
            try:
                self._cache[key] = estimate(self.spec, wl, s)
            except BudgetError:
                self._cache[key] = None
        return self._cache[key]


def global_batch(workload: Workload, setup: Setup) -> int:
    """Samples per step over all GPUs (training) or sequences decoded at once."""
    accum = workload.grad_accum if workload.mode == "train" else 1
    return workload.batch * accum * setup.dp


def _powers(limit: int) -> list[int]:
    return [2**k for k in range(1, 16) if 2**k <= limit]


def _tps(spec: ModelSpec, hw: Hardware, gpus: int) -> list[int]:
    if not isinstance(spec, TransformerSpec):
        return [1]
    room = min(gpus, hw.sheet.fast_domain, hw.sheet.node)
    return [1] + [t for t in (2, 4, 8) if t <= room and spec.heads % t == 0
                  and (spec.kv % t == 0 or t % spec.kv == 0)]


def checkpointing_ladder(spec: ModelSpec, setup: Setup, train: bool) -> list[str]:
    """The setup's checkpointing, then the stronger ones the fit search may choose."""
    if not train:
        return [setup.checkpointing]
    stronger = list(CHECKPOINTING[CHECKPOINTING.index(setup.checkpointing):])
    if not isinstance(spec, TransformerSpec) and "selective" in stronger:
        stronger.remove("selective")
    return stronger


def layouts(spec: ModelSpec, hw: Hardware, gpus: int, train: bool,
            params_offloaded: bool = False, seq: int = 0,
            pipeline: bool = True) -> list[Layout]:
    """The parallel layouts of ``gpus`` GPUs (checkpointing left to the setup's), least
    model parallelism first (a count that is not whole nodes leaves part of the last
    node idle). ``pipeline`` False leaves out pipeline stages (for a model one GPU holds
    they only add bubbles)."""
    transformer = isinstance(spec, TransformerSpec)
    layers = spec.total_layers if isinstance(spec, TransformerSpec) else 1
    long = (train and isinstance(spec, TransformerSpec) and spec.arch == "decoder"
            and seq >= LONG_SEQUENCE)
    out: list[Layout] = []
    for tp in _tps(spec, hw, gpus):
        pps = [1] + ([p for p in _powers(layers) if tp * p <= gpus]
                     if transformer and pipeline else [])
        for pp in pps:
            cps = [1] + ([c for c in _powers(16) if tp * pp * c <= gpus and seq % (2 * c) == 0]
                         if long else [])
            for cp in cps:
                dp, rest = divmod(gpus, tp * pp * cp)
                if rest:
                    continue
                if params_offloaded:
                    stages: tuple[int, ...] = (3,) if pp == 1 else ()
                elif train and dp > 1:
                    stages = (0, 1, 2, 3) if pp == 1 else (0, 1)
                else:
                    stages = (0,)
                out += [Layout(dp, tp, z, pp, cp) for z in stages]
    return sorted(out, key=lambda x: (x.model_parallel, x.pp, x.cp, x.tp, x.zero))


def _best_micro(spec: ModelSpec, cache: Estimates, hw: Hardware, layout: Layout,
                per_replica: int, mb: int, efficiency: Efficiency, gpus: int,
                network: float | None) -> tuple[Estimate, int, int, StepTime] | None:
    """The micro-batch × accumulation of ``per_replica`` samples that fits and runs
    fastest: the largest without pipeline stages, the best of powers of two with them
    (smaller micro-batches shrink the bubble)."""
    capacity = hw.gpu.memory_bytes
    top = min(per_replica, mb)
    candidates = [top] if layout.pp == 1 else sorted(
        {top} | {m for m in (1, 2, 4, 8, 16, 32) if m < top})
    best: tuple[Estimate, int, int, StepTime] | None = None
    for want in candidates:
        accum = math.ceil(per_replica / want)
        micro = math.ceil(per_replica / accum)  # even micro-batches: no padded samples
        est = cache.get(layout, micro, accum)
        while est is not None and est.total_bytes > capacity and micro > 1:
            micro -= max(1, micro // 8)  # accumulation's gradient buffer took the room
            accum = math.ceil(per_replica / micro)
            est = cache.get(layout, micro, accum)
        if est is None or est.total_bytes > capacity:
            continue
        step = step_time(spec, est, hw, accum, efficiency, gpus, layout.cp, network)
        if best is None or step.total_s < best[3].total_s:
            best = (est, micro, accum, step)
    return best


def evaluate(spec: ModelSpec, cache: Estimates, hw: Hardware, gpus: int,
             efficiency: Efficiency, network: float | None = None) -> Config:
    """The fastest layout of ``gpus`` GPUs of ``hw`` that fits, or why none does."""
    wl = cache.workload
    train = wl.mode == "train"
    total = global_batch(wl, cache.setup)
    capacity = hw.gpu.memory_bytes
    usable: list[Config] = []
    smallest: int | None = None
    too_few = False
    ladder = checkpointing_ladder(spec, cache.setup, train)
    alone = cache.get(Layout(1, 1, 0), 1, 1)
    pipeline = alone is None or alone.total_bytes > capacity
    for base in layouts(spec, hw, gpus, train, cache.setup.offload == "params", wl.seq,
                        pipeline):
        if base.dp > total:  # a replica with no sample of its own would only repeat work
            too_few = True
            continue
        for ckpt in ladder:  # the setup's own is left implicit: the text names a change
            layout = replace(base, checkpointing=None if ckpt == cache.setup.checkpointing
                             else ckpt)
            one = cache.get(layout, 1, 1)
            if one is None:
                break
            smallest = one.total_bytes if smallest is None else min(smallest, one.total_bytes)
            mb = max_batch_size(one, capacity)
            if mb < 1:
                continue
            per_replica = math.ceil(total / layout.dp)
            found = _best_micro(spec, cache, hw, layout, per_replica, mb, efficiency, gpus,
                                network)
            if found is None:
                continue
            est, micro, accum, step = found
            tokens = total * _tokens_per_sample(spec, est) * layout.cp
            usable.append(Config(hw, gpus, layout, mb, micro, accum, est.total_bytes, step,
                                 total, tokens))
            break  # a stronger recompute only costs time
    if usable:
        return _simplest_of_the_fastest(usable)
    note = ""
    if too_few and smallest is None:
        note = (f"a global batch of {total} leaves data-parallel replicas without a sample, "
                "and tensor parallelism needs an NVLink domain and heads it divides "
                "(pipeline stages only for a model one GPU cannot hold); raise --batch or "
                "--grad-accum")
    return Config(hw, gpus, None, 0, 0, 0, smallest or 0, None, total, 0, note)


SIMPLER_WITHIN = 0.02  # a simpler layout wins when it is at most this much slower


def _simplest_of_the_fastest(usable: list[Config]) -> Config:
    """The first layout (simplest: least model parallelism, lowest ZeRO stage, least
    recompute) whose step is within :data:`SIMPLER_WITHIN` of the fastest: a roofline
    cannot tell 2 % apart, and plain data parallelism is what people run when it is as
    fast."""
    fastest = min(c.step.total_s for c in usable if c.step is not None)
    return next(c for c in usable
                if c.step is not None and c.step.total_s <= fastest * (1 + SIMPLER_WITHIN))


def _tokens_per_sample(spec: ModelSpec, est: Estimate) -> int:
    """Tokens one sample carries through a training step (images and decoding: 1)."""
    if est.workload.mode == "train" and isinstance(spec, TransformerSpec):
        return sequence(spec, est)
    return 1
