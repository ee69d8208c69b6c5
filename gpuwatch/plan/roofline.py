"""Step time from a roofline: compute against the dense peak, bytes against bandwidth,
and the communication the parallel layout adds.

A micro-batch takes ``max(FLOPs / (peak · efficiency), bytes / (bandwidth ·
bandwidth efficiency))``: whichever resource it exhausts first. A step is ``accum``
micro-batches, the optimizer's own pass over its states (bandwidth-bound), and the
step's communication over the GPUs' link, counted as not overlapped with compute (an
upper bound: frameworks hide part of it behind the backward pass).

Communication per GPU, ring collectives (each GPU sends ``2·(n−1)/n`` of the buffer
in an all-reduce, ``(n−1)/n`` in a reduce-scatter or an all-gather):

* data parallel, ZeRO 0–1: one gradient all-reduce per step;
* ZeRO 2: a gradient reduce-scatter per micro-batch and an all-gather of the updated
  weights per step;
* ZeRO 3: weights all-gathered in the forward and again in the backward pass, and the
  gradients reduce-scattered, every micro-batch (1.5× data parallel's volume);
* tensor parallel (Megatron): two all-reduces of the layer's activations per layer
  forward and two backward (inference: the two forward ones).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.budget.estimator import Estimate
from gpuwatch.budget.precision import get_precision
from gpuwatch.budget.specs import ModelSpec, TransformerSpec
from gpuwatch.plan.flops import micro_step, optimizer_bytes, prefill_flops, sequence
from gpuwatch.plan.hardware import Hardware

DEFAULT_TRAIN_EFFICIENCY = 0.5  # of the dense peak: large transformer training reaches 40–60 %
DEFAULT_INFER_EFFICIENCY = 0.5
DEFAULT_BANDWIDTH_EFFICIENCY = 0.8  # of the data-sheet bandwidth: what copy kernels reach


@dataclass(frozen=True)
class Efficiency:
    """The fraction of the data-sheet peaks real kernels reach (measured, or assumed)."""

    compute: float = DEFAULT_TRAIN_EFFICIENCY
    bandwidth: float = DEFAULT_BANDWIDTH_EFFICIENCY
    source: str = "the default: large matmuls reach 40–60 % of the dense peak"


@dataclass(frozen=True)
class StepTime:
    """One optimizer step (training) or one decoding step (inference) on one GPU."""

    flops: float  # per GPU, the whole step
    bytes_moved: float  # over the memory bus, per GPU
    comm_bytes: float  # sent over the link, per GPU
    compute_s: float  # the step's micro-batches at the compute roof
    memory_s: float  # … at the bandwidth roof (optimizer pass included)
    comm_s: float
    link_bytes_per_s: float
    precision_format: str
    micro_s: float  # one micro-batch, the larger of its two roofs
    accum: int = 1  # micro-batches per step
    optimizer_s: float = 0.0  # the optimizer's pass over its states
    offload_bytes: float = 0.0  # over PCIe to and from CPU memory, per GPU
    offload_s: float = 0.0
    prefill_s: float = 0.0  # inference: the prompt's forward pass, before decoding

    @property
    def total_s(self) -> float:
        return self.busy_s + self.comm_s + self.offload_s

    @property
    def busy_s(self) -> float:
        """Compute or memory, whichever binds each micro-batch, plus the optimizer pass."""
        return self.micro_s * self.accum + self.optimizer_s

    @property
    def bound(self) -> str:
        """"compute", "memory", "communication" or "offload" (PCIe traffic to CPU
        memory): the largest part of the step."""
        parts = {"compute": self.compute_s, "memory": self.memory_s,
                 "communication": self.comm_s, "offload": self.offload_s}
        return max(parts, key=lambda k: parts[k])

    def over_link(self, link_bytes_per_s: float) -> StepTime:
        """The same step with its communication over another link (a PCIe-only node)."""
        from dataclasses import replace

        return replace(self, link_bytes_per_s=link_bytes_per_s,
                       comm_s=self.comm_bytes / link_bytes_per_s if self.comm_bytes else 0.0)


def ring(n: int) -> float:
    """The share of a buffer each GPU sends in a reduce-scatter or all-gather of n GPUs."""
    return (n - 1) / n if n > 1 else 0.0


def comm_bytes(spec: ModelSpec, est: Estimate, accum: int) -> float:
    """Bytes each GPU sends per step under the estimate's layout (module docstring)."""
    wl, s = est.workload, est.setup
    p = get_precision(s.precision)
    train = wl.mode == "train"
    total = 0.0
    if train and s.dp > 1:
        grads = est.trainable_params / s.tp * p.grad_bytes
        weights = est.params / s.tp * p.weight_bytes
        f = ring(s.dp)
        if s.zero <= 1:
            total += 2 * f * grads
        elif s.zero == 2:
            total += f * grads * accum + f * weights
        else:
            total += (2 * f * weights + f * grads) * accum
    if s.tp > 1 and isinstance(spec, TransformerSpec):
        tokens = wl.batch * (sequence(spec, est) if train else 1)
        per_layer = (4 if train else 2) * 2 * ring(s.tp) * tokens * spec.hidden * p.act_bytes
        total += per_layer * spec.total_layers * (accum if train else 1)
    return total


def offload_bytes(est: Estimate, accum: int) -> float:
    """PCIe bytes each GPU moves per step for what lives in CPU memory.

    An offloaded optimizer (ZeRO-Offload) receives the gradients and sends back the
    updated weights once per step; offloaded parameters (ZeRO-Infinity) are also
    brought up for the forward and again for the backward pass of every micro-batch
    (each GPU its shard, which the all-gather then spreads).
    """
    s = est.setup
    if s.offload is None or est.workload.mode != "train":
        return 0.0
    p = get_precision(s.precision)
    shard = s.dp if s.zero >= 2 else 1
    moved = est.trainable_params / s.tp / shard * (p.grad_bytes + p.weight_bytes)
    if s.offload == "params":
        moved += 2 * accum * est.params / s.tp / s.dp * p.weight_bytes
    return moved


def link_for(hw: Hardware, gpus: int) -> float:
    """The per-direction bandwidth the GPUs of a layout share: the fast domain when they
    all fit in it, else PCIe."""
    sheet = hw.sheet
    return sheet.link_bytes_per_s if gpus <= sheet.fast_domain else sheet.pcie_bytes_per_s


def step_time(spec: ModelSpec, est: Estimate, hw: Hardware, accum: int,
              efficiency: Efficiency, gpus: int) -> StepTime:
    """The roofline time of a step of ``accum`` micro-batches of ``est``'s workload."""
    micro = micro_step(spec, est)
    peak, fmt = hw.peak_flops(est.setup.precision)
    flops_s = peak * efficiency.compute
    bytes_s = hw.gpu.bandwidth_bytes_per_s * efficiency.bandwidth
    compute_micro = micro.flops / flops_s
    memory_micro = micro.bytes_moved / bytes_s
    opt_bytes = optimizer_bytes(est)
    optimizer_s = opt_bytes / bytes_s
    link = link_for(hw, gpus)
    sent = comm_bytes(spec, est, accum)
    host = offload_bytes(est, accum)
    return StepTime(
        flops=micro.flops * accum,
        bytes_moved=micro.bytes_moved * accum + opt_bytes,
        comm_bytes=sent,
        compute_s=compute_micro * accum,
        memory_s=memory_micro * accum + optimizer_s,
        comm_s=sent / link if sent else 0.0,
        link_bytes_per_s=link,
        precision_format=fmt,
        micro_s=max(compute_micro, memory_micro),
        accum=accum,
        optimizer_s=optimizer_s,
        offload_bytes=host,
        offload_s=host / hw.sheet.pcie_bytes_per_s,
        prefill_s=max(prefill_flops(spec, est) / flops_s,
                      est.breakdown.parameters / bytes_s) * accum
        if est.workload.mode == "infer" and isinstance(spec, TransformerSpec) else 0.0,
    )
