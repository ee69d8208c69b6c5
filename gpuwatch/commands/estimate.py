"""`gpuwatch estimate`: the memory budget of a model and setup, per GPU, before launch.

Every flag is bounded to a physically meaningful range (``gpuwatch.budget.bounds``,
``docs/input-bounds.md``); anything outside it, any contradiction between flags and
the model, and any unreadable ``--config`` is exit 2 with one sentence.

The options are declared in :mod:`gpuwatch.commands.estimate_args` (re-exported here as
``add_estimate_parser``); this module and the estimator load only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpuwatch.budget import (
    BudgetError,
    CnnSpec,
    ModelSpec,
    Setup,
    TransformerSpec,
    Workload,
    estimate,
    fit_table,
    lookup_gpu,
    lookup_model,
    max_batch_size,
    max_sequence_length,
    spec_from_hf_config,
    spec_from_params,
    to_json,
    to_table,
    what_if,
)
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
    MAX_PARAMS,
    MAX_SEQ,
    MAX_VOCAB,
    bound_text,
    finite_number,
    whole_number,
)
from gpuwatch.budget.workload import default_precision
from gpuwatch.commands.estimate_args import add_estimate_parser as add_estimate_parser
from gpuwatch.core.small_files import SmallFileError, path_text, read_small_file
from gpuwatch.core.units import UnitError, parse_size, shown

MAX_CONFIG_BYTES = 4 << 20   # config.json files are a few KiB; ImageNet-21k label maps ~1 MiB

_PARAM_SUFFIX = {"": 1, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


def _int(value: str | None, flag: str, minimum: int = 0, maximum: int = MAX_BATCH) -> int:
    return whole_number(value, flag, minimum, maximum)


def _float(value: str, flag: str) -> float:
    return finite_number(value, flag)


def parse_param_count(text: str) -> float:
    """``7e9``, ``7B``, ``125M``, ``1.5b``; from 1 to 10 T."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*",
                         text[:100])
    if not match or len(text) > 100:
        raise BudgetError(
            "--params", f"--params must be a count such as 7e9, 7B or 125M, not {shown(text)}."
        )
    value = float(match.group(1)) * _PARAM_SUFFIX[match.group(2).upper()]
    if not 1 <= value <= MAX_PARAMS:   # inf included
        raise BudgetError("--params", f"--params must be between 1 and {bound_text(MAX_PARAMS)}, "
                                      f"not {shown(text)}.")
    return value


def _image(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text[:200]) \
        or re.fullmatch(r"\s*(\d+)\s*", text[:200])
    if not match or len(text) > 200:
        raise BudgetError("--image", f"--image must look like 224x224, not {shown(text)}.")
    side = lambda digits: int(digits) if len(digits) <= 12 else MAX_IMAGE + 1  # noqa: E731
    h = side(match.group(1))
    w = side(match.group(2)) if match.lastindex == 2 else h
    if not (1 <= h <= MAX_IMAGE and 1 <= w <= MAX_IMAGE):
        raise BudgetError("--image", f"--image needs a height and width from 1 to "
                                     f"{bound_text(MAX_IMAGE)}, not {shown(text)}.")
    return h, w


def _custom(args: argparse.Namespace) -> TransformerSpec:
    missing = [f"--{n}" for n in ("layers", "hidden", "heads") if getattr(args, n) is None]
    if missing:
        raise BudgetError(
            missing[0],
            f"a custom transformer needs {', '.join(missing)} "
            "(or give --model, --config or --params).",
        )
    hidden = _int(args.hidden, "--hidden", 1, MAX_HIDDEN)
    heads = _int(args.heads, "--heads", 1, min(MAX_HEADS, hidden))
    return TransformerSpec(
        "custom",
        _int(args.layers, "--layers", 1, MAX_LAYERS),
        hidden,
        heads,
        _int(args.vocab or "32000", "--vocab", 0, MAX_VOCAB),
        ffn=_int(args.ffn or "0", "--ffn", 0, MAX_FFN),
        kv_heads=_int(args.kv_heads or str(heads), "--kv-heads", 1, heads),
        gated_mlp=args.ffn is not None and args.kv_heads is not None,
        bias=False,
        tied_embeddings=False,
    )


def read_config_bytes(path: str, flag: str, limit: int) -> bytes:
    """A config file's bytes: a regular file of at most ``limit`` bytes, read without
    blocking (see :func:`gpuwatch.core.small_files.read_small_file`)."""
    try:
        return read_small_file(path, limit)
    except SmallFileError as exc:
        raise BudgetError(flag, f"{path_text(path)} {exc.reason}.") from None


def decode_json_text(data: bytes, path: str) -> str:
    """UTF-8 (with or without a byte-order mark), or UTF-16/32 as JSON tells them apart."""
    encoding = json.detect_encoding(data)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        raise BudgetError("--config", f"{path_text(path)} is not UTF-8 text (byte "
                                      f"0x{data[e.start]:02x} at offset {e.start}); "
                                      "save it as UTF-8.") from None


def _read_config(path: str) -> TransformerSpec:
    text = decode_json_text(read_config_bytes(path, "--config", MAX_CONFIG_BYTES), path)
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as e:
        raise BudgetError("--config", f"{path_text(path)} is not valid JSON ({e}).") from None
    except RecursionError:
        raise BudgetError("--config", f"{path_text(path)} nests arrays or objects too deeply "
                                      "to be a config.json.") from None
    except ValueError as e:   # e.g. an integer of more than 4300 digits
        raise BudgetError("--config", f"{path_text(path)} is not usable JSON ({e}).") from None
    p = Path(path)
    return spec_from_hf_config(cfg, p.parent.name or p.stem)


def resolve_model(args: argparse.Namespace) -> ModelSpec:
    image = _image(args.image)
    given = [n for n in ("model", "config", "params") if getattr(args, n) is not None]
    if len(given) > 1:
        raise BudgetError(
            f"--{given[1]}",
            f"give one of --model, --config or --params, not "
            f"{' and '.join('--' + g for g in given)}.",
        )
    if args.model is not None:
        return lookup_model(args.model, image)
    if args.config is not None:
        return _read_config(args.config)
    if args.params is not None:
        return spec_from_params(parse_param_count(args.params))
    return _custom(args)


def build(args: argparse.Namespace) -> tuple[ModelSpec, Workload, Setup, int | None]:
    spec = resolve_model(args)
    image = _image(args.image)
    if image is None and isinstance(spec, CnnSpec):
        image = spec.image  # the catalog's default size, shown in the output
    wl = Workload(
        mode=args.mode,
        batch=_int(args.batch, "--batch", 1, MAX_BATCH),
        seq=_int(args.seq, "--seq", 1, MAX_SEQ),
        image=image,
        grad_accum=_int(args.grad_accum, "--grad-accum", 1, MAX_GRAD_ACCUM),
        context=None if args.context is None else _int(args.context, "--context", 1, MAX_SEQ),
    )
    try:
        overhead = None if args.overhead == "auto" else parse_size(args.overhead)
    except UnitError as e:
        raise BudgetError("--overhead", f"--overhead must be auto or a size: {e}.") from None
    teacher = lookup_model(args.teacher, wl.image) if args.teacher else None
    lora_rank = _int(args.lora, "--lora", 0, MAX_LORA_RANK)
    if args.lora_targets is not None and not lora_rank:
        raise BudgetError("--lora-targets", "--lora-targets chooses where LoRA adapters go; "
                          "add --lora RANK")
    setup = Setup(
        precision=(args.precision or default_precision(wl.mode)).lower(),
        optimizer=args.optimizer.lower().replace("-", ""),
        checkpointing=args.checkpointing,
        flash_attention=args.flash_attention,
        zero=_int(args.zero, "--zero", 0, 1000),  # Setup names the stages
        dp=_int(args.dp, "--dp", 1, MAX_DP),
        tp=_int(args.tp, "--tp", 1, MAX_HEADS),
        pp=_int(args.pp, "--pp", 1, MAX_LAYERS),
        sequence_parallel=args.sequence_parallel,
        offload=args.offload,
        lora_rank=lora_rank,
        lora_targets=args.lora_targets or "q,v",
        keep_logits=args.keep_logits,
        foreach_optimizer=_optimizer_step(args.optimizer_step),
        dropout_mask_bytes=_float(args.dropout_mask_bytes, "--dropout-mask-bytes"),
        sparsity=_float(args.sparsity, "--sparsity"),
        kv_precision=args.kv_precision,
        overhead_bytes=overhead,
        teacher=teacher,
    )
    if args.gpu and args.capacity:
        raise BudgetError("--capacity", "give --gpu or --capacity, not both.")
    capacity = None
    if args.gpu:
        capacity = lookup_gpu(args.gpu).memory_bytes
    elif args.capacity:
        try:
            capacity = parse_size(args.capacity)
        except UnitError as e:
            raise BudgetError("--capacity", f"--capacity: {e}.") from None
        if capacity <= 0:
            raise BudgetError("--capacity", "--capacity must be more than 0 bytes.")
    return spec, wl, setup, capacity


def _optimizer_step(text: str) -> bool:
    key = str(text).strip().lower().replace("_", "-")
    if key not in ("foreach", "fused"):
        raise BudgetError("--optimizer-step", f"--optimizer-step must be foreach or fused, "
                                              f"not {shown(text)}.")
    return key == "foreach"


# catalog CNNs that torchvision builds under the same name
_TORCHVISION = {"resnet-18": "resnet18", "resnet-50": "resnet50", "resnet-101": "resnet101",
                "vgg-16": "vgg16"}
TRACE_CATEGORIES = ("parameters", "gradients", "optimizer_states", "activations", "kv_cache")


def _has_model_source(args: argparse.Namespace) -> bool:
    return any(getattr(args, n) is not None for n in ("model", "config", "params", "layers",
                                                      "hidden", "heads"))


def trace_target(args: argparse.Namespace) -> str:
    """What builds the traced model: --trace-model, else what --config or --model names."""
    if args.trace_model:
        return str(args.trace_model)
    if args.config is not None:
        return "transformers:" + str(args.config)
    if args.model is not None and args.model.strip().lower() in _TORCHVISION:
        return "torchvision:" + _TORCHVISION[args.model.strip().lower()]
    raise BudgetError("--trace", "--trace builds the model with PyTorch: give --config (a "
                                 "Hugging Face config.json), a catalog ResNet or VGG, or "
                                 "--trace-model FILE.py:callable.")


def _traced(args: argparse.Namespace, wl: Workload, setup: Setup) -> dict[str, int]:
    from gpuwatch.probe.memtrace import TraceError, TraceRequest, trace

    vocab = _int(args.vocab, "--vocab", 1, MAX_VOCAB) if args.vocab else 0
    try:
        return trace(TraceRequest(trace_target(args), wl.mode, wl.batch, wl.seq, wl.image,
                                  vocab, setup.precision, setup.optimizer))
    except TraceError as e:
        raise TracedFailure(str(e), e.code) from None


class TracedFailure(Exception):
    """A trace that could not run, with its exit status."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def _trace_only(args: argparse.Namespace) -> dict[str, Any] | str:
    wl = Workload(mode=args.mode, batch=_int(args.batch, "--batch", 1, MAX_BATCH),
                  seq=_int(args.seq, "--seq", 1, MAX_SEQ), image=_image(args.image))
    precision = (args.precision or default_precision(wl.mode)).lower()
    setup = Setup(precision=precision, optimizer=args.optimizer.lower().replace("-", ""))
    out = _trace_output(args, wl, setup, _traced(args, wl, setup), None)
    return {"schema": "gpuwatch.trace/1", **out} if isinstance(out, dict) else out


def _trace_output(args: argparse.Namespace, wl: Workload, setup: Setup,
                  traced: dict[str, int], est: Any) -> dict[str, Any] | str:
    from gpuwatch.core.units import format_bytes
    from gpuwatch.probe.memtrace import torch_version

    predicted = None
    if est is not None:
        from gpuwatch.budget.traced_view import traced_categories

        predicted = traced_categories(est)  # the categories as the tracer counts them
    doc = {"torch_version": torch_version(), "target": trace_target(args),
           "method": "FakeTensorMode + MemTracker on the CPU, two steps; tensors only",
           "traced_bytes": traced, "estimate_bytes": predicted}
    if args.json:
        return doc
    head = (f"traced {doc['target']}: {wl.mode}, batch {wl.batch}, "
            + (f"image {wl.image[0]}x{wl.image[1]}" if wl.image else f"seq {wl.seq}")
            + f", {setup.precision}, {setup.optimizer} (torch {doc['torch_version']}; "
            "tensors only, no framework overhead)")
    lines = [head, "", f"{'category':<20}{'estimate':>12}{'traced':>12}{'error':>9}"]
    for cat in (*TRACE_CATEGORIES, "total"):
        t = traced[cat]
        p = predicted[cat] if predicted else None
        if not t and not p:
            continue
        err = f"{100 * (p - t) / t:+8.1f}%" if p is not None and t else f"{'':>9}"
        shown_p = format_bytes(p, digits=2) if p is not None else "—"
        lines.append(f"{cat.replace('_', ' '):<20}{shown_p:>12}"
                     f"{format_bytes(t, digits=2):>12}{err}")
    return "\n".join(lines)


def compute(args: argparse.Namespace) -> dict[str, Any] | str:
    """The command's whole work without printing: the JSON document or the table text."""
    tracing = bool(args.trace or args.trace_model)
    if args.trace_model and not _has_model_source(args):
        return _trace_only(args)
    spec, wl, setup, capacity = build(args)
    if tracing:
        traced = _traced(args, wl, setup)
        bare = estimate(spec, wl, replace(setup, overhead_bytes=0))
        side = _trace_output(args, wl, setup, traced, bare)
    gpu = lookup_gpu(args.gpu) if args.gpu else None
    est = estimate(spec, wl, setup)
    mb = ms = None
    if capacity is not None:
        mb = max_batch_size(est, capacity)
        ms = max_sequence_length(spec, est, capacity)
    levers = what_if(spec, est)
    fit = fit_table(spec, est) if args.fit else None
    if args.json:
        doc = to_json(est, capacity, mb, ms, levers, fit, gpu=gpu)
        return {**doc, "trace": side} if tracing else doc
    table = to_table(est, capacity, mb, ms, levers, fit, gpu=gpu)
    return f"{table}\n\n{side}" if tracing else table


def run_estimate(args: argparse.Namespace) -> int:
    """Print the estimate; 0 on success, 2 with one sentence on stderr for bad input."""
    try:
        out = compute(args)
    except BudgetError as e:
        print(f"gpuwatch estimate: {e}", file=sys.stderr)
        return 2
    except TracedFailure as e:
        print(f"gpuwatch estimate: {e}", file=sys.stderr)
        return e.code
    if isinstance(out, dict):
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print(out)
    return 0
