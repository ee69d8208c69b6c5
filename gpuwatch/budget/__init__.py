"""The analytic memory budget: what a model needs on each GPU, before it is launched.

Pure functions over frozen dataclasses (stdlib, numpy and ``gpuwatch.core`` only).

Describe a model::

    spec = lookup_model("llama-3.1-8b")            # catalog (transformers and CNNs)
    spec = spec_from_hf_config(json.load(f))       # an HF config.json, already parsed
    spec = spec_from_params(7e9)                   # a bare count (shape assumed)
    spec = TransformerSpec("mine", layers=24, hidden=2048, heads=16, vocab=32000)

Estimate it::

    est = estimate(spec, Workload(mode="train", batch=4, seq=2048),
                   Setup(precision="mixed-bf16", optimizer="adamw", zero=2, dp=8))
    est.breakdown.as_dict()    # parameters, gradients, optimizer_states, activations,
                               # kv_cache, framework_overhead (bytes, most loaded GPU)
    est.total_bytes            # the peak; sum(breakdown) - est.overlap_bytes
    est.formulas, est.notes    # the words behind each number

Then: ``max_batch_size(est, capacity)``, ``max_sequence_length(spec, est, capacity)``,
``what_if(spec, est)``, ``fit_table(spec, est)``, and ``to_json``/``to_table`` for output.
Bad input raises :class:`BudgetError` whose ``field`` names the input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuwatch.budget.catalog import lookup_model, model_names
    from gpuwatch.budget.errors import BudgetError
    from gpuwatch.budget.estimator import CATEGORIES, Breakdown, Detail, Estimate, estimate
    from gpuwatch.budget.fit import GpuFit, fit_table, min_gpus_zero3
    from gpuwatch.budget.gpus import GPUS, GpuInfo, lookup_gpu
    from gpuwatch.budget.hf_config import spec_from_hf_config, spec_from_params
    from gpuwatch.budget.levers import WhatIf, what_if
    from gpuwatch.budget.precision import OPTIMIZERS, PRECISIONS, training_bytes_per_param
    from gpuwatch.budget.report import SCHEMA, to_json, to_table
    from gpuwatch.budget.solver import max_batch_size, max_sequence_length
    from gpuwatch.budget.specs import CnnSpec, ModelSpec, ParamGroup, TransformerSpec
    from gpuwatch.budget.workload import Setup, Workload

# Each name is imported from its module on first use, so that importing one small module
# of this package (the catalog, the bounds) does not load the estimator and numpy.
_SOURCES = {
    "lookup_model": "gpuwatch.budget.catalog",
    "model_names": "gpuwatch.budget.catalog",
    "BudgetError": "gpuwatch.budget.errors",
    "CATEGORIES": "gpuwatch.budget.estimator",
    "Breakdown": "gpuwatch.budget.estimator",
    "Detail": "gpuwatch.budget.estimator",
    "Estimate": "gpuwatch.budget.estimator",
    "estimate": "gpuwatch.budget.estimator",
    "GpuFit": "gpuwatch.budget.fit",
    "fit_table": "gpuwatch.budget.fit",
    "min_gpus_zero3": "gpuwatch.budget.fit",
    "GPUS": "gpuwatch.budget.gpus",
    "GpuInfo": "gpuwatch.budget.gpus",
    "lookup_gpu": "gpuwatch.budget.gpus",
    "spec_from_hf_config": "gpuwatch.budget.hf_config",
    "spec_from_params": "gpuwatch.budget.hf_config",
    "WhatIf": "gpuwatch.budget.levers",
    "what_if": "gpuwatch.budget.levers",
    "OPTIMIZERS": "gpuwatch.budget.precision",
    "PRECISIONS": "gpuwatch.budget.precision",
    "training_bytes_per_param": "gpuwatch.budget.precision",
    "SCHEMA": "gpuwatch.budget.report",
    "to_json": "gpuwatch.budget.report",
    "to_table": "gpuwatch.budget.report",
    "max_batch_size": "gpuwatch.budget.solver",
    "max_sequence_length": "gpuwatch.budget.solver",
    "CnnSpec": "gpuwatch.budget.specs",
    "ModelSpec": "gpuwatch.budget.specs",
    "ParamGroup": "gpuwatch.budget.specs",
    "TransformerSpec": "gpuwatch.budget.specs",
    "Setup": "gpuwatch.budget.workload",
    "Workload": "gpuwatch.budget.workload",
}

__all__ = [
    "CATEGORIES",
    "GPUS",
    "OPTIMIZERS",
    "PRECISIONS",
    "SCHEMA",
    "Breakdown",
    "BudgetError",
    "CnnSpec",
    "Detail",
    "Estimate",
    "GpuFit",
    "GpuInfo",
    "ModelSpec",
    "ParamGroup",
    "Setup",
    "TransformerSpec",
    "WhatIf",
    "Workload",
    "estimate",
    "fit_table",
    "lookup_gpu",
    "lookup_model",
    "max_batch_size",
    "max_sequence_length",
    "min_gpus_zero3",
    "model_names",
    "spec_from_hf_config",
    "spec_from_params",
    "to_json",
    "to_table",
    "training_bytes_per_param",
    "what_if",
]


def __getattr__(name: str) -> Any:
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # __import__ with a fromlist returns the submodule itself; importlib is not among
    # the few modules this package may import (tests/budget/test_estimate_command.py)
    value = getattr(__import__(module, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
