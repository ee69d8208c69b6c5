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


def cnn_backward_peak(
    spec: CnnSpec, p: Precision, wl: Workload, flash: bool, saved: float, copies: float
) -> tuple[float, float, float]:
    """(gradients, activations, the activations' part that does not scale with the batch)
    at the backward pass's peak, given all saved activations ``saved`` (weight copies
    included) and autocast's 16-bit weight copies ``copies``.

    Backward runs the table from the last layer. While a layer runs, its saved tensors
    and all earlier ones are held, and the gradients of it and every later layer exist.
    Under autocast a layer's weight gradient comes out 16-bit and is cast to fp32 for the
    fp32 weight: for a moment both exist (6 B per parameter, outside the gradients) while
    the layer's saved tensors and its weight copy are already freed. The late layers of a
    CNN hold most parameters (VGG's classifier: 94 %) and the early ones most
    activations, so the peak comes early in the sweep: with autocast at VGG's first
    classifier layer, whose 6 B per parameter outweigh what its saved tensors held.
    ``activations`` is what is held at that peak or, where more, at the forward pass's
    end (``saved``); ``gradients + activations`` is the peak beyond weights and states.
    """
    e, r = p.act_bytes, p.residual_bytes
    amp = p.name.startswith("amp")
    if flash:
        score_bytes, fused_bytes, stats_bytes = 0.0, float(e), 4.0
    else:
        score_bytes, fused_bytes, stats_bytes = _score_bytes(p), 0.0, 0.0
    per_param_copy = copies / spec.params if spec.params else 0.0
    held, held_copies, grads = saved, copies, 0.0
    best_g, best_a, best_fixed = 0.0, saved, copies
    for x in reversed(spec.layers):
        own = wl.batch * (
            x.saved_elements * e + x.index_elements * 8 + x.wide * r
            + (x.cast * e if r != e else 0) + x.scores * score_bytes + x.fused * fused_bytes
            + x.stats * stats_bytes
        )
        copy = x.params * per_param_copy
        if amp and x.params:  # its own saved tensors and weight copy already freed
            g, a = grads, held - own - copy + 6 * x.params
            fixed = held_copies - copy + 6 * x.params
        else:
            g, a, fixed = grads + x.params * p.grad_bytes, held, held_copies
        if g + a > best_g + best_a:
            best_g, best_a, best_fixed = g, a, fixed
        grads += x.params * p.grad_bytes
        held = max(0.0, held - own - copy)  # (full checkpointing keeps less than the table)
        held_copies -= copy
    if best_a < saved:  # reported at the forward pass's end; the peak's surplus as gradients
        return best_g + best_a - saved, saved, copies
    return best_g, best_a, best_fixed
