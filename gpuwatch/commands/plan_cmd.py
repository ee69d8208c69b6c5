"""`gpuwatch plan`: hardware, step time, cloud cost and levers for a model and setup.

The model and setup are read exactly as `gpuwatch estimate` reads them
(:func:`gpuwatch.commands.estimate.build`); a ``--preset`` fills in what the command
line leaves at its default. Bad input is exit 2 with one sentence naming it.
"""

from __future__ import annotations

import argparse
import json
import sys
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


def _efficiency_source(args: argparse.Namespace, preset: Any) -> str:
    if args.efficiency is not None:
        return "--efficiency"
    if preset is not None:
        return f"the {preset.name} preset: {preset.efficiency_source}"
    return "the default: large matmuls reach 40–60 % of the dense peak"


def plan_from_args(args: argparse.Namespace) -> tuple[Any, str]:
    """The plan and the sort order the options ask for (no printing)."""
    from gpuwatch.plan.planner import SORTS, PlanInput, make_plan
    from gpuwatch.plan.prices import read_prices
    from gpuwatch.plan.roofline import Efficiency

    if args.sort not in SORTS:
        raise PlanError("--sort", f"--sort must be one of {', '.join(SORTS)}, "
                                  f"not {args.sort[:40]!r}.")
    if args.capacity:
        raise PlanError("--capacity", "plan compares catalog GPUs: give --gpu NAME to "
                                      "limit it to one, not --capacity.")
    preset = _apply_preset(args)
    spec, wl, setup, _ = build(args)
    compute_default = preset.efficiency if preset is not None else 0.5
    efficiency = Efficiency(_fraction(args.efficiency, "--efficiency", compute_default),
                            _fraction(args.bandwidth_efficiency, "--bandwidth-efficiency", 0.8),
                            _efficiency_source(args, preset))
    dataset = preset.dataset_samples if preset is not None else None
    if args.dataset is not None:
        from gpuwatch.budget.bounds import whole_number

        dataset = whole_number(args.dataset, "--dataset", 1, 10**12)
    gpus: tuple[str, ...] = ()
    if args.gpu:
        from gpuwatch.plan.hardware import hardware_for

        gpus = (hardware_for(args.gpu).name,)
    prices = None if args.no_prices else read_prices(args.prices)
    request = PlanInput(spec, wl, setup, efficiency, dataset, gpus, preset=preset)
    return make_plan(request, prices), args.sort


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
