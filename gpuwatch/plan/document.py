"""The plan as a ``gpuwatch.plan/1`` JSON document and as text (docs/plan.md describes
both). Sizes are integer bytes (``_bytes``), times seconds (``_s``), rates per second."""

from __future__ import annotations

from typing import Any

from gpuwatch.budget.specs import TransformerSpec
from gpuwatch.core.units import format_bytes
from gpuwatch.plan import answers
from gpuwatch.plan.cloud import CloudFit
from gpuwatch.plan.hardware import Hardware
from gpuwatch.plan.layouts import Config, global_batch
from gpuwatch.plan.planner import Plan
from gpuwatch.plan.roofline import StepTime

SCHEMA = "gpuwatch.plan/1"

IGNORES = (
    "kernel efficiency beyond the efficiency figure of the model's kind (small matmuls, "
    "elementwise and normalisation kernels, launch gaps)",
    "overlap beyond what frameworks do by default (gradient buckets behind the backward "
    "pass, prefetched ZeRO-3 gathers, ring attention; tensor-parallel all-reduces and "
    "pipeline sends stay exposed)",
    "the data loader, host-to-device copies and the CPU side of the optimizer",
    "pipeline schedules other than Megatron's interleaved 1F1B with two-layer chunks, "
    "stragglers, failures and thermal throttling",
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
            "compute_format": s.precision_format,
            "communication_exposed_s": s.exposed_s,
            "communication_hidden_s": s.hidden_s,
            "pipeline_bubble_s": s.bubble_s,
            "pipeline_virtual_stages": s.virtual,
            "network_bytes_per_s": int(s.network_bytes_per_s),
            "communication_parts": [{"kind": x.kind, "bytes": int(x.bytes),
                                     "inter_node": x.inter_node} for x in s.parts]}


def _config(c: Config, plan: Plan) -> dict[str, Any]:
    infer = plan.request.workload.mode == "infer"
    return {
        "gpu": c.hardware.name, "gpus": c.gpus, "nodes": c.nodes, "fits": c.fits,
        "layout": None if c.layout is None else {
            "dp": c.layout.dp, "tp": c.layout.tp, "zero": c.layout.zero,
            "pp": c.layout.pp, "cp": c.layout.cp,
            "checkpointing": c.layout.checkpointing or plan.request.setup.checkpointing,
            "text": c.layout.describe()},
        "max_micro_batch": c.max_micro_batch, "micro_batch": c.micro_batch or None,
        "grad_accum": c.grad_accum or None, "peak_bytes": c.peak_bytes,
        "memory_bytes": c.hardware.gpu.memory_bytes, "step": _step(c.step),
        "samples_per_s_per_gpu": c.samples_per_s_per_gpu,
        "tokens_per_s_per_gpu": c.tokens_per_s_per_gpu,
        "note": c.note or None,
        "job_s": answers.job_s(c, plan.request.job_samples),
        "time_to_first_token_s": answers.time_to_first_token_s(c) if infer else None,
        "tokens_per_s_per_user": answers.tokens_per_s_per_user(c) if infer else None,
        "tokens_per_s": answers.tokens_per_s(c) if infer else None,
        "generation_s": answers.generation_s(c, plan.request.workload) if infer else None,
    }


def _cloud(f: CloudFit, plan: Plan) -> dict[str, Any]:
    i = f.instance
    infer = plan.request.workload.mode == "infer"
    return {"instance": i.name, "provider": i.provider, "gpu": i.gpu,
            "gpus_per_node": i.gpus, "gpus_used": f.config.gpus,
            "interconnect": i.interconnect, "cpu_memory_bytes": i.cpu_memory_bytes,
            "on_demand_per_hour": i.on_demand_per_hour, "spot_per_hour": i.spot_per_hour,
            "step_s": f.step.total_s, "cost_per_step": f.cost_per_step,
            "spot_cost_per_step": f.spot_cost_per_step,
            "steps_per_epoch": f.steps_per_epoch, "cost_per_epoch": f.cost_per_epoch,
            "spot_cost_per_epoch": f.spot_cost_per_epoch,
            "instances": f.instances, "gpus_rented": f.gpus_rented,
            "on_demand_total_per_hour": f.per_hour,
            "job_steps": f.job_steps, "job_s": f.job_s, "job_cost": f.job_cost,
            "spot_job_cost": f.spot_job_cost,
            "cost_per_million_tokens": answers.cost_per_million_tokens(f, plan.request.workload)
            if infer else None}


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
        "efficiency": {"compute": r.eff.compute, "bandwidth": r.eff.bandwidth,
                       "source": r.eff.source},
        "dataset_samples": r.dataset_samples,
        "sort": sort,
        "network_bytes_per_s": None if r.network_bytes_per_s is None
        else int(r.network_bytes_per_s),
        "hardware": [{
            "gpu": h.name, "vendor": h.gpu.vendor, "memory_bytes": h.gpu.memory_bytes,
            "bandwidth_bytes_per_s": h.gpu.bandwidth_bytes_per_s,
            "peak_flops": h.peak_flops(st.precision)[0],
            "peak_format": h.peak_flops(st.precision)[1],
            "bandwidth_per_gb_per_s": h.bandwidth_per_gb(),
            "ridge_point_flops_per_byte": h.ridge_point(st.precision),
            "link": h.sheet.link, "link_bytes_per_s": int(h.sheet.link_bytes_per_s),
            "fast_domain_gpus": h.sheet.fast_domain, "source": h.sheet.source,
            "fp8_peak_flops": h.sheet.fp8_flops, "fp8_source": h.sheet.fp8_source or None,
            "tf32_peak_flops": h.sheet.tf32_flops, "node_gpus": h.sheet.node,
            "network": h.sheet.network,
            "network_bytes_per_s": int(r.network_bytes_per_s or h.sheet.network_bytes_per_s),
        } for h in plan.hardware],
        "configs": [_config(c, plan) for c in plan.sorted_configs(sort)],
        "cloud": None if book is None else {
            "currency": book.currency, "as_of": book.as_of, "source": book.source,
            "options": [_cloud(f, plan) for f in plan.cloud],
            "cheapest": None if plan.cheapest is None else _cloud(plan.cheapest, plan),
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
        "beyond_one_node": [{"gpu": name, "min_gpus_zero3": n, "min_gpus": n,
                             "reason": plan.impossible.get(name)}
                            for name, n in plan.beyond_node.items()],
        "job_samples": r.job_samples,
        "batch_split": batch_split(plan),
        "levers": [{"change": lv.change, "saves_bytes": lv.saves_bytes,
                    "time_delta_s": lv.time_delta_s, "time_ratio": lv.time_ratio,
                    "why": lv.why} for lv in plan.levers],
        "ignores": list(IGNORES),
    }


def counts_tokens(spec: object) -> bool:
    """Language models count tokens; CNNs and ViTs count images."""
    return isinstance(spec, TransformerSpec) and spec.arch != "vit"


def seconds(s: float) -> str:
    """A duration with its unit: 850 ms, 2.41 s, 3.5 min, 1.2 h, 34.2 days."""
    if s < 1:
        return f"{s * 1000:.3g} ms"
    if s < 120:
        return f"{s:.3g} s"
    if s < 7200:
        return f"{s / 60:.3g} min"
    if s < 3 * 86400:
        return f"{s / 3600:.3g} h"
    return f"{s / 86400:,.3g} days" if s < 1000 * 86400 else f"{s / 86400:,.0f} days"


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


def batch_split(plan: Plan) -> str:
    """The global batch, where it comes from, and that each layout re-splits it."""
    r = plan.request
    wl, st = r.workload, r.setup
    total = global_batch(wl, st)
    what = "sequences" if counts_tokens(r.spec) else "images"
    if wl.mode == "infer":
        return (f"{total:,} {what} decoded at once (--batch {wl.batch} × --dp {st.dp}), "
                "split over each layout's replicas")
    return (f"global batch {total:,} {what} per step (--batch {wl.batch} × --grad-accum "
            f"{wl.grad_accum} × --dp {st.dp}); each layout re-splits it over its "
            "data-parallel replicas as micro-batch × accumulation (column mb×acc)")


def to_text(plan: Plan, sort: str = "time") -> str:
    """The plan as text (:mod:`gpuwatch.plan.text`)."""
    from gpuwatch.plan.text import render

    return render(plan, sort)
