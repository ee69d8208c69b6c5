"""The plan: every catalog GPU at 1, 2, 4 and 8 (and the counts asked for), the fewest
whole nodes for a GPU no such count holds, their step times, the cloud fit and the
levers, for one model and setup. Pure computation (no I/O but the price file, read by
the caller); takes tens to hundreds of milliseconds, so windows run it off the GUI
thread."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.estimator import Estimate, estimate
from gpuwatch.budget.solver import max_batch_size
from gpuwatch.budget.specs import ModelSpec
from gpuwatch.budget.workload import Setup, Workload
from gpuwatch.plan.cloud import CloudFit, SpotAdvice, cloud_fits, spot_advice
from gpuwatch.plan.efficiency import default_efficiency
from gpuwatch.plan.errors import PlanError
from gpuwatch.plan.hardware import Hardware, catalog
from gpuwatch.plan.layouts import GPU_COUNTS, Config, Estimates, Layout, evaluate
from gpuwatch.plan.levers import LeverCost, lever_costs, memory_levers
from gpuwatch.plan.presets import Preset
from gpuwatch.plan.prices import PriceBook
from gpuwatch.plan.roofline import Efficiency
from gpuwatch.plan.scale import MAX_GPUS, fewest_gpus, why_not

SORTS = ("time", "cost", "memory")


@dataclass(frozen=True)
class PlanInput:
    spec: ModelSpec
    workload: Workload
    setup: Setup
    efficiency: Efficiency | None = None  # None: the default for the model's family
    dataset_samples: int | None = None
    gpus: tuple[str, ...] = ()  # restrict to these catalog names (empty: all)
    counts: tuple[int, ...] = GPU_COUNTS
    preset: Preset | None = None
    network_bytes_per_s: float | None = None  # between nodes, per GPU (None: each GPU's)
    job_samples: float | None = None  # the whole job (dataset × epochs, or tokens / seq)

    @property
    def eff(self) -> Efficiency:
        """The efficiency asked for, else the default for the model's family."""
        return self.efficiency or default_efficiency(self.spec)


@dataclass(frozen=True)
class Regime:
    """A preset's workload on one GPU in one precision regime."""

    precision: str
    peak_bytes: int  # per GPU, at the request's micro-batch, one GPU, no sharding
    max_micro_batch: int | None  # on the reference GPU (None: no reference)


@dataclass(frozen=True)
class Plan:
    request: PlanInput
    configs: tuple[Config, ...]
    cloud: tuple[CloudFit, ...]
    reference: Config | None  # where the levers are timed
    levers: tuple[LeverCost, ...]
    spot: SpotAdvice | None
    prices: PriceBook | None
    hardware: tuple[Hardware, ...]
    # GPU name -> the fewest GPUs (whole nodes) that hold the workload (None: not even
    # MAX_GPUS), for the GPUs where no asked count fits
    beyond_node: dict[str, int | None] = field(default_factory=dict)
    # a preset's estimate in fp32 and in its recommended regime (empty without a preset)
    regimes: tuple[Regime, ...] = ()
    # GPU name -> why not even MAX_GPUS hold it
    impossible: dict[str, str] = field(default_factory=dict)

    @property
    def cheapest(self) -> CloudFit | None:
        return self.cloud[0] if self.cloud else None

    def sorted_configs(self, key: str) -> list[Config]:
        """Fitting configurations first, by step time, cost per step or peak memory."""
        if key not in SORTS:
            raise PlanError("--sort", f"--sort must be one of {', '.join(SORTS)}.")
        cost = {id(f.config): f.cost_per_step for f in self.cloud}

        def order(c: Config) -> tuple[int, float]:
            if not c.fits or c.step is None:
                return (3 if c.note else 2, float(c.peak_bytes))
            if key == "cost":
                price = cost.get(id(c))
                return (0, price) if price is not None else (1, c.step.total_s)
            if key == "memory":
                return (0, float(c.peak_bytes))
            return (0, c.step.total_s)

        return sorted(self.configs, key=order)


def _checkpoint_bytes(est: Estimate) -> int:
    """What a resumable checkpoint holds: the trained weights and their optimizer states
    (from a one-GPU estimate, so nothing is sharded)."""
    b = est.breakdown
    trained = b.parameters * est.trainable_params // max(1, est.params)
    return int(trained + b.optimizer_states)


def make_plan(request: PlanInput, prices: PriceBook | None) -> Plan:
    """The whole plan for ``request``; ``prices`` None leaves out the cloud fit."""
    request = replace(request, efficiency=request.eff)
    eff = request.eff
    hardware = tuple(h for h in catalog() if not request.gpus or h.name in request.gpus)
    cache = Estimates(request.spec, request.workload, request.setup)
    net = request.network_bytes_per_s
    configs = [evaluate(request.spec, cache, hw, n, eff, net)
               for hw in hardware for n in request.counts]
    beyond: dict[str, int | None] = {}
    impossible: dict[str, str] = {}
    for hw in hardware:
        mine = [c for c in configs if c.hardware is hw]
        if any(c.fits for c in mine) or all(c.note for c in mine):
            continue  # it runs, or only the batch is too small (each note says so)
        found = fewest_gpus(request.spec, cache, hw, eff, max(request.counts), net)
        beyond[hw.name] = None if found is None else found.gpus
        if found is None:
            impossible[hw.name] = why_not(request.spec, cache, hw)
        else:
            configs.append(found)
    fits = [c for c in configs if c.fits]
    cloud = tuple(cloud_fits(configs, prices, request.dataset_samples,
                             request.job_samples)) if prices else ()
    if cloud:
        reference: Config | None = cloud[0].config
    else:
        single = [c for c in fits if c.gpus == 1]
        reference = min(single or fits, key=lambda c: c.step.total_s,  # type: ignore[union-attr]
                        default=None)
    levers: tuple[LeverCost, ...] = ()
    if reference is not None and reference.layout is not None:
        base = cache.get(reference.layout, reference.micro_batch, reference.grad_accum)
        if base is not None:
            levers = tuple(lever_costs(request.spec, reference, base, eff))
    elif impossible:  # nothing runs anywhere: what each lever saves on one GPU
        one = cache.get(Layout(1, 1, 0), 1, 1)
        if one is not None:
            levers = tuple(memory_levers(request.spec, one))
    spot = None
    if prices is not None and request.workload.mode == "train":
        one = cache.get(Layout(1, 1, 0), 1, 1)
        if one is not None:
            spot = spot_advice(_checkpoint_bytes(one), prices)
    return Plan(request, tuple(configs), cloud, reference, levers, spot, prices, hardware,
                beyond, _regimes(request, reference), impossible)


def _regimes(request: PlanInput, reference: Config | None) -> tuple[Regime, ...]:
    """fp32 and the preset's recommended precision, for the request's workload."""
    if request.preset is None:
        return ()
    out = []
    for precision in dict.fromkeys(("fp32", request.preset.setup.precision)):
        setup = replace(request.setup, precision=precision, kv_precision=None, dp=1, tp=1,
                        pp=1, zero=0 if request.setup.offload != "params" else 3)
        try:
            est = estimate(request.spec, request.workload, setup)
        except BudgetError:
            continue
        one = replace(request.workload, batch=1, grad_accum=1)
        mb = None
        if reference is not None:
            mb = max_batch_size(estimate(request.spec, one, setup),
                                reference.hardware.gpu.memory_bytes)
        out.append(Regime(precision, est.total_bytes, mb))
    return tuple(out)


__all__ = ["MAX_GPUS", "SORTS", "Plan", "PlanInput", "Regime", "make_plan"]
