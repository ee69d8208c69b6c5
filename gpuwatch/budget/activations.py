"""Activation memory of transformers: Korthikanti et al. (2022), generalised.

Per layer, 16-bit, no recompute, the paper's count is s·b·h·(34 + 5·a·s/h) bytes:
attention 11·sbh + 5·a·s²·b, MLP 19·sbh, LayerNorms 4·sbh. We keep its structure
but count each saved tensor with its own width and dtype, so one formula covers:

* grouped-query attention (K and V are k·d wide where the kernel keeps them so;
  eager attention materialises them at h, as ``repeat_kv`` does),
* gated MLPs (SwiGLU keeps gate, up, SiLU(gate) and their product: 4·f) and
  mixtures of experts (each token's ``experts_per_token`` experts),
* torch autocast (residual stream and softmax in fp32, matmul inputs in 16 bits,
  one 16-bit copy of a norm's output per projection that reads it),
* HF's RMSNorm (its fp32 upcast and the normalized tensor), GPT-2's ``gelu_new``
  (five ffn-wide tensors), SDPA's output laid out for the output projection,
* a frozen LoRA base (no inputs kept for frozen weights; an fp32 copy per adapter),
* the loss backward (12 B per logit; the logits themselves are freed by a loop that
  keeps only the loss),
* dropout masks (1 byte on CUDA; absent when dropout is 0),
* tensor parallelism (÷t on the parallel part), sequence parallelism (÷t on the
  rest), selective recompute (drops the a·s² scores), full recompute (keeps the
  layer input), and flash attention (O(s) statistics instead of a·s² scores).

Sizes are bytes for ``b`` samples of ``s`` tokens. Every term is b × (c1·s + c2·s²),
which the solver relies on. ``benchmarks/accuracy.py`` checks each against traced
PyTorch steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.budget.family_spec import quirks_of
from gpuwatch.budget.precision import Precision
from gpuwatch.budget.specs import TransformerSpec


@dataclass(frozen=True)
class ActivationOptions:
    """What changes the activations kept per layer."""

    flash: bool = True  # fused attention, PyTorch 2's default (see Setup)
    checkpointing: str = "none"  # none | selective | full
    tp: int = 1
    sequence_parallel: bool = False
    # a dropout mask element (CUDA: bool); None: in the dtype of the tensor dropped, as
    # a CPU run keeps it (fp32 where autocast drops an fp32 tensor)
    mask_bytes: float | None = 1.0
    frozen: bool = False  # LoRA: base weights frozen, so matmuls keep no input for them
    adapted: frozenset[str] = frozenset()  # LoRA: projections with adapters
    adapter_bytes: float = 4.0  # PEFT casts an adapter's input to the adapter's fp32


@dataclass(frozen=True)
class LayerActivations:
    """One layer's saved bytes, split the way parallelism and recompute split them."""

    replicated: float  # norms, residual, dropout masks on the residual: ÷t only with SP
    parallel: float  # q, k, v, context, MLP intermediates: ÷t
    scores: float  # a·s² softmax, dropout, probabilities: ÷t, gone with flash/selective
    layer_input: float  # what full recompute keeps
    # eager attention's softmax backward: the probabilities' gradient and the scores'
    # (in the softmax dtype), less the 16-bit probabilities the value matmul released
    score_transient: float = 0.0

    def total(self, opt: ActivationOptions) -> float:
        t = opt.tp
        rep = self.replicated / t if opt.sequence_parallel else self.replicated
        scores = 0.0 if opt.checkpointing == "selective" else self.scores
        return rep + (self.parallel + scores) / t


def mask_of(opt: ActivationOptions, dropped: float) -> float:
    """Bytes of one dropout mask element over a tensor of ``dropped`` bytes an element."""
    return dropped if opt.mask_bytes is None else opt.mask_bytes


def autocast(p: Precision) -> bool:
    """Torch autocast: an fp32 residual stream, 16-bit matmul inputs and outputs."""
    return p.residual_bytes != p.act_bytes


def norm_saved(
    spec: TransformerSpec, p: Precision, frozen: bool = False, residual: bool = True
) -> float:
    """Bytes per token·hidden a norm keeps for its own backward.

    LayerNorm keeps its input. HF's RMSNorm upcasts its input to fp32 (kept by
    ``pow`` and the ``rsqrt`` product) and keeps the normalized tensor, cast back to the
    input's dtype, for the product with its weight (not when the weight is frozen).
    Gemma's RMSNorm multiplies by ``1 + w`` in fp32 before casting back, so it keeps the
    normalized tensor in fp32. ``residual`` False: the norm reads a projection's output
    (Gemma-2's post-norms, per-head q/k norms), in the matmul dtype.
    """
    src = p.residual_bytes if residual else p.act_bytes
    if spec.norm == "rmsnorm":
        style = quirks_of(spec).norm_style
        if style == "gemma":
            return 4.0 + (0.0 if frozen else 4.0)
        if style == "t5":  # an fp32 copy for the square (the input itself when fp32),
            # the input for the product, the normalized tensor for the weight
            return 4.0 + (src if src != 4 else 0.0) + (0.0 if frozen else src)
        return 4.0 + (0.0 if frozen else src)
    return float(src)


def read_by(p: Precision, opt: ActivationOptions, readers: tuple[str, ...]) -> float:
    """Bytes per token·hidden of one tensor as the matmuls that read it keep it.

    Without autocast the readers share the tensor itself. Under autocast each reader
    makes (and keeps) its own 16-bit copy. A frozen reader keeps nothing; a LoRA
    adapter keeps its own copy of the input in the adapter's dtype.
    """
    if opt.frozen:
        return sum(opt.adapter_bytes for r in readers if r in opt.adapted)
    return len(readers) * p.act_bytes if autocast(p) else float(p.residual_bytes)


def attention_readers(spec: TransformerSpec) -> tuple[str, ...]:
    if quirks_of(spec).mla:  # the q (or q_a) and kv_a projections
        return ("q", "kv_a")
    return ("qkv",) if spec.fused_qkv else ("q", "k", "v")


def mlp_readers(spec: TransformerSpec) -> tuple[str, ...]:
    if quirks_of(spec).fused_gate_up:
        return ("gate_up",)
    return ("gate", "up") if spec.gated_mlp else ("up",)


def softmax_bytes(spec: TransformerSpec, p: Precision) -> int:
    """HF's eager Llama-family attention softmaxes in fp32 explicitly (as most families'
    ``eager_attention_forward`` do); GPT-2, BERT and OPT in the scores' dtype, which
    autocast makes fp32."""
    q = quirks_of(spec)
    fp32 = q.fp32_softmax or (spec.norm == "rmsnorm" and not q.family)
    return 4 if (autocast(p) or fp32) else p.act_bytes


def attention_dropout(spec: TransformerSpec) -> float:
    """The dropout on attention probabilities: a family's own rate, else the model's."""
    q = quirks_of(spec)
    return q.attention_dropout if q.family else spec.dropout


def _attention(
    spec: TransformerSpec, p: Precision, opt: ActivationOptions, b: int, s: int, s_kv: int
) -> tuple[float, float]:
    """(parallel bytes, score bytes) of one attention block: queries s, keys s_kv."""
    e = p.act_bytes
    q = quirks_of(spec)
    hq, hkv = spec.heads * spec.d, spec.kv * spec.d
    softmax = softmax_bytes(spec, p)
    # the probabilities are dropped in the softmax's dtype, or (Llama family, GPT-2) cast
    # back to 16 bits first
    dropped = softmax if q.family and not q.fp32_softmax else e
    mask = mask_of(opt, dropped) if attention_dropout(spec) > 0 else 0.0
    # a fused q/k/v projection whose q and k are rotated into new tensors: the slice of
    # v that attention keeps holds the whole fused output, q and k parts included
    extra = e * b * (s * hq + s_kv * hkv) if spec.fused_qkv and q.rotary else 0.0
    if q.qk_norm:  # per-head norms on q and k, each reading a projection's output
        extra += norm_saved(spec, p, opt.frozen, residual=False) * b * (s * hq + s_kv * hkv)
    if opt.flash:
        # q, k, v (GQA width) and the kernel's output, which is already laid out for the
        # output projection (no copy), plus the fp32 log-sum-exp per head and query
        par = e * b * (2 * s * hq + 2 * s_kv * hkv) + 4 * b * spec.heads * s
        return par + extra, 0.0
    par = e * b * (2 * s * hq + 2 * s_kv * hq)  # q, context; k and v expanded to every head
    per_score = softmax + mask + (e if (mask or softmax != e) else 0)
    if q.attn_softcap:  # tanh(scores / cap) · cap: tanh keeps its output
        per_score += e
    return par + extra, per_score * b * spec.heads * s * s_kv


def _mlp(spec: TransformerSpec, p: Precision, b: int, s: int, frozen: bool = False,
         mask_bytes: float | None = 1.0) -> float:
    """Gated: gate, up, act(gate) and the product (not kept for a frozen down projection).
    GELU: its input and output; GPT-2's ``gelu_new``, written out in elementwise ops,
    keeps five ffn-wide tensors (input, tanh, 0.5·x, 1 + tanh, output)."""
    e, f, h = p.act_bytes, spec.ffn_size, spec.hidden
    q = quirks_of(spec)
    gated = 3 if frozen else 4
    if spec.gated_mlp and spec.activation == "gelu_new":  # T5 v1.1: gelu_new written out
        kept = gated + 3
    elif spec.gated_mlp:
        kept = gated
    elif spec.activation == "relu":  # ReLU keeps its output, which the next matmul reads
        kept = 1
    else:
        kept = 5 if spec.activation == "gelu_new" else 2
        kept -= 1 if frozen else 0
    per_expert: float = kept * f
    if q.ffn_dropout and spec.dropout > 0:  # the dropped copy, which the output reads
        per_expert += f * (1 + (e if mask_bytes is None else mask_bytes) / e)
    if spec.experts == 1:
        return e * b * s * per_expert
    k = spec.experts_per_token
    # shared experts: a gated MLP on every token (and the product with its sigmoid gate)
    shared = e * b * s * (gated * q.shared_ffn + (h if q.shared_gate else 0))
    # routed copies of the input and output per expert, router logits in fp32
    return e * b * s * k * (per_expert + 2 * h) + 4 * b * s * spec.experts + shared


def layer_activations(
    spec: TransformerSpec, p: Precision, opt: ActivationOptions, b: int, s: int, cross_s: int = 0
) -> LayerActivations:
    """Saved bytes of one layer; ``cross_s`` > 0 adds cross-attention (T5 decoder)."""
    r, h = p.residual_bytes, spec.hidden
    q = quirks_of(spec)
    mask = mask_of(opt, p.act_bytes) if spec.dropout > 0 else 0.0  # on a block's output
    norm = norm_saved(spec, p, opt.frozen)
    attn_in = read_by(p, opt, attention_readers(spec))
    mlp_in = read_by(p, opt, mlp_readers(spec))
    if q.parallel and q.layer_norms == 1:  # one norm whose output both blocks read
        blocks = norm + read_by(p, opt, attention_readers(spec) + mlp_readers(spec)) + 2 * mask
    elif q.parallel:  # two norms of the same input: a LayerNorm's saved input is shared
        second = norm if spec.norm == "rmsnorm" else 0.0
        blocks = norm + second + attn_in + mlp_in + 2 * mask
    else:
        # per block: what the norm keeps, its output as the next matmuls keep it, the
        # dropout mask on the residual (and Gemma-2's norms on each block's output)
        blocks = (norm + attn_in + mask) * (2 if cross_s else 1) + norm + mlp_in + mask
        blocks += q.post_norms * norm_saved(spec, p, opt.frozen, residual=False)
    replicated = b * s * h * blocks
    par, scores = _attention(spec, p, opt, b, s, s)
    if cross_s:
        cpar, cscores = _attention(spec, p, opt, b, s, cross_s)
        par, scores = par + cpar, scores + cscores
    par += _mlp(spec, p, b, s, opt.frozen, opt.mask_bytes)
    if opt.frozen and "o" in opt.adapted:
        par += opt.adapter_bytes * b * s * spec.heads * spec.d
    if opt.frozen and "down" in opt.adapted:
        par += opt.adapter_bytes * b * s * spec.ffn_size * spec.experts_per_token
    transient = 0.0
    if not opt.flash:
        per = 2 * softmax_bytes(spec, p) - p.act_bytes
        transient = per * b * spec.heads * s * (s + cross_s) / opt.tp
    return LayerActivations(replicated, par, scores, r * b * s * h, transient)


def position_bias_bytes(
    spec: TransformerSpec, p: Precision, opt: ActivationOptions, b: int, s: int
) -> tuple[float, float]:
    """(held through backward, added at the first decoder layer's re-run): T5's shared
    position biases under full checkpointing; (0, 0) for any other model or setup.

    Each stack's first layer hands its position bias (1 × a × s × s: no batch dimension,
    in the bias embedding's dtype) to the later layers as a checkpointed input, so it
    outlives the forward pass until those layers have run backward: the encoder's
    throughout the decoder's backward, the decoder's until its first layer's re-run,
    which makes it again. The cross-attention's bias is a tensor of zeros made to
    require a gradient (in the query's dtype): a leaf the graph holds, and the previous
    step's leaf with its gradient is still alive (a reference cycle that only the
    garbage collector frees). The first decoder layer's re-run also makes a new leaf and
    the int64 relative-position buckets (s × s), while the biases' gradients, summed
    over the later layers, wait for it. T5's attention returns its dropped probabilities
    up the stack; the cross-attention's stay referenced once the re-run has stopped,
    which under autocast is an fp32 tensor beside the 16-bit copy the matmul saved.
    """
    q = quirks_of(spec)
    if not (q.position_bias and spec.decoder_layers and opt.checkpointing == "full"):
        return 0.0, 0.0
    pb, e = float(p.other_weight_bytes), float(p.act_bytes)  # bias embedding; zeros
    v = spec.heads * s * s / opt.tp  # one bias: queries × keys per head
    later = spec.decoder_layers > 1
    held = pb * (spec.layers > 1) + pb * later + 3 * e
    rerun = (0.0 if later else pb) + e + (pb + e) * later
    dropped = 0.0
    if attention_dropout(spec) > 0 and softmax_bytes(spec, p) != e:  # fp32 dropped probs
        dropped = softmax_bytes(spec, p) * b * v
    return v * held, v * rerun + 8 * s * s + dropped


def embedding_activations(
    spec: TransformerSpec, p: Precision, opt: ActivationOptions, b: int, s: int
) -> float:
    """The embedding stage: the dropout mask, and the LayerNorm input of BERT-style models."""
    q = quirks_of(spec)
    rate = q.embed_dropout if q.family else spec.dropout
    mask = mask_of(opt, p.residual_bytes) if rate > 0 else 0.0
    if spec.decoder_layers:  # an embedding dropout per stack
        mask *= 2
    ln = p.residual_bytes if spec.arch == "encoder" or q.embed_norm else 0
    patches = p.act_bytes * b * spec.channels * s * spec.patch**2 if spec.arch == "vit" else 0
    return b * s * spec.hidden * (mask + ln) + patches


def head_activations(
    spec: TransformerSpec, p: Precision, b: int, s: int, opt: ActivationOptions | None = None
) -> float:
    """After the last layer: the final norm and its output as the head keeps it (BERT:
    the MLM transform; a frozen head keeps no input)."""
    r, e, h = p.residual_bytes, p.act_bytes, spec.hidden
    opt = opt or ActivationOptions()
    if spec.mlm_head:
        return b * s * h * (r + 3 * e)
    if spec.arch == "vit":  # the classifier reads (and keeps a copy of) the class token only
        return b * h * (s * norm_saved(spec, p, opt.frozen) + r)
    head_in = 0.0 if opt.frozen else (e if autocast(p) else r)
    norm = norm_saved(spec, p, opt.frozen) if quirks_of(spec).final_norm else 0.0
    if spec.decoder_layers:
        # the encoder's final norm and its output (the cross-attentions' keys and values
        # read it), and a dropout mask after each stack's final norm
        mask = mask_of(opt, r) if spec.dropout > 0 else 0.0  # on the final norm's output
        norm += norm_saved(spec, p, opt.frozen) + r + 2 * mask
    return b * s * h * (norm + head_in)


def loss_activations(
    spec: TransformerSpec, p: Precision, b: int, s: int, keep_logits: bool = False
) -> float:
    """The cross-entropy over b·s·V logits at its peak, early in the backward pass.

    HF's loss upcasts the logits to fp32 and keeps only the fp32 log-softmax; the loss
    backward adds two fp32 gradients of the same size: 12 B per logit. The logits
    themselves (matmul dtype) are freed before backward by a loop that keeps only the
    loss (HF Trainer); ``keep_logits`` is a loop that holds the model's output.
    """
    if spec.arch == "vit" or not spec.vocab:
        return 0.0
    # Gemma-2's tanh soft-capping of the logits keeps tanh's output for its backward
    q = quirks_of(spec)
    softcap = p.act_bytes if q.logit_softcap else 0
    # T5 takes the loss on the logits as they are: 16-bit without autocast
    per = 3 * (4 if q.loss_upcast or autocast(p) else p.act_bytes)
    return b * s * spec.vocab * (per + softcap + (p.act_bytes if keep_logits else 0))


def inference_activations(
    spec: TransformerSpec, p: Precision, opt: ActivationOptions, b: int, s: int
) -> float:
    """The transient peak of one layer during a prefill of ``s`` tokens (nothing is saved).

    The embedding output stays referenced by the model's forward (HF's
    ``inputs_embeds``), the layer's input by the model's loop while the layer runs. The
    attention phase holds the norm output, the projections, the kernel's output and,
    eager, the scores: the raw scores and their scaled copy (2 × 16 bits), or, where the
    softmax runs in fp32 (HF's Llama family, autocast), the 16-bit scores, their fp32
    copy and the fp32 probabilities at once (10 B per score in bf16); ``repeat_kv``
    copies K and V to every head. The MLP phase holds the layer input and the residual,
    the norm output (and GPT-2's attention output, still referenced), and the MLP's
    widest moment: act(gate), up and their product (gated), five ffn-wide tensors of
    ``gelu_new`` less the saved-only ones (four), or a fused GELU's input and output.
    The last position's logits and their fp32 copy (``generate``) come at the end.
    """
    e, r, h = p.act_bytes, p.residual_bytes, spec.hidden
    hq, hkv = spec.heads * spec.d, spec.kv * spec.d
    attn = r * h + e * (h + hq + 2 * hkv + hq)
    scores = 0.0
    if not opt.flash:
        if spec.kv < spec.heads:
            attn += 2 * e * hq  # repeat_kv's copies
        live = 2 * e if softmax_bytes(spec, p) == e else e + 8
        scores = live * b * spec.heads * s * s
    mlp_live = 3 if spec.gated_mlp else 4 if spec.activation == "gelu_new" else 2
    held = 2 if spec.fused_qkv else 1  # norm output (+ GPT-2's attention output)
    mlp = 2 * r * h + e * h * held + e * mlp_live * spec.ffn_size * spec.experts_per_token
    per_layer = max(b * s * attn + scores, b * s * mlp) / opt.tp
    per_layer += e * b * s * h  # the embedding output, which the model keeps referenced
    logits = (e + 4) * b * spec.vocab if spec.arch == "decoder" else 0  # last position
    return per_layer + logits
