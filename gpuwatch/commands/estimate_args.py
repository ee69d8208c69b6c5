"""The options of `gpuwatch estimate`, declared when `estimate` is the subcommand in use.

Their help lists the catalog's models, GPUs, precisions and optimizers, so this module
imports the budget's small modules (no numpy); the estimator itself is imported by
:mod:`gpuwatch.commands.estimate` when the command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from gpuwatch.budget.bounds import (
    MAX_BATCH,
    MAX_DP,
    MAX_FFN,
    MAX_GRAD_ACCUM,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_IMAGE,
    MAX_LAYERS,
    MAX_LORA_RANK,
    MAX_SEQ,
    MAX_VOCAB,
)
from gpuwatch.budget.catalog import model_names
from gpuwatch.budget.gpus import GPUS
from gpuwatch.budget.precision import OPTIMIZERS, PRECISIONS
from gpuwatch.budget.workload import DEFAULT_PRECISION
from gpuwatch.commands import summary
from gpuwatch.commands.parsing import HelpFormatter, describe

_CUSTOM = (  # (flag, what it is, the largest value, the default)
    ("layers", "number of transformer blocks", MAX_LAYERS, "no default"),
    ("hidden", "hidden size (model width)", MAX_HIDDEN, "no default"),
    ("heads", "attention heads", MAX_HEADS, "no default"),
    ("kv-heads", "key/value heads, fewer for grouped-query attention", MAX_HEADS,
     "default: --heads"),
    ("ffn", "MLP inner width", MAX_FFN, "default 4 × --hidden"),
    ("vocab", "vocabulary size in tokens", MAX_VOCAB, "default 32,000"),
)


def add_estimate_parser(subparsers: Any) -> None:
    """Register ``estimate``, options and all, on an argparse subparsers object."""
    declare(subparsers.add_parser("estimate", help=summary("estimate"),
                                  formatter_class=HelpFormatter))


def declare(p: argparse.ArgumentParser) -> None:
    """The options of ``gpuwatch estimate``."""
    describe(
        p,
        description="How much GPU memory a model needs per GPU, broken down into "
                    "parameters, gradients, optimizer states, activations, KV cache and "
                    "framework overhead, and what each lever would save. Sizes are shown "
                    "in IEC units (GiB = 2³⁰ bytes).",
        example_lines=[
            "gpuwatch estimate --model llama-3.1-8b --batch 1 --seq 4096 --precision bf16 "
            "--gpu H100-80GB",
            "gpuwatch estimate --config path/to/config.json --mode infer --context 32768 "
            "--fit",
            "gpuwatch estimate --trace-model torchvision:efficientnet_b0 --image 224x224 "
            "--batch 32"],
        run="gpuwatch.commands.estimate:run_estimate")
    m = p.add_argument_group("model", "Give one of --model, --config or --params, or a "
                                      "custom transformer's --layers, --hidden and --heads.")
    m.add_argument("--model", metavar="NAME",
                   help=f"a catalog model (no default): {', '.join(model_names())}")
    m.add_argument("--config", metavar="PATH",
                   help="a Hugging Face config.json on disk (no default)")
    m.add_argument("--params", metavar="COUNT",
                   help="a bare parameter count, 1 to 10T: 7e9, 7B, 125M; the shape is "
                        "assumed (no default)")
    for name, what, high, default in _CUSTOM:
        m.add_argument(f"--{name}", metavar="N",
                       help=f"custom transformer: {what}, up to {high:,} ({default})")
    w = p.add_argument_group("workload")
    w.add_argument("--mode", default="train",
                   help="train (weights, gradients, optimizer states and activations) or "
                        "infer (weights and KV cache) (default %(default)s)")
    w.add_argument("--batch", default="1", metavar="N",
                   help=f"micro-batch per GPU, in sequences or images: 1 to {MAX_BATCH:,} "
                        "(default %(default)s)")
    w.add_argument("--seq", default="512", metavar="TOKENS",
                   help=f"sequence length in tokens: 1 to {MAX_SEQ:,} (default %(default)s)")
    w.add_argument("--image", metavar="HxW",
                   help="image size in pixels for CNNs and ViT, e.g. 224x224, sides up to "
                        f"{MAX_IMAGE:,} (default: the catalog model's own size)")
    w.add_argument("--grad-accum", default="1", metavar="STEPS",
                   help=f"gradient accumulation steps, 1 to {MAX_GRAD_ACCUM:,} "
                        "(default %(default)s)")
    w.add_argument("--context", metavar="TOKENS",
                   help=f"inference: KV-cache length in tokens, 1 to {MAX_SEQ:,} "
                        "(default: --seq)")
    s = p.add_argument_group("setup")
    s.add_argument("--precision", metavar="NAME",
                   help=f"number formats of weights and compute: {', '.join(PRECISIONS)} "
                        f"(default: {DEFAULT_PRECISION['train']} for --mode train, torch "
                        "autocast over fp32 weights as Hugging Face Trainer's bf16=True "
                        f"runs it; {DEFAULT_PRECISION['infer']} for --mode infer, the "
                        "16-bit weights models are served in)")
    s.add_argument("--optimizer", default="adamw", metavar="NAME",
                   help=f"training optimizer: {', '.join(OPTIMIZERS)} (default %(default)s)")
    s.add_argument("--optimizer-step", default="foreach", metavar="KIND",
                   help="how optimizer.step() runs: foreach (PyTorch's default multi-tensor "
                        "step, one more state-sized temporary) or fused (fused=True, "
                        "DeepSpeed, Apex: no temporary) (default %(default)s)")
    s.add_argument("--checkpointing", default="none", metavar="KIND",
                   help="activation checkpointing: none, selective or full "
                        "(default %(default)s)")
    s.add_argument(
        "--flash-attention",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fused attention (flash / memory-efficient SDPA, PyTorch 2's default): no a·s² "
        "scores; --no-flash-attention counts eager attention's scores (default: on)",
    )
    s.add_argument("--zero", default="0", metavar="STAGE",
                   help="ZeRO stage 0 to 3, sharding over --dp GPUs (default %(default)s: "
                        "no sharding)")
    s.add_argument("--dp", default="1", metavar="N",
                   help=f"data-parallel GPUs, 1 to {MAX_DP:,} (default %(default)s)")
    s.add_argument("--tp", default="1", metavar="N",
                   help="tensor-parallel GPUs, dividing the attention heads "
                        "(default %(default)s)")
    s.add_argument("--pp", default="1", metavar="N",
                   help="pipeline stages, at most the layers (default %(default)s)")
    s.add_argument("--sequence-parallel", action="store_true",
                   help="with --tp: shard the norms and dropout activations too "
                        "(default: off)")
    s.add_argument("--offload", metavar="WHAT",
                   help="move to CPU memory: optimizer (ZeRO-Offload) or params "
                        "(ZeRO-Infinity, needs --zero 3) (default: nothing offloaded)")
    s.add_argument("--lora", default="0", metavar="RANK",
                   help=f"train LoRA adapters of this rank, 0 to {MAX_LORA_RANK:,} "
                        "(default %(default)s: no adapters, every weight is trained)")
    s.add_argument("--lora-targets", metavar="LIST",
                   help="with --lora: the projections that get adapters: q,v (PEFT's "
                        "default), all-linear, attention, mlp, or a comma list of q, k, v, "
                        "o, gate, up, down (default q,v)")
    s.add_argument("--keep-logits", action="store_true",
                   help="the training loop holds the model's output (the b·s·V logits) "
                        "through backward (default: off; only the loss is kept, as "
                        "Hugging Face Trainer does, so the logits are freed before backward)")
    s.add_argument("--dropout-mask-bytes", default="1", metavar="BYTES",
                   help="bytes per dropout mask element, 0 to 8: 1 for CUDA's bool mask, "
                        "4 for a CPU run's fp32 mask (default %(default)s; no mask when the "
                        "model's dropout is 0)")
    s.add_argument("--sparsity", default="0", metavar="FRACTION",
                   help="fraction of block weights that are zero, from 0 up to (not "
                        "including) 1 (default %(default)s)")
    s.add_argument("--teacher", metavar="MODEL",
                   help="distillation: a catalog teacher model held beside the student "
                        "(default: none)")
    s.add_argument("--kv-precision", metavar="NAME",
                   help="KV cache: fp32, bf16, fp16, fp8, int8 or int4 (default: the "
                        "activations' format under --precision)")
    c = p.add_argument_group("capacity and output")
    c.add_argument("--gpu", metavar="NAME",
                   help="check the fit on a catalog GPU: "
                        f"{', '.join(g.name for g in GPUS)}; a family sold in several sizes "
                        "(A100, V100) needs its size (default: none)")
    c.add_argument("--capacity", metavar="SIZE",
                   help="check the fit on this much memory per GPU, with its unit: 24GiB, "
                        "80GB; up to 1 EiB (default: none)")
    c.add_argument("--overhead", default="auto", metavar="SIZE",
                   help="framework overhead (CUDA context, allocator): auto, from the "
                        "model, or a size with its unit such as 1.5GiB (default %(default)s)")
    c.add_argument("--fit", action="store_true",
                   help="also fit against every catalog GPU (default: off)")
    c.add_argument("--json", action="store_true",
                   help="print the gpuwatch.estimate/1 JSON document instead of the table "
                        "(default: the table)")
    t = p.add_argument_group("traced peak (needs PyTorch; no GPU, no weights)")
    t.add_argument("--trace", action="store_true",
                   help="also trace one step exactly on the CPU (FakeTensorMode + "
                        "MemTracker) and show it beside the estimate: --config builds the "
                        "Hugging Face model (needs transformers), catalog ResNets and VGG "
                        "come from torchvision (default: off)")
    t.add_argument("--trace-model", metavar="TARGET",
                   help="the model to trace, implies --trace: FILE.py:callable or "
                        "module:callable (returns an nn.Module), torchvision:NAME or "
                        "timm:NAME; alone, the trace is shown without an estimate; "
                        "image models take --image, others token ids of --vocab "
                        "(default: none)")
