"""One workload of the real-GPU run, as its own process with the probe attached.

    python workload.py KIND PARAMS_JSON

The process imports torch, then waits for its go file (so a recording can start first
and, under the dry run, list its pid), runs, and writes what it measured to the result
file as it goes (a process killed or dead of an out-of-memory error leaves what it had).
An out-of-memory error is not caught: the process dies of it as a training run does;
an exception hook notes its time and message first.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models
import torch
from measure import (
    batch_tools,
    batch_verify,
    estimate_config,
    estimate_many,
    estimator_batch,
    overhead,
)
from models import Runtime, causal_lm, decode_step, precision_of, tokens, train_step

from gpuwatch import probe

Result = dict[str, Any]
MIB = 2**20


class Out:
    """The result document, rewritten whole (atomically) at each milestone."""

    def __init__(self, path: str, doc: Result):
        self.path, self.doc = Path(path), doc

    def emit(self, **fields: Any) -> None:
        self.doc.update(fields)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.doc, indent=1, default=str))
        os.replace(tmp, self.path)


def wait_for_go(path: str, timeout_s: float = 120.0) -> None:
    end = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() > end:
            raise SystemExit(f"workload: no go signal in {timeout_s:.0f} s")
        time.sleep(0.02)


# ---------------------------------------------------------------- training runs
def train(rt: Runtime, p: Result, out: Out) -> None:
    """Warm-up, steady steps, an evaluation pass; optionally a leak (tensors kept every
    step) or variable-length batches (fragmentation)."""
    dtype, amp = precision_of(p.get("precision", "amp-bf16"))
    model = causal_lm(p["model"], rt, dtype)
    vocab = models.SPECS[p["model"]].vocab
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, foreach=True)
    warm = p.get("warmup_steps", 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
    probe.attach(model, opt)
    kept: list[torch.Tensor] = []
    leak = int(p.get("leak_bytes_per_step", 0))
    rng = random.Random(7)
    start, times, evals = time.monotonic(), [], []
    eval_at = p.get("eval_at_fraction")
    step = 0
    while time.monotonic() - start < p["duration_s"]:
        batch, seq = p["batch"], p["seq"]
        if p.get("variable"):      # variable-length batches, sizes the cache cannot reuse
            lo, hi = p["variable"]
            seq = rng.randint(lo, hi)
            batch = rng.randint(1, p["batch"])
        ids, labels = tokens(vocab, batch, seq, rt)
        t0 = time.perf_counter()
        loss = train_step(model, opt, ids, labels, rt, amp)
        sched.step()
        if leak:
            kept.append(torch.ones(leak, dtype=torch.uint8, device=rt.device))
        rt.sync()
        times.append(time.perf_counter() - t0)
        step += 1
        if eval_at is not None and not evals and time.monotonic() - start > eval_at * p[
                "duration_s"]:
            model.eval()
            with torch.no_grad(), torch.autocast(rt.kind, dtype=torch.bfloat16, enabled=amp):
                for _ in range(p.get("eval_batches", 4)):
                    ev_ids, ev_labels = tokens(vocab, p["batch"], p["seq"], rt)
                    evals.append(float(model(ev_ids, ev_labels)[0]))
            model.train()
            out.emit(eval_at_s=time.monotonic() - start)
        if step % 5 == 0 or step == 1:
            out.emit(steps=step, loss=float(loss), step_s_median=statistics.median(times),
                     leaked_bytes=leak * len(kept), memory=rt.memory(),
                     elapsed_s=time.monotonic() - start)
    out.emit(steps=step, step_s_median=statistics.median(times) if times else None,
             tokens_per_s=(p["batch"] * p["seq"] / statistics.median(times)
                           if times and not p.get("variable") else None),
             eval_losses=evals, leaked_bytes=leak * len(kept),
             leak_bytes_per_step=leak or None, memory=rt.memory(),
             elapsed_s=time.monotonic() - start, finished=True)


def oom(rt: Runtime, p: Result, out: Out) -> None:
    """A curriculum that lengthens the sequence every ``stage_s`` until the card is full.

    Two stages measure what a token costs at the allocator's peak (``max_memory_allocated``:
    the tensors themselves, exact and linear in the tokens); each later stage is aimed at
    a peak of ``alloc_targets`` × the card. From 95 % of the card allocated, what NVML
    shows as used (CUDA's context + the allocator's reserve, never below the tensors) is
    above 95 %, so the advisor's low-free warning is due 15 s later, however the cache is
    laid out; the targets climb slowly from there so the run dies ~70 s after it, at the
    last stage, which asks for 1.6× the tokens. The out-of-memory error is not caught.
    """
    dtype, amp = precision_of(p.get("precision", "bf16"))
    model = causal_lm(p["model"], rt, dtype)
    vocab = models.SPECS[p["model"]].vocab
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    probe.attach(model, opt)
    batch, seq = p["batch"], p["seq"]
    points: list[tuple[int, int]] = []          # (tokens, peak allocated bytes)
    stages: list[Result] = []
    plan: list[float | str] = ["first", "double", *p["alloc_targets"], "beyond"]
    start = time.monotonic()
    for k, target in enumerate(plan):
        if target == "double":
            seq *= 2
        elif target == "beyond":
            seq = int(seq * p.get("final_growth", 1.6))
            if rt.dry:
                seq = max(seq, (rt.cap_tokens or 0) // batch + 1)
        elif isinstance(target, float) and not rt.dry and len(points) >= 2:
            (t1, a1), (t2, a2) = points[0], points[1]
            per_token = max(1.0, (a2 - a1) / max(1, t2 - t1))
            tl, al = points[-1]
            total = torch.cuda.get_device_properties(0).total_memory
            seq = max(seq + 1, int((tl + (target * total - al) / per_token) / batch))
        elif isinstance(target, float):          # dry run: a few more tokens a stage
            seq += max(1, seq // 8)
        stage: Result = {"stage": k, "seq": seq, "batch": batch, "target": target,
                         "at_s": round(time.monotonic() - start, 2)}
        stages.append(stage)
        out.emit(stages=stages, death_expected_at_stage=len(plan) - 1)
        # the stages below 95 % are short: the time goes to the top, where it is warned
        top = target == "beyond" or (isinstance(target, float) and target >= 0.95)
        end = time.monotonic() + (p["stage_s"] if top else p.get("first_stage_s",
                                                                  p["stage_s"]))
        while time.monotonic() < end:
            ids, labels = tokens(vocab, batch, seq, rt)
            train_step(model, opt, ids, labels, rt, amp)
            rt.sync()
        ft, mem = rt.free_total(), rt.memory()
        stage.update(free_fraction=None if ft is None else round(ft[0] / ft[1], 4),
                     memory=mem)
        points.append((batch * seq, mem.get("max_allocated_bytes") or 0))
        out.emit(stages=stages)
    out.emit(survived=True)     # the card had more than the curriculum could ask


def infer(rt: Runtime, p: Result, out: Out) -> None:
    """Generation with a KV cache that grows by one token per step for every sequence."""
    spec = models.SPECS[p["model"]]
    model = causal_lm(p["model"], rt, torch.bfloat16).model.eval()
    probe.attach(model)
    cache: list = [None] * spec.layers
    ids = torch.randint(0, spec.vocab, (p["batch"], p["prompt"]), device=rt.device)
    start, pos, growth = time.monotonic(), 0, []
    with torch.no_grad():
        while time.monotonic() - start < p["duration_s"]:
            logits = decode_step(model, ids, cache, pos)
            pos += ids.shape[1]
            ids = logits.argmax(-1)
            if pos % 64 == 1 or pos == p["prompt"]:
                rt.sync()
                kv = sum(k.numel() * k.element_size() * 2 for k, _ in cache)
                growth.append((round(time.monotonic() - start, 2), pos, kv))
                out.emit(tokens=pos, kv_cache_bytes=kv, growth=growth, memory=rt.memory())
    rt.sync()
    out.emit(tokens=pos, finished=True, memory=rt.memory(),
             kv_bytes_per_token=2 * spec.layers * spec.kv * spec.d * 2 * p["batch"])


def copy_loop(rt: Runtime, p: Result, out: Out) -> None:
    """Device-to-device copies of known size: achieved bandwidth from the bytes and CUDA
    events (read + write counted), to hold against what the session shows."""
    n = p["bytes"]
    src = torch.ones(n, dtype=torch.uint8, device=rt.device)
    dst = torch.empty_like(src)
    probe.attach()
    windows = []
    start = time.monotonic()
    while time.monotonic() - start < p["duration_s"]:
        iters = p.get("iters", 20)
        if rt.dry:
            t0 = time.perf_counter()
            for _ in range(iters):
                dst.copy_(src)
            seconds = time.perf_counter() - t0
        else:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(iters):
                dst.copy_(src)
            b.record()
            b.synchronize()
            seconds = a.elapsed_time(b) / 1e3
        windows.append({"at_s": round(time.monotonic() - start, 2),
                        "bytes_per_s": 2 * n * iters / seconds})
    rates = [w["bytes_per_s"] for w in windows]
    out.emit(windows=windows, achieved_bytes_per_s=statistics.median(rates),
             timing="CUDA events" if not rt.dry else "perf_counter (dry run: CPU memcpy)",
             finished=True)


# ---------------------------------------------------------------- one-shot measurements
WORKLOADS = {"train": train, "oom": oom, "infer": infer, "copy": copy_loop,
             "overhead": overhead, "estimate": estimate_config,
             "estimate-many": estimate_many, "batch": batch_tools,
             "batch-verify": batch_verify}


def main() -> None:
    kind, params = sys.argv[1], json.loads(sys.argv[2])
    rt = Runtime(params.get("dry", True), params.get("dry_cap_tokens"))
    out = Out(params["result"], {"kind": kind, "name": params.get("name"),
                                 "pid": os.getpid(), "dry_run": rt.dry})
    previous = sys.excepthook

    def died(tp, exc, tb):      # note the death, then die as Python does
        out.emit(died={"type": tp.__name__, "message": str(exc)[:600], "at": time.time(),
                       "out_of_memory": probe.is_out_of_memory(exc)})
        previous(tp, exc, tb)

    sys.excepthook = died
    wait_for_go(params["go"])
    out.emit(started_at=time.time(), runtime=rt.facts())
    if kind == "batch" and params.get("estimator"):
        # the dry run has no card: the estimator is asked about an 80 GiB one, and says so
        capacity = 80 * 2**30 if rt.dry else rt.free_total()[1]  # type: ignore[index]
        params["estimator_batch"] = estimator_batch(
            params["estimator"], params["precision"], params["seq"], capacity)
        out.emit(estimator_batch=params["estimator_batch"], estimator_capacity_bytes=capacity,
                 estimator_note="dry run: capacity assumed, not a device's" if rt.dry else "")
    WORKLOADS[kind](rt, params, out)
    out.emit(ended_at=time.time())


if __name__ == "__main__":
    main()
