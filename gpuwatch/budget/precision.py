"""Precision regimes and optimizers, as bytes per parameter and per activation element.

The table (weights + gradients + optimizer states, AdamW):

============  =======  =====  =============================  =====
regime        weights  grads  optimizer                      total
============  =======  =====  =============================  =====
fp32          4        4      8 (m, v)                       16
amp-*         4        4      8                              16
mixed-*       2        2      12 (fp32 master 4 + m 4 + v 4)  16
bf16 / fp16   2        2      4 (m, v in 16 bits)             8
fp8           2 + 1    2      12 (fp32 master 4 + m 4 + v 4)  17
tf32          4        4      8 (m, v)                       16
============  =======  =====  =============================  =====

``amp`` is torch autocast: parameters stay fp32, matmuls run in 16 bits, so the
activations they save are 16-bit while the residual stream stays fp32. ``int8`` and
``int4`` store the block weights quantized (embeddings and norms stay 16-bit) and
compute in bf16; they train only through LoRA adapters.

``fp8`` is Transformer Engine's recipe as Megatron-LM and NeMo run it: the matmuls of the
blocks run in FP8 (E4M3 forward, E5M2 gradients, per-tensor scales), everything else in
bf16. The weights stay bf16 with fp32 master copies; each block matmul weight also keeps
the FP8 copy TE casts once per step and reuses across micro-batches (1 B per weight).
Activations are counted at 2 B: TE saves the FP8 input of each linear layer, but
attention, norms and the residual stream keep bf16, so 2 B is the safe side.
``tf32`` is fp32 storage with matmuls and convolutions on TF32 tensor cores (Ampere and
later: ``torch.backends.cuda.matmul.allow_tf32 = True``; cuDNN convolutions allow TF32
by default). ``fp8-weights`` is how inference engines (TensorRT-LLM, vLLM) keep an FP8
model: 1 B per block weight and nothing else, so like int8 it trains only through LoRA.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.budget.errors import BudgetError
from gpuwatch.core.units import shown

INT4_GROUP = 64  # weights per fp16 scale in 4-bit group quantization


@dataclass(frozen=True)
class Precision:
    name: str
    weight_bytes: float  # per stored weight of a block matmul
    other_weight_bytes: float  # embeddings, norms, biases
    grad_bytes: float
    master_bytes: float  # fp32 master copy kept by the optimizer
    state_bytes: float  # per optimizer state element
    act_bytes: int  # activations saved by matmuls
    residual_bytes: int  # the residual stream and norm inputs
    description: str

    @property
    def quantized(self) -> bool:
        return self.weight_bytes < 2


PRECISIONS: dict[str, Precision] = {
    p.name: p
    for p in (
        Precision("fp32", 4, 4, 4, 0, 4, 4, 4, "everything fp32"),
        Precision(
            "amp-bf16",
            4,
            4,
            4,
            0,
            4,
            2,
            4,
            "torch autocast bf16: fp32 weights, grads and states, bf16 matmul activations",
        ),
        Precision(
            "amp-fp16",
            4,
            4,
            4,
            0,
            4,
            2,
            4,
            "torch autocast fp16: fp32 weights, grads and states, fp16 matmul activations",
        ),
        Precision(
            "mixed-bf16",
            2,
            2,
            2,
            4,
            4,
            2,
            2,
            "bf16 weights and grads, fp32 master weights and optimizer states",
        ),
        Precision(
            "mixed-fp16",
            2,
            2,
            2,
            4,
            4,
            2,
            2,
            "fp16 weights and grads, fp32 master weights and optimizer states",
        ),
        Precision("bf16", 2, 2, 2, 0, 2, 2, 2, "everything bf16, optimizer states included"),
        Precision("fp16", 2, 2, 2, 0, 2, 2, 2, "everything fp16, optimizer states included"),
        Precision(
            "fp8",
            3,
            2,
            2,
            4,
            4,
            2,
            2,
            "Transformer Engine FP8: block matmuls in FP8, the rest bf16; bf16 weights "
            "with their cached FP8 copy, fp32 master weights and optimizer states",
        ),
        Precision(
            "tf32",
            4,
            4,
            4,
            0,
            4,
            4,
            4,
            "fp32 storage, matmuls and convolutions on TF32 tensor cores (Ampere and later)",
        ),
        Precision(
            "fp8-weights",
            1.0,
            2,
            2,
            0,
            4,
            2,
            2,
            "FP8 block weights with per-tensor scales, FP8 matmuls (inference engines: "
            "TensorRT-LLM, vLLM)",
        ),
        Precision("int8", 1.0, 2, 2, 0, 4, 2, 2, "int8 block weights, bf16 compute"),
        Precision(
            "int4",
            0.5 + 2 / INT4_GROUP,
            2,
            2,
            0,
            4,
            2,
            2,
            f"4-bit block weights with an fp16 scale per {INT4_GROUP}, bf16 compute",
        ),
    )
}

OPTIMIZERS = ("sgd", "momentum", "adam", "adamw", "adam8bit", "adafactor", "lion")


@dataclass(frozen=True)
class OptimizerInfo:
    name: str
    states: float  # state elements per parameter (Adafactor: computed per matrix)
    state_bytes_override: float | None  # bytes per state element when fixed (8-bit)
    step_temp_states: float  # fp32-sized temporaries per parameter during step (foreach)
    description: str


OPTIMIZER_INFO: dict[str, OptimizerInfo] = {
    o.name: o
    for o in (
        OptimizerInfo("sgd", 0, None, 0, "plain SGD keeps no state"),
        OptimizerInfo("momentum", 1, None, 0, "SGD with momentum: one buffer"),
        OptimizerInfo("adam", 2, None, 1, "Adam: m and v"),
        OptimizerInfo("adamw", 2, None, 1, "AdamW: m and v"),
        OptimizerInfo(
            "adam8bit",
            2,
            1 + 4 / 2048,
            0,
            "8-bit Adam: m and v in 8 bits with an fp32 scale per 2048",
        ),
        OptimizerInfo(
            "adafactor",
            0,
            None,
            1,
            "Adafactor: factored second moment over each tensor's last two dimensions, no m",
        ),
        OptimizerInfo("lion", 1, None, 0, "Lion: one momentum buffer"),
    )
}


def get_precision(name: str) -> Precision:
    key = name.strip().lower()
    if key not in PRECISIONS:
        raise BudgetError(
            "--precision", f"unknown precision {shown(name)}; use one of {', '.join(PRECISIONS)}."
        )
    return PRECISIONS[key]


def get_optimizer(name: str) -> OptimizerInfo:
    key = name.strip().lower().replace("-", "").replace("_", "")
    key = {"adamw8bit": "adam8bit", "paged_adamw_8bit": "adam8bit", "sgdm": "momentum"}.get(
        key, key
    )
    if key not in OPTIMIZER_INFO:
        raise BudgetError(
            "--optimizer", f"unknown optimizer {shown(name)}; use one of {', '.join(OPTIMIZERS)}."
        )
    return OPTIMIZER_INFO[key]


def optimizer_state_elements(
    opt: OptimizerInfo, rows: int, cols: int, count: int, kernel: int = 1, conv: bool = False
) -> float:
    """State elements for ``count`` tensors of ``rows × cols``.

    Adafactor factors the second moment over a tensor's last two dimensions: a matrix
    keeps a row and a column vector; a convolution weight (out, in, k, k) keeps two
    tensors of numel/k each, so a 3×3 kernel keeps 2/3 of a full second moment and a
    1×1 kernel twice one. Vectors keep a full second moment.
    """
    if opt.name == "adafactor":
        if rows <= 1 or cols <= 1:
            return count * rows * cols
        if conv:
            return count * 2 * rows * cols / kernel
        return count * (rows + cols)
    return opt.states * rows * cols * count


def state_bytes(opt: OptimizerInfo, precision: Precision) -> float:
    """Bytes per optimizer state element under ``precision``."""
    return (
        opt.state_bytes_override if opt.state_bytes_override is not None else precision.state_bytes
    )


def training_bytes_per_param(precision: Precision, opt: OptimizerInfo) -> float:
    """Weights + gradients + master + optimizer states per (matrix) parameter, unsharded."""
    if opt.name == "adafactor":
        raise BudgetError(
            "--optimizer", "Adafactor's state depends on matrix shapes; use the estimator."
        )
    return (
        precision.weight_bytes
        + precision.grad_bytes
        + precision.master_bytes
        + opt.states * state_bytes(opt, precision)
    )
