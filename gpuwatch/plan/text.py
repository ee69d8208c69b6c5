"""The plan as text: the question first (model, precision, efficiency and where it comes
from, the global batch and how it is split), the configurations that fit, fastest
first, then one line per GPU type that does not with why, the cloud options with the
job's hours and dollars (inference: time to first token and dollars per million
tokens), spot advice, the levers, the data sheets and what the roofline ignores."""

from __future__ import annotations

from gpuwatch.budget.counts import format_count
from gpuwatch.core.units import format_bytes
from gpuwatch.plan import answers
from gpuwatch.plan.document import (
    IGNORES,
    batch_split,
    counts_tokens,
    hardware_lines,
    money,
    preset_lines,
    rate,
    seconds,
)
from gpuwatch.plan.layouts import Config
from gpuwatch.plan.planner import Plan
from gpuwatch.plan.scale import MAX_GPUS


def _header(plan: Plan) -> list[str]:
    r = plan.request
    eff = r.eff
    lines = [
        f"{r.spec.name}: {r.workload.mode}, {r.setup.precision}; efficiency "
        f"{eff.compute:.0%} of peak compute, {eff.bandwidth:.0%} of peak bandwidth",
        f"efficiency from {eff.source}",
        batch_split(plan) + ".",
    ]
    if r.job_samples is not None:
        what = "sequences" if counts_tokens(r.spec) else "images"
        size = f"{r.job_samples:,.0f} {what}"
        if counts_tokens(r.spec):
            size = f"{format_count(r.job_samples * r.workload.seq)} tokens ({size})"
        lines.append(f"job: {size} in all; its time and cost on each option below.")
    return lines + preset_lines(plan)


def _table(plan: Plan, configs: list[Config]) -> list[str]:
    r = plan.request
    infer = r.workload.mode == "infer"
    unit = "tokens/s" if counts_tokens(r.spec) else "images/s"
    head = (f"{'GPU':<15}{'n':>5}  {'layout':<34}{'max mb':>7}{'mb×acc':>9}{'peak/GPU':>11}"
            f"{'token step' if infer else 'step':>11}  {'bound':<14}")
    head += (f"{'TTFT':>10}{'tok/s/user':>11}{'tok/s all':>11}" if infer
             else f"{unit + '/GPU':>14}")
    job = r.job_samples is not None and not infer
    if job:
        head += f"{'job':>12}"
    lines = [head]
    for c in configs:
        assert c.step is not None and c.layout is not None
        row = (f"{c.hardware.name:<15}{c.gpus:>5}  {c.layout.describe():<34}"
               f"{c.max_micro_batch:>7}{f'{c.micro_batch}×{c.grad_accum}':>9}"
               f"{format_bytes(c.peak_bytes):>11}{seconds(c.step.total_s):>11}  "
               f"{c.step.bound:<14}")
        if infer:
            ttft = answers.time_to_first_token_s(c)
            row += (f"{(seconds(ttft) if ttft else '—'):>10}"
                    f"{rate(answers.tokens_per_s_per_user(c)):>11}"
                    f"{rate(answers.tokens_per_s(c)):>11}")
        else:
            per = c.tokens_per_s_per_gpu if unit == "tokens/s" else c.samples_per_s_per_gpu
            row += f"{rate(per):>14}"
        if job:
            t = answers.job_s(c, r.job_samples)
            row += f"{(seconds(t) if t is not None else '—'):>12}"
        lines.append(row)
    return lines


def _overlap(configs: list[Config]) -> list[str]:
    """What the fastest configuration with communication hides and what it cannot."""
    c = next((c for c in configs if c.step is not None and c.step.comm_s > 0), None)
    if c is None or c.step is None:
        return []
    parts = c.step.part_times()
    hidden = [f"{kind} {seconds(t - e)}" for kind, t, e in parts if t - e > 1e-9]
    exposed = [f"{kind} {seconds(e)}" for kind, _, e in parts if e > 1e-9]
    line = (f"Communication on {c.gpus}× {c.hardware.name}: {seconds(c.step.comm_s)} a step, "
            f"{seconds(c.step.hidden_s)} hidden behind compute")
    line += f" ({'; '.join(hidden)})" if hidden else ""
    line += f"; exposed: {'; '.join(exposed)}." if exposed else "; none exposed."
    return [line]


def _folded(plan: Plan) -> list[str]:
    """One line per GPU type with counts that do not fit, and why."""
    lines = []
    for hw in plan.hardware:
        misses = [c for c in plan.configs if c.hardware is hw and not c.fits]
        if not misses:
            continue
        counts = ", ".join(str(c.gpus) for c in misses)
        notes = {c.note for c in misses if c.note}
        memory = [c for c in misses if not c.note and c.peak_bytes]
        why = []
        if memory:
            least = min(memory, key=lambda c: c.peak_bytes)
            why.append(f"out of memory (at best {format_bytes(least.peak_bytes)} per GPU at "
                       f"{least.gpus}, has {format_bytes(hw.gpu.memory_bytes)})")
        if notes:
            why.append("batch too small: " + "; ".join(sorted(notes)))
        n = plan.beyond_node.get(hw.name, 0)
        if n:
            why.append(f"fits from {n:,} GPUs ({n // hw.sheet.node:,} nodes), above")
        elif hw.name in plan.impossible:
            why.append(f"not even {MAX_GPUS:,} GPUs hold it: {plan.impossible[hw.name]}")
        lines.append(f"  {hw.name:<15} at {counts}: " + "; ".join(why or ["no layout"]))
    return lines


def _cloud(plan: Plan) -> list[str]:
    book = plan.prices
    if book is None:
        return []
    r = plan.request
    infer = r.workload.mode == "infer"
    out_tokens = answers.output_tokens(r.workload)
    lines = ["", f"Cloud ({book.source}, prices as of {book.as_of}, {book.currency}; "
                 "edit them with --prices FILE), cheapest per step first:"]
    for f in plan.cloud[:8]:
        nodes = f"{f.instances}× " if f.instances > 1 else ""
        line = (f"  {nodes}{f.instance.name:<18} {f.config.gpus}×{f.instance.gpu:<12} "
                f"{money(f.per_hour, book.currency)}/h  "
                f"{money(f.cost_per_step, book.currency)}/step")
        if infer:
            per_m = answers.cost_per_million_tokens(f, r.workload)
            line += f"  {money(per_m, book.currency)} per million tokens"
        elif f.job_s is not None:
            line += (f"  job {seconds(f.job_s)}, {money(f.job_cost, book.currency)}"
                     + (f" (spot {money(f.spot_job_cost, book.currency)})"
                        if f.spot_job_cost is not None else ""))
        elif f.cost_per_epoch is not None:
            line += (f"  epoch {money(f.cost_per_epoch, book.currency)}"
                     + (f" (spot {money(f.spot_cost_per_epoch, book.currency)})"
                        if f.spot_cost_per_epoch is not None else ""))
        lines.append(line)
    if plan.cheapest is None:
        lines.append("  no priced instance holds this workload")
    else:
        best = plan.cheapest
        lines.append(f"  cheapest: {best.instances}× {best.instance.name} "
                     f"({best.instance.provider}), {best.config.gpus}× "
                     f"{best.config.hardware.name}")
    if infer:
        lines.append("  per million output tokens: " + (
            f"{out_tokens:,} tokens per request after its prompt, prefill counted"
            if out_tokens else "steady decoding (give --context above --seq to count "
                               "the prefill)"))
    return lines


def render(plan: Plan, sort: str = "time") -> str:
    lines = [*_header(plan), ""]
    configs = plan.sorted_configs(sort)
    fitting = [c for c in configs if c.fits]
    if fitting:
        what = "configuration" if len(fitting) == 1 else "configurations"
        lines += [f"Fits ({len(fitting)} {what}, by {sort}):", *_table(plan, fitting),
                  *_overlap(fitting)]
    else:
        lines.append("Nothing fits.")
    folded = _folded(plan)
    if folded:
        lines += ["", "Does not fit:", *folded]
    lines += _cloud(plan)
    if plan.spot is not None:
        sp = plan.spot
        lines += ["", f"Spot: {sp.caveat}. A checkpoint of {format_bytes(sp.checkpoint_bytes)} "
                      f"takes about {seconds(sp.write_s)} to write; with an interruption "
                      f"every {seconds(sp.mean_s_between_interruptions)} on average, "
                      f"checkpoint every {seconds(sp.interval_s)} (Young's formula)."]
    if plan.levers:
        ref = plan.reference
        if ref is not None:
            lines += ["", f"Levers, cheapest in time first (on {ref.gpus}× "
                          f"{ref.hardware.name}):"]
            for lv in plan.levers:
                lines.append(f"  {lv.change:<34} saves {format_bytes(lv.saves_bytes):>10}  "
                             f"time {lv.time_ratio - 1:+.0%}  {lv.why}")
        else:
            lines += ["", "Levers, by the memory each saves on one GPU:"]
            for lv in plan.levers:
                lines.append(f"  {lv.change:<34} saves {format_bytes(lv.saves_bytes):>10}  "
                             f"{lv.why}")
    r = plan.request
    lines += ["", f"Data sheets ({r.setup.precision} peak, dense):", *hardware_lines(plan)]
    lines += ["", "The roofline ignores: " + "; ".join(IGNORES) + "."]
    return "\n".join(lines)
