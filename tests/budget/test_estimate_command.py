"""`gpuwatch estimate` through its own parser: exit codes, JSON schema, error sentences."""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import pytest

from gpuwatch.budget import Setup, Workload, estimate, lookup_model
from gpuwatch.commands.estimate import add_estimate_parser
from gpuwatch.core.units import format_bytes

BUDGET = Path(__file__).resolve().parents[2] / "gpuwatch" / "budget"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="gpuwatch")
    add_estimate_parser(parser.add_subparsers())
    args = parser.parse_args(["estimate", *argv])
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_schema(capsys):
    code, out, _ = run(
        capsys, "--model", "gpt2", "--batch", "8", "--seq", "1024", "--gpu", "A100-40GB", "--json"
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "gpuwatch.estimate/1"
    assert set(doc["breakdown_bytes"]) == {
        "parameters",
        "gradients",
        "optimizer_states",
        "activations",
        "kv_cache",
        "framework_overhead",
    }
    assert all(isinstance(v, int) for v in doc["breakdown_bytes"].values())
    assert doc["total_bytes"] == sum(doc["breakdown_bytes"].values()) - doc["overlap_bytes"]
    assert doc["capacity_bytes"] == 40 * 1024**3
    assert isinstance(doc["fits"], bool) and doc["max_batch_size"] > 0
    savings = [w["saves_bytes"] for w in doc["what_if"]]
    assert savings == sorted(savings, reverse=True) and savings
    assert any("CUDA context" in n for n in doc["notes"])


def test_missing_values_are_null(capsys):
    doc = json.loads(run(capsys, "--params", "125M", "--json")[1])
    assert doc["capacity_bytes"] is None and doc["fits"] is None and doc["max_batch_size"] is None


def test_table_shows_units_and_fit(capsys):
    code, out, _ = run(
        capsys,
        "--model",
        "resnet-50",
        "--image",
        "224x224",
        "--batch",
        "64",
        "--fit",
        "--precision",
        "fp32",
    )
    assert code == 0
    assert "GiB" in out and "H100-80GB" in out and "total" in out


def test_config_json(tmp_path, capsys):
    cfg = {
        "model_type": "llama",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    doc = json.loads(run(capsys, "--config", str(path), "--json", "--mode", "infer")[1])
    assert doc["inputs"]["params"] == 8_030_261_248


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["--model", "nope"], "unknown model"),
        (["--layers", "12", "--hidden", "770", "--heads", "12"], "do not divide"),
        (["--model", "gpt2", "--batch=-4"], "--batch"),
        (["--params=-7B"], "--params"),
        (["--model", "gpt2", "--capacity", "lots"], "--capacity"),
        (["--model", "gpt2", "--precision", "fp6"], "precision"),
        (["--model", "gpt2", "--zero", "5"], "ZeRO"),
        (["--model", "gpt2", "--gpu", "Z9000"], "unknown GPU"),
        (["--model", "llama-2-7b", "--precision", "int4"], "LoRA"),
        (["--model", "gpt2", "--sparsity", "1.5"], "sparsity"),
        (["--config", "/nonexistent/config.json"], "does not exist"),
    ],
)
def test_bad_input_exits_2_with_one_sentence(capsys, argv, names):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert names in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"model_type": "gpt2", "n_layer": 12}'])
def test_malformed_config(tmp_path, capsys, text):
    path = tmp_path / "config.json"
    path.write_text(text)
    code, _, err = run(capsys, "--config", str(path))
    assert code == 2 and "config" in err and err.count("\n") == 1


ALLOWED = {
    "__future__",
    "dataclasses",
    "typing",
    "math",
    "re",
    "functools",
    "numpy",
    "collections",
    "enum",
    "itertools",
    "difflib",
}


@pytest.mark.parametrize("path", sorted(BUDGET.glob("*.py")), ids=lambda p: p.name)
def test_budget_imports_only_stdlib_numpy_core(path):
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            assert top in ALLOWED or name.startswith(("gpuwatch.budget", "gpuwatch.core")), name


def test_fused_attention_is_the_default_everywhere(capsys):
    assert Setup().flash_attention is True
    argv = ["--model", "gpt2-medium", "--batch", "8", "--seq", "1024", "--precision", "amp-bf16"]
    doc = json.loads(run(capsys, *argv, "--json")[1])
    assert doc["inputs"]["flash_attention"] is True
    library = estimate(
        lookup_model("gpt2-medium"), Workload(batch=8, seq=1024), Setup(precision="amp-bf16")
    )
    assert doc["total_bytes"] == library.total_bytes
    eager = json.loads(run(capsys, *argv, "--no-flash-attention", "--json")[1])
    assert eager["inputs"]["flash_attention"] is False
    assert eager["total_bytes"] > 1.5 * doc["total_bytes"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--model", "gpt2", "--batch", "8", "--seq", "1024"],
        ["--model", "llama-3.1-8b", "--mode", "infer", "--seq", "4096"],
        ["--model", "bert-base", "--seq", "512", "--precision", "fp32"],
        ["--model", "vit-b-16", "--batch", "64"],
        ["--model", "sd15-unet", "--batch", "2"],
        ["--params", "7B", "--lora", "16", "--precision", "int4"],
    ],
)
def test_every_attention_estimate_notes_the_eager_figure(capsys, argv):
    doc = json.loads(run(capsys, *argv, "--json")[1])
    eager = json.loads(run(capsys, *argv, "--no-flash-attention", "--json")[1])
    note = next(n for n in doc["notes"] if n.startswith("Attention assumed fused"))
    extra = eager["breakdown_bytes"]["activations"] - doc["breakdown_bytes"]["activations"]
    assert "PyTorch ≥ 2.0" in note and "--no-flash-attention" in note
    assert f"would add {format_bytes(max(0, extra), digits=2)} of scores" in note
    # what-if never offers eager attention as a saving
    assert not any("flash" in w["change"] for w in doc["what_if"])
    assert any(n.startswith("Attention counted as eager") for n in eager["notes"])


def test_eager_only_families_count_their_scores_and_say_so(capsys):
    doc = json.loads(run(capsys, "--model", "t5-base", "--checkpointing", "full", "--json")[1])
    assert any("eager code, which has no fused path" in n for n in doc["notes"])
    assert not any(n.startswith("Attention assumed fused") for n in doc["notes"])


def test_models_without_attention_have_no_attention_note(capsys):
    doc = json.loads(run(capsys, "--model", "resnet-50", "--json")[1])
    assert not any(n.startswith("Attention") for n in doc["notes"])
