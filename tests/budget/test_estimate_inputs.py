"""`gpuwatch estimate` on input outside its ranges: exit 2 and one sentence, every time.

Also the ranges' consequences: a bare parameter count of 10 T is solved without a
search, the solvers' answers are capped, and the overlap is never negative.
"""

from __future__ import annotations

import json
import os

import pytest
from cli_support import run as cli_run

from gpuwatch.budget import (
    BudgetError,
    Setup,
    TransformerSpec,
    Workload,
    estimate,
    lookup_model,
    max_batch_size,
    max_sequence_length,
    spec_from_hf_config,
    spec_from_params,
)
from gpuwatch.budget.bounds import MAX_BATCH, MAX_PARAMS, MAX_SEQ, divisors


def run(capsys, *argv: str) -> tuple[int, str, str]:
    return cli_run(capsys, "estimate", *argv)


def refused(capsys, *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2, (argv, out, err)
    assert out == ""
    assert err.startswith("gpuwatch estimate: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and len(err) < 400
    return err


@pytest.mark.parametrize(("argv", "says"), [
    # numbers out of range, non-finite, or not numbers
    (["--params", "1e400"], "between 1 and 1e13"),
    (["--params", "1e30"], "between 1 and 1e13"),
    (["--params", "nan"], "count such as"),
    (["--params", "0"], "between 1"),
    (["--params", "9" * 5000], "count such as"),
    (["--model", "gpt2", "--batch", "1e308"], "--batch must be a whole number from 1 to"),
    (["--model", "gpt2", "--batch", "inf"], "--batch"),
    (["--model", "gpt2", "--batch", "nan"], "--batch must be a whole number"),
    (["--model", "gpt2", "--batch", "2.5"], "--batch must be a whole number"),
    (["--model", "gpt2", "--batch", "0"], "from 1"),
    (["--model", "gpt2", "--batch", str(2**20 + 1)], "1,048,576"),
    (["--model", "gpt2", "--batch", "9" * 5000], "--batch"),
    (["--model", "gpt2", "--seq", "1e12"], "16,777,216"),
    (["--model", "gpt2", "--context", "-1"], "--context"),
    (["--model", "gpt2", "--grad-accum", "1e400"], "--grad-accum"),
    (["--model", "gpt2", "--dp", "0"], "--dp"),
    (["--model", "gpt2", "--lora", "1e9"], "--lora"),
    (["--model", "gpt2", "--lora-targets", "q,v"], "add --lora RANK"),
    (["--model", "gpt2", "--sparsity", "nan"], "finite"),
    (["--model", "gpt2", "--sparsity", "inf"], "finite"),
    (["--model", "gpt2", "--sparsity", "-0.5"], "fraction"),
    (["--layers", "100000", "--hidden", "64", "--heads", "1"], "--layers"),
    (["--layers", "2", "--hidden", str(2**21), "--heads", "1"], "--hidden"),
    (["--layers", "2", "--hidden", "64", "--heads", "0"], "--heads"),
    (["--layers", "2", "--hidden", "64", "--heads", "128"], "--heads"),
    (["--layers", "2", "--hidden", "64", "--heads", "8", "--kv-heads", "16"], "--kv-heads"),
    (["--layers", "2", "--hidden", "64", "--heads", "8", "--vocab", "1e30"], "--vocab"),
    (["--model", "vit-b-16", "--image", "0x0"], "--image"),
    (["--model", "vit-b-16", "--image", "99999999999999999999x1"], "65,536"),
    (["--model", "resnet-50", "--image", "100000x100000"], "65,536"),
    # sizes: a unit is required, and at most 1 EiB
    (["--model", "gpt2", "--capacity", "24"], "'24' has no unit: write 24GiB or 24GB"),
    (["--model", "gpt2", "--capacity", "1e300TiB"], "more than 1 EiB"),
    (["--model", "gpt2", "--capacity", "0"], "more than 0 bytes"),
    (["--model", "gpt2", "--overhead", "512"], "no unit"),
    (["--model", "gpt2", "--overhead", "inf"], "--overhead"),
    # contradictions with the model
    (["--model", "gpt2", "--tp", "5"], "does not divide the 12 attention heads"),
    (["--model", "gpt2", "--tp", "1000"], "more than the 12 attention heads"),
    (["--model", "gpt2", "--pp", "1000"], "more than the 12 layers"),
    (["--model", "llama-3.1-8b", "--tp", "3"], "does not divide"),
    (["--model", "qwen2-7b", "--tp", "14"], "4 key/value heads"),
    (["--model", "resnet-50", "--pp", "1000"], "layers of resnet-50"),
    (["--model", "vit-b-16", "--image", "1x1"], "smaller than one 16x16 patch"),
    (["--model", "vit-b-16", "--image", "15x224"], "patch"),
])
def test_out_of_range_input_exits_2_with_a_sentence(capsys, argv, says):
    err = refused(capsys, *argv)
    assert says in err, err


def test_divisor_suggestions():
    assert divisors(12) == "1, 2, 3, 4, 6, 12"
    assert divisors(720).endswith("…, 720")


def test_the_largest_bare_count_is_solved_without_a_search(capsys):
    spec = spec_from_params(MAX_PARAMS)
    assert spec.params == MAX_PARAMS
    code, out, _ = run(capsys, "--params", "10T", "--capacity", "80GiB", "--json")
    assert code == 0 and json.loads(out)["max_batch_size"] == 0


def test_bare_counts_keep_their_shapes():
    # the closed form gives the same layer counts the published shapes have
    assert spec_from_params(7e9).layers == 32
    assert spec_from_params(1e8).layers == 6
    assert spec_from_params(1e5).layers == 1


def test_solver_answers_are_capped():
    est = estimate(lookup_model("gpt2"), Workload(batch=1, seq=8), Setup())
    assert max_batch_size(est, 2**60) == MAX_BATCH
    assert max_sequence_length(lookup_model("gpt2"), est, 2**60) <= MAX_SEQ


@pytest.mark.parametrize("argv", [
    ["--model", "gpt2", "--seq", str(2**24), "--batch", str(2**20), "--mode", "infer"],
    ["--model", "llama-3.1-70b", "--seq", str(2**24), "--batch", str(2**20)],
    ["--model", "t5-base", "--seq", str(2**24), "--batch", str(2**20), "--no-flash-attention"],
    ["--model", "mixtral-8x7b", "--seq", str(2**24), "--batch", "7", "--pp", "4",
     "--grad-accum", "3"],
    ["--layers", "10000", "--hidden", str(2**20), "--heads", str(2**16), "--vocab",
     str(2**24), "--seq", str(2**24), "--batch", str(2**20), "--dp", str(2**20), "--zero", "3"],
])
def test_the_overlap_is_never_negative_at_the_bounds(capsys, argv):
    code, out, _ = run(capsys, *argv, "--capacity", "1024TiB", "--fit", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["overlap_bytes"] >= 0
    assert doc["total_bytes"] == sum(doc["breakdown_bytes"].values()) - doc["overlap_bytes"]
    assert 0 <= doc["max_batch_size"] <= MAX_BATCH


# -- config.json -----------------------------------------------------------------------

LLAMA = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
         "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}


def _config(tmp_path, content: str | bytes | dict, name: str = "config.json"):
    path = tmp_path / name
    if isinstance(content, dict):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return str(path)


@pytest.mark.parametrize(("changes", "says"), [
    ({"num_hidden_layers": float("nan")}, "'num_hidden_layers' should be a whole number"),
    ({"num_hidden_layers": float("inf")}, "whole number"),
    ({"num_hidden_layers": 1e400}, "whole number"),
    ({"num_hidden_layers": 0}, "from 1"),
    ({"num_hidden_layers": 10**30}, "from 1 to 10,000"),
    ({"num_attention_heads": 0}, "'num_attention_heads'"),
    ({"num_attention_heads": 3}, "do not divide"),
    ({"num_attention_heads": "4"}, "should be a number, not '4'"),
    ({"num_attention_heads": True}, "should be a number"),
    ({"num_attention_heads": [4]}, "should be a number"),
    ({"num_key_value_heads": 3}, "key/value heads"),
    ({"num_key_value_heads": 0}, "'num_key_value_heads'"),
    ({"head_dim": -1}, "'head_dim'"),
    ({"num_local_experts": 8, "num_experts_per_tok": 9}, "experts per token"),
    ({"num_local_experts": 8, "moe_intermediate_size": "big"}, "'moe_intermediate_size'"),
    ({"attention_dropout": float("nan")}, "fraction"),
    ({"hidden_dropout": "0.1"}, "should be a number"),
    ({"tie_word_embeddings": [1]}, "true or false"),
    ({"model_type": "vit", "patch_size": 0, "image_size": 224}, "'patch_size'"),
    ({"model_type": "vit", "patch_size": 32, "image_size": 16}, "patch size"),
    ({"model_type": "vit", "num_channels": 0}, "'num_channels'"),
    ({"model_type": ["gpt2"]}, "'model_type' should be a string"),
])
def test_bad_config_fields_exit_2(tmp_path, capsys, changes, says):
    path = _config(tmp_path, json.dumps({**LLAMA, **changes}, allow_nan=True)
                   .replace("Infinity", "1e400"))
    err = refused(capsys, "--config", path)
    assert says in err, err


@pytest.mark.parametrize(("content", "says"), [
    ("[" * 100_000 + "]" * 100_000, "too deeply"),
    ('{"hidden_size": ' + "9" * 5000 + "}", "JSON"),
    (json.dumps({**LLAMA, "name": "Müller"}, ensure_ascii=False).encode("latin-1"),
     "not UTF-8"),
    (b"", "not valid JSON"),
    ("NaN", "JSON object"),
])
def test_unreadable_configs_exit_2(tmp_path, capsys, content, says):
    err = refused(capsys, "--config", _config(tmp_path, content))
    assert says in err, err


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32", "utf-16-le",
                                      "utf-32-be"])
def test_configs_with_a_byte_order_mark_are_read(tmp_path, capsys, encoding):
    path = _config(tmp_path, json.dumps(LLAMA).encode(encoding))
    code, out, _ = run(capsys, "--config", path, "--json")
    assert code == 0 and json.loads(out)["inputs"]["params"] > 0


def test_a_config_over_four_mebibytes_is_refused(tmp_path, capsys):
    path = _config(tmp_path, json.dumps({**LLAMA, "pad": "x" * (4 << 20)}))
    assert "larger than 4.0 MiB" in refused(capsys, "--config", path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_config_is_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    assert "not a regular file" in refused(capsys, "--config", str(fifo))


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_config_is_refused_without_reading(capsys):
    assert "not a regular file" in refused(capsys, "--config", "/dev/zero")


def test_a_folder_config_is_refused(tmp_path, capsys):
    assert "is a folder" in refused(capsys, "--config", str(tmp_path))


def test_library_callers_get_budget_errors_too():
    with pytest.raises(BudgetError):
        spec_from_params(float("inf"))
    with pytest.raises(BudgetError):
        spec_from_hf_config({**LLAMA, "num_hidden_layers": float("nan")})
    with pytest.raises(BudgetError, match="hidden"):
        TransformerSpec("x", 1, 2**21, 1, 0)
    with pytest.raises(BudgetError, match="--batch"):
        Workload(batch=2**21)
