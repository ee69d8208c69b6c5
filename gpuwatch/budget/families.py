"""Config families by what they are: each reader maps one family's ``config.json``
(its own field names) onto a :class:`FamilySpec` with the family's real structure.

=================  ===========================================================
family             what differs from a Llama-style decoder
=================  ===========================================================
gemma              RMSNorm in fp32 with 1 + w, GELU-tanh gate, tied, head_dim
gemma2             + a norm after attention and after the MLP, tanh soft-capping
                   of attention scores and final logits
gemma3_text        + per-head q/k norms (no soft-capping)
opt                ``ffn_dim``, learned positions (+2 rows), ReLU, LayerNorm with
                   bias, biases everywhere, tied, optional ``word_embed_proj_dim``
phi                parallel attention and MLP on one LayerNorm, ``gelu_new``,
                   biases, lm_head bias, partial rotary
phi3               fused ``qkv_proj`` and ``gate_up_proj`` (the fused outputs stay
                   alive through the slices autograd saves)
gpt_neox           fused q/k/v with bias, parallel residual, two LayerNorms, GELU
falcon             fused q/k/v (multi-query or grouped), parallel attention on one
                   (7B) or two (40B+) LayerNorms, no linear biases, tied
bloom              embedding LayerNorm, fused q/k/v, ALiBi (eager attention only)
mpt                ``d_model``/``n_heads``/``expansion_ratio``, no biases at all,
                   fused Wqkv, ALiBi
starcoder2         LayerNorm with bias, plain GELU-tanh MLP (c_fc/c_proj), GQA
qwen2_moe          routed experts + a gated shared expert with a sigmoid gate
deepseek_v2/v3     routed + shared experts, first k layers dense, latent attention
=================  ===========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuwatch.budget import config_fields as f
from gpuwatch.budget.bounds import MAX_LAYERS
from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.family_spec import FamilySpec, Quirks


def _heads_divide(heads: int, hidden: int, head_dim: int = 0) -> None:
    if not head_dim and hidden % heads:
        raise BudgetError(
            f.FIELD, f"config.json: {heads} attention heads do not divide the hidden size {hidden}."
        )


def _gemma(cfg: dict[str, Any], name: str) -> FamilySpec:
    kind = f.text(cfg, "model_type", "gemma")
    later = kind != "gemma"  # Gemma-2 and Gemma-3: pre- and post-norms around each block
    heads = f.whole(cfg, "num_attention_heads")
    return FamilySpec(
        name, f.whole(cfg, "num_hidden_layers"), f.whole(cfg, "hidden_size"), heads,
        f.whole(cfg, "vocab_size"), ffn=f.whole(cfg, "intermediate_size"),
        kv_heads=f.whole(cfg, "num_key_value_heads", default=heads),
        head_dim=f.whole(cfg, "head_dim", default=256), gated_mlp=True, norm="rmsnorm",
        bias=f.flag(cfg, "attention_bias", False), tied_embeddings=True,
        activation=f.text(cfg, "hidden_activation", "gelu_pytorch_tanh"),
        quirks=Quirks(
            family=kind, norm_style="gemma", post_norms=2 if later else 0,
            qk_norm=kind.startswith("gemma3"),
            attn_softcap=f.positive_real(cfg, "attn_logit_softcapping"),
            logit_softcap=f.positive_real(cfg, "final_logit_softcapping"),
            attention_dropout=f.fraction(cfg, "attention_dropout"),
        ),
    )


def _opt(cfg: dict[str, Any], name: str) -> FamilySpec:
    hidden, heads = f.whole(cfg, "hidden_size"), f.whole(cfg, "num_attention_heads")
    _heads_divide(heads, hidden)
    embed = f.whole(cfg, "word_embed_proj_dim", default=hidden)
    pre_ln = f.flag(cfg, "do_layer_norm_before", True)
    return FamilySpec(
        name, f.whole(cfg, "num_hidden_layers"), hidden, heads, f.whole(cfg, "vocab_size"),
        ffn=f.whole(cfg, "ffn_dim"), max_positions=f.whole(cfg, "max_position_embeddings",
                                                          default=2048),
        bias=f.flag(cfg, "enable_bias", True), dropout=f.fraction(cfg, "dropout"),
        activation=f.text(cfg, "activation_function", "relu"),
        tied_embeddings=f.flag(cfg, "tie_word_embeddings", True),
        quirks=Quirks(
            family="opt", norm_bias=f.flag(cfg, "layer_norm_elementwise_affine", True),
            rotary=False, final_norm=pre_ln, position_offset=2,
            embed_dim=embed if embed != hidden else 0,
            attention_dropout=f.fraction(cfg, "attention_dropout"), fp32_softmax=False,
        ),
    )


def _phi(cfg: dict[str, Any], name: str) -> FamilySpec:
    hidden, heads = f.whole(cfg, "hidden_size"), f.whole(cfg, "num_attention_heads")
    _heads_divide(heads, hidden)
    return FamilySpec(
        name, f.whole(cfg, "num_hidden_layers"), hidden, heads, f.whole(cfg, "vocab_size"),
        ffn=f.whole(cfg, "intermediate_size"),
        kv_heads=f.whole(cfg, "num_key_value_heads", default=heads),
        dropout=f.fraction(cfg, "resid_pdrop"), activation=f.text(cfg, "hidden_act", "gelu_new"),
        tied_embeddings=f.flag(cfg, "tie_word_embeddings", False),
        quirks=Quirks(family="phi", layer_norms=1, parallel=True, head_bias=True,
                      qk_norm=f.flag(cfg, "qk_layernorm", False),
                      embed_dropout=f.fraction(cfg, "embd_pdrop"),
                      attention_dropout=f.fraction(cfg, "attention_dropout")),
    )


def _phi3(cfg: dict[str, Any], name: str) -> FamilySpec:
    hidden, heads = f.whole(cfg, "hidden_size"), f.whole(cfg, "num_attention_heads")
    _heads_divide(heads, hidden)
    return FamilySpec(
        name, f.whole(cfg, "num_hidden_layers"), hidden, heads, f.whole(cfg, "vocab_size"),
        ffn=f.whole(cfg, "intermediate_size"),
        kv_heads=f.whole(cfg, "num_key_value_heads", default=heads), gated_mlp=True,
        norm="rmsnorm", bias=False, fused_qkv=True, dropout=f.fraction(cfg, "resid_pdrop"),
        tied_embeddings=f.flag(cfg, "tie_word_embeddings", False),
        quirks=Quirks(family="phi3", fused_gate_up=True,
                      embed_dropout=f.fraction(cfg, "embd_pdrop"),
                      attention_dropout=f.fraction(cfg, "attention_dropout")),
    )


def _gpt_neox(cfg: dict[str, Any], name: str) -> FamilySpec:
    hidden, heads = f.whole(cfg, "hidden_size"), f.whole(cfg, "num_attention_heads")
    _heads_divide(heads, hidden)
    return FamilySpec(
        name, f.whole(cfg, "num_hidden_layers"), hidden, heads, f.whole(cfg, "vocab_size"),
        ffn=f.whole(cfg, "intermediate_size"), fused_qkv=True,
        bias=f.flag(cfg, "attention_bias", True), dropout=f.fraction(cfg, "hidden_dropout"),
        activation=f.text(cfg, "hidden_act", "gelu"),
        tied_embeddings=f.flag(cfg, "tie_word_embeddings", False),
        quirks=Quirks(family="gpt_neox", parallel=f.flag(cfg, "use_parallel_residual", True),
                      attention_dropout=f.fraction(cfg, "attention_dropout")),
    )


def _falcon(cfg: dict[str, Any], name: str) -> FamilySpec:
    hidden = f.whole(cfg, "hidden_size", "n_embed")
    heads = f.whole(cfg, "num_attention_heads", "n_head")
    _heads_divide(heads, hidden)
    new_arch = f.flag(cfg, "new_decoder_architecture", False)
    parallel = f.flag(cfg, "parallel_attn", True) or new_arch
    if new_arch:
        kv = f.whole(cfg, "num_kv_heads", default=heads)
        norms = f.whole(cfg, "num_ln_in_parallel_attn", default=2) or 2
    else:
        kv = 1 if f.flag(cfg, "multi_query", True) else heads
        norms = 1 if parallel else 2
    alibi = f.flag(cfg, "alibi", False)
    return FamilySpec(
        name, f.whole(cfg, "num_hidden_layers", "n_layer"), hidden, heads,
        f.whole(cfg, "vocab_size"), ffn=f.whole(cfg, "ffn_hidden_size", default=4 * hidden),
        kv_heads=kv, fused_qkv=True, bias=f.flag(cfg, "bias", False),
        dropout=f.fraction(cfg, "hidden_dropout"),
        tied_embeddings=f.flag(cfg, "tie_word_embeddings", True),
        quirks=Quirks(family="falcon", parallel=parallel, layer_norms=min(norms, 2),
                      rotary=not alibi, eager_only=alibi, cached_copies=False,
                      attention_dropout=f.fraction(cfg, "attention_dropout")),
    )


def _bloom(cfg: dict[str, Any], name: str) -> FamilySpec:
    hidden = f.whole(cfg, "hidden_size", "n_embed")
    heads = f.whole(cfg, "num_attention_heads", "n_head")
    _heads_divide(heads, hidden)
    return FamilySpec(
        name, f.whole(cfg, "num_hidden_layers", "n_layer"), hidden, heads,
        f.whole(cfg, "vocab_size"), fused_qkv=True, dropout=f.fraction(cfg, "hidden_dropout"),
        tied_embeddings=f.flag(cfg, "tie_word_embeddings", True),
        quirks=Quirks(family="bloom", embed_norm=True, rotary=False, eager_only=True,
                      attention_dropout=f.fraction(cfg, "attention_dropout")),
    )


def _mpt(cfg: dict[str, Any], name: str) -> FamilySpec:
    hidden, heads = f.whole(cfg, "d_model"), f.whole(cfg, "n_heads")
    _heads_divide(heads, hidden)
    attn = f.section(cfg, "attn_config")
    alibi = f.flag(attn, "alibi", True)
    no_bias = f.flag(cfg, "no_bias", True)
    return FamilySpec(
        name, f.whole(cfg, "n_layers"), hidden, heads, f.whole(cfg, "vocab_size"),
        ffn=f.whole(cfg, "expansion_ratio", default=4) * hidden,
        max_positions=0 if alibi else f.whole(cfg, "max_seq_len", default=2048),
        fused_qkv=True, bias=not no_bias, dropout=f.fraction(cfg, "resid_pdrop"),
        tied_embeddings=True,
        quirks=Quirks(family="mpt", norm_bias=not no_bias, rotary=False, eager_only=alibi,
                      embed_dropout=f.fraction(cfg, "emb_pdrop"),
                      attention_dropout=f.fraction(attn, "attn_pdrop")),
    )


def _starcoder2(cfg: dict[str, Any], name: str) -> FamilySpec:
    hidden, heads = f.whole(cfg, "hidden_size"), f.whole(cfg, "num_attention_heads")
    _heads_divide(heads, hidden)
    return FamilySpec(
        name, f.whole(cfg, "num_hidden_layers"), hidden, heads, f.whole(cfg, "vocab_size"),
        ffn=f.whole(cfg, "intermediate_size"),
        kv_heads=f.whole(cfg, "num_key_value_heads", default=heads),
        bias=f.flag(cfg, "use_bias", True), dropout=f.fraction(cfg, "residual_dropout"),
        activation=f.text(cfg, "hidden_act", "gelu_pytorch_tanh"),
        tied_embeddings=f.flag(cfg, "tie_word_embeddings", True),
        quirks=Quirks(family="starcoder2", embed_dropout=f.fraction(cfg, "embedding_dropout"),
                      attention_dropout=f.fraction(cfg, "attention_dropout")),
    )


def _qwen2_moe(cfg: dict[str, Any], name: str) -> FamilySpec:
    hidden, heads = f.whole(cfg, "hidden_size"), f.whole(cfg, "num_attention_heads")
    _heads_divide(heads, hidden)
    layers = f.whole(cfg, "num_hidden_layers")
    experts = f.whole(cfg, "num_experts", "num_local_experts", default=60)
    step = f.whole(cfg, "decoder_sparse_step", default=1)
    dense_only = set(f.whole_list(cfg, "mlp_only_layers", MAX_LAYERS))
    sparse = sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
    dense = layers - sparse if experts > 1 and sparse else 0
    return FamilySpec(
        name, layers, hidden, heads, f.whole(cfg, "vocab_size"),
        ffn=f.whole(cfg, "moe_intermediate_size") if experts > 1 and sparse
        else f.whole(cfg, "intermediate_size"),
        kv_heads=f.whole(cfg, "num_key_value_heads", default=heads), gated_mlp=True,
        norm="rmsnorm", bias=False, experts=experts if sparse else 1,
        experts_per_token=f.whole(cfg, "num_experts_per_tok", default=4) if sparse else 1,
        tied_embeddings=f.flag(cfg, "tie_word_embeddings", False),
        quirks=Quirks(family="qwen2_moe", qkv_bias=True,
                      shared_ffn=f.optional_whole(cfg, "shared_expert_intermediate_size"),
                      shared_gate=cfg.get("shared_expert_intermediate_size") is not None,
                      dense_layers=dense,
                      dense_ffn=f.whole(cfg, "intermediate_size") if dense else 0,
                      attention_dropout=f.fraction(cfg, "attention_dropout")),
    )


def _deepseek(cfg: dict[str, Any], name: str) -> FamilySpec:
    kind = f.text(cfg, "model_type", "deepseek_v3")
    hidden, heads = f.whole(cfg, "hidden_size"), f.whole(cfg, "num_attention_heads")
    layers = f.whole(cfg, "num_hidden_layers")
    experts = f.whole(cfg, "n_routed_experts", default=1)
    moe_ffn = f.whole(cfg, "moe_intermediate_size") if experts > 1 else 0
    dense = min(layers - 1, f.whole(cfg, "first_k_dense_replace", default=0)) \
        if experts > 1 else 0
    mla = kind != "deepseek"  # DeepSeek-MoE (v1) has ordinary multi-head attention
    rope = f.whole(cfg, "qk_rope_head_dim", default=64) if mla else 0
    head_dim = f.whole(cfg, "qk_nope_head_dim", default=128) + rope if mla else 0
    if not mla:
        _heads_divide(heads, hidden)
    return FamilySpec(
        name, layers, hidden, heads, f.whole(cfg, "vocab_size"),
        ffn=moe_ffn or f.whole(cfg, "intermediate_size"),
        kv_heads=heads if mla else f.whole(cfg, "num_key_value_heads", default=heads),
        head_dim=head_dim, gated_mlp=True, norm="rmsnorm", bias=False, experts=experts,
        experts_per_token=f.whole(cfg, "num_experts_per_tok", default=min(2, experts))
        if experts > 1 else 1,
        tied_embeddings=f.flag(cfg, "tie_word_embeddings", False),
        quirks=Quirks(
            family=kind,
            shared_ffn=f.whole(cfg, "n_shared_experts", default=0) * moe_ffn,
            dense_layers=dense, dense_ffn=f.whole(cfg, "intermediate_size") if dense else 0,
            q_lora_rank=f.optional_whole(cfg, "q_lora_rank") if mla else 0,
            kv_lora_rank=f.whole(cfg, "kv_lora_rank", default=512) if mla else 0,
            rope_head_dim=rope, v_head_dim=f.whole(cfg, "v_head_dim", default=128) if mla else 0,
            attention_dropout=f.fraction(cfg, "attention_dropout"),
        ),
    )


def _qwen3(cfg: dict[str, Any], name: str) -> FamilySpec:
    heads = f.whole(cfg, "num_attention_heads")
    # transformers 5 writes Qwen3-MoE's expert count as ``num_local_experts``
    experts = f.whole(cfg, "num_experts", "num_local_experts", default=1)
    return FamilySpec(
        name, f.whole(cfg, "num_hidden_layers"), f.whole(cfg, "hidden_size"), heads,
        f.whole(cfg, "vocab_size"),
        ffn=f.whole(cfg, "moe_intermediate_size") if experts > 1
        else f.whole(cfg, "intermediate_size"),
        kv_heads=f.whole(cfg, "num_key_value_heads", default=heads),
        head_dim=f.whole(cfg, "head_dim", default=128), gated_mlp=True, norm="rmsnorm",
        bias=f.flag(cfg, "attention_bias", False), experts=experts,
        experts_per_token=f.whole(cfg, "num_experts_per_tok", default=8) if experts > 1 else 1,
        tied_embeddings=f.flag(cfg, "tie_word_embeddings", False),
        quirks=Quirks(family=f.text(cfg, "model_type", "qwen3"), qk_norm=True,
                      attention_dropout=f.fraction(cfg, "attention_dropout")),
    )


Reader = Callable[[dict[str, Any], str], FamilySpec]
READERS: dict[str, Reader] = {
    "gemma": _gemma, "gemma2": _gemma, "gemma3_text": _gemma, "gemma3": _gemma,
    "opt": _opt, "phi": _phi, "phi3": _phi3, "gpt_neox": _gpt_neox,
    "falcon": _falcon, "refinedweb": _falcon, "refinedwebmodel": _falcon, "rw": _falcon,
    "bloom": _bloom, "mpt": _mpt, "starcoder2": _starcoder2, "qwen2_moe": _qwen2_moe,
    "deepseek": _deepseek, "deepseek_v2": _deepseek, "deepseek_v3": _deepseek,
    "qwen3": _qwen3, "qwen3_moe": _qwen3,
}
