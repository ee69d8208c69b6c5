"""A transformer's activations over one training micro-batch: the layers' saved
tensors (dense and MoE layers, an encoder and a decoder), the loss temporaries, and
the moments where they peak — the start of backward, a checkpointed layer's re-run,
the forward pass's end under autocast, 1F1B's first stage.
"""

from __future__ import annotations

from dataclasses import replace

from gpuwatch.budget import activations as act
from gpuwatch.budget.family_spec import FamilySpec, quirks_of
from gpuwatch.budget.precision import Precision
from gpuwatch.budget.specs import ModelSpec, TransformerSpec
from gpuwatch.budget.traced_view import (
    waiting_head_gradient,
)
from gpuwatch.budget.workload import Setup, Workload, lora_target_set


def sequence_of(spec: ModelSpec, wl: Workload) -> int:
    if isinstance(spec, TransformerSpec) and spec.arch == "vit":
        h, w = wl.image or (spec.image, spec.image)
        return spec.seq_for_image(h, w)
    return wl.seq


def flash_used(spec: ModelSpec, setup: Setup) -> bool:
    """Fused attention where asked, except in families whose Hugging Face code has only
    eager attention (ALiBi in BLOOM and MPT)."""
    eager_only = isinstance(spec, TransformerSpec) and quirks_of(spec).eager_only
    return setup.flash_attention and not eager_only


def activation_options(spec: ModelSpec, setup: Setup) -> act.ActivationOptions:
    return act.ActivationOptions(
        flash_used(spec, setup),
        setup.checkpointing,
        setup.tp,
        setup.sequence_parallel,
        setup.dropout_mask_bytes,
        frozen=setup.lora_rank > 0,
        adapted=lora_target_set(setup.lora_targets) if setup.lora_rank else frozenset(),
    )


def _dense_variant(spec: TransformerSpec) -> TransformerSpec:
    """An MoE family's dense layers (DeepSeek's first k, Qwen2-MoE's ``mlp_only_layers``)."""
    q = quirks_of(spec)
    dense = replace(spec, experts=1, experts_per_token=1, ffn=q.dense_ffn)
    if isinstance(dense, FamilySpec):
        dense = replace(dense, quirks=replace(q, shared_ffn=0, shared_gate=False,
                                              dense_layers=0))
    return dense


def transformer_train_activations(
    spec: TransformerSpec, p: Precision, wl: Workload, setup: Setup, rerun_fixed: float = 0.0
) -> tuple[float, float, float, float]:
    """(saved activations incl. loss temporaries, of which loss, the activations at the
    forward pass's end where that moment can be the larger (0 elsewhere), the
    activations once the loss temporaries are gone) for one micro-batch.

    ``rerun_fixed``: what a checkpointed layer's re-run adds whatever the batch (under
    autocast, the 16-bit copies of its weights, made again and kept until its backward).
    """
    o, b, s = activation_options(spec, setup), wl.batch, sequence_of(spec, wl)
    enc = act.layer_activations(spec, p, o, b, s)
    dense = quirks_of(spec).dense_layers if spec.experts > 1 else 0
    layers = [(enc, spec.layers - dense)]
    if dense:
        layers.append((act.layer_activations(_dense_variant(spec), p, o, b, s), dense))
    if spec.decoder_layers:
        layers.append((act.layer_activations(spec, p, o, b, s, cross_s=s), spec.decoder_layers))
    sp = setup.tp if setup.sequence_parallel else 1
    emb = act.embedding_activations(spec, p, o, b, s) / sp
    head = act.head_activations(spec, p, b, s, o) / sp
    loss = act.loss_activations(spec, p, b, s, setup.keep_logits) / setup.tp
    if setup.checkpointing == "full" and setup.pp == 1:
        # each layer keeps its input; backward first runs the loss and the head, then
        # re-runs one layer at a time (its saved tensors + its output's gradient), so
        # the re-run never sits on top of the loss temporaries. Under autocast the
        # forward pass ends holding every layer's 16-bit weight copies, beside the
        # loss's forward (the logits, their fp32 copy and its log-softmax)
        # T5 keeps its position biases through backward; its decoder peaks at the end of
        # its first layer's re-run, with the biases' gradients (the scores' gradients
        # come later, as the saved probabilities are freed) and a tied head's gradient,
        # which waits for the embedding's
        held, bias = act.position_bias_bytes(spec, p, o, b, s)
        if bias:
            bias += waiting_head_gradient(spec, p, setup)
        kept = sum(la.layer_input / sp * n for la, n in layers) + held
        rerun = max(la.total(o) + la.layer_input / sp
                    + (bias if bias and i == len(layers) - 1 else la.score_transient)
                    for i, (la, _) in enumerate(layers)) + rerun_fixed
        forward_end = 0.0
        if rerun_fixed and quirks_of(spec).cached_copies:
            logits = b * s * spec.vocab / setup.tp if spec.vocab else 0.0
            forward_end = kept + emb + head + logits * (p.act_bytes + 8) + \
                rerun_fixed * spec.total_layers
        return kept + emb + max(head + loss, rerun), loss, forward_end, kept + emb + rerun
    if setup.checkpointing == "full":
        kept = sum(la.layer_input / sp * n for la, n in layers)
        body = kept + max(la.total(o) for la, _ in layers)  # one layer re-run in backward
    else:
        body = sum(la.total(o) * n for la, n in layers)
    if setup.pp > 1:  # 1F1B: the first stage keeps pp micro-batches of its L/pp layers
        first, last = body + emb, body / setup.pp + head + loss
        return max(first, last), (loss if last > first else 0.0), 0.0, 0.0
    # the first layer's backward holds an ffn-wide gradient on top of the activations;
    # only a model without a vocabulary-sized loss (ViT) peaks there
    first = p.act_bytes * b * s * spec.ffn_size * spec.experts_per_token / setup.tp
    return body + emb + head + max(loss, first), loss, 0.0, body + emb + head
