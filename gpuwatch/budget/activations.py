"""Activation memory of transformers: Korthikanti et al. (2022), generalised.

Per layer, 16-bit, no recompute, the paper's count is s·b·h·(34 + 5·a·s/h) bytes:
attention 11·sbh + 5·a·s²·b, MLP 19·sbh, LayerNorms 4·sbh. We keep its structure
but count each saved tensor with its own width and dtype, so one formula covers:

* grouped-query attention (K and V are k·d wide where the kernel keeps them so;
  eager attention materialises them at h, as ``repeat_kv`` does),
* gated MLPs (SwiGLU keeps gate, up, SiLU(gate) and their product: 4·f) and
  mixtures of experts (each token's ``experts_per_token`` experts),
* torch autocast (residual stream and softmax in fp32, matmul inputs in 16 bits),
* dropout masks (1 byte on CUDA; absent when dropout is 0),
* tensor parallelism (÷t on the parallel part), sequence parallelism (÷t on the
  rest), selective recompute (drops the a·s² scores), full recompute (keeps the
  layer input), and flash attention (O(s) statistics instead of a·s² scores).

Sizes are bytes for ``b`` samples of ``s`` tokens. Every term is b × (c1·s + c2·s²),
which the solver relies on.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.budget.precision import Precision
from gpuwatch.budget.specs import TransformerSpec


@dataclass(frozen=True)
class ActivationOptions:
    """What changes the activations kept per layer."""

    flash: bool = True  # fused attention, PyTorch 2's default (see Setup)
    checkpointing: str = "none"  # none | selective | full
    tp: int = 1
    sequence_parallel: bool = False
    mask_bytes: float = 1.0  # a dropout mask element (CUDA: bool)


@dataclass(frozen=True)
class LayerActivations:
    """One layer's saved bytes, split the way parallelism and recompute split them."""

    replicated: float  # norms, residual, dropout masks on the residual: ÷t only with SP
    parallel: float  # q, k, v, context, MLP intermediates: ÷t
    scores: float  # a·s² softmax, dropout, probabilities: ÷t, gone with flash/selective
    layer_input: float  # what full recompute keeps

    def total(self, opt: ActivationOptions) -> float:
        t = opt.tp
        rep = self.replicated / t if opt.sequence_parallel else self.replicated
        scores = 0.0 if opt.checkpointing == "selective" else self.scores
        return rep + (self.parallel + scores) / t


def _attention(
    spec: TransformerSpec, p: Precision, opt: ActivationOptions, b: int, s: int, s_kv: int
) -> tuple[float, float]:
    """(parallel bytes, score bytes) of one attention block: queries s, keys s_kv."""
    e = p.act_bytes
    hq, hkv = spec.heads * spec.d, spec.kv * spec.d
    mask = opt.mask_bytes if spec.dropout > 0 else 0.0
    if opt.flash:
        # q, k, v (GQA width), the kernel's output and the re-laid-out context, plus
        # the fp32 log-sum-exp per head and query.
        par = e * b * (2 * s * hq + 2 * s_kv * hkv + s * hq) + 4 * b * spec.heads * s
        return par, 0.0
    par = e * b * (2 * s * hq + 2 * s_kv * hq)  # q, context; k and v expanded to every head
    softmax = 4 if p.residual_bytes == 4 and e == 2 else e  # autocast runs softmax in fp32
    per_score = softmax + mask + (e if (mask or softmax != e) else 0)
    return par, per_score * b * spec.heads * s * s_kv


def _mlp(spec: TransformerSpec, p: Precision, b: int, s: int) -> float:
    e, f, h = p.act_bytes, spec.ffn_size, spec.hidden
    per_expert = (4 if spec.gated_mlp else 2) * f
    if spec.experts == 1:
        return e * b * s * per_expert
    k = spec.experts_per_token
    # routed copies of the input and output per expert, router logits in fp32
    return e * b * s * k * (per_expert + 2 * h) + 4 * b * s * spec.experts


def layer_activations(
    spec: TransformerSpec, p: Precision, opt: ActivationOptions, b: int, s: int, cross_s: int = 0
) -> LayerActivations:
    """Saved bytes of one layer; ``cross_s`` > 0 adds cross-attention (T5 decoder)."""
    r, e, h = p.residual_bytes, p.act_bytes, spec.hidden
    mask = opt.mask_bytes if spec.dropout > 0 else 0.0
    blocks = 3 if cross_s else 2
    # per block: the norm input on the residual stream, the norm output saved by the
    # next matmul (a 16-bit copy under autocast), the dropout mask on the residual
    replicated = blocks * b * s * h * (r + e + mask)
    par, scores = _attention(spec, p, opt, b, s, s)
    if cross_s:
        cpar, cscores = _attention(spec, p, opt, b, s, cross_s)
        par, scores = par + cpar, scores + cscores
    par += _mlp(spec, p, b, s)
    return LayerActivations(replicated, par, scores, r * b * s * h)


def embedding_activations(
    spec: TransformerSpec, p: Precision, opt: ActivationOptions, b: int, s: int
) -> float:
    """The embedding stage: the dropout mask, and the LayerNorm input of BERT-style models."""
    mask = opt.mask_bytes if spec.dropout > 0 else 0.0
    ln = p.residual_bytes if spec.arch == "encoder" else 0
    patches = p.act_bytes * b * spec.channels * s * spec.patch**2 if spec.arch == "vit" else 0
    return b * s * spec.hidden * (mask + ln) + patches


def head_activations(spec: TransformerSpec, p: Precision, b: int, s: int) -> float:
    """After the last layer: final norm input and output (BERT: the MLM transform)."""
    r, e, h = p.residual_bytes, p.act_bytes, spec.hidden
    if spec.arch == "vit":
        return b * s * h * (r + e)
    if spec.mlm_head:
        return b * s * h * (r + 3 * e)
    return b * s * h * (r + e)


def loss_activations(spec: TransformerSpec, p: Precision, b: int, s: int) -> float:
    """Logits b·s·V and the cross-entropy around them at the start of the backward pass.

    The logits (matmul dtype) stay referenced by the training loop; cross-entropy
    upcasts them to fp32 if they are not already, keeps the fp32 log-softmax, and
    the backward pass adds two fp32 gradients of the same size.
    """
    if spec.arch == "vit" or not spec.vocab:
        return 0.0
    logits = p.act_bytes
    upcast = 4 if logits != 4 else 0
    return b * s * spec.vocab * (logits + upcast + 3 * 4)


def inference_activations(
    spec: TransformerSpec, p: Precision, opt: ActivationOptions, b: int, s: int
) -> float:
    """The transient peak of one layer during a prefill of ``s`` tokens (nothing is saved)."""
    e, r, h = p.act_bytes, p.residual_bytes, spec.hidden
    hq, hkv = spec.heads * spec.d, spec.kv * spec.d
    mlp = (3 if spec.gated_mlp else 2) * spec.ffn_size * spec.experts_per_token
    attn = 2 * hq + 2 * hkv
    per_layer = b * s * (2 * r * h + e * max(attn, mlp)) / opt.tp
    if not opt.flash:
        per_layer += 2 * e * b * spec.heads * s * s / opt.tp
    logits = 4 * b * spec.vocab if spec.arch == "decoder" else 0  # last position, fp32
    return per_layer + logits
