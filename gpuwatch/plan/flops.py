"""The work of one micro-batch: floating-point operations and bytes moved, per GPU.

Transformers (Kaplan et al. 2020, Narayanan et al. 2021): a matmul parameter costs 2
FLOPs per token forward and 4 backward (weight and input gradients), so training is
6·N·tokens; attention's score and context matmuls add 4·s·(heads·d) per token and layer
forward (non-causal count, as MFU figures quote it). Frozen weights (LoRA) skip their
weight gradients: backward is one forward, not two. Full checkpointing recomputes one
forward; selective checkpointing recomputes attention only.

CNNs have no closed form: each weight is applied once per output position, so a
layer costs 2·weights·positions forward, read off the budget's per-layer table (the
UNet's time-embedding projections run once per sample, its cross-attention keys and
values on the 77 text tokens).

Inference is one decoding step: each sequence of the batch makes one token (2·N FLOPs
and attention over the KV cache); CNNs run one forward pass.

Bytes are what must cross the memory bus at least once: weights read by each pass,
saved activations written forward and read backward, gradients written (and read back
under accumulation), the KV cache read once per token. The optimizer's traffic comes
once per optimizer step (:func:`optimizer_bytes`). Real kernels move more (see
docs/plan.md): this is the floor a roofline needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from gpuwatch.budget.estimator import Estimate
from gpuwatch.budget.precision import get_precision
from gpuwatch.budget.specs import CnnSpec, ModelSpec, TransformerSpec
from gpuwatch.budget.unet import HEADS, TEXT_TOKENS

_LOOKUPS = ("embed", "pos_embed", "type_embed")


@dataclass(frozen=True)
class MicroStep:
    """One micro-batch on one GPU."""

    flops: float
    bytes_moved: float
    samples: int  # sequences or images
    tokens: int  # tokens processed (decoding: tokens produced); images for CNNs
    other_flops: float = 0.0  # of ``flops``, what is not a weight matmul (attention)

    @property
    def matmul_flops(self) -> float:
        """The weight matmuls and convolutions: what FP8 and TF32 speed up."""
        return self.flops - self.other_flops


def matmul_params(spec: TransformerSpec) -> int:
    """Active parameters that take part in matmuls: embedding lookups do not (a tied
    input embedding does, as the output head)."""
    lookups = sum(g.numel for g in spec.param_groups() if g.name in _LOOKUPS
                  and not (g.name == "embed" and spec.tied_embeddings and spec.arch != "encoder"))
    return spec.active_params - lookups


def sequence(spec: ModelSpec, est: Estimate) -> int:
    """Tokens per sequence (a ViT's patches plus its class token)."""
    wl = est.workload
    if isinstance(spec, TransformerSpec) and spec.arch == "vit":
        h, w = wl.image or (spec.image, spec.image)
        return spec.seq_for_image(h, w)
    return wl.seq


def attention_flops(spec: TransformerSpec, batch: int, queries: int, keys: int) -> float:
    """Score and context matmuls, forward: 2·queries·keys·width each, every layer."""
    return 4.0 * batch * queries * keys * spec.heads * spec.d * spec.total_layers


@lru_cache(maxsize=32)
def cnn_forward_flops(spec: CnnSpec) -> float:
    """Forward FLOPs per sample: 2·weights·output positions per layer, plus attention.

    Each parameter group belongs to the table row whose name is its longest prefix; a
    row's width (output channels) is the output size of its last projection. Cached:
    a plan asks for the same spec hundreds of times.
    """
    rows = {row.name: row for row in spec.layers}
    groups = spec.param_groups()
    owner: dict[str, str] = {}
    width: dict[str, int] = {}
    for group in groups:
        parts = group.name.split(".")
        for cut in range(len(parts), 0, -1):
            name = ".".join(parts[:cut])
            if name in rows:
                owner[group.name] = name
                if cut < len(parts) and group.kind in ("conv", "linear"):
                    width[name] = group.rows if group.kind == "conv" else group.cols
                break
    flops = 0.0
    for group in groups:
        if group.kind not in ("conv", "linear"):
            continue
        row = rows.get(owner.get(group.name, ""))
        if row is None or "time_emb" in group.name or row.output_elements <= 0:
            positions = 1.0  # applied once per sample (time embedding, a classifier)
        elif group.kind == "conv":
            positions = row.output_elements / group.rows
        elif ".attn2.to_k" in group.name or ".attn2.to_v" in group.name:
            positions = TEXT_TOKENS
        else:
            positions = row.output_elements / max(1, width.get(row.name, group.cols))
        flops += 2.0 * group.numel * max(1.0, positions)
    for row in spec.layers:
        if row.scores:  # heads·n·m probabilities: QKᵀ and P·V cost 2·n·m·width each
            flops += 4.0 * row.scores / HEADS * max(1, width.get(row.name, 1))
    return flops


def micro_step(spec: ModelSpec, est: Estimate, cp: int = 1) -> MicroStep:
    """FLOPs and bytes of one micro-batch of the estimate's workload, on one GPU.

    Pipeline stages hold 1/pp of the layers; under context parallelism (``cp`` > 1) the
    estimate's sequence is this GPU's share, and its queries attend to all ``cp`` shares'
    keys (attention × cp)."""
    wl, setup, b = est.workload, est.setup, est.breakdown
    batch, tp = wl.batch, setup.tp * setup.pp
    other = 0.0
    train = wl.mode == "train"
    frozen = setup.lora_rank > 0 or get_precision(setup.precision).quantized
    if isinstance(spec, TransformerSpec):
        n = matmul_params(spec)
        s = sequence(spec, est)
        if train:
            dense = 2.0 * n * batch * s
            attn = attention_flops(spec, batch, s, s) * cp
            recompute = dense + attn if setup.checkpointing == "full" else (
                attn if setup.checkpointing == "selective" else 0.0)
            other = 3 * attn + (attn if setup.checkpointing != "none" else 0.0)
            flops = (dense + attn) + (1 if frozen else 2) * dense + 2 * attn + recompute
            tokens = batch * s
        else:
            other = attention_flops(spec, batch, 1, wl.kv_context)
            flops = 2.0 * n * batch + other
            tokens = batch
    else:
        forward = cnn_forward_flops(spec) * batch
        tokens = batch
        if train:
            flops = forward * (2 if frozen else 3) + (
                forward if setup.checkpointing == "full" else 0.0)
        else:
            flops = forward
    weights = b.parameters * (setup.dp if setup.zero == 3 else 1)  # ZeRO-3 gathers them
    if train:
        passes = 2 + (1 if setup.checkpointing == "full" else 0)
        moved = weights * passes + 2 * b.activations + b.gradients * (
            2 if wl.grad_accum > 1 else 1)
    elif isinstance(spec, TransformerSpec):
        moved = weights + b.kv_cache
    else:
        moved = weights + 2 * b.activations
    return MicroStep(flops / tp, float(moved), batch, tokens, other / tp)


def prefill_flops(spec: ModelSpec, est: Estimate) -> float:
    """Inference: the forward pass over the prompt (``seq`` tokens of each sequence of the
    batch) that fills the KV cache before decoding starts, on one GPU. 0 for CNNs and
    training."""
    wl = est.workload
    if wl.mode != "infer" or not isinstance(spec, TransformerSpec):
        return 0.0
    s = sequence(spec, est)
    flops = 2.0 * matmul_params(spec) * wl.batch * s + attention_flops(spec, wl.batch, s, s)
    return flops / est.setup.tp / est.setup.pp


def prefill_attention_flops(spec: ModelSpec, est: Estimate) -> float:
    """Of :func:`prefill_flops`, the attention's share (bf16 under FP8)."""
    if est.workload.mode != "infer" or not isinstance(spec, TransformerSpec):
        return 0.0
    s = sequence(spec, est)
    return attention_flops(spec, est.workload.batch, s, s) / est.setup.tp / est.setup.pp


def trainable_params(est: Estimate) -> float:
    """Parameters the optimizer updates, in the whole model: all of them, or LoRA's
    adapters (read from the estimate only then: its count is per layout)."""
    if est.workload.mode != "train":
        return 0.0
    if not est.setup.lora_rank:
        return float(est.params)
    return est.trainable_params / est.setup.tp * est.setup.pp


def optimizer_bytes(est: Estimate) -> float:
    """Once per optimizer step: states read and written, gradients read, weights (and
    fp32 master weights, counted among the states) read and written. Offloaded
    optimizers do this in CPU memory instead."""
    if est.workload.mode != "train" or est.setup.offload is not None:
        return 0.0
    b = est.breakdown
    trained = b.parameters * trainable_params(est) / max(1, est.params)  # LoRA: adapters
    return 2.0 * b.optimizer_states + b.gradients + 2.0 * trained
