"""The estimate table: ``gpuwatch estimate --json`` (default overhead) for each
configuration against what its process measured on the card.

Measured per process: NVML's figure (what the card gives the process), PyTorch's
``max_memory_reserved`` and ``max_memory_allocated``, and the probe's categories
(parameter, gradient and optimizer-state bytes). Errors are (estimate − measured) /
measured, in percent; a figure the run could not measure is null, never 0.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any


def estimate_argv(cfg: dict[str, Any], configs: Path) -> list[str]:
    model = cfg["model"]
    if model.startswith("llama") or model == "gpt2-tiny":
        argv = ["--config", str(configs / f"{model}.config.json")]
    elif model == "gpt2":
        argv = ["--model", "gpt2"]
    else:
        argv = ["--model", model, "--image", f"{cfg['image']}x{cfg['image']}"]
    argv += ["--mode", cfg["mode"], "--batch", str(cfg["batch"]), "--precision",
             cfg["precision"]]
    if not model.startswith("resnet"):
        argv += ["--seq", str(cfg["seq"])]
    if cfg["mode"] == "train":
        argv += ["--optimizer", cfg.get("optimizer", "adamw")]
    if cfg.get("checkpointing"):
        argv += ["--checkpointing", cfg["checkpointing"]]
    if cfg.get("lora"):
        argv += ["--lora", str(cfg["lora"]), "--lora-targets", cfg.get("lora_targets", "q,v")]
    if cfg.get("flash") is False:
        argv += ["--no-flash-attention"]
    return argv


def run_estimate(cfg: dict[str, Any], configs: Path) -> dict[str, Any]:
    """``gpuwatch estimate ... --json``, its command line run in this process."""
    from gpuwatch.cli import main

    argv = ["estimate", *estimate_argv(cfg, configs), "--json"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    if code != 0:
        return {"error": err.getvalue().strip()[-500:], "argv": argv}
    doc = json.loads(out.getvalue())
    return {"argv": argv, "total_bytes": doc["total_bytes"],
            "breakdown_bytes": doc["breakdown_bytes"], "peak_phase": doc.get("peak_phase")}


def _err(estimate: float | None, measured: float | None) -> float | None:
    if estimate is None or not measured:
        return None
    return round(100.0 * (estimate - measured) / measured, 1)


def row(cfg: dict[str, Any], est: dict[str, Any], measured: dict[str, Any]) -> dict[str, Any]:
    """One line of the table: the estimate, the measurements, the errors."""
    mem = measured.get("memory") or {}
    bd = est.get("breakdown_bytes") or {}
    total = est.get("total_bytes")
    overhead = bd.get("framework_overhead")
    in_torch = None if total is None or overhead is None else total - overhead
    pm, po = measured.get("probe_model") or {}, measured.get("probe_optimizer") or {}
    nvml = measured.get("nvml_bytes")
    weights = None if pm.get("parameter_bytes") is None else \
        pm["parameter_bytes"] + (pm.get("buffer_bytes") or 0)
    reserved_now = mem.get("reserved_bytes")
    out = {
        "name": cfg["name"], "mode": cfg["mode"], "precision": cfg["precision"],
        "batch": cfg["batch"], "seq": None if cfg["model"].startswith("resnet") else cfg["seq"],
        "estimate_total_bytes": total, "estimate_overhead_bytes": overhead,
        "nvml_process_bytes": nvml,
        "max_reserved_bytes": mem.get("max_reserved_bytes"),
        "max_allocated_bytes": mem.get("max_allocated_bytes"),
        "outside_torch_bytes": None if nvml is None or reserved_now is None
        else nvml - reserved_now,
        "error_total_vs_nvml_pct": _err(total, nvml),
        "error_in_torch_vs_reserved_pct": _err(in_torch, mem.get("max_reserved_bytes")),
        "error_in_torch_vs_allocated_pct": _err(in_torch, mem.get("max_allocated_bytes")),
        # frozen weights (LoRA's base) are buffers in these models: both are weights
        "probe_parameter_bytes": weights,
        "error_parameters_pct": _err(bd.get("parameters"), weights),
        "probe_gradient_bytes": pm.get("gradient_bytes") or None,
        "probe_optimizer_state_bytes": po.get("state_bytes"),
        "error_optimizer_states_pct": None,
        "note": measured.get("error") or est.get("error") or "",
    }
    if cfg["mode"] == "train" and po.get("state_bytes"):
        # the estimate's category holds the foreach step's temporary too, the probe's
        # figure only the persistent states: the error says how far the two stand apart
        out["error_optimizer_states_pct"] = _err(bd.get("optimizer_states"), po["state_bytes"])
    return out


COLUMNS = ("name", "estimate_total_bytes", "nvml_process_bytes", "error_total_vs_nvml_pct",
           "max_reserved_bytes", "error_in_torch_vs_reserved_pct", "max_allocated_bytes",
           "error_in_torch_vs_allocated_pct", "estimate_overhead_bytes", "outside_torch_bytes",
           "probe_parameter_bytes", "error_parameters_pct", "probe_optimizer_state_bytes",
           "error_optimizer_states_pct", "note")


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    import csv

    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in COLUMNS})
