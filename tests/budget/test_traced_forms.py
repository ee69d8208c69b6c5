"""The closed forms that traced PyTorch steps corrected, each pinned term by term.

Each test states what autograd keeps (or what is live at once) in bytes per token ×
hidden (``bsh``), per score (b·a·s²) or per logit (b·s·V), as ``benchmarks/accuracy.py``
measures it on Hugging Face-style models, and checks the estimator's number against it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuwatch.budget import Setup, TransformerSpec, Workload, estimate, lookup_model
from gpuwatch.budget.activations import (
    ActivationOptions,
    head_activations,
    inference_activations,
    layer_activations,
    loss_activations,
)
from gpuwatch.budget.precision import get_optimizer, get_precision, optimizer_state_elements
from gpuwatch.budget.states import lora_groups

B, S = 2, 1024
LLAMA = TransformerSpec("llama-style", 4, 1024, 16, 32000, ffn=2816, kv_heads=4, gated_mlp=True,
                        norm="rmsnorm", bias=False, tied_embeddings=False)
GPT2 = replace(lookup_model("gpt2"), layers=4)
FLASH, EAGER = ActivationOptions(), ActivationOptions(flash=False, mask_bytes=2.0)


def per_bsh(value: float, spec: TransformerSpec, b: int = B, s: int = S) -> float:
    return value / (b * s * spec.hidden)


def test_llama_layer_bf16_sdpa():
    """Two RMSNorms (fp32 upcast 4 + normalized 2 + output 2), q/k/v at GQA width and the
    kernel's output (no context copy) in 2 B, the fp32 log-sum-exp, four ffn-wide tensors."""
    la = layer_activations(LLAMA, get_precision("bf16"), FLASH, B, S)
    h, f = LLAMA.hidden, LLAMA.ffn_size
    lse = 4 * LLAMA.heads / h
    expected = 2 * (4 + 2 + 2) + 2 * (1 + 0.25 + 0.25 + 1) + lse + 4 * 2 * f / h
    assert per_bsh(la.total(FLASH), LLAMA) == pytest.approx(expected)  # 43.06


def test_llama_layer_autocast_copies_per_projection():
    """Under autocast q, k and v each keep their own bf16 copy of the fp32 norm output,
    gate and up theirs: 3 + 2 copies; RMSNorm keeps its fp32 input and normalized tensor."""
    la = layer_activations(LLAMA, get_precision("amp-bf16"), FLASH, B, S)
    bf16 = layer_activations(LLAMA, get_precision("bf16"), FLASH, B, S)
    norms_amp = (4 + 4 + 3 * 2) + (4 + 4 + 2 * 2)
    norms_bf16 = 2 * (4 + 2 + 2)
    assert per_bsh(la.total(FLASH) - bf16.total(FLASH), LLAMA) == pytest.approx(
        norms_amp - norms_bf16)


def test_gpt2_layer_gelu_new_keeps_five_ffn_wide_tensors():
    """c_fc output, tanh, 0.5·x, 1 + tanh, and the product (read by c_proj)."""
    p = get_precision("bf16")
    la = layer_activations(GPT2, p, FLASH, B, S)
    fused = layer_activations(replace(GPT2, activation="gelu"), p, FLASH, B, S)
    assert per_bsh(la.total(FLASH) - fused.total(FLASH), GPT2) == pytest.approx(3 * 4 * 2)


def test_gpt2_eager_scores_follow_the_dtype_of_its_softmax():
    """GPT-2 softmaxes in the scores' dtype (2 B in bf16, fp32 under autocast) and keeps
    the probabilities, the dropout mask and the dropped probabilities."""
    bf16 = layer_activations(GPT2, get_precision("bf16"), EAGER, B, S)
    amp = layer_activations(GPT2, get_precision("amp-bf16"), EAGER, B, S)
    scores = B * GPT2.heads * S * S
    assert bf16.scores == (2 + 2 + 2) * scores
    assert amp.scores == (4 + 2 + 2) * scores


def test_loss_keeps_12_bytes_per_logit_and_the_loop_keeps_the_logits_only_if_asked():
    p = get_precision("bf16")
    logits = B * S * GPT2.vocab
    assert loss_activations(GPT2, p, B, S) == 12 * logits
    assert loss_activations(GPT2, p, B, S, keep_logits=True) == 14 * logits
    wl = Workload(batch=B, seq=S)
    freed = estimate(GPT2, wl, Setup(precision="bf16"))
    kept = estimate(GPT2, wl, Setup(precision="bf16", keep_logits=True))
    assert kept.breakdown.activations - freed.breakdown.activations == 2 * logits
    assert freed.detail.loss_bytes == 12 * logits


def test_no_gradient_exists_while_the_loss_backward_peaks():
    est = estimate(GPT2, Workload(batch=B, seq=S), Setup(precision="bf16", overhead_bytes=0))
    assert est.detail.grads_at_backward == 0
    assert est.peak_phase == "start of backward"
    b = est.breakdown
    assert est.total_bytes == b.parameters + b.optimizer_states - est.detail.optimizer_step_temp \
        + b.activations


def test_checkpointing_runs_the_layer_again_only_after_the_loss():
    p = get_precision("bf16")
    wl = Workload(batch=B, seq=S)
    est = estimate(LLAMA, wl, Setup(precision="bf16", checkpointing="full"))
    kept = LLAMA.layers * 2 * B * S * LLAMA.hidden
    head = head_activations(LLAMA, p, B, S)
    loss = loss_activations(LLAMA, p, B, S)
    la = layer_activations(LLAMA, p, FLASH, B, S)
    rerun = la.total(FLASH) + 2 * B * S * LLAMA.hidden
    assert est.breakdown.activations == round(kept + max(head + loss, rerun))
    assert est.detail.grads_at_backward == 0


def test_lora_targets_and_fp32_adapters():
    groups = tuple(g for g in LLAMA.param_groups() if g.per_layer)
    h, kv, f, r, n = LLAMA.hidden, LLAMA.kv * LLAMA.d, LLAMA.ffn_size, 16, LLAMA.layers
    qv = sum(g.numel for g in lora_groups(groups, r, frozenset({"q", "v"})))
    assert qv == n * ((h * r + r * h) + (h * r + r * kv))
    every = sum(g.numel for g in lora_groups(groups, r, frozenset(
        {"q", "k", "v", "o", "gate", "up", "down"})))
    assert every == n * (2 * (h * r + r * h) + 2 * (h * r + r * kv) + 3 * (h * r + r * f))
    est = estimate(LLAMA, Workload(batch=B, seq=S),
                   Setup(precision="bf16", lora_rank=r, lora_targets="q,v"))
    assert est.trainable_params == qv
    assert est.breakdown.gradients == 4 * qv  # PEFT keeps adapters of a bf16 base in fp32
    assert est.detail.optimizer_persistent == 8 * qv


def test_a_frozen_base_keeps_fewer_activations():
    """Frozen projections keep no input; each adapter keeps an fp32 copy of its input;
    RMSNorm keeps only its fp32 upcast; the frozen down projection not its input."""
    p = get_precision("bf16")
    opt = ActivationOptions(frozen=True, adapted=frozenset({"q", "v"}))
    la = layer_activations(LLAMA, p, opt, B, S)
    h, f = LLAMA.hidden, LLAMA.ffn_size
    lse = 4 * LLAMA.heads / h
    expected = (4 + 2 * 4) + 4 + 2 * (1 + 0.25 + 0.25 + 1) + lse + 3 * 2 * f / h
    assert per_bsh(la.total(opt), LLAMA) == pytest.approx(expected)


def test_encoder_has_no_pooler_and_no_context_copy():
    bert = lookup_model("bert-base")
    assert bert.params == 109_514_298  # BertForMaskedLM
    la = layer_activations(bert, get_precision("fp32"), ActivationOptions(mask_bytes=4.0), B, S)
    # norm inputs and their readers' copies, two dropout masks, q, k, v, out, lse, 2 ffn-wide
    expected = 2 * (4 + 4 + 4) + 4 * 4 + 4 * bert.heads / bert.hidden + 2 * 4 * 4
    assert per_bsh(la.total(ActivationOptions()), bert) == pytest.approx(expected)


@pytest.mark.parametrize(("spec", "precision", "per_score"), [
    (LLAMA, "bf16", 10),       # bf16 scores + their fp32 copy + fp32 probabilities
    (LLAMA, "fp32", 8),
    (GPT2, "bf16", 4),         # softmax in bf16: the scores and their scaled copy
    (GPT2, "amp-bf16", 10),    # autocast softmaxes in fp32
])
def test_eager_inference_bytes_per_score(spec, precision, per_score):
    p = get_precision(precision)
    eager = inference_activations(spec, p, ActivationOptions(flash=False), 4, 4096)
    scores = 4 * spec.heads * 4096 * 4096
    assert eager > per_score * scores
    assert eager < per_score * scores * 1.1  # + the b·s·h tensors of the attention phase


def test_sdpa_inference_holds_the_embeddings_layer_input_residual_and_norm_output():
    p = get_precision("bf16")
    h, f, b, s = LLAMA.hidden, LLAMA.ffn_size, 4, 1024
    got = inference_activations(LLAMA, p, FLASH, b, s)
    logits = (2 + 4) * b * LLAMA.vocab
    embeddings = 2 * b * s * h  # HF's inputs_embeds, referenced throughout the forward
    assert got == b * s * (2 * 2 * h + 2 * h + 2 * 3 * f) + embeddings + logits
    gpt2 = inference_activations(GPT2, p, FLASH, b, s)  # + the attention output, gelu_new
    assert gpt2 == b * s * (2 * 2 * 768 + 2 * 2 * 768 + 2 * 4 * 3072) + 2 * b * s * 768 \
        + logits / 32000 * 50257


def test_adafactor_factors_a_kernels_last_two_dimensions():
    opt = get_optimizer("adafactor")
    assert optimizer_state_elements(opt, 512, 512 * 9, 1, kernel=3, conv=True) == \
        pytest.approx(2 / 3 * 512 * 512 * 9)
    assert optimizer_state_elements(opt, 256, 64, 1, kernel=1, conv=True) == 2 * 256 * 64
    assert optimizer_state_elements(opt, 4096, 1024, 1) == 4096 + 1024
    assert optimizer_state_elements(opt, 512, 1, 1) == 512
    resnet = lookup_model("resnet-50", (128, 128))
    est = estimate(resnet, Workload(batch=16, image=(128, 128)),
                   Setup(precision="fp32", optimizer="adafactor", overhead_bytes=0))
    assert est.detail.optimizer_step_temp == 4 * resnet.params  # the foreach step's estimates


def test_a_cnn_backward_peaks_with_the_classifier_gradients_and_the_activations():
    vgg = lookup_model("vgg-16", (128, 128))
    est = estimate(vgg, Workload(batch=16, image=(128, 128)),
                   Setup(precision="fp32", optimizer="momentum", overhead_bytes=0))
    classifier = sum(g.numel for g in vgg.param_groups() if not g.per_layer) * 4
    assert est.detail.grads_at_backward >= classifier


def test_vit_peaks_in_the_first_layers_backward():
    """No vocabulary-sized loss: the start of backward holds the activations plus one
    ffn-wide gradient; the classifier keeps only the class token's copy."""
    vit = replace(lookup_model("vit-b-16"), layers=4)
    p = get_precision("fp32")
    wl = Workload(batch=16, image=(224, 224))
    est = estimate(vit, wl, Setup(precision="fp32", overhead_bytes=0))
    s = vit.seq_for_image(224, 224)
    la = layer_activations(vit, p, ActivationOptions(), 16, s)
    patches = 4 * 16 * 3 * s * 16 * 16
    head = 16 * 768 * (4 * s + 4)
    first = 4 * 16 * s * vit.ffn_size
    assert est.breakdown.activations == round(4 * la.total(ActivationOptions()) + patches
                                              + head + first)
