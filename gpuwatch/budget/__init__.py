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
