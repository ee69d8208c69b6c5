"""The estimator against training steps traced from the real Hugging Face classes.

Reads ``tests/budget/data/hf_traced.json`` (written by ``benchmarks/hf_traced.py`` where
torch and transformers are installed), estimates every row from the config recorded
there (``spec_from_hf_config``: the family read from ``model_type``) and the same
workload and setup, and prints both per category. Targets: total within 8 %, each
category over 5 % of the total within 10 % (a difference under 1 MiB is noise). Needs
neither torch nor transformers. ``python benchmarks/hf_accuracy.py [FILTER]``;
``--held-out`` shows only the rows kept out while fixing the closed forms.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from gpuwatch.budget import Setup, Workload, estimate, spec_from_hf_config
from gpuwatch.budget.traced_view import traced_categories
from gpuwatch.core.units import format_bytes

DATA = Path(__file__).resolve().parents[1] / "tests" / "budget" / "data" / "hf_traced.json"
CATS = ("parameters", "gradients", "optimizer_states", "activations")
TOTAL_TARGET, CATEGORY_TARGET, SHARE, NOISE = 8.0, 10.0, 0.05, 1 << 20


def load(path: Path = DATA) -> dict[str, Any]:
    return json.loads(path.read_text())


def predict(row: dict[str, Any]) -> dict[str, int]:
    """The estimate's bytes per category for one recorded row, as the tracer counts them
    (``traced_categories``; no framework overhead: the trace counts tensors only; a CPU
    dropout mask is in the dtype of the tensor it drops)."""
    s = row["setup"]
    spec = spec_from_hf_config(row["config"], row["name"].split()[0])
    est = estimate(spec, Workload(mode="train", batch=s["batch"], seq=s["seq"]), Setup(
        precision=s["precision"], optimizer=s["optimizer"], checkpointing=s["checkpointing"],
        flash_attention=s["attn_implementation"] != "eager", lora_rank=s["lora_rank"],
        lora_targets=s["lora_targets"], overhead_bytes=0,
        dropout_mask_bytes=None))
    return traced_categories(est)


def compare(row: dict[str, Any]) -> list[tuple[str, int, int, float, bool]]:
    """(category, estimate, traced, error %, within target) for one row."""
    predicted, traced = predict(row), row["traced_bytes"]
    total = traced["total"]
    out = []
    for cat in (*CATS, "total"):
        p, t = predicted[cat], traced[cat]
        if not p and not t:
            continue
        err = 100 * (p - t) / t if t else float("inf")
        if cat == "total":
            good = abs(err) <= TOTAL_TARGET
        else:
            good = abs(err) <= CATEGORY_TARGET or t < SHARE * total or abs(p - t) < NOISE
        out.append((cat, p, t, err, good))
    return out


def main(argv: list[str]) -> int:
    held_only = "--held-out" in argv
    args = [a for a in argv[1:] if a != "--held-out"]
    wanted = args[0] if args else ""
    doc = load()
    print(f"rows traced with torch {doc['torch_version']}, transformers "
          f"{doc['transformers_version']}, peft {doc['peft_version']}; targets: total "
          f"±{TOTAL_TARGET:g} %, each category over {SHARE:.0%} of the total "
          f"±{CATEGORY_TARGET:g} %")
    print(f"{'row':<40}{'category':<18}{'estimate':>12}{'traced':>12}{'error':>9}")
    good_rows = n = 0
    worst: list[tuple[float, str]] = []
    for row in doc["rows"]:
        if wanted not in row["name"] or (held_only and not row["held_out"]):
            continue
        n += 1
        results = compare(row)
        good_rows += all(g for *_, g in results)
        for cat, p, t, err, good in results:
            print(f"{row['name']:<40}{cat:<18}{format_bytes(p, digits=2):>12}"
                  f"{format_bytes(t, digits=2):>12}{err:>+8.1f}%"
                  f"{'' if good else '  OUTSIDE'}")
        worst.append((max(abs(e) for c, _, _, e, _ in results if c == "total"), row["name"]))
    held = sum(1 for r in doc["rows"] if r["held_out"] and wanted in r["name"])
    print(f"{good_rows} of {n} rows within target ({held} of them held out); worst total "
          f"{max(worst, default=(0.0, '-'))[0]:.1f} % ({max(worst, default=(0, '-'))[1]})")
    return 0 if good_rows == n else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
