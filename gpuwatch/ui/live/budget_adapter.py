"""The window's only door into :mod:`gpuwatch.budget`: requests in, plain results out.

Everything the UI needs from the estimator goes through here, so a change in the
budget API touches this one file. Results are cached: the overlay asks for the same
prediction on every sample.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuwatch.advisor import LinkedBudget, link_estimate
from gpuwatch.budget import catalog
from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.estimator import Estimate, estimate
from gpuwatch.budget.gpus import gpu_choices
from gpuwatch.budget.hf_config import spec_from_hf_config
from gpuwatch.budget.levers import what_if
from gpuwatch.budget.precision import OPTIMIZERS, PRECISIONS
from gpuwatch.budget.solver import max_batch_size
from gpuwatch.budget.workload import CHECKPOINTING, Setup, Workload
from gpuwatch.ui.live.overlay import Prediction

PRECISION_NAMES: tuple[str, ...] = tuple(PRECISIONS)
OPTIMIZER_NAMES: tuple[str, ...] = tuple(OPTIMIZERS)
CHECKPOINTING_NAMES: tuple[str, ...] = tuple(CHECKPOINTING)

# the estimator's category -> the overlay's category key
_CATEGORY = {
    "parameters": "parameters", "gradients": "gradients", "optimizer_states": "optimizer",
    "activations": "activations", "kv_cache": "kv_cache", "framework_overhead": "overhead",
}


class BudgetInputError(ValueError):
    """A form value the estimator rejects; the message names the field and the reason."""


@dataclass(frozen=True)
class BudgetRequest:
    """What the budget form holds: serialisable, hashable, independent of the engine."""

    model: str = "gpt2-medium"        # a catalog name, or a path to a config.json
    mode: str = "train"
    batch: int = 8
    seq: int = 1024
    precision: str = "amp-bf16"
    optimizer: str = "adamw"
    checkpointing: str = "none"
    flash_attention: bool = True      # PyTorch 2's fused SDPA attention is the default
    zero: int = 0
    dp: int = 1
    lora_rank: int = 0

    @property
    def label(self) -> str:
        model = Path(self.model).parent.name if self.model.endswith(".json") else self.model
        text = f"{model} · batch {self.batch} · seq {self.seq} · {self.precision}"
        if self.mode != "train":
            text += " · inference"
        if self.checkpointing != "none":
            text += f" · {self.checkpointing} recompute"
        if self.flash_attention:
            text += " · flash"
        if self.zero:
            text += f" · ZeRO-{self.zero} ×{self.dp}"
        return text

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> BudgetRequest | None:
        if not isinstance(data, dict):
            return None
        names = {f.name: f.type for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in names})
        except TypeError:
            return None


@dataclass(frozen=True)
class BudgetResult:
    request: BudgetRequest
    params: int
    total_bytes: int
    breakdown: tuple[tuple[str, int], ...]     # each category at its own size
    overlap_bytes: int                         # what the categories count twice
    peak_phase: str
    prediction: Prediction                     # categories at the peak moment (sums to total)
    max_batch: int | None                      # for the capacity asked, if any
    what_if: tuple[tuple[str, int, int], ...]  # (change, total bytes, saving)
    notes: tuple[str, ...]


def model_names() -> tuple[str, ...]:
    return catalog.model_names()


def _spec(model: str) -> Any:
    if model.endswith(".json"):
        try:
            cfg = json.loads(Path(model).expanduser().read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BudgetInputError(f"model: cannot read {model}: {exc}") from None
        return spec_from_hf_config(cfg, Path(model).parent.name or "config")
    return catalog.lookup_model(model)


def _peak_categories(est: Estimate) -> tuple[tuple[str, int], ...]:
    b, d = est.breakdown, est.detail
    if est.peak_phase == "optimizer step":
        parts = {"parameters": b.parameters, "gradients": b.gradients,
                 "optimizer": b.optimizer_states, "activations": 0, "kv_cache": 0,
                 "overhead": b.framework_overhead}
    elif est.peak_phase == "start of backward":
        parts = {"parameters": b.parameters, "gradients": d.grads_at_backward,
                 "optimizer": d.optimizer_persistent, "activations": b.activations,
                 "kv_cache": b.kv_cache, "overhead": b.framework_overhead}
    else:
        parts = {_CATEGORY[k]: v for k, v in b.as_dict().items()}
    return tuple((k, int(v)) for k, v in parts.items() if v > 0)


@lru_cache(maxsize=64)
def evaluate(request: BudgetRequest, capacity_bytes: int | None = None) -> BudgetResult:
    """The estimate for ``request``; raises :class:`BudgetInputError` with a plain reason."""
    try:
        spec = _spec(request.model)
        workload = Workload(mode=request.mode, batch=request.batch, seq=request.seq)  # type: ignore[arg-type]
        setup = Setup(precision=request.precision, optimizer=request.optimizer,
                      checkpointing=request.checkpointing,
                      flash_attention=request.flash_attention, zero=request.zero,
                      dp=request.dp, lora_rank=request.lora_rank)
        est = estimate(spec, workload, setup)
        levers = what_if(spec, est)
        best = None if capacity_bytes is None else max_batch_size(est, capacity_bytes)
    except BudgetError as exc:
        raise BudgetInputError(str(exc)) from None
    breakdown = tuple((_CATEGORY[k], int(v)) for k, v in est.breakdown.as_dict().items())
    return BudgetResult(
        request=request, params=est.params, total_bytes=est.total_bytes, breakdown=breakdown,
        overlap_bytes=est.overlap_bytes, peak_phase=est.peak_phase,
        prediction=Prediction(request.label, _peak_categories(est)),
        max_batch=best,
        what_if=tuple((w.change, w.total_bytes, w.saves_bytes) for w in levers),
        notes=tuple(est.notes),
    )


@lru_cache(maxsize=64)
def linked_budget(request: BudgetRequest) -> LinkedBudget | None:
    """The advisor's view of a budget (peak, levers, largest batch), or None when invalid."""
    try:
        spec = _spec(request.model)
        est = estimate(spec, Workload(mode=request.mode, batch=request.batch,  # type: ignore[arg-type]
                                      seq=request.seq),
                       Setup(precision=request.precision, optimizer=request.optimizer,
                             checkpointing=request.checkpointing,
                             flash_attention=request.flash_attention, zero=request.zero,
                             dp=request.dp, lora_rank=request.lora_rank))
    except (BudgetError, BudgetInputError):
        return None
    return link_estimate(est, spec, label=request.label)


def predict(request: BudgetRequest) -> Prediction | None:
    """The overlay's prediction, or None when the request is not valid (any more)."""
    try:
        return evaluate(request).prediction
    except BudgetInputError:
        return None


_FLAGS = {"--model": "model", "--batch": "batch", "--batch-size": "batch",
          "--micro-batch": "batch", "--micro-batch-size": "batch", "--seq": "seq",
          "--seq-len": "seq", "--precision": "precision", "--optimizer": "optimizer",
          "--zero": "zero", "--lora": "lora_rank", "--checkpointing": "checkpointing"}
_INTS = ("batch", "seq", "zero", "lora_rank")


def request_from_cmdline(cmdline: tuple[str, ...], gpus: int = 1) -> BudgetRequest | None:
    """A best guess from flags like ``--model gpt2-medium --batch 8``; None without a model.

    ``gpus`` is the data-parallel degree assumed when the command asks for ZeRO.
    """
    found: dict[str, Any] = {}
    for i, arg in enumerate(cmdline):
        name, eq, value = arg.partition("=")
        if name in _FLAGS:
            if not eq:
                if i + 1 >= len(cmdline):
                    continue
                value = cmdline[i + 1]
            found[_FLAGS[name]] = value
    if "model" not in found:
        return None
    try:
        values = {k: (int(v) if k in _INTS else v) for k, v in found.items()}
    except ValueError:
        return None
    if values.get("zero"):
        values["dp"] = max(1, gpus)
    try:
        request = replace(BudgetRequest(), **values)
    except TypeError:
        return None
    return request if predict(request) is not None else None


def catalog_gpu(name: str | None, total_bytes: int | None) -> str | None:
    """The catalog GPU an NVML name means ("NVIDIA A100-SXM4-40GB" → "A100-40GB"): the
    family's member nearest in memory; None for a GPU the catalog does not know."""
    if not name:
        return None
    name = name.removeprefix("NVIDIA ").strip()
    found = gpu_choices(name)
    if len(found) != 1:
        family = name.replace(" ", "-").split("-")[0]
        found = found or gpu_choices(family)
    if not found:
        return None
    if total_bytes is None:
        return found[0].name if len(found) == 1 else None
    return min(found, key=lambda g: abs(g.memory_bytes - total_bytes)).name
