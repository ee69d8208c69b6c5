"""The estimator: model + workload + setup → bytes per category on the most loaded GPU.

Training peaks at one of two moments, and the total is the larger:

* the start of the backward pass: weights, optimizer states, every saved activation,
  the loss temporaries, and the gradients that exist by then (all of them under
  gradient accumulation; otherwise none while the loss backward peaks, and then the
  output layer's, once the loss temporaries have shrunk to the logits' gradient,
  because ``zero_grad(set_to_none=True)`` freed them and backward refills them while
  it frees activations);
* ``optimizer.step()``: weights, all gradients, optimizer states and the step's
  temporaries (PyTorch's foreach Adam allocates one more state-sized buffer).

``breakdown`` lists each category at its own size; ``overlap_bytes`` is what the
sum counts twice because the two moments differ. ``total = sum − overlap``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpuwatch.budget import activations as act
from gpuwatch.budget.bounds import divisors
from gpuwatch.budget.cnn_activations import (
    cnn_backward_peak,
    cnn_inference_activations,
    cnn_train_activations,
)
from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.precision import Precision, get_optimizer, get_precision
from gpuwatch.budget.specs import CnnSpec, ModelSpec, TransformerSpec
from gpuwatch.budget.states import gathered_bytes, model_states
from gpuwatch.budget.traced_view import (
    embedding_backward,
    largest_gradient,
)
from gpuwatch.budget.transformer_train import (
    activation_options,
    sequence_of,
    transformer_train_activations,
)
from gpuwatch.budget.weight_copies import autocast_weight_copies
from gpuwatch.budget.workload import Setup, Workload, default_precision
from gpuwatch.core.units import format_bytes

MIB = 1024**2
# What CUDA holds per process outside PyTorch's allocator (context, loaded kernels,
# library handles), as NVML's per-process figure less torch.cuda.memory_reserved():
# measured on an H200 (driver 580.159.04, CUDA 13.0, PyTorch 2.11, lazy module loading)
# at 610 MiB after a fill kernel and 676 MiB once a bf16 matrix product had run
# (docs/cost.md). A training or serving step runs matrix products, so the default is the
# larger figure. Only Hopper has been measured; other GPUs are assumed to match.
CUDA_CONTEXT_BYTES = 676 * MIB
CUDA_CONTEXT_SOURCE = ("measured on an H200 with lazy module loading; "
                       "assumed for other GPUs")
# cuBLAS workspaces come from PyTorch's caching allocator (inside memory_reserved);
# assumed: PyTorch's own default is 32 MiB on Hopper, less on older GPUs, plus cuBLASLt's.
CUBLAS_WORKSPACE_BYTES = 64 * MIB
CUDNN_WORKSPACE_BYTES = 256 * MIB
KV_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}

CATEGORIES = (
    "parameters",
    "gradients",
    "optimizer_states",
    "activations",
    "kv_cache",
    "framework_overhead",
)


@dataclass(frozen=True)
class Breakdown:
    """Bytes per category on one GPU (the most loaded one under parallelism)."""

    parameters: int = 0
    gradients: int = 0
    optimizer_states: int = 0
    activations: int = 0
    kv_cache: int = 0
    framework_overhead: int = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in CATEGORIES}

    @property
    def sum(self) -> int:
        return sum(self.as_dict().values())


@dataclass(frozen=True)
class Detail:
    """The pieces behind the categories, for the advisor, the solver and the benchmark."""

    optimizer_persistent: int = 0
    optimizer_step_temp: int = 0
    grads_at_backward: int = 0
    loss_bytes: int = 0
    host_bytes: int = 0  # offloaded to CPU memory
    fixed_bytes: int = 0  # the backward-start peak, less what scales with the batch
    per_sample_bytes: float = 0.0  # what one more sample adds at that moment
    step_bytes: int = 0  # the optimizer-step peak
    recompute_flops_percent: float = 0.0
    # with fused attention: what eager attention would add (its a·s² scores) and its peak
    eager_attention_bytes: int = 0
    eager_total_bytes: int = 0
    embedding_backward_bytes: int = 0  # the embedding gradient's temporaries, backward's end
    in_flight_bytes: int = 0  # activations while the largest weight's gradient is made
    backward_start_activations: int = 0  # the activations at the backward pass's start


@dataclass(frozen=True)
class Estimate:
    model: str
    params: int
    trainable_params: int
    workload: Workload
    setup: Setup
    breakdown: Breakdown
    total_bytes: int
    overlap_bytes: int
    peak_phase: str
    formulas: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]
    detail: Detail = field(default_factory=Detail)

    def formula(self, category: str) -> str:
        return dict(self.formulas).get(category, "")


def has_attention(spec: ModelSpec) -> bool:
    return isinstance(spec, TransformerSpec) or spec.has_attention


def auto_overhead(spec: ModelSpec) -> tuple[int, str]:
    """The framework overhead figure and the sentence that says where it comes from."""
    total = CUDA_CONTEXT_BYTES + CUBLAS_WORKSPACE_BYTES
    why = (
        f"framework overhead {format_bytes(total)}: "
        f"CUDA context {format_bytes(CUDA_CONTEXT_BYTES)} ({CUDA_CONTEXT_SOURCE}; "
        "eager module loading or old CUDA 11 take 1.2–1.7 GiB) + cuBLAS workspace "
        f"{format_bytes(CUBLAS_WORKSPACE_BYTES)} (assumed)"
    )
    if isinstance(spec, CnnSpec):
        total += CUDNN_WORKSPACE_BYTES
        why += f" + cuDNN convolution workspace {format_bytes(CUDNN_WORKSPACE_BYTES)}"
    return total, why + "; set --overhead to override."


def _teacher(spec: ModelSpec, p: Precision, wl: Workload, setup: Setup) -> tuple[float, float]:
    """(weights, activations) of a frozen teacher run for inference beside the student."""
    wb = 4 if p.name == "fp32" else 2
    weights = spec.params * wb / setup.tp
    if isinstance(spec, CnnSpec):
        return weights, cnn_inference_activations(spec, p, wl, setup)
    o = activation_options(spec, setup)
    s = sequence_of(spec, wl)
    acts = act.inference_activations(spec, p, o, wl.batch, s)
    logits = wl.batch * s * spec.vocab * p.act_bytes / setup.tp  # kept for the distillation loss
    return weights, acts + logits


def kv_cache_bytes(spec: ModelSpec, p: Precision, wl: Workload, setup: Setup) -> float:
    """2 × layers × k·d × context × batch × bytes (÷t); T5 adds the cross-attention K/V."""
    if not isinstance(spec, TransformerSpec) or spec.arch in ("encoder", "vit"):
        return 0.0
    kvb = KV_BYTES[setup.kv_precision] if setup.kv_precision else float(p.act_bytes)
    width = spec.kv * spec.d
    layers = spec.decoder_layers or spec.layers
    per_layer_tokens = wl.kv_context + (wl.seq if spec.decoder_layers else 0)
    return 2 * layers * width * per_layer_tokens * wl.batch * kvb / setup.tp / setup.pp


def check_consistent(spec: ModelSpec, wl: Workload, setup: Setup) -> None:
    """Refuse a setup that contradicts the model: parallelism it cannot be split into,
    an image smaller than a ViT patch."""
    if isinstance(spec, CnnSpec):
        if setup.pp > max(1, len(spec.layers)):
            raise BudgetError("--pp", f"--pp {setup.pp} is more than the {len(spec.layers)} "
                                      f"layers of {spec.name}; a pipeline stage needs a layer.")
        return
    name, layers = spec.name, spec.total_layers
    if setup.pp > layers:
        raise BudgetError("--pp", f"--pp {setup.pp} is more than the {layers} layers of "
                                  f"{name}; a pipeline stage needs at least one layer.")
    tp, heads, kv = setup.tp, spec.heads, spec.kv
    if tp > heads:
        raise BudgetError("--tp", f"--tp {tp} is more than the {heads} attention heads of "
                                  f"{name}; tensor parallelism splits whole heads.")
    if tp > 1 and not spec.approx_params:
        if heads % tp:
            raise BudgetError("--tp", f"--tp {tp} does not divide the {heads} attention heads "
                                      f"of {name}; use one of {divisors(heads)}.")
        if (kv % tp if tp <= kv else tp % kv):
            raise BudgetError("--tp", f"--tp {tp} does not split the {kv} key/value heads of "
                                      f"{name} evenly; use a divisor of {kv} "
                                      f"({divisors(kv)}) or a multiple of it.")
    if spec.arch == "vit" and wl.image is not None and min(wl.image) < spec.patch:
        raise BudgetError("--image", f"--image {wl.image[0]}x{wl.image[1]} is smaller than "
                                     f"one {spec.patch}x{spec.patch} patch of {name}.")


def estimate(spec: ModelSpec, workload: Workload, setup: Setup | None = None) -> Estimate:
    """The memory budget of ``spec`` under ``workload`` and ``setup``.

    Without a setup: AdamW, and the precision people run in the mode
    (:data:`gpuwatch.budget.workload.DEFAULT_PRECISION`: amp-bf16 to train, bf16 to infer).
    """
    from gpuwatch.budget.explain import explain

    setup = setup or Setup(precision=default_precision(workload.mode))
    check_consistent(spec, workload, setup)
    p = get_precision(setup.precision)
    opt = get_optimizer(setup.optimizer)
    train = workload.mode == "train"
    if train and p.quantized and not setup.lora_rank:
        raise BudgetError(
            "--precision",
            f"{p.name} weights train only through LoRA adapters; "
            "add --lora RANK or use --mode infer.",
        )
    if isinstance(spec, CnnSpec) and (setup.tp > 1 or setup.lora_rank):
        raise BudgetError(
            "--tp" if setup.tp > 1 else "--lora",
            "tensor parallelism and LoRA apply to transformers only.",
        )
    states = model_states(spec, p, opt, setup, train)
    weights, grads = states.weights, states.grads
    optimizer, step_temp = states.optimizer, states.step_temp
    host = 0.0
    if setup.zero == 3:
        weights += gathered_bytes(spec, setup)
    if train and setup.offload:
        # DeepSpeed's offload: the optimizer step runs on the CPU over fp32 gradients
        # there, so no gradient partition stays on the GPU
        host += optimizer + step_temp + grads
        optimizer = step_temp = grads = 0.0
        if setup.offload == "params":
            host += states.weights
            weights = gathered_bytes(spec, setup)

    # act_fixed: in activations, not scaling with the batch
    loss = act_fixed = forward_end = after_loss = 0.0
    copies, layer_copies = autocast_weight_copies(spec, p, setup) if train else (0.0, 0.0)
    if train and isinstance(spec, TransformerSpec):
        activations, loss, forward_end, after_loss = transformer_train_activations(
            spec, p, workload, setup, layer_copies)
    elif train and isinstance(spec, CnnSpec):
        activations = cnn_train_activations(spec, p, workload, setup)
    elif isinstance(spec, TransformerSpec):
        activations = act.inference_activations(
            spec, p, activation_options(spec, setup), workload.batch, sequence_of(spec, workload)
        )
    elif isinstance(spec, CnnSpec):
        activations = cnn_inference_activations(spec, p, workload, setup)
    if copies:
        act_fixed = copies
        activations += act_fixed
    if setup.teacher is not None:
        tw, ta = _teacher(setup.teacher, p, workload, setup)
        weights += tw
        activations += ta
    kv = 0.0 if train else kv_cache_bytes(spec, p, workload, setup)
    if setup.overhead_bytes is None:
        overhead, overhead_note = auto_overhead(spec)
    else:
        overhead, overhead_note = (
            setup.overhead_bytes,
            f"framework overhead {format_bytes(setup.overhead_bytes)} as given.",
        )

    # gradients alive at the start of backward
    if not train:
        grads_bwd = 0.0
    elif workload.grad_accum > 1:
        grads_bwd = grads
    elif isinstance(spec, CnnSpec):
        grads_bwd, activations, act_fixed = cnn_backward_peak(
            spec, p, workload, setup.flash_attention, activations, act_fixed)
        grads_bwd = min(grads, grads_bwd)
    else:
        head = max((g.numel for g in spec.param_groups() if not g.per_layer), default=0)
        grads_bwd = 0.0 if setup.lora_rank else min(grads, head * p.grad_bytes / setup.tp)
        if loss and grads_bwd:
            # The loss backward (12 B per logit) peaks before any gradient exists; the
            # head's gradient appears once it has shrunk to the logits' gradient.
            logits = workload.batch * sequence_of(spec, workload) * spec.vocab / setup.tp
            grads_bwd = max(0.0, grads_bwd + logits * p.act_bytes - logits * 12)
    # Peaks are summed from the rounded categories, in integers: with floats, a sum of
    # 10**19-byte terms loses bytes and the overlap could come out negative.
    w, g, o, st = round(weights), round(grads), round(optimizer), round(step_temp)
    a, k, h, af = round(activations), round(kv), round(overhead), round(act_fixed)
    gb = min(g, round(grads_bwd))
    if forward_end:  # no gradient exists yet at the forward's end: the peak is the larger
        a = max(a, round(forward_end + act_fixed) - gb)
    fixed = w + o + gb + h + af
    scaling = a - af + k
    backward_peak = fixed + scaling
    step_peak = (w + g + o + st + h) if train else 0
    # the end of backward: every gradient, and the embedding's own as temporaries
    eb, beyond = embedding_backward(spec, p, setup) if train else (0.0, 0.0)
    eb = round(eb)
    end_peak = w + o + h + g + round(beyond) if beyond else 0
    # the largest weight's gradient, made as a temporary on top of what backward holds
    fl = round(after_loss + act_fixed + largest_gradient(spec, p, setup)) if after_loss else 0
    flight_peak = w + o + h + gb + fl if fl else 0
    breakdown = Breakdown(
        parameters=w,
        gradients=g,
        optimizer_states=o + st,
        # at its own peak: the backward's start, or a later moment's temporaries
        activations=max(a, eb, fl),
        kv_cache=k,
        framework_overhead=h,
    )
    total = max(backward_peak, step_peak, end_peak, flight_peak)
    phase = (
        "inference"
        if not train
        else "end of backward"
        if end_peak > max(step_peak, backward_peak, flight_peak)
        else "optimizer step"
        if step_peak > backward_peak
        else "start of backward"
        if backward_peak >= flight_peak
        else "backward"
    )
    eager_acts = eager_total = 0
    if setup.flash_attention and has_attention(spec):
        eager = estimate(spec, workload, replace(setup, flash_attention=False))
        eager_acts = max(0, eager.breakdown.activations - breakdown.activations)
        eager_total = eager.total_bytes
    detail = Detail(
        optimizer_persistent=o,
        optimizer_step_temp=st,
        grads_at_backward=gb,
        loss_bytes=round(loss),
        host_bytes=round(host),
        fixed_bytes=fixed,
        per_sample_bytes=scaling / workload.batch,
        step_bytes=step_peak,
        recompute_flops_percent={"none": 0.0, "selective": 3.0, "full": 33.0}[setup.checkpointing]
        if train
        else 0.0,
        eager_attention_bytes=eager_acts,
        eager_total_bytes=eager_total,
        embedding_backward_bytes=eb,
        in_flight_bytes=fl,
        backward_start_activations=a,
    )
    est = Estimate(
        model=getattr(spec, "name", "model"),
        params=spec.params,
        trainable_params=states.trainable * setup.tp if train else 0,
        workload=workload,
        setup=setup,
        breakdown=breakdown,
        total_bytes=total,
        overlap_bytes=breakdown.sum - total,
        peak_phase=phase,
        formulas=(),
        notes=(),
        detail=detail,
    )
    formulas, notes = explain(spec, est, p, opt, overhead_note)
    return Estimate(**{**est.__dict__, "formulas": formulas, "notes": notes})
