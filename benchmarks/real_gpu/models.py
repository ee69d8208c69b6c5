"""Models for the real-GPU run, built from configs with random weights (nothing is
downloaded), and the device they run on.

The transformers are ``benchmarks/hf_style.py``'s plain-torch Llama, GPT-2 and the CNNs
of ``cnn_style.py``: op for op what Hugging Face transformers and torchvision run (the
accuracy benchmark traces them against the estimator), so the same code runs on CUDA
and, for the dry run, on CPU torch without transformers installed. A Hugging Face
``config.json`` is written for each, so ``gpuwatch estimate --config`` sees the model
the process built.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1])]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from cnn_style import ResNet18, ResNet50  # noqa: E402
from hf_style import GPT2LM, CausalLM, LlamaLM, add_lora, rotate_half  # noqa: E402
from shapes import GPT2_TINY, SPECS  # noqa: E402

from gpuwatch.budget import TransformerSpec, lookup_model  # noqa: E402


class Runtime:
    """CUDA on a real card; CPU under the dry run, where what only CUDA can tell is None."""

    def __init__(self, dry: bool, cap_tokens: int | None = None):
        self.dry = dry
        self.device = torch.device("cpu" if dry else "cuda")
        self.kind = "cpu" if dry else "cuda"
        # dry run only: a declared memory cap in tokens per step, in place of a device
        # that can run out (a "dry-run OOM" says so in its message)
        self.cap_tokens = cap_tokens if dry else None

    def sync(self) -> None:
        if not self.dry:
            torch.cuda.synchronize()

    def guard(self, tokens: int) -> None:
        """Dry run: raise the out-of-memory error a real card would, at the declared cap."""
        if self.dry and self.cap_tokens is not None and tokens > self.cap_tokens:
            raise torch.OutOfMemoryError(
                f"dry run: {tokens} tokens exceed the declared cap of {self.cap_tokens} "
                "(CPU has no device memory to exhaust; this is not a CUDA out-of-memory)")

    def memory(self) -> dict[str, Any]:
        if self.dry:
            return {"max_allocated_bytes": None, "max_reserved_bytes": None,
                    "allocated_bytes": None, "reserved_bytes": None,
                    "note": "dry run: CPU torch has no caching allocator figures"}
        s = torch.cuda.memory_stats()
        return {"max_allocated_bytes": torch.cuda.max_memory_allocated(),
                "max_reserved_bytes": torch.cuda.max_memory_reserved(),
                "allocated_bytes": torch.cuda.memory_allocated(),
                "reserved_bytes": torch.cuda.memory_reserved(),
                "inactive_split_bytes": s.get("inactive_split_bytes.all.current"),
                "num_alloc_retries": s.get("num_alloc_retries"),
                "num_ooms": s.get("num_ooms")}

    def free_total(self) -> tuple[int, int] | None:
        """Device memory free and total (CUDA's view, the driver's figure)."""
        if self.dry:
            return None
        free, total = torch.cuda.mem_get_info()
        return int(free), int(total)

    def facts(self) -> dict[str, Any]:
        out: dict[str, Any] = {"torch": torch.__version__, "device": self.kind,
                               "cuda": torch.version.cuda}
        if not self.dry:
            p = torch.cuda.get_device_properties(0)
            out.update(name=p.name, total_bytes=p.total_memory,
                       compute_capability=f"{p.major}.{p.minor}",
                       module_loading=os.environ.get("CUDA_MODULE_LOADING", "LAZY (default)"))
        return out


def nvml_used_by(pid: int) -> int | None:
    """NVML's figure for one process on GPU 0 (the fake driver's under the dry run)."""
    if os.environ.get("FAKENVML_PIDS") == "self":     # dry run: the fake lists this process
        os.environ["FAKENVML_PIDS"] = str(pid)
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            h = pynvml.nvmlDeviceGetHandleByIndex(0)
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
                if p.pid == pid and p.usedGpuMemory is not None and p.usedGpuMemory < 2**63:
                    return int(p.usedGpuMemory)
        finally:
            pynvml.nvmlShutdown()
    except Exception:        # no driver, no permission: the figure is unknown
        return None
    return None


def causal_lm(name: str, rt: Runtime, dtype: torch.dtype = torch.float32,
              checkpointing: bool = False, lora: tuple[int, str] | None = None) -> CausalLM:
    """A Llama-shaped causal LM built in ``dtype`` on the runtime's device."""
    spec = SPECS[name]
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(rt.device):
            body = LlamaLM(spec, "sdpa")
            if lora is not None:
                from gpuwatch.budget.workload import lora_target_set

                add_lora(body, set(lora_target_set(lora[1])), lora[0])
    finally:
        torch.set_default_dtype(before)
    body.gc = checkpointing
    return CausalLM(body)


def gpt2_lm(rt: Runtime, tiny: bool = False) -> tuple[CausalLM, TransformerSpec]:
    """GPT-2 small, or (dry run) the tiny one, read by the estimator's own config parser."""
    if tiny:
        from gpuwatch.budget.hf_config import spec_from_hf_config

        spec = spec_from_hf_config(GPT2_TINY, "gpt2-tiny")
    else:
        spec = lookup_model("gpt2")
    with torch.device(rt.device):
        return CausalLM(GPT2LM(spec, "eager")), spec


def resnet(name: str, rt: Runtime) -> torch.nn.Module:
    with torch.device(rt.device):
        return {"resnet-50": ResNet50, "resnet-18": ResNet18}[name]()


def tokens(spec_vocab: int, batch: int, seq: int, rt: Runtime) -> tuple[torch.Tensor, ...]:
    ids = torch.randint(0, spec_vocab, (batch, seq), device=rt.device)
    return ids, ids.clone()


def train_step(model: torch.nn.Module, opt: torch.optim.Optimizer, ids: torch.Tensor,
               labels: torch.Tensor, rt: Runtime, amp: bool) -> torch.Tensor:
    """One step as Hugging Face's Trainer runs it: loss, backward, step, zero_grad."""
    rt.guard(ids.numel())
    with torch.autocast(rt.kind, dtype=torch.bfloat16, enabled=amp):
        loss, _ = model(ids, labels)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.detach()


def decode_step(lm: LlamaLM, ids: torch.Tensor, cache: list, pos: int) -> torch.Tensor:
    """One step of generation with a growing KV cache (``torch.cat`` per token, as
    transformers' DynamicCache does): the logits of the last position."""
    s, (b, t) = lm.s, ids.shape
    x = lm.embed_tokens(ids)
    inv = 1.0 / (10000 ** (torch.arange(0, s.d, 2, device=ids.device).float() / s.d))
    freqs = torch.outer(torch.arange(pos, pos + t, device=ids.device).float(), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(x.dtype)[None, None], emb.sin().to(x.dtype)[None, None]
    for i, blk in enumerate(lm.layers):
        h = blk.input_layernorm(x)
        q = blk.q_proj(h).view(b, t, s.heads, s.d).transpose(1, 2)
        k = blk.k_proj(h).view(b, t, s.kv, s.d).transpose(1, 2)
        v = blk.v_proj(h).view(b, t, s.kv, s.d).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if cache[i] is not None:
            k, v = torch.cat((cache[i][0], k), dim=2), torch.cat((cache[i][1], v), dim=2)
        cache[i] = (k, v)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1,
                                             enable_gqa=s.heads // s.kv > 1)
        x = x + blk.o_proj(out.transpose(1, 2).reshape(b, t, -1))
        x = x + blk.mlp(blk.post_attention_layernorm(x))
    return lm.head(lm.norm(x[:, -1:]))


def precision_of(name: str) -> tuple[torch.dtype, bool]:
    """(weight dtype, autocast) of a precision name as the estimator spells it."""
    return {"fp32": (torch.float32, False), "amp-bf16": (torch.float32, True),
            "bf16": (torch.bfloat16, False)}[name]
