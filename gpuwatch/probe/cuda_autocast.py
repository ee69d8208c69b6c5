"""CUDA's autocast, as far as it differs from the CPU's, for traces that run on the CPU.

``torch.autocast("cpu")`` runs LayerNorm, GroupNorm and softmax in the 16-bit dtype;
CUDA's autocast runs them in fp32 (their inputs cast up, their outputs fp32), which
changes what autograd keeps in every model with such a norm (ConvNeXt, ViT, Swin, the
SD UNet). Inside :class:`CudaAutocastOps` those functions run as CUDA's autocast runs
them whenever CPU autocast is on. :class:`CudaAttention` picks the fused attention kernel
CUDA picks where the CPU has none (query and value head sizes that differ, as in
DeepSeek's latent attention: CUDA's memory-efficient kernel, the CPU's math path).
Models built by a library also get a safe ``trunc_normal_``: torch ≥ 2.14 redraws
out-of-range samples with a data-dependent loop that fake tensors cannot run (the values
never matter to a trace), and RegNet's block widths and timm's drop-path rates are
computed on real tensors.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import unset_fake_temporarily

# CUDA autocast's fp32 ops, by where they are looked up. They are replaced there while a
# trace runs rather than caught by a torch function mode: a checkpointed layer's re-run
# during backward happens outside any such mode and must compute what its forward did.
_FP32_OPS = (
    (F, "layer_norm"), (torch, "layer_norm"), (F, "group_norm"), (torch, "group_norm"),
    (F, "softmax"), (torch, "softmax"), (torch.Tensor, "softmax"),
    (F, "log_softmax"), (torch, "log_softmax"), (torch.Tensor, "log_softmax"),
)


def _up(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float32:
        return x.float()
    return x


def _in_fp32(op: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        if not torch.is_autocast_enabled("cpu"):
            return op(*args, **kwargs)
        with torch.autocast("cpu", enabled=False):
            return op(*(_up(a) for a in args), **{k: _up(v) for k, v in kwargs.items()})

    return run


class CudaAutocastOps:
    """Run CUDA autocast's fp32 ops (norms, softmax) in fp32 under CPU autocast."""

    def __enter__(self) -> CudaAutocastOps:
        self.undo = [(owner, name, owner.__dict__.get(name), getattr(owner, name))
                     for owner, name in _FP32_OPS]
        for owner, name, _, op in self.undo:
            setattr(owner, name, _in_fp32(op))
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, own, _ in reversed(self.undo):
            if own is None:         # inherited (Tensor's methods): drop the shadowing one
                delattr(owner, name)
            else:
                setattr(owner, name, own)


def _efficient_when_cuda_would(op: Any) -> Any:
    """``scaled_dot_product_attention`` that runs CUDA's memory-efficient kernel (O(s)
    statistics, no a·s² probabilities kept) where the CPU's fused kernel refuses the
    shapes but CUDA's accepts them: query and key heads of one size, value heads of
    another, both multiples of the GEMM alignment. A boolean mask becomes an additive
    bias in the query's dtype first, as CUDA's dispatcher makes it."""

    def run(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
            scale=None, enable_gqa=False):
        align = 8 if query.dtype in (torch.float16, torch.bfloat16) else 4
        fits = (query.dim() == 4 and not enable_gqa and query.size(-1) != value.size(-1)
                and query.size(-1) == key.size(-1) and query.size(1) == key.size(1)
                and not query.size(-1) % align and not value.size(-1) % align)
        if not fits:
            return op(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                      is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
        if torch.is_autocast_enabled("cpu"):  # CUDA autocast runs attention in 16 bits
            half = torch.get_autocast_dtype("cpu")
            query, key, value = (t.to(half) for t in (query, key, value))
        bias = attn_mask
        if bias is not None and bias.dtype == torch.bool:
            bias = torch.zeros(bias.shape, dtype=query.dtype, device=query.device) \
                .masked_fill_(bias.logical_not(), float("-inf"))
        if bias is not None:
            b, h, q, k = query.size(0), query.size(1), query.size(2), key.size(2)
            bias = bias.expand(b, h, q, k)
        grad = any(t.requires_grad for t in (query, key, value))
        return torch.ops.aten._scaled_dot_product_efficient_attention(
            query, key, value, bias, grad, dropout_p, is_causal, scale=scale)[0]

    return run


class CudaAttention:
    """Attention through the fused kernel CUDA would pick (see the module's note)."""

    def __enter__(self) -> CudaAttention:
        self.op = F.scaled_dot_product_attention
        F.scaled_dot_product_attention = _efficient_when_cuda_would(self.op)
        return self

    def __exit__(self, *exc: object) -> None:
        F.scaled_dot_product_attention = self.op


# Helpers that compute a model's hyperparameters with tensors (``.tolist()``): they run
# on real tensors while the model is built under fake ones.
_REAL_VALUED = (("timm.layers.drop", "calculate_drop_path_rates"),)


class SafeInit:
    """While a model is built: ``nn.init.trunc_normal_`` as a plain normal draw, and
    hyperparameter helpers (RegNet's widths, timm's drop-path rates) on real tensors.
    A helper a library imported by name is replaced wherever it is bound."""

    def __enter__(self) -> SafeInit:
        self.undo: list[tuple[object, str, object]] = []

        def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
            with torch.no_grad():
                return tensor.normal_(mean, std)

        self._everywhere(torch.nn.init.trunc_normal_, trunc_normal_)
        for module, name in _REAL_VALUED:
            helper = getattr(sys.modules.get(module), name, None)
            if helper is not None:
                self._everywhere(helper, _on_real_tensors(helper))
        regnet = sys.modules.get("torchvision.models.regnet")
        if regnet is not None:
            widths = regnet.BlockParams
            plain = _on_real_tensors(widths.from_init_params.__func__)
            self.undo.append((widths, "from_init_params", widths.__dict__["from_init_params"]))
            widths.from_init_params = classmethod(plain)
        return self

    def _everywhere(self, original: object, replacement: object) -> None:
        for name, module in list(sys.modules.items()):
            if not name.startswith(("torch", "timm")) or module is None:
                continue
            for attr, value in list(vars(module).items()):
                if value is original:
                    self.undo.append((module, attr, value))
                    setattr(module, attr, replacement)

    def __exit__(self, *exc: object) -> None:
        for owner, attr, value in reversed(self.undo):
            setattr(owner, attr, value)


def _on_real_tensors(fn: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        with unset_fake_temporarily():
            return fn(*args, **kwargs)

    return run
