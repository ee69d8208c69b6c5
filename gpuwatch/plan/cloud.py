"""Cloud fit: which instance runs each fitting configuration, what a step and an epoch
cost, the cheapest, and what spot capacity means for checkpoints.

A configuration of n GPUs runs on the cheapest instance of its GPU with at least n
GPUs: the whole node is billed, idle GPUs included. Beyond one node it runs on
``n / gpus`` instances of a full node of that GPU (8 GPUs with NVLink or Infinity
Fabric), all billed. An instance whose GPUs talk over PCIe slows a multi-GPU layout's
communication inside the node to PCIe speed (its time is recomputed).

With the size of the whole job (``job_samples``: the data set times the epochs, or the
tokens to train on over the sequence length), each option also says how long the job
takes on it and what it costs.

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
    instances: int = 1  # nodes rented
    job_steps: int | None = None  # the whole job

    @property
    def gpus_rented(self) -> int:
        return self.instances * self.instance.gpus

    @property
    def per_hour(self) -> float:
        return self.instance.on_demand_per_hour * self.instances

    @property
    def job_s(self) -> float | None:
        return None if self.job_steps is None else self.job_steps * self.step.total_s

    @property
    def job_cost(self) -> float | None:
        return None if self.job_steps is None else self.job_steps * self.cost_per_step

    @property
    def spot_job_cost(self) -> float | None:
        if self.job_steps is None or self.spot_cost_per_step is None:
            return None
        return self.job_steps * self.spot_cost_per_step

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


def fit_instance(config: Config, instance: Instance, dataset_samples: int | None,
                 job_samples: float | None = None) -> CloudFit:
    """The configuration on ``instance`` (as many as it takes): its step time there and
    what a step costs."""
    assert config.step is not None
    step = config.step
    if config.gpus > 1 and not instance.fast_link and step.comm_bytes:
        step = step.over_link(config.hardware.sheet.pcie_bytes_per_s)
    count = max(1, math.ceil(config.gpus / instance.gpus))
    hours = step.total_s / 3600
    spot = None if instance.spot_per_hour is None else instance.spot_per_hour * hours * count
    job = None if job_samples is None else math.ceil(job_samples / config.samples_per_step)
    return CloudFit(config, instance, step, instance.on_demand_per_hour * hours * count, spot,
                    steps_per_epoch(dataset_samples, config.samples_per_step), count, job)


def _holds(instance: Instance, config: Config) -> bool:
    if instance.gpu != config.hardware.name:
        return False
    if config.gpus <= instance.gpus:
        return True
    # beyond one node: full nodes with a fast link inside, as many as it takes
    return instance.gpus == config.hardware.sheet.node and instance.fast_link


def cloud_fits(configs: list[Config], book: PriceBook, dataset_samples: int | None,
               job_samples: float | None = None) -> list[CloudFit]:
    """Each fitting configuration on its cheapest instance, cheapest per step first."""
    out = []
    for config in configs:
        if not config.fits:
            continue
        options = [fit_instance(config, i, dataset_samples, job_samples)
                   for i in book.instances if _holds(i, config)]
        if options:
            out.append(min(options, key=lambda f: f.cost_per_step))
    return sorted(out, key=lambda f: f.cost_per_step)


def spot_advice(checkpoint_bytes: int, book: PriceBook) -> SpotAdvice:
    write_s = checkpoint_bytes / book.checkpoint_write_bytes_per_s
    mtbi_s = book.mean_hours_between_interruptions * 3600
    return SpotAdvice(checkpoint_bytes, write_s, math.sqrt(2 * write_s * mtbi_s), mtbi_s)
