"""What the estimator is asked: the workload and the training/inference setup."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpuwatch.budget.bounds import (
    MAX_BATCH,
    MAX_DP,
    MAX_GRAD_ACCUM,
    MAX_HEADS,
    MAX_IMAGE,
    MAX_LAYERS,
    MAX_LORA_RANK,
    MAX_SEQ,
    check_int,
)
from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.precision import OPTIMIZERS, PRECISIONS
from gpuwatch.budget.specs import ModelSpec
from gpuwatch.core.units import MAX_SIZE_BYTES, MAX_SIZE_TEXT, shown

Mode = Literal["train", "infer"]
CHECKPOINTING = ("none", "selective", "full")
# What people run when they do not say: training with torch autocast over fp32 weights
# (Hugging Face Trainer's ``bf16=True``, Lightning's ``bf16-mixed``); inference with the
# 16-bit weights checkpoints ship in (``torch_dtype=torch.bfloat16``, vLLM, TGI).
DEFAULT_PRECISION: dict[str, str] = {"train": "amp-bf16", "infer": "bf16"}


def default_precision(mode: str) -> str:
    """The precision regime assumed for ``mode`` when none is given."""
    return DEFAULT_PRECISION.get(mode, DEFAULT_PRECISION["train"])
OFFLOAD = (None, "optimizer", "params")


LORA_PROJECTIONS = ("q", "k", "v", "o", "gate", "up", "down")
_LORA_SETS = {"all-linear": LORA_PROJECTIONS, "all": LORA_PROJECTIONS, "qv": ("q", "v"),
              "attention": ("q", "k", "v", "o"), "mlp": ("gate", "up", "down")}


def lora_target_set(text: str) -> frozenset[str]:
    """``q,v`` / ``all-linear`` / ``attention`` / ``mlp`` / a comma list → projection names."""
    key = str(text).strip().lower().replace("_proj", "")
    if key in _LORA_SETS:
        return frozenset(_LORA_SETS[key])
    names = [n.strip().removesuffix("_proj") for n in key[:200].split(",") if n.strip()]
    bad = [n for n in names if n not in LORA_PROJECTIONS]
    if bad or not names:
        raise BudgetError(
            "--lora-targets",
            f"unknown LoRA target {shown(bad[0] if bad else text)}; use all-linear, "
            f"attention, mlp or a comma list of {', '.join(LORA_PROJECTIONS)}.",
        )
    return frozenset(names)


@dataclass(frozen=True)
class Workload:
    """Per-GPU micro-batch ``batch`` (per data-parallel replica) of ``seq`` tokens.

    ``image`` (height, width) sizes CNNs and ViTs; ``context`` is the KV-cache length
    for inference (defaults to ``seq``).
    """

    mode: Mode = "train"
    batch: int = 1
    seq: int = 512
    image: tuple[int, int] | None = None
    grad_accum: int = 1
    context: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("train", "infer"):
            raise BudgetError("--mode", f"mode must be train or infer, not {shown(self.mode)}.")
        for name, high in (("batch", MAX_BATCH), ("seq", MAX_SEQ),
                           ("grad_accum", MAX_GRAD_ACCUM)):
            flag = f"--{name.replace('_', '-')}"
            check_int(getattr(self, name), flag, 1, high)
        if self.context is not None:
            check_int(self.context, "--context", 1, MAX_SEQ)
        if self.image is not None:
            if len(self.image) != 2:
                raise BudgetError("--image", "--image needs a height and a width.")
            for side in self.image:
                check_int(side, "--image", 1, MAX_IMAGE, "--image height and width")

    @property
    def kv_context(self) -> int:
        return self.context or self.seq


@dataclass(frozen=True)
class Setup:
    """How the model is run: precision, optimizer, levers and parallelism.

    ``dp`` is the data-parallel degree (ZeRO shards over it); ``tp``/``pp`` tensor and
    pipeline degrees. ``overhead_bytes`` None means the automatic figure.
    ``dropout_mask_bytes`` is 1 for CUDA's fused dropout (a bool mask); None is a CPU
    run, which keeps each mask in the dtype of the tensor it drops (fp32 where autocast
    drops an fp32 tensor: the embedding, T5's probabilities).

    ``foreach_optimizer`` is PyTorch's default multi-tensor step (one more state-sized
    temporary); False is a fused or per-tensor step. ``lora_targets`` names the
    projections that get adapters: ``q,v`` (PEFT's default), ``all-linear``, or a
    comma list of q, k, v, o, gate, up, down. ``keep_logits`` is a training loop that
    holds the model's output (b·s·V logits) through backward; the default loop keeps
    only ``.loss``, as Hugging Face's Trainer does, so the logits are freed first.

    ``flash_attention`` defaults to True: PyTorch ≥ 2.0 ``scaled_dot_product_attention``
    (and Hugging Face transformers ≥ 4.36, which uses it by default) runs fused flash /
    memory-efficient kernels that keep no a·s² score matrix. Every estimate with
    attention says so in a note, with what eager attention would add.
    """

    precision: str = "amp-bf16"
    optimizer: str = "adamw"
    checkpointing: str = "none"
    flash_attention: bool = True
    zero: int = 0
    dp: int = 1
    tp: int = 1
    pp: int = 1
    sequence_parallel: bool = False
    offload: str | None = None
    lora_rank: int = 0
    sparsity: float = 0.0
    kv_precision: str | None = None
    overhead_bytes: int | None = None
    teacher: ModelSpec | None = None
    dropout_mask_bytes: float | None = 1.0
    foreach_optimizer: bool = True
    lora_targets: str = "q,v"
    keep_logits: bool = False

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise BudgetError(
                "--precision",
                f"unknown precision {shown(self.precision)}; use one of {', '.join(PRECISIONS)}.",
            )
        if self.optimizer not in OPTIMIZERS:
            raise BudgetError(
                "--optimizer",
                f"unknown optimizer {shown(self.optimizer)}; use one of {', '.join(OPTIMIZERS)}.",
            )
        if self.checkpointing not in CHECKPOINTING:
            raise BudgetError("--checkpointing", "checkpointing must be none, selective or full.")
        if self.zero not in (0, 1, 2, 3):
            raise BudgetError("--zero", f"ZeRO stage must be 0, 1, 2 or 3, not {self.zero}.")
        for name, high in (("dp", MAX_DP), ("tp", MAX_HEADS), ("pp", MAX_LAYERS)):
            check_int(getattr(self, name), f"--{name}", 1, high)
        if self.offload not in OFFLOAD:
            raise BudgetError("--offload", "offload must be optimizer or params.")
        if self.offload == "params" and self.zero != 3:
            raise BudgetError("--offload", "offloading parameters needs ZeRO stage 3 (--zero 3).")
        check_int(self.lora_rank, "--lora", 0, MAX_LORA_RANK, "LoRA rank")
        lora_target_set(self.lora_targets)
        if self.dropout_mask_bytes is not None and not (
                isinstance(self.dropout_mask_bytes, (int, float))
                and 0 <= self.dropout_mask_bytes <= 8):
            raise BudgetError("--dropout-mask-bytes", "a dropout mask element takes 0 to 8 "
                                                      f"bytes, not {self.dropout_mask_bytes!r}.")
        if not 0.0 <= self.sparsity < 1.0:  # NaN included
            raise BudgetError(
                "--sparsity", f"sparsity must be a fraction in [0, 1), not {self.sparsity}."
            )
        if self.kv_precision is not None and self.kv_precision not in (
            "fp32",
            "bf16",
            "fp16",
            "fp8",
            "int8",
            "int4",
        ):
            raise BudgetError(
                "--kv-precision",
                f"unknown KV-cache precision {shown(self.kv_precision)}; "
                "use fp32, bf16, fp16, fp8, int8 or int4.",
            )
        if self.overhead_bytes is not None and not 0 <= self.overhead_bytes <= MAX_SIZE_BYTES:
            raise BudgetError("--overhead", "the framework overhead must be between 0 and "
                                            f"{MAX_SIZE_TEXT}.")
