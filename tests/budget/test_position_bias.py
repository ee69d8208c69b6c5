"""T5's shared position biases under checkpointing, and CPU dropout masks by dtype."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwatch.budget import lookup_model
from gpuwatch.budget.activations import (
    ActivationOptions,
    layer_activations,
    mask_of,
    position_bias_bytes,
)
from gpuwatch.budget.precision import get_precision

T5 = lookup_model("t5-base")
LLAMA = lookup_model("llama-3.1-8b")
FULL = ActivationOptions(flash=False, checkpointing="full", mask_bytes=None)
precisions = st.sampled_from(["bf16", "fp32", "amp-bf16", "amp-fp16"])
batches, seqs = st.integers(1, 64), st.integers(1, 8192)


@settings(max_examples=40, deadline=None)
@given(precisions, batches, seqs)
def test_the_biases_are_t5s_under_full_checkpointing_only(name, b, s):
    p = get_precision(name)
    assert position_bias_bytes(LLAMA, p, FULL, b, s) == (0.0, 0.0)
    for ckpt in ("none", "selective"):
        opt = ActivationOptions(flash=False, checkpointing=ckpt, mask_bytes=None)
        assert position_bias_bytes(T5, p, opt, b, s) == (0.0, 0.0)
    held, rerun = position_bias_bytes(T5, p, FULL, b, s)
    assert held > 0 and rerun >= 8 * s * s  # at least the int64 buckets


@settings(max_examples=40, deadline=None)
@given(precisions, batches, seqs)
def test_the_biases_have_no_batch_dimension(name, b, s):
    """Held biases are 1 × a × s × s whatever the batch; only autocast's fp32 dropped
    probabilities in the re-run scale with it."""
    p = get_precision(name)
    held1, rerun1 = position_bias_bytes(T5, p, FULL, 1, s)
    held, rerun = position_bias_bytes(T5, p, FULL, b, s)
    assert held == held1
    if p.residual_bytes == p.act_bytes:
        assert rerun == rerun1
    else:
        assert rerun - rerun1 == 4 * (b - 1) * T5.heads * s * s  # the fp32 dropped probs


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["bf16", "fp32"]), batches, seqs)
def test_a_cpu_mask_in_the_dtype_is_the_old_figure_without_autocast(name, b, s):
    p = get_precision(name)
    cpu = ActivationOptions(flash=False, mask_bytes=None)
    fixed = ActivationOptions(flash=False, mask_bytes=float(p.act_bytes))
    assert layer_activations(T5, p, cpu, b, s, s) == layer_activations(T5, p, fixed, b, s, s)
    assert mask_of(cpu, 4.0) == 4.0 and mask_of(fixed, 4.0) == p.act_bytes


def test_autocast_drops_t5s_probabilities_in_fp32():
    p = get_precision("amp-bf16")
    cpu = ActivationOptions(flash=False, mask_bytes=None)
    cuda = ActivationOptions(flash=False, mask_bytes=1.0)
    b, s = 1, 1024
    more = layer_activations(T5, p, cpu, b, s).scores - layer_activations(T5, p, cuda, b, s).scores
    assert more == (4 - 1) * b * T5.heads * s * s  # an fp32 mask instead of a bool one
