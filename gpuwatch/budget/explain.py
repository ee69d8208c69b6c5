"""The words beside the numbers: each category's formula and the notes of an estimate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuwatch.budget.counts import format_count
from gpuwatch.budget.family_spec import quirks_of
from gpuwatch.budget.precision import OptimizerInfo, Precision
from gpuwatch.budget.specs import CnnSpec, ModelSpec, TransformerSpec
from gpuwatch.budget.states import fp32_grad_partition, gathered_bytes
from gpuwatch.core.units import format_bytes

if TYPE_CHECKING:
    from gpuwatch.budget.estimator import Estimate


_num = format_count


def _sharding(est: Estimate, what: str) -> str:
    s = est.setup
    parts = []
    if s.tp > 1:
        parts.append(f"÷{s.tp} tensor parallel")
    if s.pp > 1:
        parts.append(f"÷{s.pp} pipeline stages (+ embeddings/head on the end stage)")
    stage = {"weights": 3, "grads": 2, "optimizer": 1}[what]
    if s.zero >= stage and s.dp > 1:
        parts.append(f"÷{s.dp} ZeRO-{s.zero}")
    return (", " + ", ".join(parts)) if parts else ""


def _cnn_formula(spec: CnnSpec, est: Estimate, p: Precision) -> str:
    """Training activations of a CNN: the table's columns and their widths."""
    s, e, r = est.setup, p.act_bytes, p.residual_bytes
    text = (
        f"per-layer table: {_num(spec.saved_elements_per_sample)} saved elements "
        f"per image ({spec.image[0]}x{spec.image[1]}) × {e} B"
    )
    if spec.total("wide"):
        text += f" + {_num(spec.total('wide'))} norm elements × {r} B"
    if spec.total("cast") and r != e:
        text += f" + {_num(spec.total('cast'))} autocast copies × {e} B"
    if spec.has_attention:
        if s.flash_attention:
            text += " + fused attention's outputs and log-sum-exp"
        elif s.checkpointing == "selective":
            text += "; selective recompute drops the attention scores"
        else:
            sb = r + e if r != e else e
            text += f" + {_num(spec.total('scores'))} attention scores × {sb} B"
    text += f", × b={est.workload.batch}"
    if s.checkpointing == "full":
        text += "; full recompute keeps √n segment inputs"
    if p.name.startswith("amp"):
        text += " + autocast's 16-bit weight copies"
    return text


def _attention_note(est: Estimate) -> str:
    """Which attention the estimate assumes, and what the other choice would change.

    Fused attention is the default (PyTorch ≥ 2.0 SDPA, transformers ≥ 4.36); eager
    runs keep the a·s² scores, so the note always carries the eager figure.
    """
    d = est.detail
    if not est.setup.flash_attention:
        return (
            "Attention counted as eager (--no-flash-attention): the a·s² scores are kept; "
            "PyTorch ≥ 2.0 scaled_dot_product_attention (flash / memory-efficient) keeps "
            "none of them."
        )
    text = (
        "Attention assumed fused (PyTorch ≥ 2.0 scaled_dot_product_attention, flash / "
        "memory-efficient; transformers ≥ 4.36 use it by default): no a·s² score matrix. "
        f"Eager attention would add {format_bytes(d.eager_attention_bytes, digits=2)} "
        "of scores"
    )
    if d.eager_total_bytes != est.total_bytes:
        text += f" (total {format_bytes(d.eager_total_bytes, digits=2)})"
    elif d.eager_attention_bytes:
        text += " (the peak stays at the optimizer step)"
    return text + "; --no-flash-attention counts them."


def _zero_note(spec: ModelSpec, est: Estimate, p: Precision) -> str:
    """DeepSpeed's count of ZeRO's model states beside the ZeRO paper's."""
    s, b = est.setup, est.breakdown
    params = est.trainable_params / s.tp
    ours = b.parameters + b.gradients + est.detail.optimizer_persistent
    # the paper has no fp32 gradient partition, keeps stage 3's 16-bit gradient
    # partition and counts no gathered module
    paper = ours - params * 4 / s.dp
    if s.zero == 3:
        paper += params * p.grad_bytes / s.dp - gathered_bytes(spec, s)
    forms = {1: "4Ψ + 16Ψ/N", 2: "2Ψ + 18Ψ/N", 3: "18Ψ/N + 4 B × the largest module"}
    paper_forms = {1: "4Ψ + 12Ψ/N", 2: "2Ψ + 14Ψ/N", 3: "16Ψ/N"}
    return (
        f"ZeRO-{s.zero} counted as DeepSpeed 0.19.8's estimators count it "
        f"({forms[s.zero]} with Adam: an fp32 gradient partition beside the states), "
        f"{format_bytes(ours, digits=2)} of model states; the ZeRO paper's "
        f"{paper_forms[s.zero]} gives {format_bytes(round(paper), digits=2)}."
    )


def _family_note(spec: TransformerSpec) -> str:
    """What the config's family adds to a Llama-style reading."""
    q = quirks_of(spec)
    parts = []
    if q.post_norms:
        parts.append("a norm after attention and after the MLP")
    if q.norm_style == "gemma":
        parts.append("RMSNorm kept in fp32")
    if q.qk_norm:
        parts.append("per-head q/k norms")
    if q.attn_softcap or q.logit_softcap:
        parts.append("tanh soft-capping (its output is kept)")
    if q.parallel:
        parts.append("attention and MLP in parallel")
    if spec.fused_qkv and q.rotary:
        parts.append("a fused q/k/v output kept whole by the slices attention saves")
    if q.fused_gate_up:
        parts.append("a fused gate/up projection")
    if spec.max_positions:
        parts.append("learned positions")
    if q.shared_ffn:
        parts.append("shared experts")
    if q.dense_layers:
        parts.append(f"{q.dense_layers} dense layers")
    if q.mla:
        parts.append("latent attention (its activations approximated as full heads)")
    return (f"Read as {q.family}" + (": " + ", ".join(parts) if parts else "")
            + f"; activation '{spec.activation or 'default'}'.")


def explain(
    spec: ModelSpec, est: Estimate, p: Precision, opt: OptimizerInfo, overhead_note: str
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    s, wl, d = est.setup, est.workload, est.detail
    train = wl.mode == "train"
    P = est.params
    f: dict[str, str] = {}
    notes: list[str] = []

    if p.quantized:
        f["parameters"] = (
            f"{_num(P)} params: block weights at {p.weight_bytes:g} B, "
            f"embeddings and norms at {p.other_weight_bytes:g} B"
        )
    else:
        f["parameters"] = f"{_num(P)} params × {p.weight_bytes:g} B ({p.name})"
    if s.sparsity:
        f["parameters"] += (
            f", block weights {s.sparsity:.0%} sparse (values + the smaller of "
            "32-bit CSR indices and a 1-bit mask)"
        )
    if s.lora_rank and train:
        f["parameters"] += (
            f" + LoRA rank {s.lora_rank} adapters on {s.lora_targets} "
            f"({_num(est.trainable_params)}, fp32)"
        )
    f["parameters"] += _sharding(est, "weights")
    if s.zero == 3:
        f["parameters"] += " + 4 B × the largest module, gathered (DeepSpeed's count)"
    if s.teacher is not None:
        f["parameters"] += (
            f" + teacher {getattr(s.teacher, 'name', '')} ({_num(s.teacher.params)} params)"
        )

    if train:
        who = "LoRA adapter" if s.lora_rank else "trainable"
        gb = 4 if s.lora_rank else p.grad_bytes  # PEFT keeps adapters in fp32
        f["gradients"] = f"{_num(est.trainable_params)} {who} params × {gb:g} B" + _sharding(
            est, "grads"
        )
        if s.zero and fp32_grad_partition(p, s):
            f["gradients"] = (
                f"{_num(est.trainable_params)} trainable params: "
                + ("" if s.zero == 3 else f"{gb:g} B" + ("" if s.zero == 1 else f" ÷{s.dp}")
                   + " + ")
                + f"an fp32 partition (4 B ÷{s.dp}), as DeepSpeed keeps it"
            )
        if s.offload:
            f["gradients"] = "on the CPU with the offloaded optimizer (none kept on the GPU)"
        state = f"{opt.description}"
        if p.master_bytes:
            state += f" + fp32 master weights ({p.master_bytes:g} B/param)"
        f["optimizer_states"] = state + _sharding(est, "optimizer")
        if d.optimizer_step_temp:
            f["optimizer_states"] += (
                f"; includes {format_bytes(d.optimizer_step_temp)} "
                "allocated only during the step (foreach implementation)"
            )
        if s.offload:
            f["optimizer_states"] = (
                f"offloaded to CPU memory ({format_bytes(d.host_bytes)} of host RAM)"
            )
    else:
        f["gradients"] = "none in inference"
        f["optimizer_states"] = "none in inference"

    b = wl.batch
    if isinstance(spec, TransformerSpec):
        seq = est.workload.seq if spec.arch != "vit" else "patches+1"
        if train:
            text = (
                f"{spec.total_layers} layers × saved tensors of b={b}, s={seq}, h={spec.hidden}"
                f" ({p.act_bytes} B matmul inputs"
            )
            text += ", fp32 residual)" if p.residual_bytes == 4 and p.act_bytes == 2 else ")"
            if s.checkpointing == "full":
                text += ("; full recompute keeps each layer's input, and re-runs one layer "
                         "after the loss backward")
            elif s.checkpointing == "selective":
                text += "; selective recompute drops the a·s² scores"
            elif not s.flash_attention:
                text += " + a·s² attention scores"
            else:
                text += "; fused attention keeps O(s) statistics"
            if s.lora_rank:
                text += "; the frozen base keeps no inputs for its weights"
            if d.loss_bytes:
                text += (
                    f" + the loss backward, 12 B per logit b·s·V "
                    f"({format_bytes(d.loss_bytes)}; "
                    + ("the loop holds the logits too)" if s.keep_logits
                       else "the logits are freed first, --keep-logits holds them)")
                )
            if p.name.startswith("amp"):
                text += " + autocast's 16-bit weight copies"
        else:
            text = (f"largest layer's transient for a prefill of b={b}, s={seq}"
                    + ("" if s.flash_attention else ", eager scores live at once"))
        f["activations"] = text
    elif train:
        f["activations"] = _cnn_formula(spec, est, p)
    elif spec.has_attention:
        f["activations"] = (
            "largest live set (skip connections + one layer"
            + ("" if s.flash_attention else " + its attention scores")
            + f") × b={b} (nothing is saved in inference)"
        )
    else:
        f["activations"] = f"two largest feature maps × b={b} (nothing is saved in inference)"
    if s.teacher is not None:
        f["activations"] += " + teacher's forward and logits"
    if (
        not train
        and isinstance(spec, TransformerSpec)
        and spec.arch in ("decoder", "encoder-decoder")
    ):
        f["kv_cache"] = (
            f"2 × {spec.decoder_layers or spec.layers} layers × {spec.kv} kv heads × "
            f"{spec.d} × {wl.kv_context} tokens × b={b} × "
            f"{s.kv_precision or f'{p.act_bytes} B'}"
        )
    else:
        f["kv_cache"] = "none (training)" if train else "none (no decoder)"
    f["framework_overhead"] = (
        overhead_note.split(":")[0].replace("framework overhead ", "")
        if s.overhead_bytes is not None
        else "CUDA context + cuBLAS"
        + (" + cuDNN workspaces" if isinstance(spec, CnnSpec) else " workspace")
    )
    notes.append(overhead_note[0].upper() + overhead_note[1:])

    if train:
        eff = b * wl.grad_accum * s.dp
        notes.append(
            f"Batch {b} is the micro-batch per GPU; the effective batch is {eff} "
            f"(× {wl.grad_accum} accumulation × {s.dp} data-parallel)."
        )
        notes.append(
            f"Peak at the {est.peak_phase}: "
            + (
                "gradients are freed by zero_grad and refilled while activations are released, "
                if wl.grad_accum == 1
                else ""
            )
            + f"so the total is {format_bytes(est.overlap_bytes)} below the sum of the "
            "categories."
            if est.overlap_bytes
            else f"Peak at the {est.peak_phase}."
        )
        if s.checkpointing != "none":
            notes.append(
                f"Recompute costs about +{d.recompute_flops_percent:g}% of step FLOPs"
                + (
                    " (one more forward pass)."
                    if s.checkpointing == "full"
                    else " (the attention scores are recomputed)."
                )
            )
        if p.master_bytes:
            notes.append(
                "Megatron keeps fp32 main gradients by default: add 2 B/param "
                "(18 B/param with Adam)."
            )
        if s.zero and fp32_grad_partition(p, s) and s.dp > 1:
            notes.append(_zero_note(spec, est, p))
        if s.zero >= 2:
            notes.append(
                "ZeRO-2/3 also hold reduce/gather buckets (DeepSpeed default 5e8 "
                "elements each); ZeRO-3 has measured above ZeRO-2 in practice."
            )
        if p.name.endswith("fp16"):
            notes.append("fp16 needs loss scaling; bf16 does not.")
    if isinstance(spec, TransformerSpec):
        if spec.kv < spec.heads:
            notes.append(
                f"Grouped-query attention: {spec.kv} key/value heads for {spec.heads} query "
                "heads"
                + (
                    " (eager attention expands K and V to every head)."
                    if train and not s.flash_attention
                    else "."
                )
            )
        if spec.experts > 1:
            notes.append(
                f"Mixture of experts: all {spec.experts} experts are stored; "
                f"{spec.experts_per_token} run per token ({_num(spec.active_params)} "
                "active params)."
            )
        if spec.approx_params:
            notes.append(
                f"Shape assumed from the parameter count: {spec.layers} layers, hidden "
                f"{spec.hidden}, {spec.heads} heads, vocabulary {spec.vocab}; give "
                "--config or --layers/--hidden for exact activations."
            )
    if isinstance(spec, TransformerSpec) and quirks_of(spec).eager_only:
        notes.append(f"{quirks_of(spec).family} attention adds position biases (ALiBi, or "
                     "T5's relative bias) in Hugging Face's eager code, which has no fused "
                     "path: the a·s² scores are counted.")
    elif isinstance(spec, TransformerSpec) or spec.has_attention:
        notes.append(_attention_note(est))
    if isinstance(spec, TransformerSpec) and quirks_of(spec).family:
        notes.append(_family_note(spec))
    if isinstance(spec, CnnSpec) and spec.note:
        notes.append(spec.note)
    if s.dropout_mask_bytes is None:
        notes.append("Dropout masks counted in the dtype of the tensor each drops (a CPU run).")
    elif s.dropout_mask_bytes != 1.0:
        notes.append(f"Dropout masks counted at {s.dropout_mask_bytes:g} B per element.")
    notes.append(
        "nvidia-smi shows reserved memory: PyTorch's caching allocator keeps freed "
        "blocks, so expect it above this peak of allocated memory."
    )
    return tuple(f.items()), tuple(notes)
