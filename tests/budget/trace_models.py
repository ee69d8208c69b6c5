"""Models for ``gpuwatch estimate --trace-model tests/budget/trace_models.py:NAME``.

Each name is a no-argument callable returning an ``nn.Module``, as a user's own file
would hold: a small ConvNeXt-style CNN (depthwise convolutions, LayerNorm, GELU, none of
which the CNN catalog has), one linear layer whose traced bytes have a closed form, the
decoder families of ``benchmarks/accuracy_families.py`` behind a plain ``forward(ids)``,
and a builder that fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from torch import nn

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
CONFIGS = Path(__file__).with_name("configs")


class _Block(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c)
        self.pw1, self.pw2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.pw2(nn.functional.gelu(self.pw1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


def tiny_convnext() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 32, 4, stride=4), _Block(32), _Block(32),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def one_linear() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 1000))


def broken() -> nn.Module:
    raise RuntimeError("this model cannot be built")


class _LM(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        if str(BENCH) not in sys.path:
            sys.path.insert(0, str(BENCH))
        from family_style import FamilyLM

        self.inner = FamilyLM(cfg, "sdpa")

    def forward(self, ids):
        return self.inner.head(self.inner.body(ids))


def family_config(name: str) -> dict:
    return json.loads((CONFIGS / "traced" / f"{name}.json").read_text())


def phi3() -> nn.Module:
    return _LM(family_config("phi3"))


def falcon() -> nn.Module:
    return _LM(family_config("falcon"))


__all__ = ["broken", "falcon", "one_linear", "phi3", "tiny_convnext", "torch"]
