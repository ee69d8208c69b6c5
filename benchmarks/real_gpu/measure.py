"""The one-shot measurements of the real-GPU run, each in its own process (see
workload.py): CUDA's overhead, one estimate configuration (or, in the dry run, all of
them in turn), the batch tools on an out-of-memory error, and a fresh-process check of
a batch size."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import models
import torch
from models import Runtime, causal_lm, decode_step, precision_of, tokens, train_step

from gpuwatch import probe

if TYPE_CHECKING:
    from workload import Out

Result = dict[str, Any]


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
    dtype, amp = precision_of(p["precision"])
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
        one = type(out)(str(out.path.with_name(f"{name}.json")),
                        {"name": name, "dry_run": rt.dry})
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
    dtype, amp = precision_of(p["precision"])
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
    dtype, amp = precision_of(p["precision"])
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
