"""What the run does, phase by phase, with the sizes and times of a real card and of the
dry run (the same workloads, tiny models, seconds instead of minutes).

Real sizes aim at one 80–141 GB card (H100, H200) and about 6½ minutes in all (the
estimate was made from step times, not measured yet); every real duration is multiplied
by ``--scale``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MIB = 2**20


@dataclass
class Job:
    name: str
    kind: str                       # a workload.py kind
    params: dict[str, Any]
    go_at_s: float | None = 0.0     # seconds after the recording starts; None: pooled
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Phase:
    name: str
    jobs: list[Job]
    record: bool = True             # sampled by `gpuwatch record` into its own session
    expect: str | None = None       # the manifest's expect, for an imported session
    max_s: float = 60.0             # the phase is cut here (an oom phase waits for its death)
    tail_s: float = 6.0             # recording after the last process ends
    parallel: int = 2               # pooled jobs (go_at_s None) running at once
    note: str = ""


def estimate_configs(dry: bool) -> list[dict[str, Any]]:
    """At least 12 configurations: training and inference, four precisions,
    checkpointing, LoRA, eager attention, a CNN (the dry run: tiny stand-ins)."""
    big, small = ("llama-mini", "llama-tiny") if dry else ("llama-1b", "llama-300m")
    b, s, img = (2, 64, 64) if dry else (2, 2048, 224)
    rows = [
        dict(name=f"{small} train fp32", model=small, mode="train", precision="fp32"),
        dict(name=f"{small} train amp-bf16", model=small, mode="train", precision="amp-bf16"),
        dict(name=f"{small} train bf16", model=small, mode="train", precision="bf16"),
        dict(name=f"{small} train amp-bf16 checkpointing", model=small, mode="train",
             precision="amp-bf16", checkpointing="full"),
        dict(name=f"{small} train bf16 LoRA 16 q,v", model=small, mode="train",
             precision="bf16", lora=16, lora_targets="q,v"),
        dict(name=f"{small} train bf16 LoRA 16 all-linear", model=small, mode="train",
             precision="bf16", lora=16, lora_targets="all-linear"),
        dict(name=f"{small} train amp-bf16 4x batch", model=small, mode="train",
             precision="amp-bf16", batch=4 * b),
        dict(name=f"{big} train bf16", model=big, mode="train", precision="bf16"),
        dict(name=f"{big} train amp-bf16", model=big, mode="train", precision="amp-bf16"),
        dict(name=f"{small} infer bf16", model=small, mode="infer", precision="bf16",
             batch=4 * b),
        dict(name=f"{big} infer bf16 long context", model=big, mode="infer",
             precision="bf16", batch=4 * b, seq=2 * s),
        dict(name="gpt2 train amp-bf16 eager attention", model="gpt2-tiny" if dry else "gpt2",
             mode="train", precision="amp-bf16", flash=False),
        dict(name="resnet-50 train fp32 momentum", model="resnet-50", mode="train",
             precision="fp32", optimizer="momentum", batch=2 if dry else 64, image=img),
        dict(name="resnet-50 train amp-bf16", model="resnet-50", mode="train",
             precision="amp-bf16", batch=2 if dry else 128, image=img),
    ]
    for r in rows:
        r.setdefault("batch", b)
        r.setdefault("seq", s)
        r.setdefault("optimizer", "adamw")
    return rows


def phases(dry: bool, scale: float = 1.0, memory_bytes: int | None = None) -> list[Phase]:
    def t(real_s: float, dry_s: float) -> float:
        return dry_s if dry else real_s * scale

    big, small = ("llama-mini", "llama-tiny") if dry else ("llama-1b", "llama-300m")
    seq, seq_small = (64, 32) if dry else (2048, 1024)
    frag_env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}
    # measured beside the leak, two or three at a time: none of them needs the card alone
    pooled = [Job("overhead-lazy", "overhead", {}, go_at_s=None),
              Job("overhead-eager", "overhead", {}, go_at_s=None,
                  env={"CUDA_MODULE_LOADING": "EAGER"})]
    if dry:   # one process runs every configuration: a few cores, and torch's import
        pooled.append(Job("estimates", "estimate-many", {"configs": {
            f"estimate-{k:02d}": c for k, c in enumerate(estimate_configs(dry))}},
            go_at_s=None))
    else:     # one process each: NVML's figure and the allocator's peaks are per process
        pooled += [Job(f"estimate-{k:02d}", "estimate", c, go_at_s=None)
                   for k, c in enumerate(estimate_configs(dry))]
    wide = memory_bytes is not None and memory_bytes > 120 * 2**30
    return [
        Phase("leak", [Job("leak", "train", dict(model=small, precision="amp-bf16", batch=4,
                                                 seq=seq_small, duration_s=t(30, 3),
                                                 leak_bytes_per_step=MIB if dry else 8 * MIB)),
                       *pooled],
              expect="leak", max_s=t(120, 60), tail_s=t(4, 1.5), parallel=3 if wide else 2,
              note="the leak rule needs 12 min of history by default: a run this short is "
                   "measured (known bytes per step) but not imported as a leak trace; the "
                   "overhead and estimate processes run beside it"),
        Phase("oom", [Job("oom", "oom", dict(
            model=big, precision="bf16", batch=4 if not dry else 2, seq=1024 if not dry else 16,
            stage_s=t(12, 0.7), first_stage_s=t(7, 0.7),
            alloc_targets=[0.80, 0.88, 0.950, 0.954, 0.958, 0.962, 0.966, 0.970, 0.974],
            final_growth=1.6, dry_cap_tokens=192))],
            expect="oom", max_s=t(240, 40), tail_s=t(8, 2)),
        Phase("healthy", [Job("healthy", "train", dict(
            model=big, precision="amp-bf16", batch=4, seq=seq, duration_s=t(30, 3),
            warmup_steps=10, eval_at_fraction=0.6))],
            expect="healthy", max_s=t(70, 25), tail_s=t(5, 1.5)),
        Phase("fragmentation", [Job("fragmenting", "train", dict(
            model=small, precision="bf16", batch=4, seq=seq, duration_s=t(25, 3),
            variable=[16, 64] if dry else [64, 4096]), env=frag_env)],
            expect="fragmentation", max_s=t(60, 25), tail_s=t(4, 1.5)),
        Phase("arrival", [
            Job("first", "train", dict(model=small, precision="amp-bf16", batch=8,
                                       seq=seq_small, duration_s=t(25, 3))),
            Job("arriving", "infer", dict(model=small, batch=16, prompt=seq_small,
                                          duration_s=t(15, 1.5)), go_at_s=t(10, 1))],
            expect="arrival", max_s=t(60, 25), tail_s=t(5, 1.5)),
        Phase("inference-kv", [Job("generate", "infer", dict(
            model=big, batch=64 if not dry else 4, prompt=512 if not dry else 16,
            duration_s=t(20, 2.5)))],
            expect="healthy", max_s=t(55, 25), tail_s=t(4, 1.5)),
        Phase("batch-tools", [Job("batch", "batch", dict(
            model=small, precision="amp-bf16", seq=4096 if not dry else 32,
            adaptive_steps=4, dry_cap_tokens=192))], record=False, max_s=t(120, 40)),
        Phase("bandwidth", [Job("copy", "copy", dict(
            bytes=(2 << 30) if not dry else (32 << 20), duration_s=t(10, 4),
            iters=20 if not dry else 4))],
            max_s=t(30, 10), tail_s=t(3, 1.5)),
    ]
