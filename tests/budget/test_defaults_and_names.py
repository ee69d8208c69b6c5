"""Defaults people run, names that cannot mislead, counts that read at every size."""

from __future__ import annotations

import json

import pytest
from cli_support import run as cli_run

from gpuwatch.budget import (
    BudgetError,
    Setup,
    Workload,
    estimate,
    lookup_gpu,
    lookup_model,
    spec_from_params,
)
from gpuwatch.budget.catalog import suggest_models
from gpuwatch.budget.counts import format_count
from gpuwatch.budget.workload import DEFAULT_PRECISION, lora_target_set


def run(capsys, *argv: str) -> tuple[int, str, str]:
    return cli_run(capsys, "estimate", *argv)


def test_inference_defaults_to_16_bit_weights(capsys):
    spec = lookup_model("mistral-7b")
    est = estimate(spec, Workload(mode="infer"))
    assert est.setup.precision == DEFAULT_PRECISION["infer"] == "bf16"
    assert est.breakdown.parameters == spec.params * 2
    code, out, _ = run(capsys, "--model", "mistral-7b", "--mode", "infer", "--gpu", "L4")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].startswith("precision bf16: bf16 weights and activations (the default for "
                               "--mode infer")
    assert lines[2] == "GPU: L4, 24.00 GiB"
    assert "fits in L4 (24.00 GiB)" in out


def test_training_defaults_to_autocast_and_says_so(capsys):
    assert estimate(lookup_model("gpt2"), Workload()).setup.precision == "amp-bf16"
    code, out, _ = run(capsys, "--model", "gpt2")
    assert code == 0
    assert out.splitlines()[1].startswith("precision amp-bf16: torch autocast bf16")
    assert "(the default for --mode train" in out.splitlines()[1]
    code, out, _ = run(capsys, "--model", "gpt2", "--precision", "fp32")
    assert out.splitlines()[1] == "precision fp32: everything fp32 (as given)"


def test_json_names_the_gpu(capsys):
    _, out, _ = run(capsys, "--model", "gpt2", "--gpu", "a100 40gb", "--json")
    doc = json.loads(out)
    assert doc["inputs"]["gpu"] == "A100-40GB" and doc["capacity_bytes"] == 40 << 30
    _, out, _ = run(capsys, "--model", "gpt2", "--capacity", "24GiB", "--json")
    assert json.loads(out)["inputs"]["gpu"] is None


@pytest.mark.parametrize(("name", "choices"), [("A100", "A100-40GB, A100-80GB"),
                                                ("V100", "V100-16GB, V100-32GB")])
def test_a_gpu_family_in_several_sizes_is_refused_with_the_choices(capsys, name, choices):
    with pytest.raises(BudgetError, match="ambiguous") as e:
        lookup_gpu(name)
    assert choices in str(e.value) and e.value.field == "--gpu"
    code, out, err = run(capsys, "--model", "gpt2", "--gpu", name)
    assert code == 2 and out == "" and choices in err and err.count("\n") == 1


def test_exact_gpu_names_and_spellings_still_resolve():
    assert lookup_gpu("H100 80GB").name == "H100-80GB"
    assert lookup_gpu("nvidia a100-80gb").name == "A100-80GB"
    assert lookup_gpu("4090").name == "RTX-4090"
    assert lookup_gpu("H100").name == "H100-80GB"  # one size in the catalog


@pytest.mark.parametrize(("typed", "meant"), [
    ("llama3-8b", ("llama-3.1-8b",)),
    ("llama-3-8b", ("llama-3.1-8b",)),
    ("llama-3-70b", ("llama-3.1-70b",)),
    ("mistral", ("mistral-7b",)),
    ("bert", ("bert-base", "bert-large")),
    ("resnet5", ("resnet-50",)),
])
def test_a_near_miss_is_answered_with_did_you_mean(capsys, typed, meant):
    assert suggest_models(typed) == meant
    with pytest.raises(BudgetError, match="did you mean " + " or ".join(meant)):
        lookup_model(typed)
    code, _, err = run(capsys, "--model", typed)
    assert code == 2 and f"did you mean {' or '.join(meant)}?" in err


def test_a_different_release_is_never_mapped_silently():
    for name in ("llama-3-8b", "llama-3-70b"):
        with pytest.raises(BudgetError):
            lookup_model(name)
    assert suggest_models("zzzz") == ()
    assert lookup_model("Mistral-7B-v0.1").name == "mistral-7b"  # an exact other name


@pytest.mark.parametrize(("count", "text"), [
    (0, "0"), (7, "7"), (999, "999"), (7_000, "7.0 K"), (7e6, "7.0 M"), (124.4e6, "124 M"),
    (7e9, "7.0 B"), (8.03e9, "8.03 B"), (999_999, "1.0 M"), (1e13, "10.0 T"),
])
def test_counts_read_at_every_size(count, text):
    assert format_count(count) == text


@pytest.mark.parametrize(("given", "shown"), [("7", "7 params"), ("7K", "7.0 K params"),
                                              ("7M", "7.0 M params"), ("7B", "7.0 B params")])
def test_a_bare_count_is_shown_as_given(capsys, given, shown):
    code, out, _ = run(capsys, "--params", given)
    assert code == 0 and out.startswith(f"{shown}, train, batch 1")
    assert "e-0" not in out and "e+" not in out


def test_a_count_smaller_than_any_shape_keeps_its_size():
    assert spec_from_params(7).params == 7
    assert spec_from_params(40_000).params == 40_000


def test_help_states_every_default(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    # one entry per option: from "  --flag" to the next option line
    entries, current = {}, None
    for line in out.splitlines():
        stripped = line.strip()
        if line.startswith("  -") and stripped.startswith("--"):
            current = stripped.split()[0].rstrip(",")
            entries[current] = stripped
        elif current and line.startswith("    "):
            entries[current] += " " + stripped
        else:
            current = None
    assert len(entries) > 30
    missing = [f for f, text in entries.items() if "default" not in text and f != "--help"]
    assert missing == []
    text = " ".join(out.split())
    assert "amp-bf16 for --mode train" in text and "bf16 for --mode infer" in text


def test_setup_fields_have_flags(capsys):
    base = ["--model", "gpt2", "--json"]
    fused = json.loads(run(capsys, *base, "--optimizer-step", "fused")[1])
    foreach = json.loads(run(capsys, *base)[1])
    assert (foreach["breakdown_bytes"]["optimizer_states"]
            - fused["breakdown_bytes"]["optimizer_states"]) == 4 * lookup_model("gpt2").params
    cpu = json.loads(run(capsys, *base, "--dropout-mask-bytes", "4")[1])
    assert cpu["breakdown_bytes"]["activations"] > foreach["breakdown_bytes"]["activations"]
    code, _, err = run(capsys, *base, "--optimizer-step", "slow")
    assert code == 2 and "--optimizer-step" in err
    code, _, err = run(capsys, *base, "--dropout-mask-bytes", "9")
    assert code == 2 and "dropout" in err


def test_lora_targets_parse():
    assert lora_target_set("q,v") == {"q", "v"}
    assert lora_target_set("all-linear") == {"q", "k", "v", "o", "gate", "up", "down"}
    assert lora_target_set("q_proj, k_proj") == {"q", "k"}
    with pytest.raises(BudgetError, match="LoRA target"):
        Setup(lora_targets="q,x")
