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
import math
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models
import torch
from models import Runtime, causal_lm, decode_step, tokens, train_step

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


def _precision(name: str) -> tuple[torch.dtype, bool]:
    """(weight dtype, autocast) of a precision name as the estimator spells it."""
    return {"fp32": (torch.float32, False), "amp-bf16": (torch.float32, True),
            "bf16": (torch.bfloat16, False)}[name]


# ---------------------------------------------------------------- training runs
def train(rt: Runtime, p: Result, out: Out) -> None:
    """Warm-up, steady steps, an evaluation pass; optionally a leak (tensors kept every
    step) or variable-length batches (fragmentation)."""
    dtype, amp = _precision(p.get("precision", "amp-bf16"))
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
    dtype, amp = _precision(p.get("precision", "bf16"))
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
def overhead(rt: Runtime, p: Result, out: Out) -> None:
    """CUDA's memory outside PyTorch (NVML's figure less reserved) after initialisation,
    a fill kernel, a bf16 matrix product and a convolution; and the libraries' workspaces
    inside PyTorch's allocator: what stays allocated beyond the result (cuBLAS keeps its
    workspace per handle) and the peak beyond it (cuDNN's is taken for the call)."""
    pid, rows = os.getpid(), []

    def allocated() -> int | None:
        return None if rt.dry else torch.cuda.memory_allocated()

    def row(stage: str, result_bytes: int = 0, before: int | None = None) -> None:
        rt.sync()
        time.sleep(0.3)
        reserved = None if rt.dry else torch.cuda.memory_reserved()
        after, peak = allocated(), None if rt.dry else torch.cuda.max_memory_allocated()
        nvml = models.nvml_used_by(pid)
        rows.append({
            "stage": stage, "nvml_bytes": nvml, "reserved_bytes": reserved,
            "outside_torch_bytes": None if nvml is None or reserved is None
            else nvml - reserved,
            "workspace_bytes": None if after is None or before is None
            else after - before - result_bytes,
            "workspace_peak_bytes": None if peak is None or before is None
            else peak - before - result_bytes})
        out.emit(rows=rows)

    def fresh_peak() -> int | None:
        if not rt.dry:
            torch.cuda.reset_peak_memory_stats()
        return allocated()

    x = torch.zeros(1, device=rt.device)
    row("initialised")
    big = torch.empty(2**28, dtype=torch.uint8, device=rt.device)
    big.fill_(1)
    row("after a fill kernel")
    a = torch.randn(1024, 1024, device=rt.device, dtype=torch.bfloat16)
    before = fresh_peak()
    c = a @ a
    row("after a bf16 matrix product", c.numel() * c.element_size(), before)
    img = torch.randn(32, 64, 56, 56, device=rt.device)
    w = torch.randn(64, 64, 3, 3, device=rt.device)
    before = fresh_peak()
    y = torch.nn.functional.conv2d(img, w, padding=1)
    row("after a convolution", y.numel() * y.element_size(), before)
    del x, big, c, y
    out.emit(module_loading=os.environ.get("CUDA_MODULE_LOADING", "LAZY (default)"),
             cudnn=None if rt.dry else torch.backends.cudnn.version(), finished=True)


def estimate_config(rt: Runtime, p: Result, out: Out) -> None:
    """One configuration of the estimate table: two steps (or a prefill), then the
    allocator's peaks, NVML's figure for this process and the probe's categories."""
    from hf_style import CausalLM as Lm

    kind = p["model"]
    dtype, amp = _precision(p["precision"])
    if kind.startswith("resnet"):
        net = models.resnet(kind, rt).to(dtype)
        model: torch.nn.Module = net
    elif kind.startswith("gpt2"):
        model, gpt2 = models.gpt2_lm(rt, tiny=kind == "gpt2-tiny")
        model = model.to(dtype)
    else:
        lora = (p["lora"], p.get("lora_targets", "q,v")) if p.get("lora") else None
        model = causal_lm(kind, rt, dtype, p.get("checkpointing") == "full", lora)
    params = [q for q in model.parameters() if q.requires_grad]
    opt = None
    if p["mode"] == "train":
        opt = (torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=True)
               if p.get("optimizer") == "momentum"
               else torch.optim.AdamW(params, lr=1e-4, foreach=True))
    pr = probe.attach(model, opt)
    if not rt.dry:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    if kind.startswith("resnet"):
        x = torch.randn(p["batch"], 3, p["image"], p["image"], device=rt.device, dtype=dtype)
        y = torch.randint(0, 1000, (p["batch"],), device=rt.device)
        for _ in range(2):
            rt.guard(p["batch"])
            with torch.autocast(rt.kind, dtype=torch.bfloat16, enabled=amp):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()  # type: ignore[union-attr]
            opt.zero_grad(set_to_none=True)  # type: ignore[union-attr]
    elif p["mode"] == "train":
        vocab = gpt2.vocab if kind.startswith("gpt2") else models.SPECS[kind].vocab
        ids, labels = tokens(vocab, p["batch"], p["seq"], rt)
        for _ in range(2):
            train_step(model, opt, ids, labels, rt, amp)  # type: ignore[arg-type]
    else:
        lm = model.model if isinstance(model, Lm) else model
        spec = models.SPECS[kind]
        with torch.no_grad():
            cache: list = [None] * spec.layers
            ids = torch.randint(0, spec.vocab, (p["batch"], p["seq"]), device=rt.device)
            logits = decode_step(lm, ids, cache, 0).float()
            del logits
    rt.sync()
    doc = pr.publish()
    out.emit(seconds=time.perf_counter() - t0, memory=rt.memory(),
             nvml_bytes=models.nvml_used_by(os.getpid()),
             probe_model=doc.get("model"), probe_optimizer=doc.get("optimizer"),
             finished=True)


def estimate_many(rt: Runtime, p: Result, out: Out) -> None:
    """The dry run's estimate configurations, one after another in this process (the
    real run gives each its own process)."""
    done: dict[str, Result] = {}
    for name, cfg in p["configs"].items():
        one = Out(str(out.path.with_name(f"{name}.json")), {"name": name, "dry_run": rt.dry})
        try:
            estimate_config(rt, cfg, one)
        except Exception as exc:
            one.emit(error=f"{type(exc).__name__}: {exc}")
        done[name] = one.doc
        out.emit(configs=done)
    out.emit(finished=True)


def batch_tools(rt: Runtime, p: Result, out: Out) -> None:
    """``find_max_batch`` from 1 and from the estimator's answer, then ``AdaptiveBatch``
    started above the largest batch: it must survive the out-of-memory error and keep
    the effective batch."""
    dtype, amp = _precision(p["precision"])
    model = causal_lm(p["model"], rt, dtype)
    vocab = models.SPECS[p["model"]].vocab
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    probe.attach(model, opt)

    def step(batch: int) -> None:
        opt.zero_grad(set_to_none=True)
        ids, labels = tokens(vocab, batch, p["seq"], rt)
        train_step(model, opt, ids, labels, rt, amp)
        rt.sync()

    t0 = time.perf_counter()
    plain = probe.find_max_batch(step, start=1, limit=p.get("limit", 4096))
    out.emit(from_one={"batch": plain.batch_size, "trials": plain.trials,
                       "tried": plain.tried, "seconds": time.perf_counter() - t0})
    seed = p.get("estimator_batch")
    if seed:
        t0 = time.perf_counter()
        seeded = probe.find_max_batch(step, start=seed, limit=p.get("limit", 4096))
        out.emit(from_estimate={"batch": seeded.batch_size, "trials": seeded.trials,
                                "tried": seeded.tried, "seconds": time.perf_counter() - t0})
    effective = 2 ** math.ceil(math.log2(max(2, plain.batch_size + 1)))
    adaptive = probe.AdaptiveBatch(effective, effective, grow_after=1000)
    kept_effective = True

    def accum_step(micro: int, accum: int) -> float:
        nonlocal kept_effective
        opt.zero_grad(set_to_none=True)
        kept_effective &= micro * accum == effective
        total = 0.0
        for _ in range(accum):
            ids, labels = tokens(vocab, micro, p["seq"], rt)
            rt.guard(ids.numel())
            with torch.autocast(rt.kind, dtype=torch.bfloat16, enabled=amp):
                loss = model(ids, labels)[0] / accum
            loss.backward()
            total += float(loss.detach())
        opt.step()
        return total

    for _ in range(p.get("adaptive_steps", 4)):
        adaptive.run(accum_step)
    out.emit(adaptive={"effective_batch": effective, "micro_batch": adaptive.micro_batch,
                       "grad_accum": adaptive.grad_accum, "steps": adaptive.steps,
                       "changes": [c.__dict__ for c in adaptive.changes],
                       "effective_kept": kept_effective}, finished=True)


def batch_verify(rt: Runtime, p: Result, out: Out) -> None:
    """In a fresh process: does one batch size run? (the true largest batch, without the
    search's cached blocks)."""
    dtype, amp = _precision(p["precision"])
    model = causal_lm(p["model"], rt, dtype)
    vocab = models.SPECS[p["model"]].vocab
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    results = {}
    for batch in p["batches"]:
        try:
            ids, labels = tokens(vocab, batch, p["seq"], rt)
            train_step(model, opt, ids, labels, rt, amp)
            rt.sync()
            results[batch] = True
        except Exception as exc:
            if not probe.is_out_of_memory(exc):
                raise
            del exc
            results[batch] = False
            opt.zero_grad(set_to_none=True)
            if not rt.dry:
                torch.cuda.empty_cache()
        out.emit(fits=results)
    out.emit(finished=True)


def estimator_batch(config: str, precision: str, seq: int, capacity: int) -> int | None:
    """The estimator's largest batch for this model on this much memory."""
    done = subprocess.run([sys.executable, "-m", "gpuwatch", "estimate", "--config", config,
                           "--precision", precision, "--seq", str(seq), "--capacity",
                           f"{capacity}B", "--json"], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        return None
    return json.loads(done.stdout).get("max_batch_size")


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
