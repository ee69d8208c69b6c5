"""The 16-bit weight copies torch autocast caches during training, and when they are freed."""

from __future__ import annotations

from gpuwatch.budget.family_spec import quirks_of
from gpuwatch.budget.precision import Precision
from gpuwatch.budget.specs import ModelSpec, TransformerSpec
from gpuwatch.budget.workload import Setup


def autocast_weight_copies(
    spec: ModelSpec, p: Precision, setup: Setup
) -> tuple[float, float]:
    """(copies held, one re-run layer's copies) of autocast's 16-bit matmul weights.

    Autocast caches a 16-bit copy of every matmul and convolution weight, which the
    backward pass keeps. Under full checkpointing the copies a checkpointed layer made
    are freed when the forward pass ends (its saved tensors are discarded); its re-run
    in backward makes them again, one layer at a time. So a checkpointed transformer
    holds only the copies outside its layers (embeddings, a tied or separate head), plus
    one layer's during its re-run.
    """
    if not p.name.startswith("amp"):
        return 0.0, 0.0
    kinds = ("linear", "conv")
    groups = spec.param_groups()
    outside = sum(g.numel for g in groups if g.kind in kinds and not g.per_layer)
    inside = sum(g.numel for g in groups if g.kind in kinds and g.per_layer)
    if isinstance(spec, TransformerSpec) and spec.tied_embeddings and spec.vocab:
        outside += spec.vocab * (quirks_of(spec).embed_dim or spec.hidden)  # the tied head
    scale = 2 / setup.tp / setup.pp
    if setup.checkpointing == "full" and isinstance(spec, TransformerSpec) and setup.pp == 1:
        return outside * scale, inside / max(1, spec.total_layers) * scale
    return (outside + inside) * scale, 0.0
