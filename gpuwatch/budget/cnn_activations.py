"""CNN activations from the per-layer tables of :mod:`gpuwatch.budget.cnn`: what training
saves, what inference holds at once, and the gradients alive at the backward pass's peak."""

from __future__ import annotations

from gpuwatch.budget.precision import Precision
from gpuwatch.budget.specs import CnnSpec
from gpuwatch.budget.workload import Setup, Workload


def _score_bytes(p: Precision) -> float:
    """Bytes per eager attention probability: autocast's fp32 softmax + the 16-bit copy."""
    autocast = p.residual_bytes != p.act_bytes
    return p.residual_bytes + p.act_bytes if autocast else p.act_bytes


def cnn_attention_bytes(spec: CnnSpec, p: Precision, setup: Setup) -> float:
    """Per sample, what attention keeps beyond the table's common part (0 without attention)."""
    if setup.flash_attention:
        return spec.total("fused") * p.act_bytes + spec.total("stats") * 4
    if setup.checkpointing == "selective":  # the probabilities are recomputed
        return 0.0
    return spec.total("scores") * _score_bytes(p)


def cnn_train_activations(spec: CnnSpec, p: Precision, wl: Workload, setup: Setup) -> float:
    e, r = p.act_bytes, p.residual_bytes
    saved: float = spec.saved_elements_per_sample * e + spec.index_elements_per_sample * 8
    saved += spec.total("wide") * r + (spec.total("cast") * e if r != e else 0)
    saved += cnn_attention_bytes(spec, p, setup)
    if setup.checkpointing == "full":  # √n segments: their inputs plus one segment re-run
        n = max(1, len(spec.layers))
        saved = saved * 2 / n**0.5
    return wl.batch * saved


def cnn_inference_activations(spec: CnnSpec, p: Precision, wl: Workload, setup: Setup) -> float:
    """The most held at any layer: live tensors (skips included) + eager attention's scores.

    Eager attention holds the raw scores and the probabilities (and, under autocast,
    the fp32 softmax and its 16-bit copy) at once.
    """
    scores = 0.0 if setup.flash_attention else p.act_bytes + _score_bytes(p)
    peak = max((x.live * p.act_bytes + x.scores * scores for x in spec.layers), default=0.0)
    return wl.batch * peak


def cnn_backward_grads(spec: CnnSpec, p: Precision, wl: Workload, flash: bool = True) -> float:
    """The gradients alive beyond the saved activations at the backward pass's peak.

    Backward runs the table from the last layer: each layer's gradients appear while its
    saved tensors are still held, and those are freed once it is done. The late layers
    of a CNN hold most parameters (VGG's classifier: 94 %) and the early ones most
    activations, so the peak comes when the late layers' gradients exist and nearly all
    activations are still held.
    """
    e, r = p.act_bytes, p.residual_bytes
    if flash:
        score_bytes, fused_bytes, stats_bytes = 0.0, float(e), 4.0
    else:
        score_bytes, fused_bytes, stats_bytes = _score_bytes(p), 0.0, 0.0
    grads = freed = extra = 0.0
    for x in reversed(spec.layers):
        grads += x.params * p.grad_bytes
        extra = max(extra, grads - freed)
        freed += wl.batch * (
            x.saved_elements * e + x.index_elements * 8 + x.wide * r
            + (x.cast * e if r != e else 0) + x.scores * score_bytes + x.fused * fused_bytes
            + x.stats * stats_bytes
        )
    return extra
