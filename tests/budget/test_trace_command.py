"""`gpuwatch estimate --trace`: the exact traced peak beside the estimate (needs PyTorch).

A user's own model file (``trace_models.py``) is traced under FakeTensorMode +
MemTracker; the traced bytes of one linear layer match their closed form; a decoder read
from a config matches its traced twin category by category; inputs that cannot be
traced are refused with one sentence (exit 2) and a model that fails is exit 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_estimate_command import run

HERE = Path(__file__).resolve().parent
MODELS = HERE / "trace_models.py"


def _refused(capsys, *argv: str, code: int = 2) -> str:
    got, out, err = run(capsys, *argv)
    assert got == code and out == "", (got, out, err)
    assert err.startswith("gpuwatch estimate: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def test_trace_without_a_buildable_model_is_refused(capsys):
    assert "--trace-model" in _refused(capsys, "--params", "7B", "--trace")


@pytest.mark.torch
def test_bad_trace_targets_are_refused(capsys, tmp_path):
    pytest.importorskip("torch")      # without it, --trace says it needs PyTorch first
    assert "FILE.py:callable" in _refused(capsys, "--trace-model", "no-colon")
    assert "no file" in _refused(capsys, "--trace-model", str(tmp_path / "x.py") + ":build")
    assert "has no callable" in _refused(capsys, "--trace-model", f"{MODELS}:nothing_here")
    assert "failed" in _refused(capsys, "--trace-model", "gpuwatch.not_a_module:build")


@pytest.mark.torch
def test_a_failing_model_is_a_runtime_failure(capsys):
    pytest.importorskip("torch")
    err = _refused(capsys, "--trace-model", f"{MODELS}:broken", "--image", "32x32", code=1)
    assert "cannot be built" in err


@pytest.mark.torch
def test_one_linear_layer_traces_to_its_closed_form(capsys):
    """fp32 SGD without momentum: weights and gradients 4 B each; the peak holds the
    input (saved by the matmul), the output and its gradient."""
    pytest.importorskip("torch")
    code, out, _ = run(capsys, "--trace-model", f"{MODELS}:one_linear", "--image", "8x8",
                       "--batch", "4", "--precision", "fp32", "--optimizer", "sgd", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "gpuwatch.trace/1" and doc["estimate_bytes"] is None
    t = doc["traced_bytes"]
    params = 4 * (192 * 1000 + 1000)
    assert t["parameters"] == params and t["gradients"] == params
    assert t["optimizer_states"] == 0 and t["total"] >= 2 * params


@pytest.mark.torch
def test_a_cnn_outside_the_catalog_is_traced(capsys):
    pytest.importorskip("torch")
    code, out, _ = run(capsys, "--trace-model", f"{MODELS}:tiny_convnext", "--image", "64x64",
                       "--batch", "2", "--precision", "amp-bf16")
    assert code == 0 and "traced" in out and "activations" in out and "MiB" in out


@pytest.mark.torch
@pytest.mark.parametrize(("family", "precision"), [("phi3", "bf16"), ("falcon", "amp-bf16")])
def test_trace_matches_the_estimate_read_from_the_same_config(capsys, family, precision):
    pytest.importorskip("torch")
    config = HERE / "configs" / "traced" / f"{family}.json"
    code, out, _ = run(capsys, "--config", str(config), "--trace-model", f"{MODELS}:{family}",
                       "--batch", "2", "--seq", "256", "--precision", precision, "--json")
    assert code == 0
    trace = json.loads(out)["trace"]
    total = trace["traced_bytes"]["total"]
    for cat, traced in trace["traced_bytes"].items():
        predicted = trace["estimate_bytes"][cat]
        if cat == "total" or traced >= 0.05 * total:
            limit = 0.08 if cat == "total" else 0.10
            assert abs(predicted - traced) <= limit * traced, (cat, predicted, traced)
