"""Property: any `gpuwatch estimate` command line or config.json ends in exit 0 or 2.

Random flag sets (numbers as text: nan, inf, 1e400, -1, 0, huge integers, unitless
sizes…) and random config.json documents (the keys estimate reads, with random types,
deep nesting and random encodings) run through ``gpuwatch.cli.main`` in-process: no
exception escapes, argparse's own errors are exit 2, exit 2 prints nothing on stdout
and one line on stderr, exit 0 prints a well-formed ``gpuwatch.estimate/1`` document,
and the config file is left as it was.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from pathlib import Path
from typing import Any

from cli_support import run_captured as run_cli
from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.budget import model_names

NUMBERS = st.one_of(
    st.sampled_from([
        "nan", "NaN", "inf", "-inf", "1e400", "-1", "0", "1", "2", "3", "4", "7", "8", "12",
        "16", "64", "1e308", "99999999999999999999", "9" * 400, "24", "1.5", "abc", "", "1e30",
        "1_000", " 8 ", "0x10", "24GiB", "1e300TiB", "-0", "1e13", "10T", "7B", "125M",
        "2**20", "1048576", "1048577", "16777216", "16777217", "1e-300", "224x224", "1x1",
    ]),
    st.integers(min_value=-10, max_value=10**30).map(str),
    st.floats().map(str),
)
SIZES = st.one_of(
    st.sampled_from(["24", "0", "24GiB", "80GB", "1e300TiB", "-1GiB", "1EiB", "auto",
                     "512MiB", "1024TiB", "nan GiB", "inf"]),
    NUMBERS,
)
CHOICE_FLAGS = {
    "--mode": ["train", "infer", "eval", ""],
    "--precision": ["fp32", "amp-bf16", "bf16", "int4", "int8", "fp8", "x"],
    "--optimizer": ["adamw", "sgd", "adam8bit", "adafactor", "lion", "none"],
    "--checkpointing": ["none", "selective", "full", "some"],
    "--offload": ["optimizer", "params", "disk"],
    "--kv-precision": ["fp8", "int4", "fp64"],
    "--gpu": ["A100", "H100", "RTX-4090", "T4", "Z9000", "A100-40GB"],
    "--teacher": ["gpt2", "resnet-50", "vit-b-16", "nope"],
    "--lora-targets": ["q,v", "all-linear", "attention", "mlp", "q_proj,o_proj", "x", "",
                       ",", "q,,v"],
    "--optimizer-step": ["foreach", "fused", "for-loop", ""],
}
NUMBER_FLAGS = ["--batch", "--seq", "--grad-accum", "--context", "--zero", "--dp", "--tp",
                "--pp", "--lora", "--sparsity", "--image", "--dropout-mask-bytes"]
SIZE_FLAGS = ["--capacity", "--overhead"]
SWITCHES = ["--fit", "--sequence-parallel", "--no-flash-attention", "--keep-logits"]




def check(argv: list[str]) -> None:
    code, out, err = run_cli(["estimate", *argv, "--json"])
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        assert out == "", argv
        if err.startswith("usage:"):      # argparse's own: usage, then one error line
            assert err.splitlines()[-1].startswith("gpuwatch estimate: error:"), (argv, err)
        else:
            assert err.startswith("gpuwatch") and err.count("\n") == 1, (argv, err)
        return
    doc = json.loads(out)
    assert doc["schema"] == "gpuwatch.estimate/1"
    assert doc["overlap_bytes"] >= 0
    assert doc["total_bytes"] == sum(doc["breakdown_bytes"].values()) - doc["overlap_bytes"]
    assert all(isinstance(v, int) and v >= 0 for v in doc["breakdown_bytes"].values())


GOOD = {
    "--batch": ["1", "2", "8", "64"], "--seq": ["1", "128", "512", "4096"],
    "--grad-accum": ["1", "4"], "--context": ["256", "8192"], "--zero": ["0", "1", "2", "3"],
    "--dp": ["1", "2", "8"], "--tp": ["1", "2", "4"], "--pp": ["1", "2"],
    "--lora": ["0", "8", "16"], "--sparsity": ["0", "0.5"], "--image": ["224x224", "64"],
    "--capacity": ["24GiB", "80GB", "1024TiB"], "--overhead": ["auto", "512MiB"],
    "--params": ["125M", "7B", "1e13"],
    "--mode": ["train", "infer"], "--precision": ["fp32", "amp-bf16", "bf16"],
    "--optimizer": ["adamw", "sgd"], "--checkpointing": ["none", "full"],
    "--offload": ["optimizer"], "--kv-precision": ["fp8"], "--gpu": ["A100-80GB", "RTX-4090"],
    "--teacher": ["gpt2"],
    "--lora-targets": ["q,v", "all-linear"], "--optimizer-step": ["foreach", "fused"],
    "--dropout-mask-bytes": ["1", "4"],
}


@st.composite
def value_for(draw, name: str, bad: st.SearchStrategy[str]) -> str:
    """Mostly a sensible value, sometimes a hostile one: deep paths get exercised too."""
    if name in GOOD and draw(st.sampled_from([True, True, False])):
        return draw(st.sampled_from(GOOD[name]))
    return draw(bad)


def _flag(name: str, value: str, joined: bool) -> list[str]:
    return [f"{name}={value}"] if joined else [name, value]


@st.composite
def flag_sets(draw) -> list[str]:
    argv: list[str] = []
    source = draw(st.sampled_from(["model", "model", "params", "custom", "none"]))
    joined = draw(st.booleans())
    if source == "model":
        argv += _flag("--model", draw(st.sampled_from([*model_names(), *model_names(), "nope",
                                                         ""])), joined)
    elif source == "params":
        argv += _flag("--params", draw(value_for("--params", NUMBERS)), joined)
    elif source == "custom":
        for name in ("--layers", "--hidden", "--heads"):
            argv += _flag(name, draw(st.sampled_from(["1", "2", "4", "12", "64", "768"])
                                     | NUMBERS), joined)
        for name in draw(st.sets(st.sampled_from(["--kv-heads", "--ffn", "--vocab"]))):
            argv += _flag(name, draw(NUMBERS), joined)
    for name in draw(st.sets(st.sampled_from(NUMBER_FLAGS), max_size=4)):
        argv += _flag(name, draw(value_for(name, NUMBERS)), True)
    for name in draw(st.sets(st.sampled_from(SIZE_FLAGS), max_size=2)):
        argv += _flag(name, draw(value_for(name, SIZES)), True)
    for name in draw(st.sets(st.sampled_from(sorted(CHOICE_FLAGS)), max_size=3)):
        argv += _flag(name, draw(value_for(name, st.sampled_from(CHOICE_FLAGS[name]))), joined)
    argv += sorted(draw(st.sets(st.sampled_from(SWITCHES))))
    return argv


@given(flag_sets())
def test_any_flag_set_exits_0_or_2_with_one_line(argv):
    check(argv)


# -- config.json -----------------------------------------------------------------------

KEYS = [
    "model_type", "n_embd", "n_layer", "n_head", "n_inner", "n_positions", "vocab_size",
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "intermediate_size", "head_dim", "num_local_experts", "num_experts_per_tok",
    "moe_intermediate_size", "d_model", "num_layers", "num_heads", "d_ff", "d_kv",
    "num_decoder_layers", "image_size", "patch_size", "num_channels",
    "max_position_embeddings", "type_vocab_size", "relative_attention_num_buckets",
    "tie_word_embeddings", "mlp_bias", "feed_forward_proj", "resid_pdrop", "attention_dropout",
    "hidden_dropout_prob", "text_config",
]
MODEL_TYPES = ["llama", "gpt2", "bert", "t5", "vit", "mixtral", "qwen2", "", "unknown"]
DEEP = "__deep__"
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=10)
SCALARS = st.one_of(
    st.sampled_from([0, 1, 2, 3, 4, 8, 12, 16, 32, 64, 128, 224, 768, 1024, 3072, 32000, -1,
                     2**20, 2**24 + 1, 10**13, 10**30, 0.5, 1.5, 1e308, math.nan, math.inf,
                     -math.inf, True, False, None, "", "4", "gated-gelu", DEEP]),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
    st.sampled_from(MODEL_TYPES),
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6)


@st.composite
def config_documents(draw) -> dict[str, Any]:
    doc: dict[str, Any] = {"model_type": draw(st.sampled_from(MODEL_TYPES))}
    base = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "intermediate_size": 128, "vocab_size": 100, "n_layer": 2, "n_embd": 64,
            "n_head": 4, "num_layers": 2, "d_model": 64, "num_heads": 4, "d_ff": 128,
            "num_decoder_layers": 2}
    for key in draw(st.sets(st.sampled_from(sorted(base)))):
        doc[key] = base[key]
    for key in draw(st.sets(st.sampled_from(KEYS), max_size=draw(st.sampled_from([0, 1, 4])))):
        doc[key] = draw(VALUES)
    return doc


def dump(doc: Any, deep: int) -> str:
    text = json.dumps(doc, ensure_ascii=False, allow_nan=True)
    return text.replace(json.dumps(DEEP), "[" * deep + "]" * deep)


def check_config(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        path.write_bytes(data)
        before = hashlib.sha256(data).hexdigest()
        check(["--config", str(path)])
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before


@given(config_documents(), st.sampled_from([1, 10, 5000]),
       st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32", "latin-1"]))
def test_any_config_document_exits_0_or_2_with_one_line(doc, deep, encoding):
    text = dump(doc, deep).replace("Infinity", "1e400", 1)
    check_config(text.encode(encoding, errors="replace"))


@given(st.binary(max_size=200))
def test_any_config_bytes_exit_0_or_2_with_one_line(data):
    check_config(data)
