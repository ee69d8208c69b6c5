"""Two pieces that relate the estimate to what a memory tracer sees.

* The end of the backward pass: the input embedding's gradient is dense (vocab ×
  width) and made as a temporary before autograd stores it. Tied to the output head,
  the head's gradient (computed first) waits in autograd's input buffer for it and the
  two are summed out of place: three vocabulary-sized tensors at once, on top of every
  other gradient. For a small model with a large vocabulary (Gemma, Llama 3.2 1B,
  BLOOM, Falcon), that moment is the step's peak.
* A weight's gradient is made whole before autograd stores it: transformers keeps an
  MoE layer's routed experts as one 3-D tensor, so its gradient (every expert's) is a
  temporary on top of the activations still held (DeepSeek-V3: 14 GiB a layer).
* MemTracker (``gpuwatch estimate --trace``) counts a gradient as a temporary until
  autograd stores it in ``.grad``; at the backward's peak the output head's gradient is
  such a temporary, so the traced activations hold it too.
"""

from __future__ import annotations

from typing import Any

from gpuwatch.budget.precision import Precision
from gpuwatch.budget.specs import TransformerSpec
from gpuwatch.budget.workload import Setup


def embedding_backward(spec: Any, p: Precision, setup: Setup) -> tuple[float, float]:
    """(the embedding gradient's temporaries at the end of backward, what they add to
    the gradients then): 3 and 2 vocabulary-sized gradients tied, 1 and 0 untied; none
    for a frozen embedding."""
    if not isinstance(spec, TransformerSpec) or setup.lora_rank or spec.arch == "vit":
        return 0.0, 0.0
    embed = next((g.numel for g in spec.param_groups() if g.name == "embed"), 0)
    one = embed * p.grad_bytes / setup.tp
    return (3 * one, 2 * one) if spec.tied_embeddings else (one, 0.0)


def waiting_head_gradient(spec: Any, p: Precision, setup: Setup) -> float:
    """A tied output head's gradient, made early in backward: it waits in autograd's
    input buffer for the embedding's, the last to come, through the whole backward pass
    (an untied head's is stored at once). 0 for a frozen or untied head."""
    one, beyond = embedding_backward(spec, p, setup)
    return one / 3 if beyond else 0.0


def largest_gradient(spec: Any, p: Precision, setup: Setup) -> float:
    """The largest weight's gradient: the routed experts' fused gate/up tensor, else one
    MLP matrix (0 when the weights are frozen)."""
    if not isinstance(spec, TransformerSpec) or setup.lora_rank or spec.count_only:
        return 0.0
    ins = 2 if spec.gated_mlp else 1
    numel = spec.experts * ins * spec.ffn_size * spec.hidden if spec.experts > 1 \
        else spec.ffn_size * spec.hidden
    return numel * p.grad_bytes / setup.tp


def traced_categories(est: Any) -> dict[str, int]:
    """The estimate's categories as MemTracker counts them: activations at their own
    peak, with the gradients made by then (held as temporaries), the largest weight's
    gradient in flight, or the embedding's gradient temporaries at the end of backward."""
    b, d = est.breakdown, est.detail
    acts = b.activations
    if est.workload.mode == "train":
        acts = max(d.backward_start_activations + d.grads_at_backward,
                   d.embedding_backward_bytes, d.in_flight_bytes)
    return {"parameters": b.parameters, "gradients": b.gradients,
            "optimizer_states": d.optimizer_persistent, "activations": acts,
            "kv_cache": b.kv_cache, "total": est.total_bytes}
