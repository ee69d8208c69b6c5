"""The options of `gpuwatch plan`: the model and setup options of `estimate` (declared by
:func:`gpuwatch.commands.estimate_args.declare`), then the planner's own."""

from __future__ import annotations

import argparse

from gpuwatch.commands.estimate_args import declare as declare_estimate
from gpuwatch.commands.parsing import describe

PRESET_FILLS = ("mode", "batch", "seq", "grad_accum", "precision", "optimizer",
                "checkpointing", "lora")


def declare(p: argparse.ArgumentParser) -> None:
    """The options of ``gpuwatch plan``."""
    declare_estimate(p)
    from gpuwatch.plan.presets import PRESETS  # small: dataclasses and names only

    describe(
        p,
        description="Which hardware runs a model and setup, and how fast: every catalog "
                    "GPU at 1, 2, 4 and 8 per node, in the data- or tensor-parallel layout "
                    "that fits fastest, with the largest micro-batch, an estimated step "
                    "time from a roofline (data-sheet peaks × an efficiency), what the "
                    "step is bound by, throughput per GPU, the cheapest cloud instance "
                    "that fits (prices from an editable TOML file), and what each memory "
                    "lever costs in time. The global batch is --batch × --grad-accum × "
                    "--dp; the planner chooses --dp, --tp and --zero itself. --gpu limits "
                    "the plan to one GPU type. Times are seconds, sizes IEC (GiB = 2³⁰ "
                    "bytes), rates per second.",
        example_lines=[
            "gpuwatch plan --preset llm-finetuning",
            "gpuwatch plan --model llama-3.1-8b --batch 4 --seq 4096 --precision "
            "mixed-bf16 --sort cost",
            "gpuwatch plan --model resnet-50 --batch 256 --efficiency 25% --prices my.toml --json"],
        run="gpuwatch.commands.plan_cmd:run_plan")
    # what a preset may fill in: the options the user left at estimate's defaults
    p.set_defaults(preset_fills={name: p.get_default(name) for name in PRESET_FILLS})
    g = p.add_argument_group("plan")
    g.add_argument("--preset", metavar="NAME",
                   help="a typical workload with its model and recommended setup: "
                        f"{', '.join(PRESETS)}; other options override it (default: none)")
    g.add_argument("--efficiency", metavar="FRACTION",
                   help="fraction of the dense peak real kernels reach, 0.01 to 1 or 1%% to "
                        "100%% (default 50%%: large transformer training reaches 40–60 %%; "
                        "CNNs nearer 17–25 %%; a preset brings its measured figure, see "
                        "docs/plan.md)")
    g.add_argument("--bandwidth-efficiency", metavar="FRACTION",
                   help="fraction of the data-sheet memory bandwidth reached (default 80%%)")
    g.add_argument("--prices", metavar="FILE",
                   help="instance catalog and prices, TOML gpuwatch.prices/1 (default: the "
                        "shipped resources/plan/prices.toml)")
    g.add_argument("--no-prices", action="store_true", help="leave out the cloud fit")
    g.add_argument("--dataset", metavar="SAMPLES",
                   help="samples (sequences or images) in one epoch, for cost per epoch "
                        "(default: the preset's data set, else none)")
    g.add_argument("--sort", default="time", metavar="KEY",
                   help="order of the table: time (step time), cost (cost per step; "
                        "configurations without a priced instance follow, by time) or "
                        "memory (peak per GPU) (default %(default)s)")
