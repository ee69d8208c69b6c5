"""CUDA's autocast, as far as it differs from the CPU's, for traces that run on the CPU.

``torch.autocast("cpu")`` runs LayerNorm, GroupNorm and softmax in the 16-bit dtype;
CUDA's autocast runs them in fp32 (their inputs cast up, their outputs fp32), which
changes what autograd keeps in every model with such a norm (ConvNeXt, ViT, Swin, the
SD UNet). Inside :class:`CudaAutocastOps` those functions run as CUDA's autocast runs
them whenever CPU autocast is on. Models built by a library also get a safe
``trunc_normal_``: torch ≥ 2.14 redraws out-of-range samples with a data-dependent loop
that fake tensors cannot run (the values never matter to a trace); torchvision's RegNet
computes its block widths with real tensors.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.overrides import TorchFunctionMode

_FP32_OPS = {
    F.layer_norm, torch.layer_norm, F.group_norm, torch.group_norm,
    F.softmax, torch.softmax, torch.Tensor.softmax,
    F.log_softmax, torch.log_softmax, torch.Tensor.log_softmax,
}


def _up(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float32:
        return x.float()
    return x


class CudaAutocastOps(TorchFunctionMode):
    """Run CUDA autocast's fp32 ops (norms, softmax) in fp32 under CPU autocast."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _FP32_OPS and torch.is_autocast_enabled("cpu"):
            with torch.autocast("cpu", enabled=False):
                return func(*(_up(a) for a in args), **{k: _up(v) for k, v in kwargs.items()})
        return func(*args, **kwargs)


class SafeInit:
    """``nn.init.trunc_normal_`` as a plain normal draw while a model is built."""

    def __enter__(self) -> SafeInit:
        self.saved = torch.nn.init.trunc_normal_

        def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
            with torch.no_grad():
                return tensor.normal_(mean, std)

        torch.nn.init.trunc_normal_ = trunc_normal_
        regnet = sys.modules.get("torchvision.models.regnet")
        self.widths = regnet.BlockParams if regnet else None
        if self.widths is not None:
            plain = self.widths.from_init_params.__func__

            def from_init_params(cls, *args, **kwargs):
                with unset_fake_temporarily():
                    return plain(cls, *args, **kwargs)

            self.saved_widths = self.widths.__dict__["from_init_params"]
            self.widths.from_init_params = classmethod(from_init_params)
        return self

    def __exit__(self, *exc: object) -> None:
        torch.nn.init.trunc_normal_ = self.saved
        if self.widths is not None:
            self.widths.from_init_params = self.saved_widths
