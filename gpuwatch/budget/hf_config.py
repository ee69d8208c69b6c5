"""A Hugging Face ``config.json`` (already parsed) → :class:`TransformerSpec`.

Reads GPT-2, BERT (and RoBERTa), Llama/Mistral/Qwen2 style decoders with grouped-query
attention, Mixtral-style mixtures of experts, T5 and ViT. Nothing is fetched: the
caller reads the file. Unknown ``model_type`` values are read as Llama-style decoders
when they carry the usual keys, and the note says so.
"""

from __future__ import annotations

from typing import Any

from gpuwatch.budget.errors import BudgetError
from gpuwatch.budget.specs import TransformerSpec

FIELD = "--config"


def _get(cfg: dict[str, Any], *names: str, default: Any = None, required: bool = True) -> Any:
    for name in names:
        if name in cfg and cfg[name] is not None:
            value = cfg[name]
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise BudgetError(
                    FIELD, f"config.json field {name!r} should be a number, not {value!r}."
                )
            return value
    if required and default is None:
        raise BudgetError(
            FIELD,
            f"config.json has no {names[0]!r} field"
            + (f" (nor {', '.join(repr(n) for n in names[1:])})" if names[1:] else "")
            + ".",
        )
    return default


def _int(cfg: dict[str, Any], *names: str, default: int | None = None) -> int:
    value = _get(cfg, *names, default=default)
    if isinstance(value, str) or int(value) != value or value < 0:
        raise BudgetError(
            FIELD,
            f"config.json field {names[0]!r} should be a non-negative whole number, not {value!r}.",
        )
    return int(value)


def spec_from_hf_config(cfg: Any, name: str = "config") -> TransformerSpec:
    """The spec a ``config.json`` describes; :class:`BudgetError` names what is wrong."""
    if not isinstance(cfg, dict):
        raise BudgetError(FIELD, "config.json should hold a JSON object of model settings.")
    if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
        cfg = cfg["text_config"]
    kind = str(cfg.get("model_type", "")).lower()
    dropout = float(
        _get(
            cfg,
            "resid_pdrop",
            "hidden_dropout_prob",
            "dropout_rate",
            "hidden_dropout",
            default=0.0,
            required=False,
        )
    )
    if kind == "gpt2" or "n_embd" in cfg:
        h = _int(cfg, "n_embd")
        return TransformerSpec(
            name,
            _int(cfg, "n_layer"),
            h,
            _int(cfg, "n_head"),
            _int(cfg, "vocab_size"),
            ffn=_int(cfg, "n_inner", default=4 * h) if cfg.get("n_inner") else 4 * h,
            max_positions=_int(cfg, "n_positions", "n_ctx", default=1024),
            dropout=dropout,
        )
    if kind in ("bert", "roberta", "distilbert", "electra"):
        return TransformerSpec(
            name,
            _int(cfg, "num_hidden_layers"),
            _int(cfg, "hidden_size"),
            _int(cfg, "num_attention_heads"),
            _int(cfg, "vocab_size"),
            ffn=_int(cfg, "intermediate_size"),
            arch="encoder",
            max_positions=_int(cfg, "max_position_embeddings", default=512),
            type_vocab=_int(cfg, "type_vocab_size", default=2),
            pooler=True,
            mlm_head=True,
            dropout=dropout,
        )
    if kind in ("t5", "mt5", "umt5") or ("d_model" in cfg and "num_decoder_layers" in cfg):
        layers = _int(cfg, "num_layers")
        gated = str(cfg.get("feed_forward_proj", "relu")).startswith("gated")
        return TransformerSpec(
            name,
            layers,
            _int(cfg, "d_model"),
            _int(cfg, "num_heads"),
            _int(cfg, "vocab_size"),
            ffn=_int(cfg, "d_ff"),
            head_dim=_int(cfg, "d_kv", default=64),
            arch="encoder-decoder",
            decoder_layers=_int(cfg, "num_decoder_layers", default=layers),
            gated_mlp=gated,
            bias=False,
            relative_buckets=_int(cfg, "relative_attention_num_buckets", default=32),
            tied_embeddings=bool(cfg.get("tie_word_embeddings", True)),
            norm="rmsnorm",
            dropout=dropout,
        )
    if kind in ("vit", "deit", "dinov2"):
        return TransformerSpec(
            name,
            _int(cfg, "num_hidden_layers"),
            _int(cfg, "hidden_size"),
            _int(cfg, "num_attention_heads"),
            0,
            ffn=_int(cfg, "intermediate_size"),
            arch="vit",
            image=_int(cfg, "image_size", default=224),
            patch=_int(cfg, "patch_size", default=16),
            channels=_int(cfg, "num_channels", default=3),
            classes=1000,
            dropout=dropout,
        )
    # Llama, Mistral, Qwen2, Mixtral, Gemma, Phi-3… : gated MLP, RMSNorm, GQA
    heads = _int(cfg, "num_attention_heads")
    hidden = _int(cfg, "hidden_size")
    experts = _int(cfg, "num_local_experts", "num_experts", "n_routed_experts", default=1) or 1
    moe_ffn = cfg.get("moe_intermediate_size") if experts > 1 else None
    head_dim = _int(cfg, "head_dim", default=0) if cfg.get("head_dim") else 0
    if not head_dim and hidden % heads:
        raise BudgetError(
            FIELD, f"config.json: {heads} attention heads do not divide the hidden size {hidden}."
        )
    return TransformerSpec(
        name,
        _int(cfg, "num_hidden_layers"),
        hidden,
        heads,
        _int(cfg, "vocab_size"),
        ffn=int(moe_ffn) if moe_ffn else _int(cfg, "intermediate_size"),
        kv_heads=_int(cfg, "num_key_value_heads", default=heads),
        head_dim=head_dim,
        gated_mlp=True,
        norm="rmsnorm",
        bias=bool(cfg.get("mlp_bias", False)),
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", default=min(2, experts))
        if experts > 1
        else 1,
        dropout=float(_get(cfg, "attention_dropout", default=0.0, required=False)) and 0.0,
    )


def spec_from_params(params: float, vocab: int = 32000) -> TransformerSpec:
    """A GPT-style decoder of exactly ``params`` parameters, for activations from a bare count.

    Uses the aspect ratio of the GPT-3 and Llama families (hidden = 128 × layers,
    head dimension 128), the largest such shape with untied embeddings that fits in
    ``params``; the parameters left over are carried as an unassigned block group.
    """
    if not params >= 1:
        raise BudgetError("--params", f"parameter count must be positive, not {params:g}.")
    total = round(params)

    def shape_params(layers: int) -> int:
        h = 128 * layers
        return 12 * layers * h * h + 2 * vocab * h

    layers = 1
    while shape_params(layers + 1) <= total:
        layers += 1
    if shape_params(1) > total:  # tiny models: a single narrow layer
        spec = TransformerSpec(f"{total:,} params", 1, 64, 1, 0, bias=False, approx_params=True)
    else:
        spec = TransformerSpec(
            f"{params / 1e9:.3g}B params",
            layers,
            128 * layers,
            layers,
            vocab,
            bias=False,
            tied_embeddings=False,
            approx_params=True,
        )
    return TransformerSpec(**{**spec.__dict__, "extra_params": max(0, total - spec.params)})
