"""Estimator vs traced PyTorch steps, per category, in every regime the CLI offers.

Models are built in plain torch op for op as Hugging Face transformers runs them
(``benchmarks/hf_style.py``: GPT-2, Llama, Qwen2, BERT) and as torchvision / diffusers
do (``benchmarks/cnn_style.py``), inside ``FakeTensorMode`` (no real memory, CPU), and
traced with PyTorch's ``MemTracker``:

* training: two steps of the loop Hugging Face's Trainer runs (``loss = model(...)``,
  the outputs dropped, ``loss.backward()``, ``step()``, ``zero_grad()``) in fp32,
  autocast bf16 (``amp-bf16``), bf16 weights with an fp32 master and a fused step
  (``mixed-bf16``), or bf16 throughout; with checkpointing, LoRA, or a loop that keeps
  the logits;
* inference: a prefill under ``no_grad`` that fills a KV cache and keeps the last
  position's logits (in fp32, as ``generate`` does), eager or SDPA attention.

Categories: parameters (Parameter + Buffer; frozen weights are buffers, since MemTracker
hooks every parameter's gradient), gradients and optimizer states (after ``step()``;
an fp32 master copy counts there, as in the estimator), activations (Activation + Temp
at the backward pass's peak, or at the end of the forward pass where that is more;
inference: the peak less weights and cache),
KV cache (the cache's tensors), total (the step's peak). MemTracker counts tensor
storages only, so the estimator runs with no framework overhead; a CPU dropout mask
is in the activation dtype (CUDA: 1 byte), which the estimator is told.

Models are small (few layers, short sequences: the closed forms scale) so the run
takes a few minutes on two cores. ``python benchmarks/accuracy.py [FILTER]`` runs the
rows whose name contains FILTER; it skips without torch.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.mem_tracker import MemTracker
except ImportError:  # pragma: no cover
    print("accuracy benchmark skipped: PyTorch is not installed (pip install torch)")
    sys.exit(0)

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cnn_style import VGG16, ResNet50, UNet
from hf_style import GPT2LM, BertMLM, CausalLM, LlamaLM, ViTClassifier, add_lora
from t5_style import T5
from yolo_style import YOLOv5s

from gpuwatch.budget import Setup, TransformerSpec, Workload, estimate, lookup_model
from gpuwatch.budget.workload import lora_target_set
from gpuwatch.core.units import format_bytes
from gpuwatch.probe.memtrace_step import FakeScalars

CATS = ("parameters", "gradients", "optimizer_states", "activations", "kv_cache")
TARGET = {"total": 8.0, **{c: 10.0 for c in CATS}}
DTYPE = {"fp32": torch.float32, "amp-bf16": torch.float32, "mixed-bf16": torch.bfloat16,
         "bf16": torch.bfloat16}


@dataclass
class Case:
    """One row: a model, a workload and a setup, run both ways."""

    name: str
    spec: Any  # TransformerSpec or CnnSpec
    build: Any  # () -> nn.Module with body()/head() (transformers) or a CNN
    batch: int
    seq: int = 0
    image: int = 0
    mode: str = "train"
    precision: str = "fp32"
    optimizer: str = "adamw"
    checkpointing: str = "none"
    lora: int = 0
    lora_targets: str = "q,v"
    keep_logits: bool = False
    flash: bool = True
    diffusion: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- tracing
def _optimizer(case: Case, params: list[nn.Parameter]) -> list[torch.optim.Optimizer]:
    if case.optimizer == "momentum":
        return [torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=True)]
    if case.optimizer == "adafactor":
        return [torch.optim.Adafactor(params, lr=1e-2, foreach=True)]  # CUDA's default
    if case.precision == "mixed-bf16":  # one fused fp32 step per tensor, on its master
        return [torch.optim.AdamW([p], lr=1e-4, fused=True) for p in params]
    return [torch.optim.AdamW(params, lr=1e-4, foreach=True)]


def _batch(case: Case):
    if case.diffusion:  # SD 1.5: a latent, a timestep, 77 text tokens; the noise as target
        side = case.image // 8
        return ((torch.randn(case.batch, 4, side, side), torch.rand(case.batch) * 1000,
                 torch.randn(case.batch, 77, 768)), torch.randn(case.batch, 4, side, side))
    if case.image:
        return torch.randn(case.batch, 3, case.image, case.image), torch.randint(
            0, 1000, (case.batch,))
    v = case.spec.vocab
    return torch.randint(0, v, (case.batch, case.seq)), torch.randint(0, v, (case.batch, case.seq))


class Classifier(nn.Module):
    """An image model and its loss: cross-entropy over classes, or a diffusion model's
    mean squared error to the noise."""

    def __init__(self, model, mse: bool = False):
        super().__init__()
        self.model, self.mse = model, mse

    def forward(self, x, y):
        out = self.model(x)
        return (F.mse_loss(out, y) if self.mse else F.cross_entropy(out, y)), out


def _sum(snap, dev, *names) -> int:
    return sum(v for k, v in snap[dev].items() if getattr(k, "value", k) in names)


def built(case: Case, dtype: torch.dtype) -> nn.Module:
    """The model created in ``dtype`` (``.to()`` cannot swap fake parameters)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        model = case.build()
        if case.lora:  # PEFT creates adapters in fp32 unless the model is 16-bit throughout
            add_lora(model, set(lora_target_set(case.lora_targets)), case.lora)
        return model
    finally:
        torch.set_default_dtype(before)


def trace_train(case: Case) -> dict[str, int]:
    with FakeTensorMode():
        inner = built(case, DTYPE[case.precision])
        inner.gc = case.checkpointing == "full"
        model = Classifier(inner, case.diffusion) if case.image else CausalLM(
            inner, shift=case.spec.arch == "decoder")
        trainable = [p for p in model.parameters() if p.requires_grad]
        masters = ([nn.Parameter(p.detach().float()) for p in trainable]
                   if case.precision == "mixed-bf16" else [])
        opts = _optimizer(case, masters or trainable)
        x, y = _batch(case)
        mt = MemTracker()
        mt.track_external(model, *opts, *masters)
        autocast = torch.autocast("cpu", dtype=torch.bfloat16,
                                  enabled=case.precision == "amp-bf16")
        with mt:
            for i in range(2):
                with autocast:
                    loss, out = model(x, y)
                if not case.keep_logits:
                    del out
                after_forward = mt.get_tracker_snapshot("current")
                loss.backward()
                if masters:
                    for p, m, opt in zip(trainable, masters, opts, strict=True):
                        m.grad = p.grad.float()
                        opt.step()
                        m.grad = None
                        with torch.no_grad():
                            p.copy_(m)
                else:
                    with FakeScalars():
                        opts[0].step()
                after_step = mt.get_tracker_snapshot("current")
                for opt in opts:
                    opt.zero_grad()
                model.zero_grad(set_to_none=True)
                del loss
                if case.keep_logits:
                    del out
                if i == 0:
                    mt.reset_mod_stats()
        peak = mt.get_tracker_snapshot("peak")
        bw = mt.memory_tracking[model].snapshots
    dev = next(iter(peak))
    bw_peak = bw[next(k for k in bw if k.value == "Peak-Backward")][-1]
    return {
        "parameters": _sum(peak, dev, "Parameter", "Buffer"),
        "gradients": _sum(after_step, dev, "Gradient"),
        "optimizer_states": _sum(after_step, dev, "Optstate", "Other"),  # + fp32 masters
        "activations": max(_sum(bw_peak, dev, "Activation", "Temp"),
                           _sum(after_forward, dev, "Activation", "Temp")),
        "kv_cache": 0,
        "total": _sum(peak, dev, "Total"),
        "forward_end": _sum(after_forward, dev, "Activation", "Temp"),
        "backward_peak": _sum(bw_peak, dev, "Activation", "Temp"),
    }


def trace_infer(case: Case) -> dict[str, int]:
    with FakeTensorMode():
        model = built(case, torch.bfloat16).eval()
        ids, _ = _batch(case)
        mt = MemTracker()
        mt.track_external(model)
        with mt, torch.no_grad():
            cache: list = []
            hidden = model.body(ids, cache)
            logits = model.head(hidden[:, -1:, :])
            next_logits = logits[:, -1, :].to(copy=True, dtype=torch.float32)
            del hidden, logits, next_logits
            kv = sum(t.untyped_storage().nbytes() for pair in cache for t in pair)
        peak = mt.get_tracker_snapshot("peak")
    dev = next(iter(peak))
    params = _sum(peak, dev, "Parameter", "Buffer")
    total = _sum(peak, dev, "Total")
    return {"parameters": params, "gradients": 0, "optimizer_states": 0,
            "activations": total - params - kv, "kv_cache": kv, "total": total}


def predict(case: Case) -> dict[str, int]:
    wl = Workload(mode=case.mode, batch=case.batch, seq=case.seq or 512,
                  image=(case.image, case.image) if case.image else None)
    est = estimate(case.spec, wl, Setup(
        precision=case.precision, optimizer=case.optimizer, checkpointing=case.checkpointing,
        flash_attention=case.flash, lora_rank=case.lora, lora_targets=case.lora_targets,
        keep_logits=case.keep_logits, overhead_bytes=0,
        dropout_mask_bytes=4.0 if case.precision == "fp32" else 2.0,
        foreach_optimizer=case.precision != "mixed-bf16",
        **case.extra))
    b = est.breakdown
    return {"parameters": b.parameters, "gradients": b.gradients,
            "optimizer_states": est.detail.optimizer_persistent, "activations": b.activations,
            "kv_cache": b.kv_cache, "total": est.total_bytes}


def compare(case: Case) -> list[tuple[str, str, int, int, float]]:
    traced = (trace_infer if case.mode == "infer" else trace_train)(case)
    predicted = predict(case)
    rows = []
    for cat in (*CATS, "total"):
        p, t = predicted[cat], traced[cat]
        if not p and not t:
            continue
        rows.append((case.name, cat, p, t, 100 * (p - t) / t if t else float("inf")))
    return rows


# ---------------------------------------------------------------- the rows
def specs() -> dict[str, TransformerSpec]:
    gpt2 = replace(lookup_model("gpt2"), layers=4)
    llama = TransformerSpec("llama-style", 4, 1024, 16, 32000, ffn=2816, kv_heads=4,
                            gated_mlp=True, norm="rmsnorm", bias=False, tied_embeddings=False)
    qwen = TransformerSpec("qwen2-style", 4, 896, 14, 151936, ffn=4864, kv_heads=2,
                           gated_mlp=True, norm="rmsnorm", bias=False, tied_embeddings=True)
    bert = TransformerSpec("bert-mlm", 4, 768, 12, 30522, arch="encoder", max_positions=512,
                           type_vocab=2, mlm_head=True, dropout=0.1)
    return {"gpt2": gpt2, "llama": llama, "qwen": qwen, "bert": bert}


def builders(s: dict[str, TransformerSpec], impl: str):
    return {
        "gpt2": lambda: GPT2LM(s["gpt2"], impl),
        "llama": lambda: LlamaLM(s["llama"], impl),
        "qwen": lambda: LlamaLM(s["qwen"], impl, qkv_bias=True),
        "bert": lambda: BertMLM(s["bert"], impl),
    }


def cases() -> list[Case]:
    s = specs()
    eager, sdpa = builders(s, "eager"), builders(s, "sdpa")
    out: list[Case] = []
    for fam, b, t in (("gpt2", 4, 512), ("llama", 2, 1024), ("qwen", 2, 1024)):
        impl = eager if fam == "gpt2" else sdpa
        for prec in ("fp32", "amp-bf16", "mixed-bf16", "bf16"):
            out.append(Case(f"{fam} {prec}", s[fam], impl[fam], b, t, precision=prec,
                            flash=fam != "gpt2"))
    for fam, b, t in (("gpt2", 4, 512), ("qwen", 2, 1024)):
        impl = eager if fam == "gpt2" else sdpa
        out.append(Case(f"{fam} amp-bf16 keep logits", s[fam], impl[fam], b, t,
                        precision="amp-bf16", keep_logits=True, flash=fam != "gpt2"))
        out.append(Case(f"{fam} bf16 checkpointing", s[fam], impl[fam], b, t, precision="bf16",
                        checkpointing="full", flash=fam != "gpt2"))
    out.append(Case("llama amp-bf16 checkpointing", s["llama"], sdpa["llama"], 2, 1024,
                    precision="amp-bf16", checkpointing="full"))
    out.append(Case("llama LoRA 8 q,v bf16 2k", s["llama"], sdpa["llama"], 1, 2048,
                    precision="bf16", lora=8))
    for fam, targets in (("llama", "q,v"), ("qwen", "all-linear")):
        out.append(Case(f"{fam} LoRA 16 {targets} bf16", s[fam], sdpa[fam], 2, 1024,
                        precision="bf16", lora=16, lora_targets=targets))
    out.append(Case("bert fp32 sdpa", s["bert"], sdpa["bert"], 8, 256))
    out.append(Case("bert amp-bf16 eager", s["bert"], eager["bert"], 8, 256,
                    precision="amp-bf16", flash=False))
    vit = replace(lookup_model("vit-b-16"), layers=4)
    out.append(Case("vit fp32 sdpa", vit, lambda: ViTClassifier(vit, "sdpa"), 16, image=224))
    out.append(Case("vit amp-bf16 eager", vit, lambda: ViTClassifier(vit, "eager"), 16,
                    image=224, precision="amp-bf16", flash=False))
    for fam in ("gpt2", "llama"):
        for impl, flash in ((eager, False), (sdpa, True)):
            tag = "sdpa" if flash else "eager"
            out.append(Case(f"{fam} infer {tag} bf16", s[fam], impl[fam], 4, 1024,
                            mode="infer", precision="bf16", flash=flash))
    for name, build in (("resnet-50", ResNet50), ("vgg-16", VGG16)):
        spec = lookup_model(name, (128, 128))
        for opt in ("momentum", "adafactor"):
            out.append(Case(f"{name} {opt} fp32", spec, build, 16, image=128, optimizer=opt))
    t5 = replace(lookup_model("t5-base"), layers=2, decoder_layers=2)
    for prec in ("fp32", "bf16", "amp-bf16"):
        out.append(Case(f"t5 {prec} eager", t5, lambda: T5(t5), 4, 512, precision=prec,
                        flash=False))
    yolo = lookup_model("yolov5s", (320, 320))
    for prec in ("fp32", "amp-bf16"):
        out.append(Case(f"yolov5s momentum {prec}", yolo, YOLOv5s, 4, image=320,
                        optimizer="momentum", precision=prec))
    unet = lookup_model("sd15-unet", (512, 512))
    out.append(Case("sd15-unet fp32 eager", unet, UNet, 1, image=512, diffusion=True,
                    flash=False))
    return out


def main(argv: list[str]) -> int:
    wanted = argv[1] if len(argv) > 1 else ""
    print(f"torch {torch.__version__}; CPU FakeTensorMode + MemTracker; targets: total "
          f"±{TARGET['total']:g} %, each category ±{TARGET['parameters']:g} %")
    print(f"{'row':<32}{'category':<18}{'estimate':>12}{'traced':>12}{'error':>9}")
    ok, t0 = True, time.perf_counter()
    for case in cases():
        if wanted not in case.name:
            continue
        for name, cat, p, t, err in compare(case):
            good = abs(err) <= TARGET[cat] or abs(p - t) < 1 << 20  # under 1 MiB: noise
            ok &= good
            print(f"{name:<32}{cat:<18}{format_bytes(p, digits=2):>12}"
                  f"{format_bytes(t, digits=2):>12}{err:>+8.1f}%{'' if good else '  OUTSIDE'}",
                  flush=True)
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
