"""The estimator against a traced training step (needs PyTorch; skipped without it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.torch


def test_small_gpt_within_targets():
    pytest.importorskip("torch")
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "accuracy.py"
    spec = importlib.util.spec_from_file_location("accuracy", path)
    acc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(acc)
    import torch

    from gpuwatch.budget import TransformerSpec, Workload

    tiny = TransformerSpec("tiny", 2, 256, 4, 1000, max_positions=128, dropout=0.1)
    rows, _ = acc.compare(
        "tiny",
        tiny,
        lambda: acc.LM(tiny),
        lambda: (torch.randint(0, 1000, (2, 128)), torch.randint(0, 1000, (2, 128))),
        1000,
        Workload(batch=2, seq=128),
    )
    for _, cat, _, _, err in rows:
        assert abs(err) <= acc.TARGET[cat], (cat, err)
