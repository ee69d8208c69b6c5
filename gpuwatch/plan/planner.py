"""The plan: every catalog GPU at 1, 2, 4 and 8, their step times, the cloud fit and the
levers, for one model and setup. Pure computation (no I/O but the price file, read by
the caller); takes tens of milliseconds, so windows run it off the GUI thread."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.estimator import Estimate, estimate
from gpuwatch.budget.fit import min_gpus_zero3
from gpuwatch.budget.solver import max_batch_size
from gpuwatch.budget.specs import ModelSpec
from gpuwatch.budget.workload import Setup, Workload
from gpuwatch.plan.cloud import CloudFit, SpotAdvice, cloud_fits, spot_advice
from gpuwatch.plan.errors import PlanError
from gpuwatch.plan.hardware import Hardware, catalog
from gpuwatch.plan.layouts import GPU_COUNTS, Config, Estimates, Layout, evaluate
from gpuwatch.plan.levers import LeverCost, lever_costs
from gpuwatch.plan.presets import Preset
from gpuwatch.plan.prices import PriceBook
from gpuwatch.plan.roofline import Efficiency

SORTS = ("time", "cost", "memory")


@dataclass(frozen=True)
class PlanInput:
    spec: ModelSpec
    workload: Workload
    setup: Setup
    efficiency: Efficiency = field(default_factory=Efficiency)
    dataset_samples: int | None = None
    gpus: tuple[str, ...] = ()  # restrict to these catalog names (empty: all)
    counts: tuple[int, ...] = GPU_COUNTS
    preset: Preset | None = None


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
    # GPU name -> the fewest GPUs that hold the model under ZeRO-3 (None: not even 4096),
    # for the GPUs where no planned count fits; training only
    beyond_node: dict[str, int | None] = field(default_factory=dict)
    # a preset's estimate in fp32 and in its recommended regime (empty without a preset)
    regimes: tuple[Regime, ...] = ()

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
    hardware = tuple(h for h in catalog() if not request.gpus or h.name in request.gpus)
    cache = Estimates(request.spec, request.workload, request.setup)
    configs = tuple(evaluate(request.spec, cache, hw, n, request.efficiency)
                    for hw in hardware for n in request.counts)
    fits = [c for c in configs if c.fits]
    cloud = tuple(cloud_fits(list(configs), prices, request.dataset_samples)) if prices else ()
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
            levers = tuple(lever_costs(request.spec, reference, base, request.efficiency))
    spot = None
    if prices is not None and request.workload.mode == "train":
        one = cache.get(Layout(1, 1, 0), 1, 1)
        if one is not None:
            spot = spot_advice(_checkpoint_bytes(one), prices)
    return Plan(request, configs, cloud, reference, levers, spot, prices, hardware,
                _beyond_node(request, cache, hardware, configs),
                _regimes(request, reference))


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


def _beyond_node(request: PlanInput, cache: Estimates, hardware: tuple[Hardware, ...],
                 configs: tuple[Config, ...]) -> dict[str, int | None]:
    """For each GPU no planned count fits: how many it takes under ZeRO-3 at micro-batch
    1 (the budget's bisection), which means more than one node."""
    if request.workload.mode != "train":
        return {}
    one = cache.get(Layout(1, 1, 0), 1, 1)
    if one is None:
        return {}
    totals: dict[int, int] = {}
    out: dict[str, int | None] = {}
    for hw in hardware:
        if not any(c.fits for c in configs if c.hardware is hw):
            out[hw.name] = min_gpus_zero3(request.spec, one, hw.gpu.memory_bytes,
                                          totals=totals)
    return out

