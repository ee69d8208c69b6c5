"""The plan as a ``gpuwatch.plan/1`` JSON document and as text (docs/plan.md describes
both). Sizes are integer bytes (``_bytes``), times seconds (``_s``), rates per second."""

from __future__ import annotations

from typing import Any

from gpuwatch.budget.specs import TransformerSpec
from gpuwatch.core.units import format_bytes
from gpuwatch.plan.cloud import CloudFit
from gpuwatch.plan.hardware import Hardware
from gpuwatch.plan.layouts import Config, global_batch
from gpuwatch.plan.planner import Plan
from gpuwatch.plan.roofline import StepTime

SCHEMA = "gpuwatch.plan/1"

IGNORES = (
    "kernel efficiency beyond the one efficiency figure (small matmuls, elementwise and "
    "normalisation kernels, launch gaps)",
    "overlap of communication with compute (communication is added in full)",
    "the data loader, host-to-device copies and the CPU side of the optimizer",
    "pipeline bubbles (pipeline parallelism is not planned), stragglers and thermal "
    "throttling",
    "traffic beyond the minimum: each tensor is counted as crossing the memory bus "
    "once per use",
)


def _step(s: StepTime | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"total_s": s.total_s, "compute_s": s.compute_s, "memory_s": s.memory_s,
            "communication_s": s.comm_s, "optimizer_s": s.optimizer_s, "bound": s.bound,
            "flops": s.flops, "bytes_moved": int(s.bytes_moved),
            "communication_bytes": int(s.comm_bytes),
            "link_bytes_per_s": int(s.link_bytes_per_s),
            "offload_s": s.offload_s, "offload_bytes": int(s.offload_bytes),
            "prefill_s": s.prefill_s,
            "compute_format": s.precision_format}


def _config(c: Config) -> dict[str, Any]:
    return {
        "gpu": c.hardware.name, "gpus": c.gpus, "fits": c.fits,
        "layout": None if c.layout is None else {
            "dp": c.layout.dp, "tp": c.layout.tp, "zero": c.layout.zero,
            "text": c.layout.describe()},
        "max_micro_batch": c.max_micro_batch, "micro_batch": c.micro_batch or None,
        "grad_accum": c.grad_accum or None, "peak_bytes": c.peak_bytes,
        "memory_bytes": c.hardware.gpu.memory_bytes, "step": _step(c.step),
        "samples_per_s_per_gpu": c.samples_per_s_per_gpu,
        "tokens_per_s_per_gpu": c.tokens_per_s_per_gpu,
        "note": c.note or None,
    }


def _cloud(f: CloudFit) -> dict[str, Any]:
    i = f.instance
    return {"instance": i.name, "provider": i.provider, "gpu": i.gpu,
            "gpus_per_node": i.gpus, "gpus_used": f.config.gpus,
            "interconnect": i.interconnect, "cpu_memory_bytes": i.cpu_memory_bytes,
            "on_demand_per_hour": i.on_demand_per_hour, "spot_per_hour": i.spot_per_hour,
            "step_s": f.step.total_s, "cost_per_step": f.cost_per_step,
            "spot_cost_per_step": f.spot_cost_per_step,
            "steps_per_epoch": f.steps_per_epoch, "cost_per_epoch": f.cost_per_epoch,
            "spot_cost_per_epoch": f.spot_cost_per_epoch}


def _preset(plan: Plan) -> dict[str, Any] | None:
    p = plan.request.preset
    if p is None:
        return None
    return {"name": p.name, "title": p.title, "recipe": p.recipe, "dataset": p.dataset,
            "levers": list(p.levers),
            "regimes": [{"precision": r.precision, "peak_bytes": r.peak_bytes,
                         "max_micro_batch_on_reference": r.max_micro_batch}
                        for r in plan.regimes]}


def preset_lines(plan: Plan) -> list[str]:
    """The preset's recipe, its fp32 and recommended estimates, the levers that matter."""
    p = plan.request.preset
    if p is None:
        return []
    ref = plan.reference
    where = f" on {ref.hardware.name}" if ref is not None else ""
    regimes = "; ".join(
        f"{r.precision}{' (recommended)' if r.precision == p.setup.precision else ''} "
        f"{format_bytes(r.peak_bytes)}"
        + (f", largest micro-batch {r.max_micro_batch}{where}"
           if r.max_micro_batch is not None else "")
        for r in plan.regimes)
    return [f"Preset {p.name}: {p.title}. {p.recipe}.",
            f"  peak on one GPU at micro-batch {plan.request.workload.batch}: {regimes}",
            "  levers that matter: " + "; ".join(p.levers) + "."]


def merit(h: Hardware, precision: str) -> str:
    """One GPU's figures of merit in a line: what it holds, moves and computes."""
    peak, fmt = h.peak_flops(precision)
    return (f"{format_bytes(h.gpu.memory_bytes)}, {h.gpu.bandwidth_bytes_per_s / 1e12:.2f} TB/s "
            f"({h.bandwidth_per_gb():.0f} GB/s per GB), {peak / 1e12:,.0f} TFLOP/s {fmt}, "
            f"ridge {h.ridge_point(precision):,.0f} FLOP/B, {h.sheet.link} "
            f"{h.sheet.link_bytes_per_s / 1e9:.0f} GB/s per direction")


def hardware_lines(plan: Plan) -> list[str]:
    precision = plan.request.setup.precision
    return [f"  {h.name:<10} {merit(h, precision)}; {h.sheet.source}" for h in plan.hardware]


def to_json(plan: Plan, sort: str = "time") -> dict[str, Any]:
    r = plan.request
    wl, st = r.workload, r.setup
    book = plan.prices
    return {
        "schema": SCHEMA,
        "model": r.spec.name, "params": r.spec.params, "mode": wl.mode,
        "global_batch": global_batch(wl, st),
        "seq": wl.seq if counts_tokens(r.spec) else None,
        "image": list(wl.image) if wl.image is not None and not counts_tokens(r.spec) else None,
        "precision": st.precision,
        "efficiency": {"compute": r.efficiency.compute, "bandwidth": r.efficiency.bandwidth,
                       "source": r.efficiency.source},
        "dataset_samples": r.dataset_samples,
        "sort": sort,
        "hardware": [{
            "gpu": h.name, "vendor": h.gpu.vendor, "memory_bytes": h.gpu.memory_bytes,
            "bandwidth_bytes_per_s": h.gpu.bandwidth_bytes_per_s,
            "peak_flops": h.peak_flops(st.precision)[0],
            "peak_format": h.peak_flops(st.precision)[1],
            "bandwidth_per_gb_per_s": h.bandwidth_per_gb(),
            "ridge_point_flops_per_byte": h.ridge_point(st.precision),
            "link": h.sheet.link, "link_bytes_per_s": int(h.sheet.link_bytes_per_s),
            "fast_domain_gpus": h.sheet.fast_domain, "source": h.sheet.source,
        } for h in plan.hardware],
        "configs": [_config(c) for c in plan.sorted_configs(sort)],
        "cloud": None if book is None else {
            "currency": book.currency, "as_of": book.as_of, "source": book.source,
            "options": [_cloud(f) for f in plan.cloud],
            "cheapest": None if plan.cheapest is None else _cloud(plan.cheapest),
        },
        "spot": None if plan.spot is None else {
            "caveat": plan.spot.caveat, "checkpoint_bytes": plan.spot.checkpoint_bytes,
            "checkpoint_write_s": plan.spot.write_s,
            "checkpoint_interval_s": plan.spot.interval_s,
            "mean_s_between_interruptions": plan.spot.mean_s_between_interruptions,
        },
        "reference": None if plan.reference is None else {
            "gpu": plan.reference.hardware.name, "gpus": plan.reference.gpus},
        "preset": _preset(plan),
        "beyond_one_node": [{"gpu": name, "min_gpus_zero3": n}
                            for name, n in plan.beyond_node.items()],
        "levers": [{"change": lv.change, "saves_bytes": lv.saves_bytes,
                    "time_delta_s": lv.time_delta_s, "time_ratio": lv.time_ratio,
                    "why": lv.why} for lv in plan.levers],
        "ignores": list(IGNORES),
    }


def counts_tokens(spec: object) -> bool:
    """Language models count tokens; CNNs and ViTs count images."""
    return isinstance(spec, TransformerSpec) and spec.arch != "vit"


def seconds(s: float) -> str:
    """A duration with its unit: 850 ms, 2.41 s, 3.5 min, 1.2 h."""
    if s < 1:
        return f"{s * 1000:.3g} ms"
    if s < 120:
        return f"{s:.3g} s"
    if s < 7200:
        return f"{s / 60:.3g} min"
    return f"{s / 3600:.3g} h"


def rate(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def money(value: float | None, currency: str) -> str:
    if value is None:
        return "—"
    if value >= 1:
        return f"{value:,.2f} {currency}"
    return f"{value:.3f} {currency}" if value >= 0.01 else f"{value:.6f} {currency}"


def to_text(plan: Plan, sort: str = "time") -> str:
    r = plan.request
    wl = r.workload
    unit = "tokens/s" if counts_tokens(r.spec) else "images/s"
    lines = [
        f"{r.spec.name}: {wl.mode}, global batch {global_batch(wl, r.setup):,} "
        f"({'sequences' if counts_tokens(r.spec) else 'images'}), {r.setup.precision}; "
        f"efficiency {r.efficiency.compute:.0%} of peak compute, "
        f"{r.efficiency.bandwidth:.0%} of peak bandwidth",
        f"efficiency from {r.efficiency.source}",
        *preset_lines(plan),
        "",
        f"{'GPU':<11}{'n':>2}  {'layout':<22}{'fits':<5}{'max mb':>7}{'mb×acc':>9}"
        f"{'peak/GPU':>11}{'step':>10}  {'bound':<14}{unit + '/GPU':>14}",
    ]
    notes: list[str] = []
    for c in plan.sorted_configs(sort):
        layout = c.layout.describe() if c.layout else ("batch too small" if c.note else "—")
        fits = "yes" if c.fits else ("—" if c.note else "no")
        peak = "—" if c.note else format_bytes(c.peak_bytes)
        if c.note and c.note not in notes:
            notes.append(c.note)
        step = c.step
        per = c.tokens_per_s_per_gpu if unit == "tokens/s" else c.samples_per_s_per_gpu
        lines.append(
            f"{c.hardware.name:<11}{c.gpus:>2}  {layout:<22}{fits:<5}"
            f"{c.max_micro_batch:>7}{(f'{c.micro_batch}×{c.grad_accum}' if c.fits else '—'):>9}"
            f"{peak:>11}{(seconds(step.total_s) if step else '—'):>10}  "
            f"{(step.bound if step else '—'):<14}{rate(per):>14}")
    lines += [f"batch too small: {note}." for note in notes]
    if plan.beyond_node:
        needs = [f"{name} {n}" for name, n in plan.beyond_node.items() if n]
        never = [name for name, n in plan.beyond_node.items() if not n]
        if needs:
            lines.append("Beyond one node (fewest GPUs under ZeRO-3 at micro-batch 1; the "
                         "network between nodes is not planned): " + ", ".join(needs) + ".")
        if never:
            lines.append("Not even 4,096 GPUs under ZeRO-3 hold it on " + ", ".join(never)
                         + ": what stays on each GPU (activations, the gathered layer) is "
                           "too big; see the levers (checkpointing, a shorter sequence).")
    if plan.prices is not None:
        book = plan.prices
        lines += ["", f"Cloud ({book.source}, prices as of {book.as_of}, {book.currency}; "
                      "edit them with --prices FILE):"]
        for f in plan.cloud[:8]:
            lines.append(
                f"  {f.instance.name:<18} {f.config.gpus}×{f.instance.gpu:<10} "
                f"{money(f.cost_per_step, book.currency):>14}/step  "
                f"epoch {money(f.cost_per_epoch, book.currency)}"
                + (f"  (spot {money(f.spot_cost_per_epoch, book.currency)})"
                   if f.spot_cost_per_epoch is not None else ""))
        if plan.cheapest is None:
            lines.append("  no priced instance holds this workload")
        else:
            best = plan.cheapest
            lines.append(f"  cheapest: {best.instance.name} ({best.instance.provider}), "
                         f"{best.config.gpus}× {best.config.hardware.name}")
    if plan.spot is not None:
        sp = plan.spot
        lines += ["", f"Spot: {sp.caveat}. A checkpoint of {format_bytes(sp.checkpoint_bytes)} "
                      f"takes about {seconds(sp.write_s)} to write; with an interruption "
                      f"every {seconds(sp.mean_s_between_interruptions)} on average, "
                      f"checkpoint every {seconds(sp.interval_s)} (Young's formula)."]
    if plan.levers and plan.reference is not None:
        ref = plan.reference
        lines += ["", f"Levers, cheapest in time first (on {ref.gpus}× {ref.hardware.name}):"]
        for lv in plan.levers:
            lines.append(f"  {lv.change:<34} saves {format_bytes(lv.saves_bytes):>10}  "
                         f"time {lv.time_ratio - 1:+.0%}  {lv.why}")
    lines += ["", f"Data sheets ({r.setup.precision} peak, dense):", *hardware_lines(plan)]
    lines += ["", "The roofline ignores: " + "; ".join(IGNORES) + "."]
    return "\n".join(lines)
