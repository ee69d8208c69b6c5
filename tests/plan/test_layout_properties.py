"""Whatever the model and workload, every configuration the plan calls fitting holds
together: it fits, covers the global batch, and has a finite positive step time."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.specs import TransformerSpec
from gpuwatch.budget.workload import Setup, Workload
from gpuwatch.plan.hardware import hardware_for
from gpuwatch.plan.layouts import GPU_COUNTS, Estimates, evaluate
from gpuwatch.plan.roofline import Efficiency

GPUS = [hardware_for("RTX-4090"), hardware_for("H100-80GB")]


@st.composite
def cases(draw):
    heads = draw(st.sampled_from([1, 2, 4, 8, 12, 16, 32]))
    spec = TransformerSpec("t", layers=draw(st.integers(1, 48)),
                           hidden=heads * draw(st.sampled_from([16, 64, 128])), heads=heads,
                           vocab=draw(st.integers(0, 200_000)))
    mode = draw(st.sampled_from(["train", "infer"]))
    wl = Workload(mode, batch=draw(st.integers(1, 64)), seq=draw(st.integers(1, 8192)),
                  grad_accum=draw(st.integers(1, 8)))
    setup = Setup(precision=draw(st.sampled_from(["fp32", "amp-bf16", "mixed-bf16", "bf16"])),
                  checkpointing=draw(st.sampled_from(["none", "full"])),
                  dp=draw(st.sampled_from([1, 2, 8])))
    return spec, wl, setup


@given(cases(), st.floats(0.01, 1))
def test_fitting_configurations_hold_together(case, efficiency):
    spec, wl, setup = case
    try:
        cache = Estimates(spec, wl, setup)
        configs = [evaluate(spec, cache, hw, n, Efficiency(efficiency)) for hw in GPUS
                   for n in GPU_COUNTS]
    except BudgetError:
        return  # a shape the budget refuses is refused, not half-planned
    for c in configs:
        if not c.fits:
            assert c.step is None and c.layout is None
            continue
        lay, step = c.layout, c.step
        assert lay.gpus == c.gpus and spec.heads % lay.tp == 0
        assert lay.tp == 1 or c.gpus <= c.hardware.sheet.fast_domain
        assert lay.dp <= c.samples_per_step
        assert 1 <= c.micro_batch <= c.max_micro_batch
        assert c.micro_batch * c.grad_accum * lay.dp >= c.samples_per_step
        assert c.peak_bytes <= c.hardware.gpu.memory_bytes
        assert math.isfinite(step.total_s) and step.total_s > 0
        assert step.total_s >= max(step.compute_s, step.memory_s) * (1 - 1e-9)
        assert step.bound in ("compute", "memory", "communication", "offload")
