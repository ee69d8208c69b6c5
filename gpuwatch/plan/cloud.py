"""Cloud fit: which instance runs each fitting configuration, what a step and an epoch
cost, the cheapest, and what spot capacity means for checkpoints.

A configuration of n GPUs runs on the cheapest instance of its GPU with at least n
GPUs: the whole node is billed, idle GPUs included. An instance whose GPUs talk over
PCIe slows a multi-GPU layout's communication to PCIe speed (its time is recomputed).

Spot (preemptible) capacity is reclaimed at short notice (two minutes on AWS, thirty
seconds on Google Cloud and Azure): work since the last checkpoint is lost. The
checkpoint interval that loses least is Young's (1974) ``√(2 · write time · mean time
between interruptions)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuwatch.plan.layouts import Config
from gpuwatch.plan.prices import Instance, PriceBook
from gpuwatch.plan.roofline import StepTime

SPOT_CAVEAT = ("spot capacity can be reclaimed at any time with two minutes' notice (AWS; "
               "30 s on Google Cloud and Azure): checkpoint often and resume automatically")


@dataclass(frozen=True)
class CloudFit:
    config: Config
    instance: Instance
    step: StepTime  # on this instance's interconnect
    cost_per_step: float
    spot_cost_per_step: float | None
    steps_per_epoch: int | None

    @property
    def cost_per_epoch(self) -> float | None:
        return None if self.steps_per_epoch is None else self.cost_per_step * self.steps_per_epoch

    @property
    def spot_cost_per_epoch(self) -> float | None:
        if self.steps_per_epoch is None or self.spot_cost_per_step is None:
            return None
        return self.spot_cost_per_step * self.steps_per_epoch


@dataclass(frozen=True)
class SpotAdvice:
    checkpoint_bytes: int
    write_s: float
    interval_s: float  # Young's optimum
    mean_s_between_interruptions: float
    caveat: str = SPOT_CAVEAT


def steps_per_epoch(dataset_samples: int | None, samples_per_step: int) -> int | None:
    if dataset_samples is None or samples_per_step < 1:
        return None
    return math.ceil(dataset_samples / samples_per_step)


def fit_instance(config: Config, instance: Instance, dataset_samples: int | None) -> CloudFit:
    """The configuration on ``instance``: its step time there and what a step costs."""
    assert config.step is not None
    step = config.step
    if config.gpus > 1 and not instance.fast_link and step.comm_bytes:
        step = step.over_link(config.hardware.sheet.pcie_bytes_per_s)
    hours = step.total_s / 3600
    spot = None if instance.spot_per_hour is None else instance.spot_per_hour * hours
    return CloudFit(config, instance, step, instance.on_demand_per_hour * hours, spot,
                    steps_per_epoch(dataset_samples, config.samples_per_step))


def cloud_fits(configs: list[Config], book: PriceBook,
               dataset_samples: int | None) -> list[CloudFit]:
    """Each fitting configuration on its cheapest instance, cheapest per step first."""
    out = []
    for config in configs:
        if not config.fits:
            continue
        options = [fit_instance(config, i, dataset_samples) for i in book.instances
                   if i.gpu == config.hardware.name and i.gpus >= config.gpus]
        if options:
            out.append(min(options, key=lambda f: f.cost_per_step))
    return sorted(out, key=lambda f: f.cost_per_step)


def spot_advice(checkpoint_bytes: int, book: PriceBook) -> SpotAdvice:
    write_s = checkpoint_bytes / book.checkpoint_write_bytes_per_s
    mtbi_s = book.mean_hours_between_interruptions * 3600
    return SpotAdvice(checkpoint_bytes, write_s, math.sqrt(2 * write_s * mtbi_s), mtbi_s)
