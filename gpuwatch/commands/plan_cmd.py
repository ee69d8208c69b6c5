"""`gpuwatch plan`: hardware, step time, cloud cost and levers for a model and setup.

The model and setup are read exactly as `gpuwatch estimate` reads them
(:func:`gpuwatch.commands.estimate.build`); a ``--preset`` fills in what the command
line leaves at its default. Bad input is exit 2 with one sentence naming it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

from gpuwatch.budget.errors import BudgetError
from gpuwatch.commands.estimate import build
from gpuwatch.plan.errors import PlanError


def _fraction(text: str | None, flag: str, default: float) -> float:
    if text is None:
        return default
    raw = text.strip()
    percent = raw.endswith("%")
    try:
        value = float(raw.rstrip("%").strip()) / (100 if percent else 1)
    except ValueError:
        raise PlanError(flag, f"{flag} must be a fraction such as 0.5 or 50%, not "
                              f"{text[:40]!r}.") from None
    if not 0.01 <= value <= 1:  # NaN fails too
        raise PlanError(flag, f"{flag} must be between 1% and 100%, not {text[:40]!r}.")
    return value


def _apply_preset(args: argparse.Namespace) -> Any:
    """Fill the options left at their defaults from ``--preset``; returns the preset."""
    if args.preset is None:
        return None
    from gpuwatch.plan.presets import lookup_preset

    preset = lookup_preset(args.preset)
    if args.model is None and args.config is None and args.params is None:
        args.model = preset.model
    wl, s = preset.workload, preset.setup
    ours = {"mode": wl.mode, "batch": str(wl.batch), "seq": str(wl.seq),
            "grad_accum": str(wl.grad_accum), "precision": s.precision,
            "optimizer": s.optimizer, "checkpointing": s.checkpointing,
            "lora": str(s.lora_rank)}
    for name, default in args.preset_fills.items():
        if getattr(args, name) == default:
            setattr(args, name, ours[name])
    if args.image is None and wl.image is not None:
        args.image = f"{wl.image[0]}x{wl.image[1]}"
    return preset


def _efficiency(args: argparse.Namespace, preset: Any, spec: Any) -> Any:
    """--efficiency, else the preset's measured figure, else None: the planner's default
    for the model's family."""
    from gpuwatch.plan.efficiency import Efficiency, default_efficiency

    bandwidth = _fraction(args.bandwidth_efficiency, "--bandwidth-efficiency", 0.8)
    if args.efficiency is not None:
        return Efficiency(_fraction(args.efficiency, "--efficiency", 0.5), bandwidth,
                          "--efficiency")
    if preset is not None:
        return Efficiency(preset.efficiency, bandwidth,
                          f"the {preset.name} preset: {preset.efficiency_source}",
                          cuda_cores=default_efficiency(spec).cuda_cores)
    if args.bandwidth_efficiency is None:
        return None
    return default_efficiency(spec, bandwidth)


MAX_GPUS_ASKED = 16384


def parse_network(text: str) -> float:
    """``--inter-node``: bytes per second per GPU and direction, from ``400Gbit/s``,
    ``400Gbps`` (bits) or ``50GB/s`` (bytes); 0.1 to 10,000 GB/s."""
    raw = str(text).strip()
    low = raw.lower().replace(" ", "")
    unit = next((u for u in ("gbit/s", "gbps", "gb/s") if low.endswith(u)), None)
    bad = PlanError("--inter-node", "--inter-node must be a rate per GPU such as 400Gbit/s, "
                                    f"400Gbps or 50GB/s, not {raw[:40]!r}.")
    if unit is None:
        raise bad
    number = low[: -len(unit)]
    try:
        value = float(number)
    except ValueError:
        raise bad from None
    # "Gbit/s" and "Gbps" are bits; "GB/s" bytes, but "Gb/s" (lower-case b) bits
    bits = unit != "gb/s" or raw.replace(" ", "")[-4:-2] == "Gb"
    per_s = value * (1e9 / 8 if bits else 1e9)
    if not 1e8 <= per_s <= 1e13:  # NaN and inf fail too
        raise PlanError("--inter-node", f"--inter-node must be between 0.1 and 10,000 GB/s "
                                        f"per GPU, not {raw[:40]!r}.")
    return per_s


def parse_counts(text: str) -> tuple[int, ...]:
    """``--gpus 16`` or ``--gpus 8,64,512``: GPU counts, 1 to 16,384 each."""
    from gpuwatch.budget.bounds import whole_number

    parts = [x for x in str(text)[:400].split(",") if x.strip()]
    if not parts or len(parts) > 16:
        raise PlanError("--gpus", "--gpus takes one to 16 GPU counts separated by commas, "
                                  f"not {str(text)[:40]!r}.")
    try:
        return tuple(sorted({whole_number(x.strip(), "--gpus", 1, MAX_GPUS_ASKED)
                             for x in parts}))
    except BudgetError as e:
        raise PlanError("--gpus", str(e)) from None


_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


def parse_tokens(text: str) -> float:
    """``--tokens``: 300B, 2T, 1.5e12 or 5000000; 1 to 10¹⁶."""
    raw = str(text).strip()
    low = raw.lower().replace(",", "").replace("_", "")
    suffix = low[-1:] if low[-1:] in _SCALE and low[-1:] else ""
    try:
        value = float(low[: len(low) - len(suffix)]) * _SCALE[suffix]
    except ValueError:
        value = float("nan")
    if not 1 <= value <= 1e16:
        raise PlanError("--tokens", "--tokens must be a count of tokens such as 300B, 2T or "
                                    f"1.5e12 (at most 10^16), not {raw[:40]!r}.")
    return value


def plan_from_args(args: argparse.Namespace) -> tuple[Any, str]:
    """The plan and the sort order the options ask for (no printing)."""
    from gpuwatch.plan.layouts import GPU_COUNTS
    from gpuwatch.plan.planner import SORTS, PlanInput, make_plan
    from gpuwatch.plan.prices import read_prices

    if args.sort not in SORTS:
        raise PlanError("--sort", f"--sort must be one of {', '.join(SORTS)}, "
                                  f"not {args.sort[:40]!r}.")
    if args.capacity:
        raise PlanError("--capacity", "plan compares catalog GPUs: give --gpu NAME to "
                                      "limit it to one, not --capacity.")
    preset = _apply_preset(args)
    spec, wl, setup, _ = build(args)
    if wl.mode == "infer" and setup.precision == "fp8":
        setup = replace(setup, precision="fp8-weights")  # as inference engines keep FP8
    efficiency = _efficiency(args, preset, spec)
    dataset = preset.dataset_samples if preset is not None else None
    if args.dataset is not None:
        from gpuwatch.budget.bounds import whole_number

        dataset = whole_number(args.dataset, "--dataset", 1, 10**12)
    gpus: tuple[str, ...] = ()
    if args.gpu:
        from gpuwatch.plan.hardware import hardware_for

        gpus = (hardware_for(args.gpu).name,)
    counts = set(GPU_COUNTS)
    if args.gpus is not None:
        counts = set(parse_counts(args.gpus))
    implied = setup.dp * setup.tp * setup.pp
    if implied > 1:
        counts.add(min(implied, MAX_GPUS_ASKED))
    network = None if args.inter_node is None else parse_network(args.inter_node)
    prices = None if args.no_prices else read_prices(args.prices)
    request = PlanInput(spec, wl, setup, efficiency, dataset, gpus, tuple(sorted(counts)),
                        preset, network, _job_samples(args, spec, wl, dataset))
    return make_plan(request, prices), args.sort


def _job_samples(args: argparse.Namespace, spec: Any, wl: Any,
                 dataset: int | None) -> float | None:
    """Samples in the whole job: --tokens over the sequence, else the data set × --epochs
    (one epoch when only the data set is known)."""
    from gpuwatch.plan.document import counts_tokens

    if wl.mode != "train":
        if args.tokens is not None or args.epochs is not None:
            raise PlanError("--tokens", "--tokens and --epochs size a training job; "
                                        "inference is priced per million tokens.")
        return None
    if args.tokens is not None:
        if args.epochs is not None:
            raise PlanError("--epochs", "give --tokens or --epochs, not both.")
        if not counts_tokens(spec):
            raise PlanError("--tokens", "--tokens counts a language model's tokens; for "
                                        "images give --dataset and --epochs.")
        return parse_tokens(args.tokens) / wl.seq
    epochs = 1.0
    if args.epochs is not None:
        if dataset is None:
            raise PlanError("--epochs", "--epochs needs --dataset SAMPLES (or a preset's "
                                        "data set).")
        from gpuwatch.budget.bounds import finite_number

        epochs = finite_number(args.epochs, "--epochs")
        if not 0.001 <= epochs <= 10**6:
            raise PlanError("--epochs", f"--epochs must be between 0.001 and 1,000,000, not "
                                        f"{str(args.epochs)[:40]!r}.")
    return None if dataset is None else dataset * epochs


def run_plan(args: argparse.Namespace) -> int:
    """Print the plan; 0 on success, 2 with one sentence on stderr for bad input."""
    from gpuwatch.plan.document import to_json, to_text

    try:
        plan, sort = plan_from_args(args)
    except (BudgetError, PlanError) as e:
        print(f"gpuwatch plan: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(to_json(plan, sort), indent=2, ensure_ascii=False))
    else:
        print(to_text(plan, sort))
    return 0
