"""The run's figures, drawn from the processes' results and the recorded sessions:
the estimate table, CUDA's framework overhead, the leak and KV-cache growth against
what NVML saw, bandwidth against the session, the batch tools and the out-of-memory
death. ``collect`` adds them to the summary and writes the tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import estimates
import numpy as np
from plan import estimate_configs

from gpuwatch.sessions.reader import SessionReader

MIB = 2**20


def _children(summary: dict[str, Any], phase: str) -> list[dict[str, Any]]:
    return (summary["phases"].get(phase) or {}).get("children") or []


def _slope(t: np.ndarray, y: np.ndarray) -> float | None:
    """The line's slope through the later half of a process's track (the first half
    holds its start: CUDA's context, the weights, the first steps)."""
    keep = ~np.isnan(y)
    t, y = t[keep], y[keep]
    t, y = t[len(t) // 2:], y[len(y) // 2:]
    if t.size < 3:
        return None
    return float(np.polyfit(t, y, 1)[0])


def process_track(out: Path, summary: dict[str, Any], phase: str,
                  pid: int) -> tuple[np.ndarray, np.ndarray] | None:
    rel = (summary["phases"].get(phase) or {}).get("session")
    if not rel:
        return None
    with SessionReader(out / rel) as r:
        for p in r.processes():
            if p.pid == pid:
                return r.process_series(p.id)
    return None


def estimate_table(summary: dict[str, Any], configs: Path) -> list[dict[str, Any]]:
    measured = {c["job"]: c["result"] for c in _children(summary, "leak")}
    for c in _children(summary, "leak"):        # the dry run's one process for them all
        measured.update(c["result"].get("configs") or {})
    rows = []
    for k, cfg in enumerate(estimate_configs(summary["mode"] == "dry-run")):
        got = measured.get(f"estimate-{k:02d}")
        if got is None:
            continue
        est = estimates.run_estimate(cfg, configs)
        if not got.get("finished"):
            got = {**got, "error": (got.get("died") or {}).get("message", "did not finish")}
        rows.append(estimates.row(cfg, est, got))
    return rows


def overhead(summary: dict[str, Any], configs: Path, env: dict[str, str]) -> dict[str, Any]:
    from gpuwatch.budget import estimator

    out: dict[str, Any] = {
        "estimator_cuda_context_bytes": estimator.CUDA_CONTEXT_BYTES,
        "estimator_cublas_workspace_bytes": estimator.CUBLAS_WORKSPACE_BYTES,
        "estimator_cudnn_workspace_bytes": estimator.CUDNN_WORKSPACE_BYTES}
    for c in _children(summary, "leak"):
        if c["kind"] == "overhead":
            out[c["job"]] = c["result"].get("rows")
    return out


def leak(summary: dict[str, Any], out: Path) -> dict[str, Any]:
    kids = [c for c in _children(summary, "leak") if c["job"] == "leak"]
    if not kids:
        return {}
    r = kids[0]["result"]
    track = process_track(out, summary, "leak", kids[0]["pid"])
    known = None
    if r.get("leak_bytes_per_step") and r.get("step_s_median"):
        known = r["leak_bytes_per_step"] / r["step_s_median"]
    seen = _slope(*track) if track is not None else None
    return {"known_bytes_per_step": r.get("leak_bytes_per_step"), "steps": r.get("steps"),
            "leaked_bytes": r.get("leaked_bytes"), "known_rate_bytes_per_s": known,
            "nvml_slope_bytes_per_s": seen,
            "ratio_nvml_to_known": None if not known or seen is None else seen / known}


def kv_cache(summary: dict[str, Any], out: Path) -> dict[str, Any]:
    kids = _children(summary, "inference-kv")
    if not kids:
        return {}
    r = kids[0]["result"]
    growth = r.get("growth") or []
    known = None
    if len(growth) >= 2:
        (t0, _, b0), (t1, _, b1) = growth[0], growth[-1]
        known = (b1 - b0) / (t1 - t0) if t1 > t0 else None
    track = process_track(out, summary, "inference-kv", kids[0]["pid"])
    seen = _slope(*track) if track is not None else None
    return {"tokens": r.get("tokens"), "kv_cache_bytes": r.get("kv_cache_bytes"),
            "kv_bytes_per_token_step": r.get("kv_bytes_per_token"),
            "known_rate_bytes_per_s": known, "nvml_slope_bytes_per_s": seen,
            "max_reserved_bytes": (r.get("memory") or {}).get("max_reserved_bytes")}


def bandwidth(summary: dict[str, Any], out: Path) -> dict[str, Any]:
    phase = summary["phases"].get("bandwidth") or {}
    kids = phase.get("children") or []
    if not kids or not phase.get("session"):
        return {}
    c, r = kids[0], kids[0]["result"]
    start = phase.get("session_started_at_s") or 0.0
    with SessionReader(out / phase["session"]) as rd:
        s = rd.gpu_series(0, ("t_s", "memory_busy_percent",
                              "estimated_bandwidth_bytes_per_s"))
    lo = (c.get("go_at") or start) - start + 2        # past the allocation
    hi = (c.get("exited_at") or 1e18) - start - 1
    inside = (s["t_s"] >= lo) & (s["t_s"] <= hi)
    shown = s["estimated_bandwidth_bytes_per_s"][inside]
    busy = s["memory_busy_percent"][inside]
    shown_median = float(np.nanmedian(shown)) if np.isfinite(shown).any() else None
    achieved = r.get("achieved_bytes_per_s")
    return {"achieved_bytes_per_s": achieved, "timing": r.get("timing"),
            "shown_bytes_per_s": shown_median,
            "memory_busy_percent": float(np.nanmedian(busy)) if np.isfinite(busy).any()
            else None, "samples": int(inside.sum()),
            "ratio_shown_to_achieved": None if not achieved or shown_median is None
            else shown_median / achieved}


def batch_tools(summary: dict[str, Any]) -> dict[str, Any]:
    kids = _children(summary, "batch-tools")
    if not kids:
        return {}
    r = kids[0]["result"]
    verify = _children(summary, "batch-verify")
    fits = (verify[0]["result"].get("fits") if verify else None) or {}
    found = (r.get("from_one") or {}).get("batch")
    true = None
    if found and fits:
        up, at = fits.get(str(found + 1)), fits.get(str(found))
        true = found + 1 if up else found if at else f"below {found}"
        if up:
            true = f"at least {found + 1}"
    return {"find_max_batch": r.get("from_one"), "seeded_by_estimate": r.get("from_estimate"),
            "estimator_batch": r.get("estimator_batch"), "fresh_process_fits": fits,
            "true_largest_batch": true, "adaptive": r.get("adaptive"),
            "died": r.get("died")}


def oom(summary: dict[str, Any], out: Path) -> dict[str, Any]:
    phase = summary["phases"].get("oom") or {}
    kids = phase.get("children") or []
    if not kids:
        return {}
    r = kids[0]["result"]
    exits = []
    report = out / "reports" / "oom.json"
    if report.exists():
        exits = json.loads(report.read_text()).get("oom_exits") or []
    mine = [e for e in exits if e.get("pid") == kids[0]["pid"]]
    return {"entry": phase.get("entry"), "check": phase.get("check"),
            "warned_before_s": mine[0].get("warned_before_s") if mine else None,
            "died": r.get("died"), "stages": r.get("stages"), "survived": r.get("survived")}


def collect(summary: dict[str, Any], out: Path, configs: Path, env: dict[str, str]) -> None:
    """Add every table to ``summary`` and write the estimate table as CSV and JSON."""
    parts = {"estimates": lambda: estimate_table(summary, configs),
             "overhead": lambda: overhead(summary, configs, env),
             "leak": lambda: leak(summary, out), "kv_cache": lambda: kv_cache(summary, out),
             "bandwidth": lambda: bandwidth(summary, out),
             "batch_tools": lambda: batch_tools(summary), "oom": lambda: oom(summary, out)}
    summary["figures"] = {}
    for name, fn in parts.items():
        try:
            summary["figures"][name] = fn()
        except Exception as exc:       # one table's failure must not lose the others
            summary["figures"][name] = {"error": f"{type(exc).__name__}: {exc}"}
    rows = summary["figures"]["estimates"]
    if isinstance(rows, list):
        (out / "estimates.json").write_text(json.dumps(rows, indent=1))
        estimates.write_csv(rows, out / "estimates.csv")


def headline(summary: dict[str, Any]) -> dict[str, Any]:
    """What to read first: each phase's end and check, and the figures in short."""
    phases = {name: {k: p.get(k) for k in ("ended", "wall_s", "check", "skipped")
                     if p.get(k) is not None}
              for name, p in summary["phases"].items()}
    f = summary.get("figures", {})
    rows = f.get("estimates") if isinstance(f.get("estimates"), list) else []
    return {"mode": summary["mode"], "gpu": summary.get("gpu"), "phases": phases,
            "estimate_rows": len(rows),
            "estimate_errors_vs_nvml_pct": [r.get("error_total_vs_nvml_pct") for r in rows],
            "bandwidth": f.get("bandwidth"), "leak": f.get("leak"),
            "batch_tools": {k: (f.get("batch_tools") or {}).get(k)
                            for k in ("find_max_batch", "estimator_batch",
                                      "true_largest_batch")}}
