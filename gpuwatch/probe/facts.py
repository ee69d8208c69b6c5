"""What the probe reads from PyTorch: model, optimizer and caching-allocator figures.

Everything here is metadata (``numel``, ``element_size``, allocator counters): nothing
copies a tensor or waits for the GPU, so a publish never synchronises a CUDA stream.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from gpuwatch.core.probe_format import PROBE_SCHEMA

ALLOCATOR_KEYS = {
    "allocated_bytes": "allocated_bytes.all.current",
    "allocated_peak_bytes": "allocated_bytes.all.peak",
    "reserved_bytes": "reserved_bytes.all.current",
    "reserved_peak_bytes": "reserved_bytes.all.peak",
    "active_bytes": "active_bytes.all.current",
    "active_peak_bytes": "active_bytes.all.peak",
    "inactive_split_bytes": "inactive_split_bytes.all.current",
    "num_alloc_retries": "num_alloc_retries",
    "num_ooms": "num_ooms",
}

# () -> torch.cuda.memory_stats()-like dict, or None where there is no CUDA
StatsSource = Callable[[], dict[str, Any] | None]


def _tensor_bytes(t: Any) -> int:
    return int(t.numel()) * int(t.element_size())


def model_facts(model: Any) -> dict[str, Any]:
    by_dtype: dict[str, int] = {}
    params = trainable = param_bytes = grad_bytes = 0
    seen: set[int] = set()
    for p in model.parameters():
        if id(p) in seen:            # tied weights are one storage
            continue
        seen.add(id(p))
        n, b = int(p.numel()), _tensor_bytes(p)
        params += n
        param_bytes += b
        dtype = str(p.dtype).removeprefix("torch.")
        by_dtype[dtype] = by_dtype.get(dtype, 0) + b
        if p.requires_grad:
            trainable += n
        if p.grad is not None:
            grad_bytes += _tensor_bytes(p.grad)
    buffers = sum(_tensor_bytes(b) for b in model.buffers())
    return {"class": type(model).__name__, "parameters": params,
            "trainable_parameters": trainable, "parameter_bytes": param_bytes,
            "parameter_bytes_by_dtype": by_dtype, "buffer_bytes": buffers,
            "gradient_bytes": grad_bytes}


def optimizer_facts(optimizer: Any, steps_seen: int | None = None) -> dict[str, Any]:
    import torch

    state_bytes = 0
    step: int | None = None
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor):
                state_bytes += _tensor_bytes(value)
        s = state.get("step")
        if step is None and s is not None:
            if not isinstance(s, torch.Tensor):
                step = int(s)
            elif s.device.type == "cpu":      # a CUDA step counter would need a sync
                step = int(s.item())
    return {"class": type(optimizer).__name__, "state_bytes": state_bytes,
            "step": step if step is not None else steps_seen}


def cuda_stats() -> dict[str, Any] | None:
    import torch

    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    return torch.cuda.memory_stats()


def allocator_facts(stats: dict[str, Any] | None) -> dict[str, Any] | None:
    if not stats:
        return None
    return {key: (int(stats[name]) if name in stats else None)
            for key, name in ALLOCATOR_KEYS.items()}


def devices(model: Any | None) -> tuple[list[str], list[str]]:
    import torch

    found: list[str] = []
    if model is not None:
        for p in model.parameters():
            name = str(p.device)
            if name not in found:
                found.append(name)
    uuids = []
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for name in found:
            if name.startswith("cuda"):
                index = int(name.split(":")[1]) if ":" in name else torch.cuda.current_device()
                uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
                if uuid is not None:
                    uuids.append(f"GPU-{uuid}")
    return found, uuids


def collect(model: Any | None, optimizer: Any | None, stats: StatsSource,
            steps_seen: int | None = None) -> dict[str, Any]:
    """The whole ``gpuwatch.probe/1`` document for this process, now."""
    import torch

    devs, uuids = devices(model)
    return {
        "schema": PROBE_SCHEMA,
        "pid": os.getpid(),
        "published_at_s": time.time(),
        "torch_version": torch.__version__,
        "devices": devs,
        "device_uuids": uuids,
        "model": model_facts(model) if model is not None else None,
        "optimizer": optimizer_facts(optimizer, steps_seen) if optimizer is not None else None,
        "allocator": allocator_facts(stats()),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
    }
