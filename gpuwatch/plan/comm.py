"""What a parallel layout sends over the links, per GPU and step, and how much of it
hides behind compute.

Ring collectives: each GPU sends ``2·(n−1)/n`` of the buffer in an all-reduce,
``(n−1)/n`` in a reduce-scatter or an all-gather. Groups are placed as Megatron-LM
places them: tensor parallel innermost (always inside one node), then context
parallel, data parallel, and pipeline stages outermost. A group whose GPUs span more
than one node runs at the inter-node link's speed per GPU (hierarchical collectives
send each GPU's share over its own NIC); inside a node at the fast domain's (NVLink,
Infinity Fabric) or PCIe's.

What frameworks overlap, and the plan with them:

* data parallel (ZeRO 0–1): gradient buckets are all-reduced while the backward pass of
  the last micro-batch runs (PyTorch DDP, Megatron ``--overlap-grad-reduce``); the
  last bucket (25 MB) cannot hide;
* ZeRO-2: each micro-batch's reduce-scatter hides behind the backward passes; the
  all-gather of the updated weights after the optimizer step does not;
* ZeRO-3 / FSDP: the next layer's gather is prefetched while this one computes, so the
  gathers hide behind the forward and backward passes, all but the first layer's;
* context parallel: ring attention passes key/value blocks while the attention of the
  block in hand computes;
* tensor parallel all-reduces and pipeline sends sit on the critical path: exposed
  (an interleaved pipeline sends ``v`` times as often, once per model chunk).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.budget.estimator import Estimate
from gpuwatch.budget.precision import get_precision
from gpuwatch.budget.specs import ModelSpec, TransformerSpec
from gpuwatch.plan.flops import sequence, trainable_params

BUCKET_BYTES = 25 * 10**6  # PyTorch DDP's default bucket_cap_mb
# Start-up time of one collective (the α of an α-β model): NCCL's small all-reduces take
# about 10 µs inside an NVLink node and some 25 µs across nodes. It matters where many
# small collectives run: tensor-parallel decoding, two all-reduces per layer per token.
LATENCY_INTRA_S = 10e-6
LATENCY_INTER_S = 25e-6


@dataclass(frozen=True)
class CommPart:
    """One kind of traffic: bytes each GPU sends per step, over which link, and how much
    of it can hide behind compute."""

    kind: str
    bytes: float
    inter_node: bool
    hide_s: float = 0.0  # compute time it can overlap with
    floor_bytes: float = 0.0  # the share that never hides (the last bucket, first layer)
    count: float = 0.0  # collectives per step (each pays a start-up latency)


@dataclass(frozen=True)
class Links:
    """Per-GPU, per-direction bandwidth inside a node and between nodes."""

    intra: float
    inter: float

    def of(self, part: CommPart) -> float:
        return self.inter if part.inter_node else self.intra

    def time(self, part: CommPart) -> float:
        if not part.bytes:
            return 0.0
        latency = LATENCY_INTER_S if part.inter_node else LATENCY_INTRA_S
        return part.bytes / self.of(part) + part.count * latency

    def exposed(self, part: CommPart) -> float:
        """The part of its time that stays on the critical path."""
        t = self.time(part)
        floor = min(part.bytes, part.floor_bytes) / self.of(part) if part.bytes else 0.0
        return max(t - part.hide_s, floor, 0.0)


def ring(n: int) -> float:
    """The share of a buffer each GPU sends in a reduce-scatter or all-gather of n GPUs."""
    return (n - 1) / n if n > 1 else 0.0


def comm_parts(spec: ModelSpec, est: Estimate, accum: int, gpus_per_node: int,
               backward_s: float, busy_s: float, attention_s: float,
               cp: int = 1, virtual: int = 1) -> list[CommPart]:
    """The traffic of ``est``'s layout per GPU and step (module docstring).

    ``backward_s`` is one micro-batch's backward pass, ``busy_s`` all micro-batches'
    compute, ``attention_s`` their attention: the windows traffic can hide in.
    """
    wl, s = est.workload, est.setup
    p = get_precision(s.precision)
    weight_bytes = 2.0 if p.name == "fp8" else p.weight_bytes  # FP8 copies are not sent
    train = wl.mode == "train"
    tp, pp, dp = s.tp, s.pp, s.dp
    gpus = tp * pp * dp * cp
    node = max(1, gpus_per_node)
    out: list[CommPart] = []
    if train and dp > 1:
        grads = trainable_params(est) / tp / pp * p.grad_bytes
        weights = est.params / tp / pp * weight_bytes
        f = ring(dp)
        across = tp * cp * dp > node
        if s.zero <= 1:
            out.append(CommPart("data-parallel gradient all-reduce", 2 * f * grads, across,
                                backward_s, 2 * f * min(grads, BUCKET_BYTES)))
        elif s.zero == 2:
            out.append(CommPart("ZeRO-2 gradient reduce-scatter", f * grads * accum, across,
                                backward_s * accum, f * min(grads, BUCKET_BYTES)))
            out.append(CommPart("ZeRO-2 weight all-gather", f * weights, across))
        else:
            per_layer = max(1, getattr(spec, "total_layers", 1))
            total = (2 * f * weights + f * grads) * accum
            out.append(CommPart("ZeRO-3 gathers and reduce-scatter", total, across, busy_s,
                                total / (per_layer * accum)))
    if isinstance(spec, TransformerSpec):
        tokens = wl.batch * (sequence(spec, est) if train else 1)
        layers = spec.total_layers / pp
        rounds = accum if train else 1
        act = p.act_bytes
        if tp > 1:
            per_layer = (4 if train else 2) * 2 * ring(tp) * tokens * spec.hidden * act
            calls = (4 if train else 2) * layers * rounds
            out.append(CommPart("tensor-parallel all-reduces", per_layer * layers * rounds,
                                tp > node, count=calls))
        if pp > 1:
            sends = (2 if train else 1) * tokens * spec.hidden * act / tp
            out.append(CommPart("pipeline sends", sends * rounds * virtual, gpus > node))
        if cp > 1 and train:
            kv = 2 * tokens * spec.kv * spec.d * act / tp
            out.append(CommPart("context-parallel key/value exchange",
                                3 * (cp - 1) * kv * layers * rounds, tp * cp > node,
                                attention_s))
    return out


def comm_bytes(parts: list[CommPart]) -> float:
    return sum(x.bytes for x in parts)
