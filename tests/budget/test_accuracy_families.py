"""Families read from config dicts against traced steps of the same configs (needs PyTorch).

Small versions of ``benchmarks/accuracy_families.py`` rows, one per structural quirk:
Gemma-2's post-norms and soft-capping (eager), OPT's ReLU and learned positions (fp32),
Phi-3's fused projections under autocast with checkpointing (the autocast weight copies
of checkpointed layers freed after the forward), Falcon's multi-query parallel block,
MPT's ALiBi (eager only), Qwen2-MoE's shared expert.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.torch

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def fam():
    pytest.importorskip("torch")
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("accuracy_families",
                                                      BENCH / "accuracy_families.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["accuracy_families"] = module
        spec.loader.exec_module(module)
        yield module
    finally:
        for name in ("accuracy_families", "accuracy"):
            sys.modules.pop(name, None)
        sys.path.remove(str(BENCH))


def _small(cfg: dict) -> dict:
    """The row's config at a quarter of the width and a small vocabulary."""
    out = dict(cfg)
    for key in ("hidden_size", "n_embed", "d_model", "word_embed_proj_dim"):
        if key in out:
            out[key] //= 4
    for key in ("intermediate_size", "ffn_dim", "moe_intermediate_size",
                "shared_expert_intermediate_size"):
        if key in out:
            out[key] //= 4
    if "head_dim" in out:
        out["head_dim"] //= 4
    out["vocab_size"] = 4000
    return out


ROWS = [("gemma2", dict(precision="bf16", flash=False)),
        ("opt", dict(precision="fp32", flash=True)),
        ("phi3", dict(precision="amp-bf16", flash=True, checkpointing="full")),
        ("falcon", dict(precision="amp-bf16", flash=True)),
        ("mpt", dict(precision="bf16", flash=False)),
        ("qwen2_moe", dict(precision="bf16", flash=True))]


@pytest.mark.parametrize(("family", "opts"), ROWS, ids=[r[0] for r in ROWS])
def test_family_rows_within_targets(fam, family, opts):
    from family_style import FamilyLM

    from gpuwatch.budget import spec_from_hf_config

    cfg = _small(fam.CONFIGS[family])
    spec = spec_from_hf_config(cfg, family)
    impl = "sdpa" if opts["flash"] else "eager"
    case = fam.Case(family, spec, lambda: FamilyLM(cfg, impl), 2, 256, **opts)
    results = fam.compare(case)
    total = next(t for _, c, _, t, _ in results if c == "total")
    misses = [(cat, p, t, round(err, 1)) for _, cat, p, t, err in results
              if abs(err) > fam.TARGET[cat] and abs(p - t) >= 1 << 20
              and (cat == "total" or t >= 0.05 * total)]
    assert misses == []
