"""The traced step itself (``gpuwatch.probe.memtrace``): torch is imported at the top."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.mem_tracker import MemTracker

from gpuwatch.probe.cuda_autocast import CudaAttention, CudaAutocastOps, SafeInit

DTYPE = {"fp32": torch.float32, "amp-bf16": torch.float32, "amp-fp16": torch.float32,
         "mixed-bf16": torch.bfloat16, "mixed-fp16": torch.float16, "bf16": torch.bfloat16,
         "fp16": torch.float16}


class _Tracker(MemTracker):
    """``MemTracker`` that also keeps the peak of activations and temporaries while
    ``watching`` (one step's forward and backward passes). A module's own backward peak
    is the moment of its total peak, not of its activations, and is lost where the
    model's hooks confuse the module hierarchy (transformers 5's output capture does)."""

    watching = False
    activation_peak = 0

    def _update_peak_stats(self, peak_state: Any) -> None:
        super()._update_peak_stats(peak_state)
        if self.watching:
            for snap in self._curr_mem_snap.values():
                now = sum(v for k, v in snap.items()
                          if getattr(k, "value", k) in ("Activation", "Temp"))
                self.activation_peak = max(self.activation_peak, now)


def _sum(snap: dict, *names: str) -> int:
    dev = next(iter(snap))
    return sum(v for k, v in snap[dev].items() if getattr(k, "value", k) in names)


def _optimizers(name: str, params: list, fused_each: bool) -> list[torch.optim.Optimizer]:
    if fused_each:  # mixed precision: one fused fp32 step per master tensor
        return [torch.optim.AdamW([p], lr=1e-4, fused=True) for p in params]
    if name in ("sgd", "momentum"):
        return [torch.optim.SGD(params, lr=0.1, momentum=0.9 if name == "momentum" else 0.0,
                                foreach=True)]
    if name == "adafactor":
        return [torch.optim.Adafactor(params, lr=1e-2, foreach=True)]
    if name == "adam":
        return [torch.optim.Adam(params, lr=1e-4, foreach=True)]
    return [torch.optim.AdamW(params, lr=1e-4, foreach=True)]


def _first_tensor(out: Any) -> Any:
    """The model's main output: a tensor, or the first tensor of a tuple or mapping
    (``logits`` first when a Hugging Face output has it)."""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits") and isinstance(out.logits, torch.Tensor):
        return out.logits
    values = out.values() if isinstance(out, dict) else out
    for v in values:
        if isinstance(v, torch.Tensor):
            return v
    raise TypeError(f"the model returned {type(out).__name__} with no tensor")


class _Step(nn.Module):
    """The model and its loss, as a Trainer-style loop calls it."""

    def __init__(self, model: nn.Module, tokens: bool):
        super().__init__()
        self.model, self.tokens = model, tokens

    def forward(self, x, y):
        if self.tokens:
            out = self.model(input_ids=x, labels=y) if _is_hf(self.model) else self.model(x)
            if getattr(out, "loss", None) is not None:
                return out.loss
            logits = _first_tensor(out).float()
            labels = F.pad(y, (0, 1), value=-100)[..., 1:]
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                   ignore_index=-100)
        out = _first_tensor(self.model(x))
        if out.dim() == 2:
            return F.cross_entropy(out.float(), y % out.shape[1])
        return out.float().mean()


def _is_hf(model: nn.Module) -> bool:
    return type(model).__module__.startswith("transformers.")


class FakeScalars:
    """Adafactor reads scalars with ``.item()``, which a fake tensor cannot answer: 1.0
    stands in (the memory is the same whatever the value)."""

    def __enter__(self):
        self.item = torch.Tensor.item
        torch.Tensor.item = lambda t: 1.0
        return self

    def __exit__(self, *exc):
        torch.Tensor.item = self.item


def _inputs(req: Any, vocab: int):
    if req.image is not None:  # in the weights' dtype (fp32 under autocast)
        h, w = req.image
        return (torch.randn(req.batch, 3, h, w, dtype=DTYPE[req.precision]),
                torch.randint(0, 1000, (req.batch,)))
    ids = torch.randint(0, vocab, (req.batch, req.seq))
    return ids, ids.clone()


def _vocab(model: nn.Module, req: Any) -> int:
    if req.vocab:
        return int(req.vocab)
    config = getattr(model, "config", None)
    if config is not None and getattr(config, "vocab_size", None):
        return int(config.vocab_size)
    for m in model.modules():
        if isinstance(m, nn.Embedding):
            return int(m.num_embeddings)
    raise ValueError("a model without --image takes token ids: give --vocab")


def run(build: Callable[[], Any], req: Any) -> dict[str, int]:
    dtype = DTYPE.get(req.precision)
    if dtype is None:
        from gpuwatch.probe.memtrace import TraceError

        raise TraceError(f"--trace runs {', '.join(DTYPE)}; not {req.precision}.")
    with FakeTensorMode():
        before = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            with SafeInit():
                model = build()
        finally:
            torch.set_default_dtype(before)
        if not isinstance(model, nn.Module):
            raise TypeError(f"the builder returned {type(model).__name__}, not an nn.Module")
        tokens = req.image is None
        x, y = _inputs(req, _vocab(model, req) if tokens else 0)
        if req.mode == "infer":
            return _infer(model.eval(), x)
        step = _Step(model, tokens).train()
        trainable = [p for p in step.parameters() if p.requires_grad]
        mixed = req.precision.startswith("mixed")
        masters = [nn.Parameter(p.detach().float()) for p in trainable] if mixed else []
        opts = _optimizers(req.optimizer, masters or trainable, mixed)
        mt = _Tracker()
        mt.track_external(step, *opts, *masters)
        amp = req.precision.startswith("amp")
        half = torch.float16 if req.precision.endswith("fp16") else torch.bfloat16
        # CUDA's fp32 ops stay in force through backward, where a checkpointed layer's
        # re-run turns autocast back on and must compute what its forward did; attention
        # runs the fused kernel CUDA would run
        with mt, CudaAutocastOps(), CudaAttention():
            for i in range(2):
                mt.watching = i == 1
                with torch.autocast("cpu", dtype=half, enabled=amp):
                    loss = step(x, y)
                loss.backward()
                mt.watching = False
                if masters:
                    for p, m, opt in zip(trainable, masters, opts, strict=True):
                        assert p.grad is not None     # every trainable weight has one
                        m.grad = p.grad.float()
                        opt.step()
                        m.grad = None
                        with torch.no_grad():
                            p.copy_(m)
                else:
                    with FakeScalars():
                        for opt in opts:
                            opt.step()
                after_step = mt.get_tracker_snapshot("current")
                for opt in opts:
                    opt.zero_grad()
                step.zero_grad(set_to_none=True)
                del loss
                if i == 0:
                    mt.reset_mod_stats()
        peak = mt.get_tracker_snapshot("peak")
    return {
        "parameters": _sum(peak, "Parameter", "Buffer"),
        "gradients": _sum(after_step, "Gradient"),
        "optimizer_states": _sum(after_step, "Optstate", "Other"),
        "activations": mt.activation_peak,
        "kv_cache": 0,
        "total": _sum(peak, "Total"),
    }


def _infer(model: nn.Module, x) -> dict[str, int]:
    mt = MemTracker()
    mt.track_external(model)
    with mt, torch.no_grad(), CudaAttention():
        out = model(x)
        del out
    peak = mt.get_tracker_snapshot("peak")
    params, total = _sum(peak, "Parameter", "Buffer"), _sum(peak, "Total")
    return {"parameters": params, "gradients": 0, "optimizer_states": 0,
            "activations": total - params, "kv_cache": 0, "total": total}
