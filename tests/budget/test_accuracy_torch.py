"""The estimator against traced PyTorch steps, per category (needs PyTorch; skipped without).

A few small rows of ``benchmarks/accuracy.py``, one per regime the closed forms split
on: autocast with GPT-2's ``gelu_new`` and eager attention, bf16 with checkpointing,
autocast with checkpointing (the checkpointed layers' 16-bit weight copies freed),
LoRA on a frozen base, eager and SDPA prefills with a KV cache, Adafactor on a CNN,
YOLOv5s (its stem, and the tensors that only feed a concatenation, an add or an upsample),
T5 (its norm, relative position bias, dropout inside the MLP, loss on 16-bit logits).
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import pytest

pytestmark = pytest.mark.torch

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def acc():
    pytest.importorskip("torch")
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("accuracy", BENCH / "accuracy.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["accuracy"] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("accuracy", None)
        sys.path.remove(str(BENCH))


def _rows(acc):
    from cnn_style import ResNet18
    from t5_style import T5
    from yolo_style import YOLOv5s

    from gpuwatch.budget import TransformerSpec, lookup_model

    gpt2 = replace(lookup_model("gpt2"), layers=2, hidden=256, heads=4, vocab=5000,
                   max_positions=256)
    t5 = replace(lookup_model("t5-base"), layers=1, decoder_layers=1, hidden=256, heads=4,
                 vocab=4000, ffn=1024)
    llama = TransformerSpec("tiny-llama", 2, 256, 8, 6000, ffn=688, kv_heads=2, gated_mlp=True,
                            norm="rmsnorm", bias=False, tied_embeddings=False)
    eager = lambda s: lambda: acc.GPT2LM(s, "eager")  # noqa: E731
    sdpa = lambda s, impl="sdpa": lambda: acc.LlamaLM(s, impl)  # noqa: E731
    return [
        acc.Case("gpt2 amp", gpt2, eager(gpt2), 2, 256, precision="amp-bf16", flash=False),
        acc.Case("llama ckpt", llama, sdpa(llama), 2, 256, precision="bf16",
                 checkpointing="full"),
        acc.Case("llama amp ckpt", llama, sdpa(llama), 2, 256, precision="amp-bf16",
                 checkpointing="full"),
        acc.Case("llama lora", llama, sdpa(llama), 2, 256, precision="bf16", lora=8,
                 lora_targets="all-linear"),
        acc.Case("llama infer eager", llama, sdpa(llama, "eager"), 2, 256, mode="infer",
                 precision="bf16", flash=False),
        acc.Case("llama infer sdpa", llama, sdpa(llama), 2, 256, mode="infer", precision="bf16"),
        acc.Case("t5 bf16", t5, lambda: T5(t5), 2, 128, precision="bf16", flash=False),
        acc.Case("yolov5s", lookup_model("yolov5s", (128, 128)), YOLOv5s, 2, image=128,
                 optimizer="momentum"),
        acc.Case("resnet adafactor", lookup_model("resnet-18", (64, 64)), ResNet18, 4,
                 image=64, optimizer="adafactor"),
    ]


def test_small_rows_within_targets(acc):
    failures = []
    for case in _rows(acc):
        for name, cat, predicted, traced, err in acc.compare(case):
            if abs(err) > acc.TARGET[cat] and abs(predicted - traced) >= 1 << 20:
                failures.append((name, cat, predicted, traced, round(err, 1)))
    assert failures == []
