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
                    "GPU at 1, 2, 4 and 8 (or --gpus), and at the fewest whole nodes for a "
                    "GPU that needs more, in the data-, tensor-, pipeline- or "
                    "context-parallel layout that fits fastest (recompute chosen where "
                    "needed), an estimated step time from a roofline (data-sheet peaks × "
                    "an efficiency by kind of model, pipeline bubbles, communication not "
                    "hidden behind compute), throughput, the job's hours and dollars "
                    "(--tokens, or --dataset × --epochs), time to first token and dollars "
                    "per million tokens for inference, the cheapest cloud instances "
                    "(prices from an editable TOML file), and what each memory lever "
                    "costs in time. --precision fp8 runs matmuls in FP8 (Transformer "
                    "Engine), tf32 on TF32 tensor cores. The global batch is --batch × "
                    "--grad-accum × --dp; the planner chooses the layout itself and says "
                    "how it splits the batch. --gpu limits "
                    "the plan to one GPU type. Times are seconds, sizes IEC (GiB = 2³⁰ "
                    "bytes), rates per second.",
        example_lines=[
            "gpuwatch plan --preset llm-finetuning --sort cost",
            "gpuwatch plan --model llama-3.1-70b --batch 128 --seq 8192 --precision fp8 "
            "--gpus 64,128 --tokens 1T",
            "gpuwatch plan --model llama-3.1-8b --mode infer --batch 32 --seq 1024 "
            "--context 1536 --precision fp8"],
        run="gpuwatch.commands.plan_cmd:run_plan")
    # what a preset may fill in: the options the user left at estimate's defaults
    p.set_defaults(preset_fills={name: p.get_default(name) for name in PRESET_FILLS})
    g = p.add_argument_group("plan")
    g.add_argument("--preset", metavar="NAME",
                   help="a typical workload with its model and recommended setup: "
                        f"{', '.join(PRESETS)}; other options override it (default: none)")
    g.add_argument("--efficiency", metavar="FRACTION",
                   help="fraction of the dense peak real kernels reach, 0.01 to 1 or 1%% to "
                        "100%% (default by kind of model: 50%% for large transformers, "
                        "40%%/35%% for hidden sizes under 2,048/1,024, 17%% for CNNs; FP8 "
                        "matmuls reach 70%% of it of the FP8 peak; a preset brings its "
                        "measured figure, see docs/plan.md)")
    g.add_argument("--bandwidth-efficiency", metavar="FRACTION",
                   help="fraction of the data-sheet memory bandwidth reached (default 80%%)")
    g.add_argument("--prices", metavar="FILE",
                   help="instance catalog and prices, TOML gpuwatch.prices/1 (default: the "
                        "shipped resources/plan/prices.toml)")
    g.add_argument("--no-prices", action="store_true", help="leave out the cloud fit")
    g.add_argument("--dataset", metavar="SAMPLES",
                   help="samples (sequences or images) in one epoch, for cost per epoch "
                        "(default: the preset's data set, else none)")
    g.add_argument("--gpus", metavar="N[,N…]",
                   help="GPU counts to plan, 1 to 16,384 (above a node: whole nodes of 8, "
                        "MI250X 4) (default 1,2,4,8, plus --dp × --tp × --pp when above 1; "
                        "a GPU type none of them holds is planned at the fewest whole "
                        "nodes that do)")
    g.add_argument("--inter-node", metavar="RATE",
                   help="network between nodes per GPU and direction: 400Gbit/s, 400Gbps "
                        "or 50GB/s (default: each GPU's usual build, e.g. H100 InfiniBand "
                        "NDR / EFA 400 Gb/s per GPU, A100 HDR 200 Gb/s)")
    g.add_argument("--tokens", metavar="N",
                   help="training tokens of the whole job (300B, 2T, 1.5e12), for its "
                        "wall-clock time and cost on each option (default: none; the data "
                        "set × --epochs when known)")
    g.add_argument("--epochs", metavar="N",
                   help="epochs over --dataset (default 1 when a data set is known), for "
                        "the job's wall-clock time and cost")
    g.add_argument("--sort", default="time", metavar="KEY",
                   help="order of the table: time (step time), cost (cost per step; "
                        "configurations without a priced instance follow, by time) or "
                        "memory (peak per GPU) (default %(default)s)")
