"""Estimator vs traced steps of the real torchvision classes, category by category.

``--regenerate`` (needs torch and torchvision) builds each model by its torchvision name
with no weights and traces one training step exactly as ``gpuwatch estimate --trace``
does (``gpuwatch.probe.memtrace``: FakeTensorMode + MemTracker on the CPU, CUDA's
autocast for norms and softmax), then writes ``tests/budget/data/torchvision_traced.json``.
Without ``--regenerate`` it reads that file (no torch needed) and prints, per row and
category, the analytic estimate (``--model NAME``, no framework overhead: the trace
counts tensors only) against the trace. Targets: total within 8 %, each category over
5 % of the total within 10 %.

    python benchmarks/accuracy_torchvision.py [--regenerate] [FILTER]
    python benchmarks/accuracy_torchvision.py --baseline /path/to/older/checkout

``--summary`` prints activations and totals only; ``--baseline`` adds a column of what
another checkout (an earlier revision, e.g.
``git worktree add /tmp/before REV``) estimates for the same rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("GPUWATCH_CHECKOUT", str(ROOT)))
DATA = ROOT / "tests" / "budget" / "data" / "torchvision_traced.json"
CATS = ("parameters", "gradients", "optimizer_states", "activations")

# (torchvision name, batch, image (h, w), precision, optimizer)
FAMILIES = (
    "resnet18", "resnet50", "resnet101", "resnext50_32x4d", "wide_resnet50_2",
    "vgg11", "vgg16", "vgg16_bn", "densenet121", "densenet169", "mobilenet_v2",
    "mobilenet_v3_large", "mobilenet_v3_small", "efficientnet_b0", "efficientnet_b3",
    "efficientnet_v2_s", "convnext_tiny", "convnext_small", "regnet_y_400mf",
    "regnet_x_1_6gf", "regnet_y_3_2gf", "vit_b_16", "swin_t",
)
EXTRA = (
    ("resnet50", 32, (160, 160), "fp32", "momentum"),
    ("resnet50", 4, (256, 192), "bf16", "adamw"),
    ("efficientnet_b3", 4, (300, 300), "amp-bf16", "adamw"),
    ("mobilenet_v2", 16, (192, 192), "fp32", "momentum"),
    ("convnext_tiny", 4, (256, 256), "bf16", "adamw"),
    ("densenet121", 16, (160, 160), "amp-bf16", "momentum"),
    ("regnet_y_400mf", 32, (224, 224), "amp-bf16", "momentum"),
    ("vgg16_bn", 4, (256, 256), "amp-bf16", "momentum"),
)


def rows() -> list[tuple[str, int, tuple[int, int], str, str]]:
    out = []
    for name in FAMILIES:
        out.append((name, 8, (224, 224), "fp32", "adamw"))
        out.append((name, 8, (224, 224), "amp-bf16", "adamw"))
    return out + list(EXTRA)


def regenerate(selected: list) -> dict:
    import torch
    import torchvision

    from gpuwatch.probe.memtrace import TraceError, TraceRequest, trace

    out = {"torch": torch.__version__, "torchvision": torchvision.__version__,
           "how": "gpuwatch.probe.memtrace (FakeTensorMode + MemTracker, CPU, "
                  "CUDA autocast for norms and softmax), two Trainer-style steps",
           "rows": []}
    start = time.perf_counter()
    for name, batch, image, precision, optimizer in selected:
        t0 = time.perf_counter()
        try:
            got = trace(TraceRequest(f"torchvision:{name}", batch=batch, image=image,
                                     precision=precision, optimizer=optimizer))
        except TraceError as e:
            print(f"{name} {precision}: {e}", flush=True)
            continue
        took = time.perf_counter() - t0
        out["rows"].append({"model": name, "batch": batch, "image": list(image),
                            "precision": precision, "optimizer": optimizer,
                            "traced_bytes": {k: got[k] for k in (*CATS, "total")}})
        print(f"{name:20s} {precision:9s} b{batch:<3d} {image[0]}x{image[1]} "
              f"{got['total'] / 2**20:10.1f} MiB  {took:5.1f} s", flush=True)
    out["param_counts"] = param_counts()
    out["regenerate_s"] = round(time.perf_counter() - start, 1)
    return out


def param_counts() -> dict[str, int]:
    """Every torchvision classifier the estimator names, counted as torchvision builds it."""
    import torchvision
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gpuwatch.budget.vision_catalog import VISION_MODELS
    from gpuwatch.probe.cuda_autocast import SafeInit

    counts = {}
    for name in VISION_MODELS:
        with FakeTensorMode(), SafeInit():
            model = getattr(torchvision.models, name)(weights=None)
        counts[name] = sum(p.numel() for p in model.parameters())
    return counts


def estimate_row(row: dict) -> dict[str, int] | str:
    """The analytic estimate for a traced row (or why it cannot be made)."""
    from gpuwatch.budget import Setup, Workload, estimate, lookup_model
    from gpuwatch.budget.errors import BudgetError

    image = tuple(row["image"])
    try:
        spec = lookup_model(row["model"], image)
    except BudgetError as e:
        return str(e)
    est = estimate(spec, Workload(mode="train", batch=row["batch"], image=image),
                   Setup(precision=row["precision"], optimizer=row["optimizer"],
                         overhead_bytes=0, dropout_mask_bytes=4.0
                         if row["precision"] in ("fp32", "amp-bf16") else 2.0))
    b = est.breakdown
    return {"parameters": b.parameters, "gradients": b.gradients,
            "optimizer_states": est.detail.optimizer_persistent,
            "activations": b.activations, "total": est.total_bytes}


def misses(row: dict, est: dict[str, int]) -> list[str]:
    """Categories out of target: total beyond 8 %, a category over 5 % of it beyond 10 %."""
    traced = row["traced_bytes"]
    out = []
    for cat in (*CATS, "total"):
        t, e = traced[cat], est[cat]
        limit = 8.0 if cat == "total" else 10.0
        if cat != "total" and t <= 0.05 * traced["total"]:
            continue
        if abs(e - t) > limit / 100 * t:
            out.append(f"{cat} {100 * (e - t) / t:+.1f}%")
    return out


def label(row: dict) -> str:
    h, w = row["image"]
    return f"{row['model']} {row['precision']} {row['optimizer']} b{row['batch']} {h}x{w}"


def baseline_estimates(checkout: str) -> list[dict[str, int] | str]:
    """The same rows estimated by another gpuwatch checkout (a revision before a change)."""
    out = subprocess.run([sys.executable, __file__, "--estimates-json"], check=True,
                         env={**os.environ, "GPUWATCH_CHECKOUT": checkout}, cwd=checkout,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def short(est: dict[str, int] | str | None, cat: str, traced: int) -> str:
    if est is None:
        return ""
    if isinstance(est, str):
        return f"{'refused':>19s}"
    return f"{est[cat] / 2**20:9.1f} M {100 * (est[cat] - traced) / traced:+6.1f}%"


def main(argv: list[str]) -> int:
    checkout = argv[argv.index("--baseline") + 1] if "--baseline" in argv[:-1] else None
    args = [a for a in argv if not a.startswith("--") and a != checkout]
    flt = args[0] if args else ""
    if "--regenerate" in argv:
        selected = [r for r in rows() if flt in r[0]]
        doc = regenerate(selected)
        if not flt:
            DATA.write_text(json.dumps(doc, indent=1) + "\n")
            print(f"wrote {DATA.relative_to(ROOT)} in {doc['regenerate_s']} s")
        return 0
    doc = json.loads(DATA.read_text())
    if "--estimates-json" in argv:  # for another checkout's run (see --baseline)
        print(json.dumps([estimate_row(row) for row in doc["rows"]]))
        return 0
    before: list = [None] * len(doc["rows"])
    if checkout:
        before = baseline_estimates(checkout)
    print(f"traced with torch {doc['torch']}, torchvision {doc['torchvision']}; "
          "targets: total ±8 %, each category over 5 % of it ±10 %")
    print(f"{'row':46s} {'category':17s} {'traced':>10s} {'estimate, error':>19s}"
          f"{'  before, error' if before[0] is not None else ''}")
    inside = inside_before = total = 0
    for row, old in zip(doc["rows"], before, strict=True):
        if flt not in row["model"]:
            continue
        total += 1
        est = estimate_row(row)
        if isinstance(est, str):
            print(f"{label(row):46s} cannot be estimated: {est}")
            continue
        for cat in ("activations", "total") if "--summary" in argv else (*CATS, "total"):
            t = row["traced_bytes"][cat]
            print(f"{label(row):46s} {cat:17s} {t / 2**20:8.1f} M {short(est, cat, t)} "
                  f"{short(old, cat, t)}")
        bad = misses(row, est)
        inside += not bad
        inside_before += isinstance(old, dict) and not misses(row, old)
        if bad:
            print(f"{'':46s} OUT OF TARGET: {', '.join(bad)}")
    print(f"{inside} of {total} rows within target"
          + (f" (before: {inside_before})" if before[0] is not None else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
