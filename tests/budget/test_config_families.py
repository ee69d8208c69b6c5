"""Config families read by what they are: published parameter counts, structure, and
properties over families of configs (any valid shape reads; any malformed field is
refused with a sentence naming it; an unknown family names the nearest known one)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.budget import BudgetError, Setup, Workload, estimate, spec_from_hf_config
from gpuwatch.budget.family_spec import FamilySpec, quirks_of
from gpuwatch.budget.hf_config import KNOWN_FAMILIES

CONFIGS = Path(__file__).with_name("configs")

# model.num_parameters() of each published checkpoint (tied weights counted once)
PUBLISHED = {
    "gemma-2b": 2_506_172_416, "gemma-2-9b": 9_241_705_984, "gemma-3-1b": 999_885_952,
    "opt-1.3b": 1_315_758_080, "opt-350m": 331_196_416, "phi-2": 2_779_683_840,
    "phi-3-mini-4k": 3_821_079_552, "pythia-1b": 1_011_781_632, "falcon-7b": 6_921_720_704,
    "bloom-560m": 559_214_592, "mpt-7b": 6_649_286_656, "starcoder2-3b": 3_030_371_328,
    "qwen1.5-moe-a2.7b": 14_315_784_192, "deepseek-v2-lite": 15_706_484_224,
    "deepseek-v3": 671_026_404_352,
}


def load(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / f"{name}.json").read_text())


@pytest.mark.parametrize(("name", "params"), sorted(PUBLISHED.items()))
def test_published_configs_give_published_parameter_counts(name, params):
    assert spec_from_hf_config(load(name), name).params == params


def test_each_family_keeps_its_structure():
    gemma2, gemma3 = (quirks_of(spec_from_hf_config(load(n))) for n in ("gemma-2-9b",
                                                                        "gemma-3-1b"))
    assert (gemma2.post_norms, gemma2.attn_softcap, gemma2.logit_softcap) == (2, 50.0, 30.0)
    assert gemma3.qk_norm and not gemma3.logit_softcap and gemma3.norm_style == "gemma"
    opt = spec_from_hf_config(load("opt-1.3b"))
    assert (opt.activation, opt.norm, opt.ffn, opt.tied_embeddings) == ("relu", "layernorm",
                                                                        8192, True)
    assert quirks_of(opt).position_offset == 2 and opt.max_positions == 2048
    falcon7, falcon40 = (spec_from_hf_config(load(n)) for n in ("falcon-7b", "falcon-40b"))
    assert (falcon7.kv, quirks_of(falcon7).layer_norms) == (1, 1)
    assert (falcon40.kv, quirks_of(falcon40).layer_norms) == (8, 2)
    phi3 = spec_from_hf_config(load("phi-3-mini-4k"))
    assert phi3.fused_qkv and quirks_of(phi3).fused_gate_up
    assert quirks_of(spec_from_hf_config(load("mpt-7b"))).eager_only
    ds = spec_from_hf_config(load("deepseek-v3"))
    assert (ds.experts, quirks_of(ds).dense_layers, quirks_of(ds).kv_lora_rank) == (256, 3, 512)
    assert 37e9 < ds.active_params < 38e9  # DeepSeek-V3: 37 B activated per token


def test_multimodal_wrapper_reads_its_text_config():
    wrapped = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
               "text_config": {k: v for k, v in load("gemma-3-1b").items()
                               if k not in ("model_type", "architectures")}}
    spec = spec_from_hf_config(wrapped)
    assert spec.params == PUBLISHED["gemma-3-1b"] and quirks_of(spec).qk_norm


def test_alibi_families_count_eager_attention_and_say_so():
    spec = spec_from_hf_config(load("bloom-560m"))
    est = estimate(spec, Workload(batch=1, seq=2048), Setup(flash_attention=True))
    eager = estimate(spec, Workload(batch=1, seq=2048), Setup(flash_attention=False))
    assert est.breakdown.activations == eager.breakdown.activations
    assert any("ALiBi" in n for n in est.notes)


# -- properties over families of configs -------------------------------------------------

def _shape(draw) -> dict[str, int]:
    heads = draw(st.sampled_from([1, 2, 4, 8]))
    kv = draw(st.sampled_from([k for k in (1, 2, 4, 8) if heads % k == 0]))
    return {"heads": heads, "kv": kv, "h": heads * draw(st.sampled_from([8, 16, 32])),
            "L": draw(st.integers(1, 4)), "f": draw(st.integers(1, 512)),
            "V": draw(st.integers(1, 5000))}


def _config(family: str, s: dict[str, int]) -> dict[str, Any]:
    h, L, a, kv, f, V = s["h"], s["L"], s["heads"], s["kv"], s["f"], s["V"]
    llama = {"hidden_size": h, "num_hidden_layers": L, "num_attention_heads": a,
             "num_key_value_heads": kv, "intermediate_size": f, "vocab_size": V}
    return {"model_type": family, **{
        "gemma": {**llama, "head_dim": h // a}, "gemma2": {**llama, "head_dim": h // a,
                                                         "final_logit_softcapping": 30.0},
        "gemma3_text": {**llama, "head_dim": h // a},
        "opt": {"hidden_size": h, "num_hidden_layers": L, "num_attention_heads": a,
                "ffn_dim": f, "vocab_size": V, "max_position_embeddings": 64},
        "phi": llama, "phi3": llama, "starcoder2": llama,
        "gpt_neox": {**llama, "num_key_value_heads": a},
        "falcon": {"hidden_size": h, "num_hidden_layers": L, "num_attention_heads": a,
                   "vocab_size": V, "multi_query": kv == 1},
        "bloom": {"n_embed": h, "n_layer": L, "n_head": a, "vocab_size": V},
        "mpt": {"d_model": h, "n_heads": a, "n_layers": L, "expansion_ratio": 2,
                "vocab_size": V},
        "qwen2_moe": {**llama, "num_experts": 4, "num_experts_per_tok": 2,
                      "moe_intermediate_size": f, "shared_expert_intermediate_size": f},
        "deepseek_v3": {**llama, "n_routed_experts": 4, "num_experts_per_tok": 2,
                        "moe_intermediate_size": f, "n_shared_experts": 1,
                        "first_k_dense_replace": min(1, L - 1), "kv_lora_rank": 16,
                        "q_lora_rank": 32, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8,
                        "v_head_dim": 8},
    }[family]}


FAMILIES = ["gemma", "gemma2", "gemma3_text", "opt", "phi", "phi3", "starcoder2",
            "gpt_neox", "falcon", "bloom", "mpt", "qwen2_moe", "deepseek_v3"]


@st.composite
def family_configs(draw) -> tuple[str, dict[str, Any]]:
    family = draw(st.sampled_from(FAMILIES))
    return family, _config(family, _shape(draw))


@given(family_configs())
def test_any_family_shape_reads_and_each_layer_adds_the_same_parameters(fc):
    family, cfg = fc
    spec = spec_from_hf_config(cfg)
    assert isinstance(spec, FamilySpec) and quirks_of(spec).family.startswith(family[:5])
    layer_keys = [k for k in ("num_hidden_layers", "n_layer", "n_layers") if k in cfg]
    deeper = spec_from_hf_config({**cfg, layer_keys[0]: cfg[layer_keys[0]] + 1})
    deeper2 = spec_from_hf_config({**cfg, layer_keys[0]: cfg[layer_keys[0]] + 2})
    assert deeper2.params - deeper.params == deeper.params - spec.params > 0
    est = estimate(spec, Workload(batch=1, seq=16))
    assert est.total_bytes > est.breakdown.parameters > 0


@given(family_configs())
def test_a_family_named_only_by_its_class_reads_the_same(fc):
    family, cfg = fc
    cls = {"gemma": "GemmaForCausalLM", "gemma2": "Gemma2ForCausalLM",
           "gemma3_text": "Gemma3ForCausalLM", "opt": "OPTForCausalLM",
           "phi": "PhiForCausalLM", "phi3": "Phi3ForCausalLM",
           "starcoder2": "Starcoder2ForCausalLM", "gpt_neox": "GPTNeoXForCausalLM",
           "falcon": "FalconForCausalLM", "bloom": "BloomForCausalLM",
           "mpt": "MPTForCausalLM", "qwen2_moe": "Qwen2MoeForCausalLM",
           "deepseek_v3": "DeepseekV3ForCausalLM"}[family]
    bare = {k: v for k, v in cfg.items() if k != "model_type"}
    assert spec_from_hf_config({**bare, "architectures": [cls]}).params == \
        spec_from_hf_config(cfg).params


BAD_VALUES = st.sampled_from([-1, 0.5, math.nan, math.inf, "8", True, [8], {"a": 1}, 10**30])


@given(family_configs(), st.data())
def test_a_malformed_field_is_refused_naming_it(fc, data):
    _family, cfg = fc
    numeric = sorted(k for k, v in cfg.items() if isinstance(v, int | float)
                     and not isinstance(v, bool))
    field = data.draw(st.sampled_from(numeric))
    bad = data.draw(BAD_VALUES)
    try:
        spec_from_hf_config({**cfg, field: bad})
    except BudgetError as e:
        assert e.field == "--config"
        message = str(e)
        assert repr(field) in message or "heads" in message or "experts" in message, message
        assert "\n" not in message and len(message) < 400
    else:  # only a value that is valid for that field may pass
        assert not isinstance(bad, str | list | dict | bool) and math.isfinite(bad)


@given(st.sampled_from(FAMILIES), st.sampled_from(["4", "-next", "x", "_v9"]))
def test_an_unknown_family_names_the_nearest_known_one(family, suffix):
    kind = family + suffix
    if kind in KNOWN_FAMILIES:
        return
    with pytest.raises(BudgetError) as e:
        spec_from_hf_config({"model_type": kind, "hidden_size": 64, "num_hidden_layers": 2,
                             "num_attention_heads": 4, "intermediate_size": 128,
                             "vocab_size": 100})
    assert repr(kind) in str(e.value) and "the nearest it reads is" in str(e.value)
    nearest = str(e.value).split("the nearest it reads is '")[1].split("'")[0]
    assert nearest in KNOWN_FAMILIES


@pytest.mark.parametrize("value", [[1, 2], "GemmaForCausalLM", [None], {"a": 1}])
def test_malformed_architectures_are_refused(value):
    with pytest.raises(BudgetError, match="'architectures'"):
        spec_from_hf_config({"architectures": value, "hidden_size": 64})
