"""Model states per GPU: parameters, gradients and optimizer states.

Walks the model's parameter groups once, applying the precision regime, LoRA,
quantization, sparsity, and then tensor/pipeline parallelism, ZeRO and offload.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuwatch.budget.precision import (
    PRECISIONS,
    OptimizerInfo,
    Precision,
    optimizer_state_elements,
    state_bytes,
)
from gpuwatch.budget.specs import ModelSpec, ParamGroup, TransformerSpec
from gpuwatch.budget.workload import Setup, lora_target_set


@dataclass(frozen=True)
class States:
    """Bytes on one GPU (floats until the estimator rounds them)."""

    weights: float = 0.0
    grads: float = 0.0
    optimizer: float = 0.0  # persistent: states (and fp32 master weights)
    step_temp: float = 0.0  # allocated only inside optimizer.step()
    trainable: int = 0
    stored_params: int = 0

    def __add__(self, other: States) -> States:
        return States(
            self.weights + other.weights,
            self.grads + other.grads,
            self.optimizer + other.optimizer,
            self.step_temp + other.step_temp,
            self.trainable + other.trainable,
            self.stored_params + other.stored_params,
        )

    def scaled(self, w: float = 1, g: float = 1, o: float = 1) -> States:
        return replace(
            self,
            weights=self.weights * w,
            grads=self.grads * g,
            optimizer=self.optimizer * o,
            step_temp=self.step_temp * o,
        )

    def _tuple(self) -> tuple[float, ...]:
        return (
            self.weights,
            self.grads,
            self.optimizer,
            self.step_temp,
            self.trainable,
            self.stored_params,
        )


def _is_block_matmul(g: ParamGroup) -> bool:
    return g.per_layer and g.kind in ("linear", "conv")


def _stored_weight_bytes(g: ParamGroup, p: Precision, sparsity: float) -> float:
    if not _is_block_matmul(g):
        return g.numel * p.other_weight_bytes
    if not sparsity:
        return g.numel * p.weight_bytes
    nnz = g.numel * (1 - sparsity)
    # the smaller of CSR with 32-bit column indices and a 1-bit mask per weight
    return nnz * p.weight_bytes + min(4 * nnz, g.numel / 8)


def adapter_precision(p: Precision) -> Precision:
    """LoRA adapters: fp32 weights, gradients and states in every regime, as PEFT keeps
    them (``autocast_adapter_dtype=True`` upcasts adapters of a 16-bit base)."""
    return PRECISIONS["amp-bf16"]


# which projections each block parameter group holds, and how many of its tensors each
_GROUP_PROJECTIONS = {
    "q": (("q", 1),), "kv": (("k", 2), ("v", 2)), "o": (("o", 1),),
    "in": (("gate", 2), ("up", 2)), "out": (("down", 1),),
}


def _targeted_count(g: ParamGroup, targets: frozenset[str], gated: bool) -> int:
    """How many of ``g``'s ``count`` tensors get adapters under ``targets``."""
    kind = g.name.rsplit(".", 1)[-1]
    if kind == "in" and not gated:
        return g.count if "up" in targets else 0
    if kind not in _GROUP_PROJECTIONS:
        return g.count if targets >= frozenset(("q", "k", "v", "o", "gate", "up", "down")) \
            else 0
    return sum(g.count // share for name, share in _GROUP_PROJECTIONS[kind] if name in targets)


def lora_groups(
    groups: tuple[ParamGroup, ...],
    rank: int,
    targets: frozenset[str] | None = None,
    gated: bool = True,
) -> tuple[ParamGroup, ...]:
    """A (rank × in) and B (out × rank) for each targeted matmul of the repeated blocks
    (``targets`` None: every one)."""
    out: list[ParamGroup] = []
    for g in groups:
        if not _is_block_matmul(g):
            continue
        n = g.count if targets is None else _targeted_count(g, targets, gated)
        if n:
            out.append(ParamGroup(g.name + ".lora_A", g.rows, rank, n, "linear"))
            out.append(ParamGroup(g.name + ".lora_B", rank, g.cols, n, "linear"))
    return tuple(out)


def _train_states(
    groups: tuple[ParamGroup, ...], p: Precision, opt: OptimizerInfo, foreach: bool
) -> States:
    n = sum(g.numel for g in groups)
    sb = state_bytes(opt, p)
    elements = sum(
        optimizer_state_elements(opt, g.rows, g.cols, g.count, g.kernel, g.kind == "conv")
        for g in groups
    )
    fused = p.master_bytes > 0  # Megatron/DeepSpeed fused optimizers: no temporaries
    temp = n * opt.step_temp_states * sb if foreach and not fused else 0.0
    return States(0.0, n * p.grad_bytes, n * p.master_bytes + elements * sb, temp, n, 0)


def group_states(
    groups: tuple[ParamGroup, ...],
    p: Precision,
    opt: OptimizerInfo,
    setup: Setup,
    train: bool,
    spec: ModelSpec | None = None,
) -> States:
    """States of ``groups`` on one GPU before parallelism."""
    weights = sum(_stored_weight_bytes(g, p, setup.sparsity) for g in groups)
    stored = sum(g.numel for g in groups)
    base = States(weights=weights, stored_params=stored)
    if not train:
        return base
    if setup.lora_rank:
        gated = not isinstance(spec, TransformerSpec) or spec.gated_mlp
        adapters = lora_groups(groups, setup.lora_rank, lora_target_set(setup.lora_targets),
                               gated)
        ap = adapter_precision(p)
        lora = _train_states(adapters, ap, opt, setup.foreach_optimizer)
        return base + replace(lora, weights=sum(g.numel for g in adapters) * ap.weight_bytes)
    return base + _train_states(groups, p, opt, setup.foreach_optimizer)


def split_by_stage(
    spec: ModelSpec,
) -> tuple[tuple[ParamGroup, ...], tuple[ParamGroup, ...], tuple[ParamGroup, ...]]:
    """(repeated layers, first pipeline stage's extras, last stage's extras)."""
    groups = spec.param_groups()
    layers = tuple(g for g in groups if g.per_layer)
    first = tuple(g for g in groups if not g.per_layer and g.kind == "embedding")
    last = tuple(g for g in groups if not g.per_layer and g.kind != "embedding")
    if isinstance(spec, TransformerSpec) and spec.tied_embeddings and spec.arch != "vit":
        last += tuple(g for g in first if g.name == "embed")  # the tied head's copy
    return layers, first, last


def model_states(
    spec: ModelSpec, p: Precision, opt: OptimizerInfo, setup: Setup, train: bool
) -> States:
    """Parameters, gradients and optimizer states on the most loaded GPU."""
    layers, first, last = split_by_stage(spec)
    if setup.pp > 1:
        a = group_states(first, p, opt, setup, train, spec)
        b = group_states(last, p, opt, setup, train, spec)
        extra = a if a.weights + a.optimizer >= b.weights + b.optimizer else b
        s = group_states(layers, p, opt, setup, train, spec).scaled(
            1 / setup.pp, 1 / setup.pp, 1 / setup.pp
        )
        s = replace(s, trainable=s.trainable // setup.pp, stored_params=s.stored_params // setup.pp)
        s = s + extra
    else:
        s = group_states(spec.param_groups(), p, opt, setup, train, spec)
    t = setup.tp
    s = s.scaled(1 / t, 1 / t, 1 / t)
    n = setup.dp
    if setup.zero >= 1:
        s = s.scaled(o=1 / n)
    if setup.zero >= 2:
        s = s.scaled(g=1 / n)
    if setup.zero >= 3:
        s = s.scaled(w=1 / n)
    if setup.zero and train and fp32_grad_partition(p, setup):
        # DeepSpeed's mixed precision reduces the 16-bit gradients into an fp32 partition
        # of each rank's share: stages 1 and 2 keep both, stage 3 only the fp32 one
        fp32 = s.trainable * 4 / n
        s = replace(s, grads=fp32 if setup.zero == 3 else s.grads + fp32)
    return s


def fp32_grad_partition(p: Precision, setup: Setup) -> bool:
    """Whether ZeRO keeps an fp32 gradient partition: DeepSpeed's mixed precision (16-bit
    weights, fp32 master), full fine-tuning."""
    return p.master_bytes > 0 and not setup.lora_rank


def gathered_bytes(spec: ModelSpec, setup: Setup) -> float:
    """What ZeRO-3 holds gathered at once, as DeepSpeed 0.19.8's estimator counts it:
    4 B × the largest single module's parameters (a transformer's embedding or head,
    a CNN's classifier)."""
    # a bare count's unplaced remainder is spread over the layers, not one module
    largest = max((g.rows * g.cols for g in spec.param_groups() if g.name != "unassigned"),
                  default=0)
    return 4 * largest / setup.tp
