"""A run's figures as Markdown tables (docs/real-gpu.md), units on every number; a
dry run's tables say so in their first line."""

from __future__ import annotations

from typing import Any

FAKE = "(fake driver)"      # a dry run's NVML figures are the fake driver's drift


def size(b: float | None) -> str:
    if b is None:
        return "—"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(b) >= scale:
            return f"{b / scale:,.2f} {unit}" if unit == "GiB" else f"{b / scale:,.0f} {unit}"
    return f"{b:.0f} B"


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1f} %"


def rate(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x / 1e9:,.1f} GB/s" if abs(x) >= 1e9 else f"{x / 1e6:,.1f} MB/s"


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def markdown(summary: dict[str, Any]) -> str:
    dry = summary.get("mode") != "real"
    gpu = summary.get("gpu") or {}
    f = summary.get("figures") or {}
    out = []
    if dry:
        out.append("**DRY RUN** (CPU torch, tiny models, the fake NVML driver): these "
                   "figures check the harness, they measure no GPU. A dash is what only "
                   "CUDA can tell.\n")
    out.append(f"GPU: {gpu.get('name')}, driver {gpu.get('driver')}, "
               f"{size(gpu.get('total_bytes'))}; run wall time {summary.get('wall_s')} s.\n")
    rows = []
    for name, p in (summary.get("phases") or {}).items():
        check = p.get("check")
        verdict = ("skipped: " + p["skipped"]) if p.get("skipped") else \
            p.get("check_note", "—") if check is None else "ok" if not check \
            else "; ".join(check)
        rows.append([name, p.get("expect") or "—", f"{p.get('wall_s', '—')} s",
                     p.get("ended", "—"), verdict.replace("|", "/")])
    out.append(_table(["phase", "expect", "wall", "ended", "check"], rows))
    est = f.get("estimates") if isinstance(f.get("estimates"), list) else []
    if est:
        out.append("\n**Estimates against the allocator** (estimate = `gpuwatch estimate "
                   "--json`, default overhead; in-torch = estimate less its overhead; error = "
                   "(estimate − measured) / measured; the estimate's optimizer states include "
                   "AdamW's foreach step temporary, one more state-sized buffer (+50 %), "
                   "the probe's only the states kept)\n")
        out.append(_table(
            ["configuration", "estimate", "NVML (process)", "error", "max reserved",
             "error (in-torch)", "max allocated", "error (in-torch)", "weights error",
             "optimizer error", "outside PyTorch"],
            [[r["name"], size(r["estimate_total_bytes"]),
              FAKE if dry else size(r["nvml_process_bytes"]),
              FAKE if dry else pct(r["error_total_vs_nvml_pct"]), size(r["max_reserved_bytes"]),
              pct(r["error_in_torch_vs_reserved_pct"]), size(r["max_allocated_bytes"]),
              pct(r["error_in_torch_vs_allocated_pct"]), pct(r["error_parameters_pct"]),
              pct(r["error_optimizer_states_pct"]), size(r["outside_torch_bytes"])]
             for r in est]))
    oh = f.get("overhead") or {}
    lazy, eager = oh.get("overhead-lazy") or [], oh.get("overhead-eager") or []
    if lazy:
        out.append(f"\n**CUDA's memory outside PyTorch** (NVML − reserved); the estimator "
                   f"assumes {size(oh.get('estimator_cuda_context_bytes'))} + cuBLAS "
                   f"{size(oh.get('estimator_cublas_workspace_bytes'))}\n")
        eg = {r["stage"]: r for r in eager}
        out.append(_table(["stage", "lazy loading", "eager loading",
                           "workspace kept (allocator)", "workspace at the peak"],
                          [[r["stage"], size(r["outside_torch_bytes"]),
                            size((eg.get(r["stage"]) or {}).get("outside_torch_bytes")),
                            size(r.get("workspace_bytes")),
                            size(r.get("workspace_peak_bytes"))] for r in lazy]))
    lk, kv, bw = f.get("leak") or {}, f.get("kv_cache") or {}, f.get("bandwidth") or {}
    out.append("\n**Growth and bandwidth against what gpuwatch saw**\n")
    out.append(_table(["figure", "known (from the workload)", "seen by gpuwatch", "ratio"], [
        ["leak", rate(lk.get("known_rate_bytes_per_s")),
         *((FAKE, FAKE) if dry else (rate(lk.get("nvml_slope_bytes_per_s")),
                                     _ratio(lk.get("ratio_nvml_to_known"))))],
        ["KV cache growth", rate(kv.get("known_rate_bytes_per_s")),
         *((FAKE, FAKE) if dry else (rate(kv.get("nvml_slope_bytes_per_s")), _ratio(
             None if not kv.get("known_rate_bytes_per_s")
             or kv.get("nvml_slope_bytes_per_s") is None
             else kv["nvml_slope_bytes_per_s"] / kv["known_rate_bytes_per_s"])))],
        ["copy bandwidth (read + write)", rate(bw.get("achieved_bytes_per_s")),
         *((FAKE, FAKE) if dry else (rate(bw.get("shown_bytes_per_s")),
                                     _ratio(bw.get("ratio_shown_to_achieved"))))]]))
    bt = f.get("batch_tools") or {}
    if bt:
        one, seeded = bt.get("find_max_batch") or {}, bt.get("seeded_by_estimate") or {}
        ad = bt.get("adaptive") or {}
        out.append("\n**Batch tools on an out-of-memory error**\n")
        out.append(_table(["figure", "value"], [
            ["find_max_batch from 1", f"{one.get('batch')} in {one.get('trials')} trials"],
            ["find_max_batch from the estimate",
             f"{seeded.get('batch')} in {seeded.get('trials')} trials" if seeded else "—"],
            ["estimator's largest batch", str(bt.get("estimator_batch") or "—")],
            ["largest batch in a fresh process", str(bt.get("true_largest_batch") or "—")],
            ["AdaptiveBatch", f"effective {ad.get('effective_batch')} → micro "
                              f"{ad.get('micro_batch')} × {ad.get('grad_accum')}, "
                              f"{len(ad.get('changes') or [])} change(s), effective batch "
                              f"kept: {ad.get('effective_kept')}" if ad else "—"]]))
    oom = f.get("oom") or {}
    if oom:
        died = oom.get("died") or {}
        out.append(f"\n**Out-of-memory death**: t_oom_s "
                   f"{(oom.get('entry') or {}).get('t_oom_s')}, warned "
                   f"{oom.get('warned_before_s') or '—'} s before; "
                   f"`{died.get('type')}`: {str(died.get('message'))[:160]}")
    return "\n".join(out)


def _ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"
