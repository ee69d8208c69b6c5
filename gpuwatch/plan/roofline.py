"""Step time from a roofline: compute against the dense peak, bytes against bandwidth,
pipeline bubbles, and the communication the parallel layout leaves exposed.

A micro-batch takes ``max(FLOPs / (peak · efficiency), bytes / (bandwidth ·
bandwidth efficiency))``: whichever resource it exhausts first. Under FP8 the weight
matmuls run at the FP8 peak (at :data:`~gpuwatch.plan.efficiency.FP8_FACTOR` of the
efficiency) and attention at the bf16 peak. A step is ``accum`` micro-batches, plus
the pipeline bubble (Megatron's interleaved 1F1B: ``(p − 1) / v`` micro-batch times for
``p`` stages of ``v`` chunks of about two layers each; :func:`virtual_stages`), plus the
optimizer's own pass over its states (bandwidth-bound), plus the communication that does
not hide behind compute (:mod:`gpuwatch.plan.comm` says what frameworks overlap), plus
offload traffic over PCIe. A decoder's flash attention executes half the attention FLOPs
counted (:func:`causal_share`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpuwatch.budget.estimator import Estimate
from gpuwatch.budget.precision import get_precision
from gpuwatch.budget.specs import CnnSpec, ModelSpec, TransformerSpec
from gpuwatch.plan.comm import CommPart, Links, comm_parts, ring
from gpuwatch.plan.efficiency import Efficiency
from gpuwatch.plan.flops import (
    micro_step,
    optimizer_bytes,
    prefill_attention_flops,
    prefill_flops,
    trainable_params,
)
from gpuwatch.plan.hardware import Hardware

__all__ = ["Efficiency", "StepTime", "comm_bytes", "link_for", "offload_bytes", "ring",
           "step_time"]

@dataclass(frozen=True)
class StepTime:
    """One optimizer step (training) or one decoding step (inference) on one GPU."""

    flops: float  # per GPU, the whole step
    bytes_moved: float  # over the memory bus, per GPU
    comm_bytes: float  # sent over the links, per GPU
    compute_s: float  # the step's micro-batches at the compute roof
    memory_s: float  # … at the bandwidth roof (optimizer pass included)
    comm_s: float  # all of the communication, hidden or not
    link_bytes_per_s: float  # inside the node
    precision_format: str
    micro_s: float  # one micro-batch, the larger of its two roofs
    accum: int = 1  # micro-batches per step
    optimizer_s: float = 0.0  # the optimizer's pass over its states
    offload_bytes: float = 0.0  # over PCIe to and from CPU memory, per GPU
    offload_s: float = 0.0
    prefill_s: float = 0.0  # inference: the prompt's forward pass, before decoding
    pp: int = 1  # pipeline stages: (pp − 1) / virtual micro-batch slots of bubble
    virtual: int = 1  # model chunks per pipeline stage (interleaved schedule)
    comm_exposed_s: float | None = None  # None: all of comm_s (no overlap)
    network_bytes_per_s: float = 0.0  # between nodes, per GPU
    parts: tuple[CommPart, ...] = field(default=(), repr=False)
    kv_bytes: float = 0.0  # inference: of bytes_moved, the KV cache read per token

    @property
    def exposed_s(self) -> float:
        """Communication left on the critical path."""
        return self.comm_s if self.comm_exposed_s is None else self.comm_exposed_s

    @property
    def hidden_s(self) -> float:
        return self.comm_s - self.exposed_s

    @property
    def bubble_s(self) -> float:
        return (self.pp - 1) * self.micro_s / self.virtual

    @property
    def total_s(self) -> float:
        return self.busy_s + self.exposed_s + self.offload_s

    @property
    def busy_s(self) -> float:
        """Compute or memory, whichever binds each micro-batch, the pipeline bubble and
        the optimizer pass."""
        return self.micro_s * self.accum + self.bubble_s + self.optimizer_s

    @property
    def bound(self) -> str:
        """"compute", "memory", "communication" or "offload" (PCIe traffic to CPU
        memory): the largest part of the step."""
        parts = {"compute": self.compute_s, "memory": self.memory_s,
                 "communication": self.exposed_s, "offload": self.offload_s}
        return max(parts, key=lambda k: parts[k])

    def part_times(self) -> list[tuple[str, float, float]]:
        """Each kind of traffic: (kind, its time, the part of it left exposed)."""
        links = Links(self.link_bytes_per_s, self.network_bytes_per_s or self.link_bytes_per_s)
        return [(x.kind, links.time(x), links.exposed(x)) for x in self.parts]

    def over_link(self, link_bytes_per_s: float) -> StepTime:
        """The same step with the node's traffic over another link (a PCIe-only node)."""
        if not self.parts:
            comm = self.comm_bytes / link_bytes_per_s if self.comm_bytes else 0.0
            return replace(self, link_bytes_per_s=link_bytes_per_s, comm_s=comm,
                           comm_exposed_s=None)
        links = Links(link_bytes_per_s, self.network_bytes_per_s or link_bytes_per_s)
        return replace(self, link_bytes_per_s=link_bytes_per_s,
                       comm_s=sum(links.time(x) for x in self.parts),
                       comm_exposed_s=sum(links.exposed(x) for x in self.parts))


def comm_bytes(spec: ModelSpec, est: Estimate, accum: int) -> float:
    """Bytes each GPU sends per step under the estimate's layout."""
    return sum(x.bytes for x in comm_parts(spec, est, accum, 8, 0.0, 0.0, 0.0))


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
    moved = trainable_params(est) / s.tp / s.pp / shard * (p.grad_bytes + p.weight_bytes)
    if s.offload == "params":
        moved += 2 * accum * est.params / s.tp / s.pp / s.dp * p.weight_bytes
    return moved


def link_for(hw: Hardware, gpus: int) -> float:
    """The per-direction bandwidth the GPUs of one node share: the fast domain when they
    all fit in it, else PCIe."""
    sheet = hw.sheet
    span = min(gpus, sheet.node)
    return sheet.link_bytes_per_s if span <= sheet.fast_domain else sheet.pcie_bytes_per_s


def virtual_stages(spec: ModelSpec, pp: int) -> int:
    """Model chunks per pipeline stage under Megatron's interleaved schedule, as its
    performance recipes set them: about two layers per chunk (Llama 3 70B on 8 stages:
    5; 405B: 8). A pipeline of one stage, or of a CNN, has one."""
    if pp <= 1 or not isinstance(spec, TransformerSpec):
        return 1
    return max(1, spec.total_layers // (2 * pp))


def _compute_s(flops: float, other: float, peaks_matmul: float, peaks_other: float,
               eff: float, matmul_eff: float, causal: float = 1.0) -> float:
    return (flops - other) / (peaks_matmul * matmul_eff) + other * causal / (peaks_other * eff)


def causal_share(spec: ModelSpec, est: Estimate) -> float:
    """The share of the counted attention FLOPs a fused kernel executes over a full
    sequence: a decoder's causal mask lets flash attention skip the blocks above the
    diagonal (half); eager attention and encoders compute them all. (FLOP counts stay
    non-causal, as MFU figures quote them.)"""
    causal = isinstance(spec, TransformerSpec) and spec.arch == "decoder"
    return 0.5 if causal and est.setup.flash_attention else 1.0


def step_time(spec: ModelSpec, est: Estimate, hw: Hardware, accum: int,
              efficiency: Efficiency, gpus: int, cp: int = 1,
              network_bytes_per_s: float | None = None) -> StepTime:
    """The roofline time of a step of ``accum`` micro-batches of ``est``'s workload."""
    micro = micro_step(spec, est, cp)
    precision = est.setup.precision
    peaks = hw.peaks(precision, convolutions=isinstance(spec, CnnSpec))
    eff = efficiency.compute
    if peaks.matmul_format.startswith("fp32") and efficiency.cuda_cores is not None:
        eff = efficiency.cuda_cores  # CUDA cores are not starved the way tensor cores are
    matmul_eff = eff * (efficiency.fp8_factor if peaks.matmul_format == "fp8" else 1.0)
    bytes_s = hw.gpu.bandwidth_bytes_per_s * efficiency.bandwidth
    train = est.workload.mode == "train"
    causal = causal_share(spec, est)
    compute_micro = _compute_s(micro.flops, micro.other_flops, peaks.matmul, peaks.other,
                               eff, matmul_eff, causal if train else 1.0)
    memory_micro = micro.bytes_moved / bytes_s
    opt_bytes = optimizer_bytes(est)
    optimizer_s = opt_bytes / bytes_s
    frozen = est.setup.lora_rank > 0 or get_precision(precision).quantized
    backward = compute_micro * ((1 / 2 if frozen else 2 / 3) if train else 0.0)
    attention = micro.other_flops * causal / (peaks.other * eff) * accum
    network = network_bytes_per_s or hw.sheet.network_bytes_per_s
    links = Links(link_for(hw, gpus), network)
    virtual = virtual_stages(spec, est.setup.pp)
    parts = tuple(comm_parts(spec, est, accum, hw.sheet.node, backward,
                             compute_micro * accum, attention, cp, virtual))
    host = offload_bytes(est, accum)
    prefill = 0.0
    if est.workload.mode == "infer" and isinstance(spec, TransformerSpec):
        prefill = max(_compute_s(prefill_flops(spec, est), prefill_attention_flops(spec, est),
                                 peaks.matmul, peaks.other, eff, matmul_eff, causal),
                      est.breakdown.parameters / bytes_s) * accum
    return StepTime(
        flops=micro.flops * accum,
        bytes_moved=micro.bytes_moved * accum + opt_bytes,
        comm_bytes=sum(x.bytes for x in parts),
        compute_s=compute_micro * accum,
        memory_s=memory_micro * accum + optimizer_s,
        comm_s=sum(links.time(x) for x in parts),
        link_bytes_per_s=links.intra,
        precision_format=peaks.matmul_format + (
            f", attention {peaks.other_format}" if peaks.other_format != peaks.matmul_format
            and isinstance(spec, TransformerSpec) else ""),
        micro_s=max(compute_micro, memory_micro),
        accum=accum,
        optimizer_s=optimizer_s,
        offload_bytes=host,
        offload_s=host / hw.sheet.pcie_bytes_per_s,
        prefill_s=prefill,
        pp=est.setup.pp,
        virtual=virtual,
        comm_exposed_s=sum(links.exposed(x) for x in parts),
        network_bytes_per_s=network,
        parts=parts,
        kv_bytes=est.breakdown.kv_cache * accum if not train else 0.0,
    )
